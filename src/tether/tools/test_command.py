"""Which command runs a project's tests, and how the model's arguments join it.

Detection, first match wins, from the most explicit sign to the weakest:
1. pytest configuration (pyproject `[tool.pytest.ini_options]` or `[tool.pytest]`,
   pytest.ini, .pytest.ini, setup.cfg `[tool:pytest]`, tox.ini `[pytest]`, a root
   conftest.py) -> `python -m pytest`;
2. Cargo.toml -> `cargo test`;  3. go.mod -> `go test ./...`;
4. package.json with a real `scripts.test` (not npm's placeholder) -> `npm test
   --silent` (`pnpm test`, `yarn test`, `bun run test` when that lockfile is there);
5. test_*.py / *_test.py in tests/, test/ or the root -> `python -m pytest`, or
   `python -m unittest` when those files use unittest and never mention pytest.

The interpreter is the project's `.venv/bin/python` (or `venv/`) when there is one,
since tests need the project's dependencies; else `python` on the command's PATH,
else `python3`. `python -m pytest` (rather than `pytest`) also puts the root on
sys.path, as most projects expect. Files are read bounded and without blocking;
a malformed manifest means "not this ecosystem", never an exception.

The model's `args` are split like a shell would and every word re-quoted, so they
add arguments but never shell syntax (`; rm -rf ~` is one literal argument).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.errors import ToolError
from tether.safe_read import NotReadable, read_regular
from tether.tools.textio import check_text

__all__ = ["TestCommand", "detect_test_command", "resolve_test_command", "runner_of"]

_MAX_CONFIG = 1 << 20  # bytes of a manifest read; a larger one is not a manifest
_MAX_SNIFF = 64 * 1024  # bytes of a test file read to tell unittest from pytest
_SCAN_ENTRIES = 2000  # directory entries looked at when searching for test files
_NPM_PLACEHOLDER = "no test specified"
_TEST_FILE = re.compile(r"test_\w*\.py|\w+_test\.py")
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "venv", "build", "dist"}


@dataclass(frozen=True, slots=True)
class TestCommand:
    """The command run_tests runs. `exact`: the configured command as configured,
    with no arguments added; the permission gate may let exactly that run unasked."""

    __test__ = False  # not a pytest test class, although its name starts with Test

    command: str
    source: Literal["configured", "detected"]
    runner: str  # "pytest", "unittest", "npm", "cargo", "go" or "unknown"
    exact: bool


def detect_test_command(workspace: Path, *, path: str | None = None) -> str | None:
    """The test command this project's files point to (see the module docstring);
    `path` is the PATH the command will run with (None: ours)."""
    found = _detect(workspace, path)
    return found[0] if found is not None else None


def resolve_test_command(
    workspace: Path, configured: str | None, args: str | None, *, path: str | None = None
) -> TestCommand:
    """The configured command, else the detected one, with `args` appended as literal
    words: `args` comes from the model, so it can add arguments but no shell syntax."""
    extra = _literal_words(args)
    if configured is not None and configured.strip():
        base, runner = configured.strip(), runner_of(configured)
        source: Literal["configured", "detected"] = "configured"
    else:
        found = _detect(workspace, path)
        if found is None:
            raise ToolError(
                "No test command is configured and none was detected: no pytest or "
                "unittest tests, package.json test script, Cargo.toml or go.mod in "
                f"{workspace}. Run the tests with bash, or ask the user to set the "
                'command in .tether/config.toml:\n\n[tests]\ncommand = "make test"'
            )
        base, runner = found
        source = "detected"
    if extra and extra[0] != "--" and _is_npm(base) and "--" not in base.split():
        extra.insert(0, "--")  # npm keeps flags before "--" for itself
    command = " ".join([base, *extra])
    return TestCommand(command, source, runner, exact=source == "configured" and not extra)


def runner_of(command: str) -> str:
    """Which runner's summary `command` prints, from the words in it."""
    for runner, pattern in _RUNNER_WORDS:
        if pattern.search(command):
            return runner
    return "unknown"


_RUNNER_WORDS = (
    ("pytest", re.compile(r"\b(?:py\.test|pytest)\b")),
    ("unittest", re.compile(r"\bunittest\b")),
    ("cargo", re.compile(r"\bcargo\s+(?:[+-]\S*\s+)*(?:test|nextest|t)\b")),
    ("go", re.compile(r"\bgo\s+test\b")),
    ("npm", re.compile(r"\b(?:npm|npx|yarn|pnpm|bun|jest|vitest|mocha)\b|\bnode\s+--test\b")),
)


def _literal_words(args: str | None) -> list[str]:
    """`args` split like a shell would, each word quoted so the shell sees it as is."""
    if args is None or not args.strip():
        return []
    check_text(args, "args")
    try:
        words = shlex.split(args)
    except ValueError as exc:
        raise ToolError(
            f"args could not be split into words ({exc}): close every quote, or escape a "
            "lone quote character with a backslash."
        ) from None
    return [shlex.quote(word) for word in words]


def _is_npm(command: str) -> bool:
    words = command.split(maxsplit=1)
    return bool(words) and words[0].rsplit("/", 1)[-1] == "npm"


def _detect(root: Path, path: str | None) -> tuple[str, str] | None:
    if _pytest_configured(root):
        return f"{_python(root, path)} -m pytest", "pytest"
    if _regular(root / "Cargo.toml"):
        return "cargo test", "cargo"
    if _regular(root / "go.mod"):
        return "go test ./...", "go"
    npm = _npm_command(root)
    if npm is not None:
        return npm, "npm"
    tests = _python_test_files(root)
    if not tests:
        return None
    if _uses_unittest_only(tests):
        return _unittest_command(root, tests, _python(root, path)), "unittest"
    return f"{_python(root, path)} -m pytest", "pytest"


def _pytest_configured(root: Path) -> bool:
    if any(_regular(root / name) for name in ("pytest.ini", ".pytest.ini", "conftest.py")):
        return True
    text = _read(root / "pyproject.toml")
    if text is not None:
        try:
            table = tomllib.loads(text).get("tool", {})
        except (ValueError, RecursionError):
            table = {}
        if isinstance(table, dict) and "pytest" in table:
            return True
    for name, section in (("setup.cfg", "tool:pytest"), ("tox.ini", "pytest")):
        text = _read(root / name)
        if text and re.search(rf"^[ \t]*\[{re.escape(section)}\]", text, re.MULTILINE):
            return True
    return False


def _npm_command(root: Path) -> str | None:
    text = _read(root / "package.json")
    if text is None:
        return None
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError):
        return None
    scripts = manifest.get("scripts") if isinstance(manifest, dict) else None
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or _NPM_PLACEHOLDER in script:
        return None
    for lockfile, command in (
        ("pnpm-lock.yaml", "pnpm test"),
        ("yarn.lock", "yarn test"),
        ("bun.lockb", "bun run test"),
        ("bun.lock", "bun run test"),
    ):
        if _regular(root / lockfile):
            return command
    return "npm test --silent"


def _python_test_files(root: Path) -> list[Path]:
    """Up to 20 test files in tests/, test/ (searched a few levels down) or the root."""
    found: list[Path] = []
    budget = [_SCAN_ENTRIES]
    for directory in (root / "tests", root / "test"):
        if directory.is_dir() and not directory.is_symlink():
            _scan(directory, found, budget, depth=4)
    _scan(root, found, budget, depth=1)
    return found


def _scan(directory: Path, found: list[Path], budget: list[int], depth: int) -> None:
    subdirs: list[Path] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                budget[0] -= 1
                if budget[0] < 0 or len(found) >= 20:
                    return
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    if not name.startswith(".") and name not in _SKIP_DIRS:
                        subdirs.append(Path(entry.path))
                elif _TEST_FILE.fullmatch(name):
                    found.append(Path(entry.path))
    except OSError:
        return
    if depth > 1:
        for subdir in subdirs:
            _scan(subdir, found, budget, depth - 1)


def _uses_unittest_only(files: list[Path]) -> bool:
    """Every test file defines TestCase classes and none mentions pytest (a file that
    only imports unittest.mock is a pytest file all the same)."""
    texts = [_read(f, _MAX_SNIFF, cut=True) or "" for f in files]
    return all("TestCase" in t for t in texts) and not any("pytest" in t for t in texts)


def _unittest_command(root: Path, files: list[Path], python: str) -> str:
    """`python -m unittest` discovers packages from the root; tests in a directory
    that is no package need it named as the start directory."""
    top = files[0].relative_to(root).parts
    if len(top) == 1 or _regular(root / top[0] / "__init__.py"):
        return f"{python} -m unittest"
    return f"{python} -m unittest discover -s {shlex.quote(top[0])}"


def _python(root: Path, path: str | None) -> str:
    for venv in (".venv", "venv"):
        candidate = root / venv / "bin" / "python"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return f"{venv}/bin/python"
    if shutil.which("python", path=path) is None and shutil.which("python3", path=path):
        return "python3"
    return "python"


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except (OSError, ValueError):
        return False


def _read(path: Path, limit: int = _MAX_CONFIG, *, cut: bool = False) -> str | None:
    """A regular file's text, at most `limit` bytes (larger: None, or its start when
    `cut`); a FIFO planted under the name cannot hang us (`read_regular`)."""
    try:
        data, size = read_regular(path, limit)
    except NotReadable:
        return None
    if size > limit and not cut:
        return None
    return data.decode("utf-8", "replace")

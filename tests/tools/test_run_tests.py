"""run_tests against real tiny projects, run as real processes, sandboxed and not."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import threading
import uuid
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
from tether.sandbox.base import Sandbox, SandboxPolicy, protected_paths
from tether.sandbox.environment import tool_environment
from tether.tools.registry import ToolContext
from tether.tools.test_command import (
    TestCommand,
    detect_test_command,
    resolve_test_command,
    runner_of,
)
from tether.tools.tests import run_tests_tool

if TYPE_CHECKING:
    from conftest import Harness

run_tests = run_tests_tool(None)

PYTEST_PROJECT = {
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
    "tests/test_calc.py": "def test_good():\n    assert 1 + 1 == 2\n\n\n"
    "def test_bad():\n    assert 1 + 1 == 3\n",
}

UNITTEST_PROJECT = {
    "tests/test_calc.py": "import unittest\n\n\nclass Calc(unittest.TestCase):\n"
    "    def test_good(self):\n        self.assertEqual(1 + 1, 2)\n\n"
    "    def test_bad(self):\n        self.assertEqual(1 + 1, 3)\n\n"
    "    @unittest.skip('later')\n    def test_later(self):\n        pass\n",
}


def make(ws: Harness, files: dict[str, str]) -> None:
    for rel, text in files.items():
        ws.write(rel, text)


def python() -> str:
    return "python" if shutil.which("python") else "python3"


def with_overflow(ws: Harness, tmp_path: Path, **changes: object) -> ToolContext:
    return dataclasses.replace(ws.ctx, overflow_dir=tmp_path / "overflow", **changes)


def parts(out: str) -> tuple[str, str, str]:
    """(outcome line, command line, the rest after the blank line)."""
    head, _, rest = out.partition("\n\n")
    outcome, command, *_ = head.split("\n")
    return outcome, command, rest


# --- running real projects ---------------------------------------------------------


def test_pytest_project_reports_counts_exit_code_and_the_tail(ws: Harness) -> None:
    make(ws, PYTEST_PROJECT)
    out = ws.call(run_tests)
    outcome, command, rest = parts(out)
    assert outcome == "tests: FAILED (exit code 1) — 1 failed, 1 passed"
    assert command == f"command: {python()} -m pytest"
    assert "FAILED tests/test_calc.py::test_bad" in rest
    assert rest.rstrip().endswith("=")  # pytest's summary line ends the output
    assert "earlier lines not shown" not in out


def test_long_output_shows_the_tail_and_saves_the_whole_log(ws: Harness, tmp_path: Path) -> None:
    make(ws, PYTEST_PROJECT)
    ws.write(
        "tests/test_calc.py",
        "def test_chatty():\n    for i in range(5000):\n        print(f'line {i}')\n",
    )
    ctx = with_overflow(ws, tmp_path)
    out = run_tests.fn(ctx, **run_tests.bind({"args": "-s"}))
    outcome, command, rest = parts(out)
    assert outcome == "tests: passed (exit code 0) — 1 passed"
    assert command == f"command: {python()} -m pytest -s"
    assert len(out) <= ctx.output_limit
    marker, _, tail = rest.partition("\n")
    found = re.match(
        r"\[\.\.\. ([\d,]+) earlier lines not shown \(lines 1-[\d,]+ of ([\d,]+)\)"
        r"\. The full log is saved in (\S+)\.",
        marker,
    )
    assert found is not None, marker
    left_out, total = (int(found.group(i).replace(",", "")) for i in (1, 2))
    log = Path(found.group(3))
    assert log.parent == tmp_path / "overflow"
    text = log.read_text()
    assert all(f"line {i}\n" in text for i in (0, 2500, 4999))
    assert text.count("\n") == total
    assert len(tail.splitlines()) == total - left_out <= 60
    assert text.endswith(tail + "\n")
    assert "line 4999" in text and "1 passed" in tail


def test_many_short_lines_are_saved_too(ws: Harness, tmp_path: Path) -> None:
    """Within the character budget but over the line budget: still saved whole."""
    configured = run_tests_tool("seq 1 100")
    out = configured.fn(with_overflow(ws, tmp_path), **configured.bind({}))
    outcome, _, rest = parts(out)
    assert outcome == "tests: passed (exit code 0; no summary line found)"
    path = re.search(r"saved in (\S+)\.", rest)
    assert path is not None
    assert Path(path.group(1)).read_text() == "".join(f"{i}\n" for i in range(1, 101))
    assert rest.endswith("\n".join(str(i) for i in range(41, 101)))
    assert "(lines 1-40 of 100)" in rest


def test_without_an_overflow_dir_long_output_is_only_cut(ws: Harness) -> None:
    configured = run_tests_tool("seq 1 100")
    out = ws.call(configured)
    assert "[... 40 earlier lines not shown; the log was not saved: there is no overflow" in out
    assert out.endswith("\n".join(str(i) for i in range(41, 101)))


def test_short_output_leaves_no_file(ws: Harness, tmp_path: Path) -> None:
    make(ws, PYTEST_PROJECT)
    ctx = with_overflow(ws, tmp_path)
    run_tests.fn(ctx, **run_tests.bind({"args": "-q"}))
    assert not (tmp_path / "overflow").exists() or not any((tmp_path / "overflow").iterdir())


def test_unittest_project_is_detected_and_counted(ws: Harness) -> None:
    make(ws, UNITTEST_PROJECT)
    outcome, command, rest = parts(ws.call(run_tests))
    assert command == f"command: {python()} -m unittest discover -s tests"
    assert outcome == "tests: FAILED (exit code 1) — 1 failed, 1 passed, 1 skipped"
    assert "AssertionError: 2 != 3" in rest


def test_configured_command_is_run_as_configured(ws: Harness) -> None:
    make(ws, UNITTEST_PROJECT)
    configured = run_tests_tool(f"{python()} -m unittest discover -s tests -k good")
    outcome, command, _ = parts(ws.call(configured))
    assert outcome == "tests: passed (exit code 0) — 1 passed"
    assert command == f"command: {python()} -m unittest discover -s tests -k good"


def test_args_narrow_the_run(ws: Harness) -> None:
    make(ws, PYTEST_PROJECT)
    outcome, command, _ = parts(ws.call(run_tests, args="tests/test_calc.py -k good"))
    assert outcome == "tests: passed (exit code 0) — 1 passed, 1 deselected"
    assert command == f"command: {python()} -m pytest tests/test_calc.py -k good"


def test_args_cannot_add_shell_syntax(ws: Harness, tmp_path: Path) -> None:
    make(ws, PYTEST_PROJECT)
    marks = [tmp_path / f"pwned-{uuid.uuid4().hex[:8]}" for _ in range(4)]
    args = (
        f"; touch {marks[0]} && touch {marks[1]} | $(touch {marks[2]}) `touch {marks[3]}` > out.txt"
    )
    out = ws.call(run_tests, args=args)
    assert not any(m.exists() for m in marks)
    assert not (ws.root / "out.txt").exists()
    assert parts(out)[1].startswith(f"command: {python()} -m pytest ';' touch ")
    assert parts(out)[0].startswith("tests: FAILED (exit code 4)")  # pytest: no such file


def test_bad_quoting_in_args_is_a_clear_error(ws: Harness) -> None:
    make(ws, PYTEST_PROJECT)
    with pytest.raises(ToolError, match=r"could not be split into words.*close every quote"):
        ws.call(run_tests, args="-k 'unclosed")


def test_no_command_says_how_to_configure_one(ws: Harness) -> None:
    ws.write("README.md", "nothing to test\n")
    with pytest.raises(ToolError) as caught:
        ws.call(run_tests)
    assert '[tests]\ncommand = "make test"' in str(caught.value)
    assert ".tether/config.toml" in str(caught.value)


def test_a_failing_command_without_summary_reports_the_exit_code(ws: Harness) -> None:
    out = ws.call(run_tests_tool("echo 'cannot import calc' >&2; exit 2"))
    assert (
        out == "tests: exit code 2 (no summary line found)\ncommand: echo 'cannot import "
        "calc' >&2; exit 2\n\ncannot import calc"
    )
    assert ws.call(run_tests_tool("true")).endswith("\n\n(no output)")


def test_killed_by_a_signal_is_reported(ws: Harness) -> None:
    out = ws.call(run_tests_tool("kill -TERM $$"))
    assert out.startswith("tests: killed by SIGTERM (exit code -15)\n")


def test_timeout_is_reported_and_the_process_group_killed(ws: Harness) -> None:
    ctx = dataclasses.replace(ws.ctx, bash_timeout=0.5, max_timeout=1.0)
    tool = run_tests_tool("echo started; sleep 30")
    out = tool.fn(ctx, **tool.bind({}))
    assert out == (
        "tests: timed out after 1 s; process group killed\n"
        "command: echo started; sleep 30\n\nstarted"
    )


def test_cancel_is_reported_as_an_interruption(ws: Harness) -> None:
    ctx = dataclasses.replace(ws.ctx, cancel=threading.Event())
    timer = threading.Timer(0.3, ctx.cancel.set)
    timer.start()
    tool = run_tests_tool("sleep 30")
    try:
        out = tool.fn(ctx, **tool.bind({}))
    finally:
        timer.cancel()
    assert out.startswith("tests: interrupted; process group killed\n")


def test_colour_codes_are_stripped_from_the_tail(ws: Harness) -> None:
    out = ws.call(run_tests_tool(r"printf '\033[32m=== 3 passed in 0.1s ===\033[0m\n'"))
    assert out.startswith("tests: passed (exit code 0) — 3 passed\n")
    assert out.endswith("\n\n=== 3 passed in 0.1s ===")


def test_runs_in_the_sandbox(box: Sandbox, ws: Harness, tmp_path: Path) -> None:
    make(ws, PYTEST_PROJECT)
    outside = tmp_path / f"outside-{uuid.uuid4().hex[:8]}"
    ws.write("tests/test_escape.py", f"def test_escape():\n    open({str(outside)!r}, 'w')\n")
    sandbox_tmp = tmp_path / "sandbox-tmp"
    sandbox_tmp.mkdir()
    policy = SandboxPolicy(workspace=ws.root, tmp=sandbox_tmp, readonly=protected_paths(ws.root))
    ctx = dataclasses.replace(
        ws.ctx, env=tool_environment(os.environ), sandbox=partial(box.launch, policy=policy)
    )
    out = run_tests.fn(ctx, **run_tests.bind({}))
    assert parts(out)[0] == "tests: FAILED (exit code 1) — 2 failed, 1 passed"
    assert "test_escape" in out
    assert not outside.exists()


# --- resolving the command -----------------------------------------------------------


def test_configured_without_args_is_exact(tmp_path: Path) -> None:
    assert resolve_test_command(tmp_path, " make test ", None) == TestCommand(
        "make test", "configured", "unknown", exact=True
    )
    assert resolve_test_command(tmp_path, "make test", "  ").exact
    with_args = resolve_test_command(tmp_path, "make test", "TESTS=x")
    assert with_args == TestCommand("make test TESTS=x", "configured", "unknown", exact=False)


def test_detected_is_never_exact(tmp_path: Path) -> None:
    (tmp_path / "Cargo.toml").write_text("[package]\nname = 'x'\n")
    assert resolve_test_command(tmp_path, None, None) == TestCommand(
        "cargo test", "detected", "cargo", exact=False
    )
    assert resolve_test_command(tmp_path, "", "parser").command == "cargo test parser"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ("; rm -rf ~", "';' rm -rf '~'"),
        ("tests/test_x.py -k 'a and not b'", "tests/test_x.py -k 'a and not b'"),
        ("$(id) `id` $HOME *.py", "'$(id)' '`id`' '$HOME' '*.py'"),
        ("a\nb && c || d > e", "a b '&&' c '||' d '>' e"),
        ('"it\'s"', "'it'\"'\"'s'"),
    ],
)
def test_args_become_literal_words(tmp_path: Path, args: str, words: str) -> None:
    assert resolve_test_command(tmp_path, "run", args).command == f"run {words}"


def test_args_with_a_nul_byte_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="NUL"):
        resolve_test_command(tmp_path, "run", "a\x00b")


@pytest.mark.parametrize(
    ("configured", "args", "command"),
    [
        ("npm test", "-t adds", "npm test -- -t adds"),
        ("npm test", "-- -t adds", "npm test -- -t adds"),
        ("npm run test -- --ci", "-t adds", "npm run test -- --ci -t adds"),
        ("yarn test", "-t adds", "yarn test -t adds"),
    ],
)
def test_npm_gets_the_separator_it_needs(
    tmp_path: Path, configured: str, args: str, command: str
) -> None:
    assert resolve_test_command(tmp_path, configured, args).command == command


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("python -m pytest -x", "pytest"),
        ("uv run pytest", "pytest"),
        ("cd src && py.test", "pytest"),
        ("python -m unittest discover", "unittest"),
        ("cargo test --workspace", "cargo"),
        ("cargo +nightly nextest run", "cargo"),
        ("cargo build", "unknown"),
        ("go test ./...", "go"),
        ("npm test --silent", "npm"),
        ("npx vitest run", "npm"),
        ("node --test", "npm"),
        ("make test", "unknown"),
        ("tox -e py311", "unknown"),
    ],
)
def test_runner_of(command: str, runner: str) -> None:
    assert runner_of(command) == runner


# --- detection from files alone ------------------------------------------------------


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """A PATH holding only `python`, so detection does not depend on the machine."""
    path = tmp_path / "bin"
    path.mkdir()
    exe = path / "python"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return path


def detect(root: Path, files: dict[str, str | bytes], path: Path) -> str | None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            target.write_text(data)
        else:
            target.write_bytes(data)
    return detect_test_command(root, path=str(path))


PYTEST_STYLE = "def test_x():\n    assert True\n"
UNITTEST_STYLE = "import unittest\n\nclass T(unittest.TestCase):\n    pass\n"
NPM_PLACEHOLDER = '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'

DETECTION = [
    ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}, "python -m pytest"),
    ({"pyproject.toml": "[tool.pytest]\nminversion = '9.0'\n"}, "python -m pytest"),
    ({"pytest.ini": ""}, "python -m pytest"),
    ({"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = t\n"}, "python -m pytest"),
    ({"tox.ini": "[tox]\nenvlist = py311\n[pytest]\naddopts = -q\n"}, "python -m pytest"),
    ({"conftest.py": ""}, "python -m pytest"),
    ({"tests/test_a.py": PYTEST_STYLE}, "python -m pytest"),
    ({"test/unit/calc_test.py": PYTEST_STYLE}, "python -m pytest"),
    ({"test_root.py": PYTEST_STYLE}, "python -m pytest"),
    ({"tests/test_a.py": "from unittest import mock\n\ndef test_x(): pass\n"}, "python -m pytest"),
    ({"tests/test_a.py": UNITTEST_STYLE}, "python -m unittest discover -s tests"),
    ({"tests/__init__.py": "", "tests/test_a.py": UNITTEST_STYLE}, "python -m unittest"),
    ({"tests/test_a.py": UNITTEST_STYLE + "import pytest\n"}, "python -m pytest"),
    ({"Cargo.toml": "[package]\nname = 'x'\n"}, "cargo test"),
    ({"go.mod": "module example.com/x\n\ngo 1.22\n"}, "go test ./..."),
    ({"package.json": '{"scripts": {"test": "jest"}}'}, "npm test --silent"),
    ({"package.json": '{"scripts": {"test": "vitest"}}', "yarn.lock": ""}, "yarn test"),
    ({"package.json": '{"scripts": {"test": "vitest"}}', "pnpm-lock.yaml": ""}, "pnpm test"),
    ({"package.json": NPM_PLACEHOLDER}, None),
    ({"package.json": '{"scripts": {"build": "tsc"}}'}, None),
    ({"package.json": '{"scripts": ["test"]}'}, None),
    ({"package.json": '["not", "a", "manifest"]'}, None),
    ({"package.json": '{"scripts": {"test": '}, None),
    ({"package.json": "[" * 100_000}, None),
    ({"package.json": b"\xff\xfe{\x00"}, None),
    ({"package.json": '{"scripts": {"test": "jest"}, "x": "' + "a" * (2 << 20) + '"}'}, None),
    ({"pyproject.toml": "[tool.pytest.ini_options\nbroken"}, None),
    ({"pyproject.toml": "[project]\nname = 'x'\n"}, None),
    ({"README.md": "# x\n", "src/x.py": ""}, None),
    ({}, None),
    # precedence: explicit pytest config, Cargo, go, npm, then Python test files
    (
        {
            "pyproject.toml": "[tool.pytest.ini_options]\n",
            "package.json": '{"scripts": {"test": "jest"}}',
        },
        "python -m pytest",
    ),
    ({"Cargo.toml": "", "package.json": '{"scripts": {"test": "jest"}}'}, "cargo test"),
    ({"go.mod": "module x\n", "tests/test_a.py": PYTEST_STYLE}, "go test ./..."),
    (
        {"package.json": '{"scripts": {"test": "jest"}}', "tests/test_a.py": PYTEST_STYLE},
        "npm test --silent",
    ),
]


@pytest.mark.parametrize(("files", "command"), DETECTION)
def test_detection(
    tmp_path: Path, bin_dir: Path, files: dict[str, str | bytes], command: str | None
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    assert detect(root, files, bin_dir) == command


def test_a_fifo_named_like_a_manifest_does_not_hang_detection(
    tmp_path: Path, bin_dir: Path
) -> None:
    for name in ("package.json", "pyproject.toml", "setup.cfg", "pytest.ini", "Cargo.toml"):
        os.mkfifo(tmp_path / name)
    assert detect_test_command(tmp_path, path=str(bin_dir)) is None


def test_the_projects_virtualenv_is_preferred(tmp_path: Path, bin_dir: Path) -> None:
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\n")
    (venv / "python").chmod(0o755)
    (tmp_path / "pytest.ini").write_text("")
    assert detect_test_command(tmp_path, path=str(bin_dir)) == ".venv/bin/python -m pytest"
    (venv / "python").chmod(0o644)  # not runnable: not an interpreter to use
    assert detect_test_command(tmp_path, path=str(bin_dir)) == "python -m pytest"


def test_python3_when_there_is_no_python(tmp_path: Path, bin_dir: Path) -> None:
    (bin_dir / "python").rename(bin_dir / "python3")
    (tmp_path / "pytest.ini").write_text("")
    assert detect_test_command(tmp_path, path=str(bin_dir)) == "python3 -m pytest"
    (bin_dir / "python3").unlink()  # neither: `python`, which fails with a clear error
    assert detect_test_command(tmp_path, path=str(bin_dir)) == "python -m pytest"


def test_the_scan_for_test_files_is_bounded(tmp_path: Path, bin_dir: Path) -> None:
    deep = tmp_path / "tests"
    for i in range(3000):
        (deep / f"d{i // 100}").mkdir(parents=True, exist_ok=True)
        (deep / f"d{i // 100}" / f"data{i}.txt").write_text("")
    assert detect_test_command(tmp_path, path=str(bin_dir)) is None


def test_summaries_spread_over_a_huge_log_are_all_counted(ws: Harness, tmp_path: Path) -> None:
    """cargo prints one result per test binary: with the middle of a 3 MB log out of
    memory, the counts come from the saved file."""
    result = "test result: {}. {} passed; {} failed; 0 ignored; 0 measured; 0 filtered out\\n"
    command = (
        f"printf '{result.format('ok', 2, 0)}'; "
        "head -c 3000000 /dev/zero | tr '\\0' x | fold -w 100; echo; "
        f"printf '{result.format('FAILED', 1, 1)}'; exit 101"
    )
    tool = run_tests_tool(command)
    out = tool.fn(with_overflow(ws, tmp_path), **tool.bind({}))
    assert out.startswith("tests: FAILED (exit code 101) — 1 failed, 3 passed\n")
    assert "earlier lines not shown (lines 1-" in out

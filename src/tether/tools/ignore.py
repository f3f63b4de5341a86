"""Which files a workspace holds, as git sees it: `.gitignore` honoured, `.git` skipped.

Inside a git work tree `git ls-files` answers (fast and exact, including
`.git/info/exclude` and the user's global excludes). Elsewhere, or without a git
binary, a small pure-Python walker applies the same rules from every `.gitignore`
it meets. Both return sorted relative POSIX paths of files (symlinks included, never
followed); a test keeps the two answers identical on the same tree.

The glob translator is shared with `compile_glob`, which the file tools use for the
`pattern`/`glob` arguments the model gives.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.errors import TetherError

__all__ = [
    "Engine",
    "GitignoreRule",
    "PathFilter",
    "compile_glob",
    "git_ls_files",
    "is_ignored",
    "list_files",
    "parse_gitignore",
    "path_key",
    "walk_files",
]

Engine = Literal["auto", "git", "python"]
PathFilter = Callable[[str], bool]

# Variables that would point git at some other repository than the one at `cwd`.
_GIT_LOCATION_VARS = frozenset(
    ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
)

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "digit": "0-9",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "xdigit": "0-9a-fA-F",
}


def path_key(rel: str) -> tuple[str, ...]:
    """Sort key that keeps a directory's files together (`a/b` before `a.txt`)."""
    return tuple(rel.split("/"))


def list_files(root: Path, under: Path | None = None, *, engine: Engine = "auto") -> list[str]:
    """Files below `under` (default `root`), relative to `root`, sorted by `path_key`.

    `engine="auto"` uses git when `under` is inside a work tree and the walker
    otherwise; "git" raises `TetherError` when git cannot answer.
    """
    start = under if under is not None else root
    prefix = start.relative_to(root).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    if engine in ("auto", "git"):
        found = git_ls_files(start)
        if found is not None:
            return sorted((prefix + rel for rel in found), key=path_key)
        if engine == "git":
            raise TetherError(f"{start} is not inside a git work tree (or git is missing)")
    return walk_files(root, start)


def git_ls_files(directory: Path) -> list[str] | None:
    """Files git knows or would add below `directory`, relative to it; None if no repo."""
    git = shutil.which("git")
    if git is None:
        return None
    listed = _git(git, directory, "--cached", "--others", "--exclude-standard")
    if listed is None:
        return None
    deleted = set(_git(git, directory, "--deleted") or ())
    # A trailing "/" marks an untracked nested repository git does not descend into.
    return [p for p in dict.fromkeys(listed) if p not in deleted and not p.endswith("/")]


def _git(git: str, cwd: Path, *flags: str) -> list[str] | None:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    try:
        proc = subprocess.run(
            [git, "ls-files", "-z", *flags],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return [os.fsdecode(p) for p in proc.stdout.split(b"\0") if p]


@dataclass(frozen=True, slots=True)
class GitignoreRule:
    """One pattern line of a `.gitignore`, compiled.

    `basename` rules (no slash in the pattern) match a name at any depth; the
    others match the path relative to the directory holding the `.gitignore`.
    """

    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    basename: bool


_RuleSet = tuple[str, tuple[GitignoreRule, ...]]  # (directory relative to root, rules)


def parse_gitignore(text: str) -> tuple[GitignoreRule, ...]:
    """Compile a `.gitignore` file's lines; lines that cannot be compiled are skipped."""
    rules: list[GitignoreRule] = []
    for raw in text.splitlines():
        if not raw or raw.startswith("#"):
            continue
        line = raw.rstrip(" ")
        if line.endswith("\\") and len(line) < len(raw):
            line += " "  # "foo\ " keeps one escaped trailing space
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        try:
            regex = re.compile(_translate(line.lstrip("/"), braces=False))
        except (re.error, ValueError):
            continue
        rules.append(GitignoreRule(regex, negate, dir_only, basename=not anchored))
    return tuple(rules)


def is_ignored(rel: str, is_dir: bool, rule_sets: Iterable[_RuleSet]) -> bool:
    """Whether `rel` (relative to the root) is ignored; later, deeper rules win."""
    name = rel.rpartition("/")[2]
    ignored = False
    for base, rules in rule_sets:
        if base and not rel.startswith(base + "/"):
            continue
        sub = rel[len(base) + 1 :] if base else rel
        for rule in rules:
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(name if rule.basename else sub):
                ignored = not rule.negate
    return ignored


def walk_files(root: Path, under: Path | None = None) -> list[str]:
    """The pure-Python listing: walk `under`, pruning what `.gitignore` files exclude.

    As in git, an excluded directory is not entered, so a `!` rule cannot re-include
    a file inside it. `.git/info/exclude` counts; the user's global excludes do not.
    """
    start = under if under is not None else root
    rule_sets: tuple[_RuleSet, ...] = ()
    exclude = _load_rules(root / ".git" / "info" / "exclude", "")
    if exclude:
        rule_sets += (exclude,)
    rel_start = start.relative_to(root).as_posix()
    rel_start = "" if rel_start == "." else rel_start
    parts = rel_start.split("/") if rel_start else []
    for depth in range(len(parts)):  # ancestors' rules apply below them too
        base = "/".join(parts[:depth])
        found = _load_rules(root.joinpath(*parts[:depth], ".gitignore"), base)
        if found:
            rule_sets += (found,)
    files: list[str] = []
    pending: list[tuple[Path, str, tuple[_RuleSet, ...]]] = [(start, rel_start, rule_sets)]
    while pending:
        directory, rel_dir, inherited = pending.pop()
        own = _load_rules(directory / ".gitignore", rel_dir)
        active = (*inherited, own) if own else inherited
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_ignored(rel, is_dir, active):
                continue
            if is_dir:
                pending.append((Path(entry.path), rel, active))
            else:
                files.append(rel)
    return sorted(files, key=path_key)


def _load_rules(path: Path, base: str) -> _RuleSet | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    rules = parse_gitignore(text)
    return (base, rules) if rules else None


def compile_glob(pattern: str) -> PathFilter:
    """A predicate on relative POSIX paths for a user glob.

    Without a `/` the glob matches the file name at any depth (`*.py`); with one it
    matches the whole relative path (`src/*.py`, `src/**/*.py`). `*` and `?` stop at
    `/`, `**` spans directories, `[...]` and `{a,b}` work as in a shell.
    Raises `ValueError` for an unbalanced `{` or `}`.
    """
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/")
    if not text:
        raise ValueError("the glob is empty")
    basename = "/" not in text
    regex = re.compile(_translate(text.lstrip("/"), braces=True))
    if basename:
        return lambda rel: regex.fullmatch(rel.rpartition("/")[2]) is not None
    return lambda rel: regex.fullmatch(rel) is not None


def _translate(pattern: str, *, braces: bool) -> str:
    """Regex source for a slash-separated wildmatch pattern."""
    parts = pattern.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append(_segment(part, braces=braces))
        if not last:
            out.append("/")
    return "".join(out)


def _segment(seg: str, *, braces: bool) -> str:
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "\\" and i + 1 < len(seg):
            out.append(re.escape(seg[i + 1]))
            i += 2
            continue
        if c == "*":
            while i < len(seg) and seg[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "[":
            cls, end = _char_class(seg, i)
            out.append(cls if cls is not None else re.escape(c))
            i = end if cls is not None else i + 1
            continue
        if c == "?":
            out.append("[^/]")
        elif braces and c == "{":
            depth += 1
            out.append("(?:")
        elif braces and c == "," and depth:
            out.append("|")
        elif braces and c == "}":
            if not depth:
                raise ValueError(f"unbalanced '}}' in {seg!r}")
            depth -= 1
            out.append(")")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ValueError(f"unbalanced '{{' in {seg!r}")
    return "".join(out)


def _char_class(seg: str, start: int) -> tuple[str | None, int]:
    """Translate `[...]` at `start`; (None, start) when it is not a closed class."""
    i = start + 1
    negate = i < len(seg) and seg[i] in "!^"
    if negate:
        i += 1
    body: list[str] = []
    first = True
    while i < len(seg):
        c = seg[i]
        if c == "]" and not first:
            prefix = "[^/" if negate else "["
            return prefix + "".join(body) + "]", i + 1
        first = False
        if c == "[" and seg.startswith("[:", i):
            close = seg.find(":]", i + 2)
            name = seg[i + 2 : close] if close != -1 else ""
            if name in _POSIX_CLASSES:
                body.append(_POSIX_CLASSES[name])
                i = close + 2
                continue
        if c == "\\" and i + 1 < len(seg):
            body.append(re.escape(seg[i + 1]))
            i += 2
            continue
        body.append("-" if c == "-" else re.escape(c))
        i += 1
    return None, start

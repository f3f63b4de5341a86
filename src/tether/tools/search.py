"""`search_files`: regex search over the workspace, with ripgrep or pure Python.

Both engines search the same files (those `ignore.list_files` lists: `.gitignore`
honoured, `.git` skipped, binary files and symlinks skipped) and print the same
`path:line:text` lines in the same order, so the model cannot tell which ran and
tests can compare them byte for byte.
"""

from __future__ import annotations

import heapq
import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from tether.errors import ToolError
from tether.sandbox.workspace import Workspace
from tether.tools import ignore
from tether.tools.files import missing_path_error, resolve_path
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import check_text, decode, escape_surrogates, looks_binary

__all__ = ["MAX_MATCHES", "SearchEngine", "default_engine", "search", "search_files"]

SearchEngine = Literal["rg", "python"]
MAX_MATCHES = 200
MAX_LINE_CHARS = 300
_RG_LINE = re.compile(rb"(\d+):(.*)", re.DOTALL)
_SIMPLE_NAME_GLOB = re.compile(r"[\w*?.{},+-]+")  # means the same to rg as to us

_Match = tuple[tuple[str, ...], int, str]  # (path_key, line number, text)


@tool
def search_files(
    ctx: ToolContext, pattern: str, path: str | None = None, glob: str | None = None
) -> str:
    """Search file contents with a regular expression; print `path:line:text` per match.

    Also searches the overflow files that hold the full text of a cut tool output.
    Searches every file under `path` that .gitignore does not exclude (binary files
    skipped), sorted by path then line; at most 200 matching lines are shown. Regex
    syntax is Rust/Python style: escape `( ) [ ] { } . * + ? | \\` to match them
    literally, e.g. `def foo\\(`. Use list_files to find files by name and read_file
    to see the lines around a match.

    Args:
        pattern: Regular expression, matched line by line (case-sensitive; start
            it with `(?i)` to ignore case).
        path: Directory or file to search, relative to the workspace root
            (default: the root).
        glob: Only search files matching this glob, relative to `path`: '*.py'
            matches names at any depth, 'src/**/*.ts' whole paths; '{a,b}'
            alternatives work.
    """
    return search(
        ctx.workspace,
        pattern,
        path=path,
        glob=glob,
        engine=default_engine(),
        max_chars=ctx.output_limit,
        cancel=ctx.cancel,
    )


def default_engine() -> SearchEngine:
    """ripgrep when it is installed, else the pure-Python engine."""
    return "rg" if shutil.which("rg") else "python"


def search(
    workspace: Workspace,
    pattern: str,
    *,
    path: str | None = None,
    glob: str | None = None,
    engine: SearchEngine,
    max_chars: int = 0,
    cancel: threading.Event | None = None,
) -> str:
    """Run one search with the given engine and format the result for the model.

    `path` is relative to the workspace root; `max_chars` (0: no limit) bounds the
    output. Problems the model caused (bad regex or glob, missing path) raise
    `ToolError`. For a file `path` the glob is ignored.
    """
    if not pattern:
        raise ToolError("The pattern is empty; give a regular expression to search for.")
    check_text(pattern, "The pattern")
    if glob is not None:
        check_text(glob, "The glob")
    target = resolve_path(workspace, path if path else ".", reading=True)
    if not target.exists():
        raise missing_path_error(workspace, target)
    own = workspace.readable_root(target)  # an overflow file: searched from its own root
    base = workspace.root if own is None else own
    rel_target = target.relative_to(base).as_posix()
    is_dir = target.is_dir()
    glob_text = glob.strip() if glob and glob.strip() and is_dir else None
    keep = _glob_filter(glob_text, rel_target)
    if engine == "rg":
        found, total = _run_rg(base, pattern, rel_target, glob_text, keep, cancel, own is None)
    else:
        found, total = _run_python(base, target, pattern, keep, cancel, own is None)
    best = heapq.nsmallest(MAX_MATCHES, found)
    stopped = cancel is not None and cancel.is_set()
    if stopped and not best:
        return "[search interrupted before any match was found]"
    if not best:
        shown = workspace.relative(target)
        where = "the workspace" if shown == "." else escape_surrogates(shown)
        extra = f" (files matching {glob_text!r})" if glob_text else ""
        return f"No matches for {pattern!r} in {where}{extra}."
    lines: list[str] = []
    used = 0
    for key, number, text in best:
        if len(text) > MAX_LINE_CHARS:
            text = f"{text[:MAX_LINE_CHARS]}… [line cut: {len(text):,} characters]"
        rel = "/".join(key) if own is None else workspace.relative(own / "/".join(key))
        entry = f"{escape_surrogates(rel)}:{number}:{text}"
        if lines and max_chars > 0 and used + len(entry) + 1 > max_chars - 200:
            break
        lines.append(entry)
        used += len(entry) + 1
    if total > len(lines):
        lines.append(
            f"[{total - len(lines)} more matches not shown ({total} in all); "
            "narrow the pattern, path or glob]"
        )
    if stopped:
        lines.append("[search interrupted; results are incomplete]")
    return "\n".join(lines)


def _glob_filter(glob: str | None, rel_dir: str) -> ignore.PathFilter | None:
    """A predicate on workspace-relative paths: `glob` matched relative to `rel_dir`."""
    if glob is None:
        return None
    try:
        matches = ignore.compile_glob(glob)
    except (ValueError, re.error) as exc:
        raise ToolError(f"Invalid glob {glob!r}: {exc}.") from None
    cut = 0 if rel_dir == "." else len(rel_dir) + 1
    return lambda rel: matches(rel[cut:])


class _Collector:
    """Matches seen so far: all counted, only the smallest few kept (bounded memory)."""

    __slots__ = ("found", "total")

    def __init__(self) -> None:
        self.found: list[_Match] = []
        self.total = 0

    def add(self, rel: str, number: int, text: str) -> None:
        self.total += 1
        self.found.append((ignore.path_key(rel), number, text))
        if len(self.found) > 4 * MAX_MATCHES:
            self.found = heapq.nsmallest(MAX_MATCHES, self.found)


def _run_python(
    root: Path,
    target: Path,
    pattern: str,
    keep: ignore.PathFilter | None,
    cancel: threading.Event | None,
    ignoring: bool = True,
) -> tuple[list[_Match], int]:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {pattern!r}: {exc}.") from None
    if target.is_dir():
        listed = ignore.list_files(root, target) if ignoring else ignore.walk_files(root, target)
        candidates = [rel for rel in listed if keep is None or keep(rel)]
    else:
        candidates = [target.relative_to(root).as_posix()]
    seen = _Collector()
    for rel in candidates:
        if cancel is not None and cancel.is_set():
            break
        for number, line in _matching_lines(root / rel, regex):
            seen.add(rel, number, line)
    return seen.found, seen.total


def _matching_lines(file: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        if not stat.S_ISREG(os.lstat(file).st_mode):
            return  # symlinks are not followed (rg does not either); FIFOs would hang
        data = file.read_bytes()
    except OSError:
        return
    if looks_binary(data):
        return
    for number, line in enumerate(decode(data).display.split("\n"), start=1):
        text = line.removesuffix("\r")
        if regex.search(text):
            yield number, text


def _run_rg(
    root: Path,
    pattern: str,
    rel_target: str,
    glob: str | None,
    keep: ignore.PathFilter | None,
    cancel: threading.Event | None,
    ignoring: bool = True,
) -> tuple[list[_Match], int]:
    cmd = [shutil.which("rg") or "rg", *_RG_FLAGS]
    if not ignoring:  # tether's own files: no ignore file above them may hide one
        cmd.append("--no-ignore")
    if glob is not None and _SIMPLE_NAME_GLOB.fullmatch(glob) and glob.count("{") <= 1:
        # Prefilter by name with a file type: unlike --glob, a type never overrides
        # .gitignore. Our own filter below stays the authority.
        cmd += [f"--type-add=tetherglob:{glob}", "--type=tetherglob"]
    cmd += ["--regexp", pattern, "--", rel_target]
    try:
        proc = subprocess.Popen(
            cmd, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise ToolError(f"ripgrep could not start: {exc}; try again or use bash grep.") from None
    assert proc.stdout is not None and proc.stderr is not None
    seen = _Collector()
    try:
        for raw in proc.stdout:
            if cancel is not None and cancel.is_set():
                break
            name, sep, rest = raw.partition(b"\0")
            parsed = _RG_LINE.fullmatch(rest.rstrip(b"\n")) if sep else None
            if parsed is None:
                continue  # e.g. rg's note that a binary file matched
            rel = os.fsdecode(name).removeprefix("./")
            if keep is None or keep(rel):
                text = parsed.group(2).decode("utf-8", "replace").removesuffix("\r")
                seen.add(rel, int(parsed.group(1)), text)
        errors = proc.stderr.read().decode("utf-8", "replace").strip()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if proc.returncode == 2 and not seen.total and errors:
        if "glob" in errors:
            raise ToolError(f"Invalid glob {glob!r} (ripgrep): {errors}")
        raise ToolError(f"Invalid regular expression {pattern!r} (ripgrep): {errors}")
    return seen.found, seen.total


_RG_FLAGS = (
    "--no-config",
    "--no-heading",
    "--line-number",
    "--with-filename",
    "--null",
    "--color=never",
    "--hidden",
    "--no-require-git",
    "--no-ignore-dot",
    "--no-messages",
    "--crlf",
    "--glob=!.git",
)

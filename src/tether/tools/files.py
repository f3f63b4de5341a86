"""The file tools: read a file with line numbers, write a whole file, list files.

Every path goes through `resolve_path` (and so `Workspace.resolve`), so symlinks
and `..` cannot lead outside the workspace; every path shown is relative to the
workspace root, with the bytes of a name that is not valid UTF-8 shown as `\\xNN`
(`shown_path`). Such an escaped name, given back, finds the file again.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from tether.errors import ToolError
from tether.sandbox.workspace import Workspace
from tether.tools import bigread, ignore
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import (
    BINARY_SNIFF_BYTES,
    TextFile,
    atomic_write,
    check_text,
    count_lines,
    decode,
    escape_surrogates,
    looks_binary,
    split_lines,
    to_newline,
)

__all__ = [
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "MAX_LIST",
    "list_files",
    "missing_path_error",
    "read_file",
    "regular_file",
    "resolve_path",
    "shown_path",
    "write_file",
]

MAX_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_LIST = 1000
MAX_READ_BYTES = 64 * 1024 * 1024

# How `escape_surrogates` shows an undecodable byte of a name (always 0x80 or above).
_ESCAPED_BYTE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


@tool
def read_file(
    ctx: ToolContext, path: str, offset: int | None = None, limit: int | None = None
) -> str:
    """Read a text file in the workspace, with line numbers like `cat -n`.

    Also reads the overflow files that hold the full text of a cut tool output.
    Shows at most 2000 lines per call; lines over 2000 characters are cut. The
    first line says which lines are shown of how many; when there is more, the last
    line says which offset to read next. Binary files are not shown (inspect them
    with bash, e.g. `file` or `xxd | head`). To find text across files use
    search_files; to see which files exist use list_files.

    Args:
        path: File path, relative to the workspace root.
        offset: First line to show, 1-based (default 1).
        limit: Number of lines to show (default and maximum 2000).
    """
    target = regular_file(ctx, path, purpose="read")
    rel = shown_path(ctx.workspace, target)
    start = 1 if offset is None or offset == 0 else offset
    if start < 0:
        raise ToolError(f"offset={offset} is invalid: lines are numbered from 1.")
    if limit is not None and limit <= 0:
        raise ToolError(f"limit={limit} is invalid: give a positive number of lines.")
    count = MAX_LINES if limit is None else min(limit, MAX_LINES)
    if target.stat().st_size > MAX_READ_BYTES:
        return _read_large(target, rel, start, count, limit, ctx.output_limit)
    data = _read_bytes(target, rel)
    if not data:
        return f"{rel} is empty (0 bytes)."
    if looks_binary(data):
        return _binary(rel, len(data))
    text_file = decode(data)
    lines = split_lines(text_file.display)
    total = len(lines)
    _check_offset(start, total, rel)
    shown = [(line, len(line)) for line in lines[start - 1 : start - 1 + count]]
    view = _View(rel, text_file.description, total, "characters")
    return _numbered_view(view, shown, start, limit, ctx.output_limit)


def _read_large(
    target: Path, rel: str, start: int, count: int, limit: int | None, budget: int
) -> str:
    """read_file for a file too big to load (a huge overflow file): streamed."""
    try:
        with target.open("rb") as handle:
            sniff = handle.read(BINARY_SNIFF_BYTES)
        if looks_binary(sniff):
            return _binary(rel, target.stat().st_size)
        total = bigread.count_lines(target)
        _check_offset(start, total, rel)
        shown = bigread.window(target, start, count, 4 * MAX_LINE_CHARS)
    except OSError as exc:
        raise ToolError(f"Cannot read {rel}: {exc.strerror or exc}.") from None
    view = _View(rel, "read in pieces: too large to load whole", total, "bytes")
    return _numbered_view(view, shown, start, limit, budget)


def _binary(rel: str, size: int) -> str:
    return (
        f"{rel} is a binary file ({size:,} bytes); it cannot be shown as text. "
        f"Inspect it with bash, e.g. `file {rel}` or `xxd {rel} | head`."
    )


def _check_offset(start: int, total: int, rel: str) -> None:
    if start > total:
        raise ToolError(
            f"offset={start} is past the end of {rel}, which has {total} line"
            f"{'s' if total != 1 else ''}. Use an offset from 1 to {total}."
        )


@dataclass(frozen=True, slots=True)
class _View:
    rel: str
    description: str
    total: int
    unit: str  # what a long line's length is counted in


def _numbered_view(
    view: _View,
    shown: list[tuple[str, int]],
    start: int,
    limit: int | None,
    budget: int,
) -> str:
    """`shown`: (line, its full length) for the lines from `start` on to show."""
    total = view.total
    body: list[str] = []
    used = 0
    cut_long = 0
    end = start - 1
    stopped_by_budget = False
    for number, (line, length) in enumerate(shown, start=start):
        if length > MAX_LINE_CHARS or len(line) > MAX_LINE_CHARS:
            line = f"{line[:MAX_LINE_CHARS]}… [line cut: {length:,} {view.unit}]"
            cut_long += 1
        entry = f"{number:6d}\t{line}"
        if body and budget > 0 and used + len(entry) + 1 > budget - 300:
            stopped_by_budget = True
            break
        body.append(entry)
        used += len(entry) + 1
        end = number
    notes = [view.description] if view.description else []
    if cut_long:
        notes.append(f"{cut_long} long line{'s' if cut_long != 1 else ''} cut")
    header = f"{view.rel}: lines {start}-{end} of {total}"
    if notes:
        header += f" ({'; '.join(notes)})"
    out = [header, *body]
    if end < total:
        why = "output limit reached; " if stopped_by_budget else ""
        if limit is not None and limit > MAX_LINES and not stopped_by_budget:
            why = f"limit capped at {MAX_LINES}; "
        out.append(
            f"[{why}{total - end} more line{'s' if total - end != 1 else ''}: "
            f"call read_file with offset={end + 1} to continue]"
        )
    return "\n".join(out)


@tool
def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Create a file, or replace a whole file, with the given content.

    Missing parent directories are created; the write is atomic. Overwriting keeps
    the file's permissions, its CRLF line endings and its BOM. To change part of an
    existing file use str_replace instead: it is cheaper and cannot drop lines.

    Args:
        path: File path, relative to the workspace root.
        content: The complete new content of the file.
    """
    target = resolve_path(ctx.workspace, path)
    rel = shown_path(ctx.workspace, target)
    check_text(content, "The content", allow_nul=True)
    old: TextFile | None = None
    existed = False
    try:
        info = target.stat()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ToolError(f"Cannot write {rel}: {exc.strerror}.") from None
    else:
        existed = True
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{rel} is a directory; give a file path to write.")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{rel} is not a regular file (a FIFO, socket or device).")
        data = _read_bytes(target, rel)
        if not looks_binary(data):
            old = decode(data)
    text = content
    notes: list[str] = []
    style = TextFile(text="") if old is None else old
    if old is not None and old.newline == "\r\n" and "\n" in text and "\r\n" not in text:
        text = to_newline(text, "\r\n")
        notes.append("kept CRLF line endings")
    if old is not None and old.bom:
        notes.append("kept BOM")
    try:
        atomic_write(target, style.encode(text))
    except OSError as exc:
        raise ToolError(f"Cannot write {rel}: {exc.strerror or exc}.") from None
    lines = count_lines(text)
    summary = f"{lines} line{'s' if lines != 1 else ''}"
    if old is not None:
        summary += f"; was {count_lines(old.text)}"
    if notes:
        summary += "; " + ", ".join(notes)
    return f"{'Overwrote' if existed else 'Created'} {rel} ({summary})."


@tool
def list_files(ctx: ToolContext, path: str | None = None, pattern: str | None = None) -> str:
    """List the files under a directory, recursively, one path per line.

    Skips `.git` and whatever `.gitignore` excludes; directories are not listed on
    their own. Paths are relative to the workspace root and sorted; at most 1000
    are shown, so narrow a big listing with `path` or `pattern`. To search file
    contents use search_files.

    Args:
        path: Directory to list, relative to the workspace root (default: the root).
        pattern: Glob on paths relative to `path`. Without a '/' it matches file
            names at any depth ('*.py', 'test_*'); with one it matches the whole
            relative path ('src/*.py' is one level, 'src/**/*.py' any depth).
            '{a,b}' alternatives work.
    """
    directory = resolve_path(ctx.workspace, path if path is not None else ".", reading=True)
    rel_dir = ctx.workspace.relative(directory)
    if not directory.exists():
        raise missing_path_error(ctx.workspace, directory)
    if not directory.is_dir():
        raise ToolError(
            f"{escape_surrogates(rel_dir)} is a file, not a directory; read it with read_file."
        )
    own = ctx.workspace.readable_root(directory)
    if own is None:
        files = ignore.list_files(ctx.workspace.root, directory)
    else:  # overflow files: walked from their own root, shown as read_file takes them
        files = [ctx.workspace.relative(own / f) for f in ignore.walk_files(own, directory)]
    where = "the workspace root" if rel_dir == "." else f"{escape_surrogates(rel_dir)}/"
    shown = files
    if pattern is not None and pattern.strip():
        check_text(pattern, "The pattern")
        try:
            matches = ignore.compile_glob(pattern)
        except (ValueError, RuntimeError) as exc:
            raise ToolError(f"Invalid pattern {pattern!r}: {exc}.") from None
        cut = 0 if rel_dir == "." else len(rel_dir) + 1
        shown = [f for f in files if matches(f[cut:])]
        if not shown:
            return (
                f"No files under {where} match {pattern!r} ({len(files)} files there in "
                "total). Without a '/' the pattern matches file names; to list a "
                "directory, pass it as `path`."
            )
    if not shown:
        with os.scandir(directory) as entries:
            has_entries = any(True for _ in entries)
        if has_entries:
            return (
                f"No files under {where}: everything there is ignored by .gitignore or "
                "is an empty directory. Use bash (`ls -la`) to see ignored files."
            )
        return f"{where} is empty."
    out: list[str] = []
    used = 0
    for entry in map(escape_surrogates, shown[:MAX_LIST]):
        if ctx.output_limit > 0 and used + len(entry) + 1 > ctx.output_limit - 200:
            break
        out.append(entry)
        used += len(entry) + 1
    if len(out) < len(shown):
        out.append(f"... and {len(shown) - len(out)} more; narrow with pattern or path")
    return "\n".join(out)


def regular_file(ctx: ToolContext, path: str, *, purpose: str) -> Path:
    """Resolve `path` and insist it is an existing regular file (FIFOs would hang).

    Only `purpose="read"` reaches the workspace's readable roots (overflow files)."""
    target = resolve_path(ctx.workspace, path, reading=purpose == "read")
    rel = shown_path(ctx.workspace, target)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise missing_path_error(ctx.workspace, target) from None
    except OSError as exc:
        raise ToolError(f"Cannot {purpose} {rel}: {exc.strerror}.") from None
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{rel} is a directory, not a file; use list_files to see its files.")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(
            f"{rel} is not a regular file (a FIFO, socket or device); "
            f"the file tools cannot {purpose} it."
        )
    return target


def resolve_path(workspace: Workspace, path: str, *, reading: bool = False) -> Path:
    """`Workspace.resolve` for a path the model sent, with model mistakes as ToolErrors.

    A NUL byte or a lone surrogate is refused with a clear message (the OS would
    raise ValueError). A name shown with `\\xNN` escapes (see `shown_path`) that
    does not exist literally is looked up again with those bytes, so the model can
    open a file whose name is not valid UTF-8 by quoting what list_files showed.
    `reading=True` is for the read-only tools: see `Workspace.resolve`.
    """
    check_text(
        path,
        "The path",
        hint="Write a byte of a file name that is not UTF-8 as \\xNN, as list_files shows it.",
    )
    target = _resolve(workspace, path, reading)
    if _ESCAPED_BYTE.search(path) and not os.path.lexists(target):
        raw = _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), path)
        try:
            alternative = _resolve(workspace, raw, reading)
        except ToolError:
            return target
        if os.path.lexists(alternative):
            return alternative
    return target


def _resolve(workspace: Workspace, path: str, reading: bool) -> Path:
    try:
        return workspace.resolve(path, reading=reading)
    except ToolError as exc:  # its message may quote a real path with undecodable bytes
        raise ToolError(escape_surrogates(str(exc))) from None


def shown_path(workspace: Workspace, target: Path) -> str:
    """`target` as the model sees it: workspace-relative, undecodable bytes as `\\xNN`."""
    return escape_surrogates(workspace.relative(target))


def missing_path_error(workspace: Workspace, target: Path) -> ToolError:
    """A "not found" error for `target` (a resolved path) naming likely intended paths."""
    rel = shown_path(workspace, target)
    parent = target.parent
    candidates: list[str] = []
    if parent.is_dir():
        try:
            with os.scandir(parent) as entries:
                names = sorted(entry.name for entry in entries)
        except OSError:
            names = []
        close = difflib.get_close_matches(target.name, names, n=5, cutoff=0.6)
        candidates = [shown_path(workspace, parent / name) for name in close]
    if not candidates:
        same_name = [
            f for f in ignore.list_files(workspace.root) if f.rpartition("/")[2] == target.name
        ]
        candidates = [escape_surrogates(name) for name in same_name[:5]]
    if not parent.is_dir():
        lead = f"{rel} does not exist (there is no directory {shown_path(workspace, parent)})."
    else:
        lead = f"{rel} does not exist."
    if candidates:
        return ToolError(f"{lead} Did you mean: {', '.join(candidates)}?")
    return ToolError(f"{lead} Use list_files to see which files exist.")


def _read_bytes(target: Path, rel: str) -> bytes:
    try:
        return target.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {rel}: {exc.strerror or exc}.") from None

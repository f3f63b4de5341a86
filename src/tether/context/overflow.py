"""Overflow files: the full text of a tool output too long to show the model.

The model sees a head and a tail; the whole output goes to
`<session>/overflow/<seq>-<tool>.txt`, so nothing the agent ran is lost and the
model can page through the rest with read_file or search_files. Names carry a
sequence number (4+ digits) so a person finds them in order; a number is claimed
with `O_EXCL`, so concurrent calls (even from another process) never share a file.
The directory is created on first use, private to the user (0700).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import BinaryIO

from tether.tools.textio import fsync_dir

__all__ = ["create", "write_text"]

_NAME = re.compile(r"^(\d+)-")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_CHUNK = 1 << 20  # characters encoded at a time, so a huge text is not copied whole

_lock = threading.Lock()
_next: dict[Path, int] = {}  # next sequence number per directory, once scanned


def create(directory: Path, tool: str) -> tuple[Path, BinaryIO]:
    """A new, empty overflow file for `tool`, opened for binary writing.

    The caller writes, then closes (after `os.fsync`, for the nothing-is-lost promise).
    OSError (disk full, no permission) propagates: the caller falls back to cutting.
    """
    _ensure_dir(directory)
    name = _UNSAFE.sub("_", tool).strip("._")[:40] or "tool"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(10_000):
        with _lock:
            seq = _next.get(directory) or _first_free(directory)
            _next[directory] = seq + 1
        path = directory / f"{seq:04d}-{name}.txt"
        try:
            fd = os.open(path, flags, 0o600)
        except FileExistsError:  # taken by another process: rescan past it
            with _lock:
                _next.pop(directory, None)
            continue
        fsync_dir(directory)
        return path, os.fdopen(fd, "wb")
    raise FileExistsError(f"no free overflow file name in {directory}")


def write_text(directory: Path, tool: str, text: str) -> Path:
    """Save `text` (UTF-8) in a new overflow file, complete and fsynced; its path."""
    path, handle = create(directory, tool)
    try:
        with handle:
            for start in range(0, len(text), _CHUNK):
                handle.write(_encode(text[start : start + _CHUNK]))
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")  # undecodable bytes, as they were
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return text.encode("utf-8", "replace")


def _ensure_dir(directory: Path) -> None:
    if directory.is_dir():
        return
    for parent in reversed(directory.parents):  # tether's state: private all the way
        if not parent.exists():
            parent.mkdir(mode=0o700, exist_ok=True)
    directory.mkdir(mode=0o700, exist_ok=True)


def _first_free(directory: Path) -> int:
    """One past the highest sequence number already in `directory` (1 when empty)."""
    highest = 0
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                match = _NAME.match(entry.name)
                if match:
                    highest = max(highest, int(match.group(1)))
    except OSError:
        pass
    return highest + 1

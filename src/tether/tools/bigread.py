"""A window of lines from a file too large to load whole, in bounded memory.

Overflow files of huge command outputs (a gigabyte of log) must still be readable
page by page: lines are counted, skipped and read in streaming passes, and a long
line is read only as far as it is shown. Lines are numbered as `split_lines` does:
split at "\\n", a final newline adds no line, a "\\r" before it is dropped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

__all__ = ["count_lines", "window"]

_CHUNK = 1 << 20


def count_lines(path: Path) -> int:
    """How many lines read_file numbers in `path` (a last line without newline counts)."""
    newlines = 0
    last = b""
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            newlines += chunk.count(b"\n")
            last = chunk[-1:]
    return newlines + (1 if last and last != b"\n" else 0)


def window(path: Path, start: int, count: int, max_bytes: int) -> list[tuple[str, int]]:
    """Lines `start`.. (1-based, at most `count`) as (text, full length in bytes); the
    text is decoded from at most `max_bytes` of the line (U+FFFD for bad bytes)."""
    found: list[tuple[str, int]] = []
    with path.open("rb") as handle:
        if not _skip_lines(handle, start - 1):
            return found
        while len(found) < count:
            raw = handle.readline(max_bytes)
            if not raw:
                break
            length = len(raw)
            ended = raw.endswith(b"\n")
            while not ended:  # a line longer than shown, or the last one: pass its rest
                more = handle.readline(_CHUNK)
                if not more:
                    break
                length += len(more)
                ended = more.endswith(b"\n")
            if ended:
                length -= 1
            raw = raw.removesuffix(b"\n")
            if ended and length == len(raw) and raw.endswith(b"\r"):
                raw, length = raw[:-1], length - 1
            found.append((raw.decode("utf-8", "replace"), length))
    return found


def _skip_lines(handle: BinaryIO, lines: int) -> bool:
    """Move past `lines` newlines; False if the file ends first."""
    while lines > 0:
        chunk = handle.read(_CHUNK)
        if not chunk:
            return False
        newlines = chunk.count(b"\n")
        if newlines < lines:
            lines -= newlines
            continue
        at = -1
        for _ in range(lines):
            at = chunk.index(b"\n", at + 1)
        handle.seek(at + 1 - len(chunk), os.SEEK_CUR)
        return True
    return True

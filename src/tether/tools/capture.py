"""A command's output stream, bounded in memory and, given a directory, kept whole.

Memory holds the first and last `KEEP_BYTES` only, so a runaway command cannot fill
it. Without an overflow directory the middle of a long stream is dropped (counted).
With one, once the stream passes `spill_after` bytes, everything so far and every
later chunk is written to an overflow file, so the file holds exactly the bytes the
command wrote while memory stays at head + tail.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from tether.context import overflow

__all__ = ["KEEP_BYTES", "Capture", "Spilled"]

KEEP_BYTES = 1 << 20  # of output kept in memory at each end


@dataclass(frozen=True, slots=True)
class Spilled:
    """A stream saved whole: where, how big, how many lines (as read_file counts
    them), its decoded head and tail (the middle is only in the file; when nothing
    was dropped from memory `tail` continues `head` exactly), and any write error."""

    path: Path
    size: int
    newlines: int
    lines: int
    head: str
    tail: str
    dropped: bool
    error: str | None = None


class Capture:
    """The first and last `KEEP_BYTES` of a stream, the rest counted or spilled."""

    __slots__ = (
        "_directory",
        "_file",
        "_spill_after",
        "_tool",
        "dropped",
        "error",
        "head",
        "last",
        "newlines",
        "path",
        "tail",
        "total",
    )

    def __init__(
        self,
        directory: Path | None = None,
        *,
        tool: str = "bash",
        spill_after: int = 2 * KEEP_BYTES,
    ) -> None:
        """`spill_after` is capped at 2 * KEEP_BYTES: up to then memory holds every
        byte, so the file can start with all of them."""
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.total = 0
        self.newlines = 0
        self.last = b""
        self.path: Path | None = None
        self.error: str | None = None
        self._directory = directory
        self._tool = tool
        self._spill_after = max(0, min(spill_after, 2 * KEEP_BYTES))
        self._file: BinaryIO | None = None

    def add(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._file is None and self._should_spill(len(chunk)):
            self._open()
            self._write(bytes(self.head) + bytes(self.tail))
        if self._file is not None:
            self._write(chunk)
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.last = chunk[-1:]
        room = KEEP_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - KEEP_BYTES
        if excess > KEEP_BYTES:  # trim in big steps: amortised O(1) per byte
            del self.tail[:excess]
            self.dropped += excess

    def close(self) -> None:
        """Finish the overflow file (flushed and fsynced); safe to call twice."""
        handle, self._file = self._file, None
        if handle is None:
            return
        try:
            handle.flush()
            os.fsync(handle.fileno())
        except OSError as exc:
            self.error = self.error or _describe(exc)
        finally:
            try:
                handle.close()
            except OSError as exc:
                self.error = self.error or _describe(exc)

    @property
    def dropped_total(self) -> int:
        return self.dropped + max(len(self.tail) - KEEP_BYTES, 0)

    def spilled(self) -> Spilled | None:
        """The saved stream, once `close` ran; None when nothing was spilled."""
        if self.path is None:
            return None
        dropped = self.dropped_total > 0
        if dropped:
            head = bytes(self.head).decode("utf-8", "replace")
            tail = bytes(self.tail[len(self.tail) - KEEP_BYTES :]).decode("utf-8", "replace")
        else:  # decoded as one, so a character split between head and tail survives
            head, tail = bytes(self.head + self.tail).decode("utf-8", "replace"), ""
        lines = self.newlines + (0 if self.last == b"\n" or not self.total else 1)
        return Spilled(self.path, self.total, self.newlines, lines, head, tail, dropped, self.error)

    def text(self) -> str:
        """The kept bytes as text; undecodable bytes become U+FFFD."""
        dropped = self.dropped_total
        if not dropped:
            return bytes(self.head + self.tail).decode("utf-8", "replace")
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail[len(self.tail) - KEEP_BYTES :]).decode("utf-8", "replace")
        if self.path is not None:
            saved = f"; all of it is saved in {self.path}"
        elif self.error is not None:
            saved = f"; it could not be saved: {self.error}"
        else:
            saved = ""
        marker = f"\n[... {dropped:,} bytes of output dropped from the middle{saved} ...]\n"
        return head + marker + tail

    def _should_spill(self, incoming: int) -> bool:
        if self._directory is None or self.error is not None or self.path is not None:
            return False
        return self.total + incoming > self._spill_after

    def _open(self) -> None:
        assert self._directory is not None
        try:
            self.path, self._file = overflow.create(self._directory, self._tool)
        except OSError as exc:
            self.error = _describe(exc)

    def _write(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            self._file.write(data)
        except OSError as exc:  # e.g. disk full: keep what is written, say so
            self.error = _describe(exc)
            self.close()


def _describe(exc: OSError) -> str:
    return exc.strerror or str(exc)

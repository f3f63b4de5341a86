"""The append-only transcript of a session: one JSON object per line.

Line one is a header (versions, model, endpoint without secrets, workspace,
settings); then one line per message and tool result, plus entries for limits and
the end of each run. Lines are written as they happen and fsynced once per turn,
so the cost per turn does not grow with the session and a crash loses at most the
turn in flight. History is never rewritten.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tether.errors import ConfigError
from tether.messages import Message
from tether.observe.redact import Redactor

__all__ = ["TRANSCRIPT_VERSION", "Transcript", "new_session_id", "read_transcript"]

TRANSCRIPT_VERSION = 1


def new_session_id() -> str:
    """Sortable by start time, unique enough for one user's machine."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Transcript:
    """Appends entries to `sessions/<id>.jsonl` under the state directory."""

    __slots__ = ("_file", "_redact", "path", "session_id")

    def __init__(self, path: Path, session_id: str, redact: Redactor) -> None:
        self.path = path
        self.session_id = session_id
        self._redact = redact
        self._file: IO[str] | None = None

    @classmethod
    def create(
        cls, home: Path, session_id: str, header: dict[str, Any], redact: Redactor
    ) -> Transcript:
        directory = home / "sessions"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{session_id}.jsonl"
            transcript = cls(path, session_id, redact)
            # backslashreplace: a stray lone surrogate must never make a write fail.
            transcript._file = path.open("x", encoding="utf-8", errors="backslashreplace")
        except OSError as exc:
            raise ConfigError(
                f"Cannot write the session transcript under {directory}: {exc.strerror}. "
                "Set TETHER_HOME to a writable directory."
            ) from None
        transcript.append({"type": "header", "version": TRANSCRIPT_VERSION, **header})
        return transcript

    def append(self, entry: dict[str, Any]) -> None:
        """Write one line now; it reaches the disk for sure at the next `sync`."""
        if self._file is None:
            return
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        self._file.write(self._redact(line) + "\n")
        self._file.flush()

    def message(self, message: Message, **extra: Any) -> None:
        self.append({"type": "message", "message": message.to_dict(), **extra})

    def sync(self) -> None:
        """Flush to the disk: called at the end of every turn."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None


def read_transcript(path: Path) -> Iterator[dict[str, Any]]:
    """The entries of a transcript; a torn last line (a crash mid-write) is skipped."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                return
            yield json.loads(line)

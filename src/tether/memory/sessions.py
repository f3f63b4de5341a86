"""The append-only transcript of a session: one JSON object per line.

Line one is a header (versions, model, endpoint without secrets, workspace,
settings, the system prompt); then one line per message and tool result, plus
entries for limits and the end of each run. Lines are written as they happen and
fsynced once per turn, so the cost per turn does not grow with the session and a
crash loses at most the turn in flight. History is never rewritten.

One process appends to a transcript at a time: it holds an exclusive `flock` on the
file for as long as it has it open (the kernel drops it when the process dies, even
by kill -9). A crash can leave a torn last line; resuming cuts that fragment (it was
never a whole entry) before appending, and readers skip it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tether.errors import ConfigError
from tether.messages import Message
from tether.observe.redact import Redactor

if TYPE_CHECKING:
    from tether.memory.resume import Resumed

__all__ = [
    "TRANSCRIPT_VERSION",
    "SessionBusy",
    "Transcript",
    "is_locked",
    "new_session_id",
    "read_transcript",
    "record_resume",
    "transcript_path",
]

TRANSCRIPT_VERSION = 1


class SessionBusy(ConfigError):
    """Another process is appending to this session."""


_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def transcript_path(home: Path, session_id: str) -> Path:
    return home / "sessions" / f"{session_id}.jsonl"


def _lock(handle: IO[str], session_id: str) -> None:
    """Take the session, or say who has it. A listing's brief shared probe
    (`is_locked`) is waited out: only a process that keeps the lock is refused."""
    for attempt in range(10):
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if attempt < 9:
                time.sleep(0.02)
    handle.close()
    raise SessionBusy(
        f"Session {session_id} is in use by another tether process; wait for it to "
        "end (or stop it), or start a new session."
    ) from None


def is_locked(path: Path) -> bool:
    """Whether some process holds the session (for listings; racy by nature)."""
    try:
        with path.open("rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    except OSError:
        return False
    return False


def new_session_id() -> str:
    """Sortable by start time, unique enough for one user's machine."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class Transcript:
    """Appends entries to `sessions/<id>.jsonl` under the state directory."""

    __slots__ = ("_file", "_lock", "_redact", "path", "session_id")

    def __init__(self, path: Path, session_id: str, redact: Redactor) -> None:
        self.path = path
        self.session_id = session_id
        self._redact = redact
        self._file: IO[str] | None = None
        self._lock = threading.Lock()  # subagents finishing at once append from threads

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
            _lock(transcript._file, session_id)
        except OSError as exc:
            raise ConfigError(
                f"Cannot write the session transcript under {directory}: {exc.strerror}. "
                "Set TETHER_HOME to a writable directory."
            ) from None
        transcript.append({"type": "header", "version": TRANSCRIPT_VERSION, **header})
        return transcript

    @classmethod
    def reopen(
        cls, home: Path, session_id: str, redact: Redactor, *, workspace: Path
    ) -> tuple[Transcript, int]:
        """Open an existing transcript of `workspace` to append to it, locked; and how
        many bytes of a torn last line (a crash mid-write) were cut first."""
        if not _SESSION_ID.fullmatch(session_id) or ".." in session_id:
            raise ConfigError(
                f"{session_id!r} is not a session id (like 20261130-160909-f01e3b); "
                "`tether sessions` lists them."
            )
        path = transcript_path(home, session_id)
        try:
            handle = path.open("r+", encoding="utf-8", errors="backslashreplace")
        except FileNotFoundError:
            raise ConfigError(
                f"No session {session_id} under {home / 'sessions'}; `tether sessions` "
                "lists the sessions of this workspace."
            ) from None
        except OSError as exc:
            raise ConfigError(f"Cannot open the transcript {path}: {exc.strerror}.") from None
        _lock(handle, session_id)
        header = next(read_transcript(path), {})
        if header.get("parent_session"):
            handle.close()
            raise ConfigError(
                f"Session {session_id} is a subagent's, part of session "
                f"{header['parent_session']}; resume that one."
            )
        if header.get("workspace") != str(workspace):
            handle.close()
            raise ConfigError(
                f"Session {session_id} ran in {header.get('workspace')}, not in {workspace}; "
                "resume it from there (or with -C)."
            )
        cut = _cut_torn_tail(handle.fileno())
        handle.seek(0, os.SEEK_END)
        transcript = cls(path, session_id, redact)
        transcript._file = handle
        return transcript, cut

    def append(self, entry: dict[str, Any]) -> None:
        """Write one line now; it reaches the disk for sure at the next `sync`."""
        line = self._redact(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        with self._lock:
            if self._file is None:  # closed (a subagent abandoned to its thread ends late)
                return
            self._file.write(line + "\n")
            self._file.flush()

    def message(self, message: Message, **extra: Any) -> None:
        self.append({"type": "message", "message": message.to_dict(), **extra})

    def sync(self) -> None:
        """Flush to the disk: called at the end of every turn."""
        with self._lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                self._file = None


def _cut_torn_tail(fd: int) -> int:
    """Truncate after the last newline; the bytes cut (0 when the file ends cleanly)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    window = min(size, 1 << 20)
    end = size
    while end > 0:
        start = max(0, end - window)
        os.lseek(fd, start, os.SEEK_SET)
        chunk = os.read(fd, end - start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            keep = start + newline + 1
            break
        end = start
    else:
        keep = 0
    if keep < size:
        os.ftruncate(fd, keep)
        os.fsync(fd)
    return size - keep


def read_transcript(path: Path) -> Iterator[dict[str, Any]]:
    """The entries of a transcript. A torn last line (a crash mid-write) and any line
    that is not a JSON object are skipped: a damaged line costs that line only."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.endswith("\n"):
                return
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                yield entry


def record_resume(transcript: Transcript, resumed: Resumed, *, torn: int, model: str) -> None:
    """A resume on record: the entry itself, the context whole when damaged lines made
    it differ from a replay (later stubs count positions in it), and the results that
    close the calls the ended process left open."""
    transcript.append(
        {
            "type": "resume",
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "pid": os.getpid(),
            "model": model,
            "torn_bytes": torn,
            "closed": [m.tool_call_id for m in resumed.closed],
        }
    )
    if resumed.repaired:
        count = len(resumed.messages) - len(resumed.closed)
        repaired = [m.to_dict() for m in resumed.messages[:count]]
        transcript.append({"type": "context", "action": "rebase", "messages": repaired})
    for message in resumed.closed:
        transcript.message(message)
    transcript.sync()

"""The sessions of a workspace, as `tether sessions` lists them and `--continue` picks one.

Each transcript is read once, line by line: its header says where it ran, its
entries how far it got. A session is `running` while a process holds it, else
what its last run ended with, or `interrupted` when it has messages after its last
`run_end` (the process died mid-run: `--continue` picks it up).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tether.memory.sessions import is_locked, read_transcript

__all__ = ["SessionInfo", "latest_session", "list_sessions"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    path: Path
    created: str
    model: str
    first_request: str
    turns: int
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "path": str(self.path),
            "created": self.created,
            "model": self.model,
            "first_request": self.first_request,
            "turns": self.turns,
            "status": self.status,
        }


def _summary(path: Path, workspace: Path) -> SessionInfo | None:
    header: dict[str, Any] | None = None
    first, turns, status, after_end = "", 0, "empty", False
    for entry in read_transcript(path):
        kind = entry.get("type")
        if header is None:
            if kind != "header" or entry.get("workspace") != str(workspace):
                return None
            header = entry
            continue
        if kind == "message":
            message = entry.get("message")
            if not isinstance(message, dict):
                continue  # a damaged line: skipped, as resume skips it
            role = message.get("role")
            if role == "user" and not first:
                first = " ".join(str(message.get("content", "")).split())
            elif role == "assistant":
                turns += 1
            after_end = True
        elif kind == "run_end":
            status, after_end = str(entry.get("stop_reason", "ended")), False
    if header is None or header.get("parent_session"):
        return None  # another workspace's, or a subagent's (listed under its parent)
    if is_locked(path):
        status = "running"
    elif after_end:
        status = "interrupted"
    return SessionInfo(
        session_id=str(header.get("session_id", path.stem)),
        path=path,
        created=str(header.get("created", "")),
        model=str(header.get("model", "")),
        first_request=first[:200],
        turns=turns,
        status=status,
    )


def list_sessions(home: Path, workspace: Path) -> list[SessionInfo]:
    """This workspace's sessions, oldest first (ids sort by start time)."""
    directory = home / "sessions"
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.jsonl")):
        try:
            info = _summary(path, workspace)
        except OSError:
            continue
        if info is not None:
            found.append(info)
    return found


def latest_session(home: Path, workspace: Path) -> SessionInfo | None:
    """The latest session with something in it (opening tether and leaving at once
    makes an empty one, which is no conversation to continue)."""
    sessions = [s for s in list_sessions(home, workspace) if s.status != "empty"]
    return sessions[-1] if sessions else None

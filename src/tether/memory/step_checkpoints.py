"""Checkpoints around the agent's steps, so `tether undo` covers everything it did.

Before each step that may change the workspace — every tool not known to be
read-only, and `bash` unless the policy's parser proves the command read-only — the
workspace is recorded; after the step it is recorded again ("settled"), so the
agent's own changes never count as changes made outside tether. Each recorded id goes
into the transcript beside the tool call, so code and conversation can be rewound
together.

Checkpointing must never stop the agent: if git is missing or the store fails, the
step still runs and the user is told (once per distinct problem) that undo will not
cover it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.memory.sessions import Transcript
from tether.messages import ToolCall

if TYPE_CHECKING:  # the store (git, hashing) loads at the first mutating step, not at start
    from tether.memory.checkpoints import Checkpoint, CheckpointStore

__all__ = ["READ_ONLY_TOOLS", "StepCheckpoints"]

# Tools that cannot change the workspace; any other tool is checkpointed.
READ_ONLY_TOOLS = frozenset(
    {"read_file", "list_files", "search_files", "read_skill", "write_todos"}
)
# The tools a subagent gets when its `task` call names none: all read-only.
SUBAGENT_DEFAULT_TOOLS = ("read_file", "list_files", "search_files", "read_skill")
_MAX_LISTED = 100


class StepCheckpoints:
    """Wraps each tool run: checkpoint before, run, checkpoint after."""

    def __init__(
        self,
        open_store: Callable[[], CheckpointStore],
        *,
        session: str,
        transcript: Transcript,
        warn: Callable[[str], None],
        redact: Callable[[str], str] = lambda text: text,
        read_only_command: Callable[[str], bool] | None = None,
    ) -> None:
        """`open_store` runs at the first step that needs it (git starts only then)."""
        self._open_store = open_store
        self._store: CheckpointStore | None = None
        self._off = False
        self._session = session
        self._transcript = transcript
        self._warn = warn
        self._warned: set[str] = set()
        self._redact = redact
        self._read_only_command = read_only_command
        self.turn = 0
        self.last: Checkpoint | None = None
        self._opening = threading.Lock()

    def mutating(self, tool: str, arguments: Mapping[str, Any]) -> bool:
        """Whether the step may change the workspace; unsure means yes."""
        if tool in READ_ONLY_TOOLS:
            return False
        if tool == "task":  # one step for a subagent's work; it writes only with tools that can
            tools = arguments.get("tools") or SUBAGENT_DEFAULT_TOOLS
            return not isinstance(tools, list | tuple) or any(
                t not in READ_ONLY_TOOLS for t in tools
            )
        if tool == "bash" and self._read_only_command is not None:
            command = arguments.get("command")
            if isinstance(command, str):
                try:
                    return not self._read_only_command(command)
                except Exception:  # a parser fault must not cost the user their undo
                    return True
        return True

    @contextlib.contextmanager
    def around(self, call: ToolCall, tool: str, arguments: Mapping[str, Any]) -> Iterator[None]:
        """Record before and after the step; the step runs whatever happens here."""
        store = self.store() if self.mutating(tool, arguments) else None
        if self._off:
            store = None
        if store is None:
            yield
            return
        summary = self._redact(_summary(tool, arguments))
        try:
            held = store.hold()
            held.__enter__()
        except Exception as exc:  # busy (an undo is running): the step runs unrecorded
            self._tell(f"A checkpoint before {tool} failed; undo may not cover this step: {exc}")
            yield
            return
        try:
            self._record(store.create, call, tool, summary, "before")
            try:
                yield
            finally:
                self._record(store.settle, call, tool, summary, "after")
        finally:
            held.__exit__(None, None, None)

    def store(self) -> CheckpointStore | None:
        """The store, opened on first use; None when checkpoints are off. Subagents
        working at once may ask together: the first opens it, the others wait."""
        with self._opening:
            return self._open()

    def _open(self) -> CheckpointStore | None:
        if self._store is None and not self._off:
            try:
                self._store = self._open_store()
            except Exception as exc:  # git missing, state unwritable: run on without undo
                self._off = True
                self._tell(f"Checkpoints are off for this session, so undo will not work: {exc}")
        return self._store

    def _record(
        self,
        method: Callable[..., Checkpoint],
        call: ToolCall,
        tool: str,
        summary: str,
        phase: str,
    ) -> None:
        from tether.memory.checkpoint_git import CheckpointTimeout

        if self._off:
            return
        try:
            cp = method(session=self._session, turn=self.turn, tool=tool, summary=summary)
        except CheckpointTimeout as exc:
            self._off = True  # every later checkpoint would wait just as long
            self._tell(f"Checkpoints are off for the rest of this session: {exc}")
            return
        except Exception as exc:  # whatever goes wrong here, the step itself must run
            self._tell(f"A checkpoint {phase} {tool} failed; undo may not cover this step: {exc}")
            return
        self.last = cp
        entry: dict[str, Any] = {
            "type": "checkpoint",
            "phase": phase,
            "id": cp.id,
            "call_id": call.id,
            "tool": tool,
            "turn": self.turn,
            "unchanged": cp.unchanged,
        }
        if not cp.unchanged:
            entry["changed"] = list(cp.changed[:_MAX_LISTED])
            if len(cp.changed) > _MAX_LISTED:
                entry["changed_more"] = len(cp.changed) - _MAX_LISTED
        if cp.not_covered:
            entry["not_covered"] = list(cp.not_covered[:_MAX_LISTED])
        self._transcript.append(entry)

    def _tell(self, text: str) -> None:
        key = text.split(":", 1)[0] if "failed" in text else text
        if key not in self._warned:
            self._warned.add(key)
            self._warn(text)


def open_store(home: Path, workspace: Path, max_file_bytes: int) -> CheckpointStore:
    """A `CheckpointStore` for the session's workspace (kept for `functools.partial`)."""
    from tether.memory.checkpoints import CheckpointStore

    return CheckpointStore(home, workspace, max_file_bytes=max_file_bytes)


def _summary(tool: str, arguments: Mapping[str, Any]) -> str:
    """What the step was, in one line a person recognises in `tether checkpoints`."""
    if tool == "bash":
        return str(arguments.get("command", "")).strip()
    if tool == "apply_patch":
        return _patch_files(str(arguments.get("patch", "")))
    path = arguments.get("path")
    return str(path) if path is not None else ""


def _patch_files(text: str) -> str:
    from tether.patch import patch_paths  # loads with the first patch, not at start

    paths = patch_paths(text)
    return ", ".join(paths[:5]) + (f" (+{len(paths) - 5} more)" if len(paths) > 5 else "")

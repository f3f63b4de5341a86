"""What a session was when it stopped, read back from its transcript. Pure; no I/O.

Resume sends exactly the context the session last sent (`context.manager.rebuild`
replays messages, stubs and compactions), continues its usage totals and its todo
list, and closes every tool call that never got a result: the process died during
the call, so tether cannot know whether it ran, and says so rather than running it
again. Nothing is executed twice by resuming.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tether.context.manager import rebuild
from tether.messages import Message, ToolResult, Usage

__all__ = ["INTERRUPTED_RESULT", "Resumed", "resume_state"]

INTERRUPTED_RESULT = (
    "Interrupted: tether stopped (the process ended) before this call finished, so it "
    "may or may not have run. Check its effects before repeating it."
)


@dataclass(frozen=True, slots=True)
class Resumed:
    """`messages` is the context to continue from, with `closed` (the interrupted
    results, to be appended to the transcript too) already at its end."""

    header: dict[str, Any]
    messages: list[Message]
    closed: tuple[Message, ...]
    usage: Usage
    turns: int
    todos: tuple[dict[str, Any], ...]
    repaired: bool = False  # damaged lines changed the context: record it as rebuilt


def _usage(entry: dict[str, Any]) -> Usage:
    data = entry.get("usage")
    if not isinstance(data, dict):
        return Usage()
    counts = {k: v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool)}
    try:
        return Usage(**counts)
    except TypeError:
        return Usage()


def _whole(entry: dict[str, Any]) -> bool:
    """Whether an entry has the shape resume relies on (a damaged one is skipped)."""
    kind = entry.get("type")
    try:
        if kind == "message":
            Message.from_dict(entry["message"])
        elif kind == "compaction":
            Message.from_dict(entry["head"])
            int(entry["tail_from"])
            return _stubs(entry.get("stubs") or {})
        elif kind == "context" and entry.get("action") == "rebase":
            for message in entry["messages"]:
                Message.from_dict(message)
        elif kind == "context":
            return _stubs(entry.get("stubs") or {})
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True


def _stubs(stubs: Any) -> bool:
    """Stubs are {position: text}; a damaged line must not stop a resume."""
    if not isinstance(stubs, dict):
        return False
    return all(isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in stubs.items())


def resume_state(entries: Sequence[dict[str, Any]]) -> Resumed:
    """The state at the end of `entries` (a transcript's, header first)."""
    header = entries[0] if entries and entries[0].get("type") == "header" else {}
    whole = [e for e in entries if _whole(e)]
    rebuilt = rebuild(whole)
    messages = _repair(rebuilt)
    usage, turns = Usage(), 0
    todos: tuple[dict[str, Any], ...] = ()
    for entry in whole:
        kind = entry.get("type")
        if kind == "message" and entry["message"].get("role") == "assistant":
            usage += _usage(entry)
            turns += 1
        elif kind == "compaction":
            usage += _usage(entry)
        elif kind == "todos" and isinstance(entry.get("todos"), list):
            todos = tuple(t for t in entry["todos"] if _todo(t))
    closed = tuple(
        Message.tool(ToolResult(c.id, c.name, INTERRUPTED_RESULT, True))
        for c in _open_calls(messages)
    )
    repaired = messages != rebuilt
    return Resumed(header, [*messages, *closed], closed, usage, turns, todos, repaired)


def _todo(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("content"), str) and "status" in item


def _repair(messages: list[Message]) -> list[Message]:
    """Every call answered once, right after its message; results of no call dropped.

    Only a damaged transcript (a line lost in the middle) needs this; providers refuse
    a conversation with a dangling call or a stray result. The last message's open
    calls are left for `_open_calls`, which closes them on record.
    """
    out: list[Message] = []
    pending: dict[str, str] = {}  # call id -> tool name, of the latest assistant message
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in pending:
                pending.pop(message.tool_call_id)
                out.append(message)
            continue  # a result of no open call
        if pending:
            out += [
                Message.tool(ToolResult(i, n, INTERRUPTED_RESULT, True)) for i, n in pending.items()
            ]
        pending = {}
        if message.role == "assistant":
            pending = {c.id: c.name for c in message.tool_calls}
        out.append(message)
    return out


def _open_calls(messages: list[Message]) -> list[Any]:
    """The calls of the last assistant message that have no result after it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return [c for c in message.tool_calls if c.id not in answered]
        if message.role == "user":
            return []
    return []

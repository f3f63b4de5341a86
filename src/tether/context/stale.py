"""Stale tool output: old results replaced by one-line stubs, in one batch.

Every change to an earlier message makes the provider recompute everything after it,
so stubbing is done rarely and thoroughly: when the context passes the soft threshold,
every old result that is worth it becomes a stub at once. Kept as they are: the results
of the most recent turns, and the latest contents of files the agent is still editing.
Nothing is lost: a stubbed text is spilled to an overflow file (when it was not
already), and the stub gives its path; the transcript keeps everything too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from tether.messages import Message, ToolCall

__all__ = ["STUB_PREFIX", "calls_by_index", "edited_paths", "stub_spilled", "stub_stale"]

STUB_PREFIX = "[tether] Old output dropped"
_PAYBACK_TURNS = 20  # turns an early stub must pay for itself within
_MIN_CHARS = 400  # a result shorter than this costs about what its stub costs
_EDIT_TOOLS = frozenset({"str_replace", "write_file", "apply_patch"})
_READ_TOOLS = frozenset({"read_file"})
_SPILLED = re.compile(r'The full output \([^)\n]*\) is saved in ("(?:[^"\\]|\\.)*"|\S+?)\.[ \n]')

Spill = Callable[[str, str], "Path | None"]


def stub_stale(
    messages: Sequence[Message],
    *,
    keep_turns: int,
    spill: Spill | None = None,
    edit_window: int = 12,
) -> tuple[list[Message], dict[str, str]]:
    """The messages with old tool results stubbed, and {index: stub} for the record
    (positions, not call ids: a server may reuse ids).

    The last `keep_turns` assistant turns keep their results; so does the latest
    `read_file` of any path edited within the last `edit_window` turns.
    """
    boundary = _turn_start(messages, keep_turns)
    calls = calls_by_index(messages)
    editing = edited_paths(messages[_turn_start(messages, edit_window) :])
    latest_read: dict[str, int] = {}
    for index, message in enumerate(messages):
        call = calls.get(index)
        if message.role == "tool" and call is not None and call.name in _READ_TOOLS:
            path = _path_of(call)
            if path is not None:
                latest_read[path] = index
    kept_reads = {latest_read[p] for p in editing if p in latest_read}
    result = list(messages)
    stubs: dict[str, str] = {}
    for index in range(boundary):
        message = result[index]
        if (
            message.role != "tool"
            or index in kept_reads
            or len(message.content) < _MIN_CHARS
            or message.content.startswith(STUB_PREFIX)
        ):
            continue
        stub = _stub(message, calls.get(index), spill)
        result[index] = replace(message, content=stub)
        stubs[str(index)] = stub
    return result, stubs


def stub_spilled(
    messages: Sequence[Message],
    *,
    keep_turns: int,
    estimate: Callable[[Sequence[Message]], int],
    spill: Spill | None = None,
) -> tuple[list[Message], dict[str, str]]:
    """Stub a big output as soon as it leaves the recent turns, if that pays.

    Changing a message costs one cache miss on the messages after it; stubbing saves
    the output in every later request. Right when an output ages out, only a few turns
    follow it, so a big one pays for itself within `_PAYBACK_TURNS` turns (at a tenth of
    the price for cached input). Each output is checked once, on that turn: later, the
    messages after it only grow, so it would never pay again. Small outputs never pay.
    """
    newest = _turn_start(messages, keep_turns)
    oldest = _turn_start(messages, keep_turns + 1)
    # Only the turn that ages out is looked at, and it starts with its assistant message.
    calls = {oldest + i: c for i, c in calls_by_index(messages[oldest:newest]).items()}
    editing = edited_paths(messages[_turn_start(messages, 12) :])
    result = list(messages)
    stubs: dict[str, str] = {}
    for index in range(oldest, newest):
        message = result[index]
        if (
            message.role != "tool"
            or len(message.content) < _MIN_CHARS
            or message.content.startswith(STUB_PREFIX)
        ):
            continue
        call = calls.get(index)
        if call is not None and call.name in _READ_TOOLS and _path_of(call) in editing:
            continue  # a file the agent is still editing
        own = estimate([message])
        if own * _PAYBACK_TURNS * 0.1 < estimate(result[index + 1 :]) * 0.9:
            continue
        stub = _stub(message, call, spill)
        result[index] = replace(message, content=stub)
        stubs[str(index)] = stub
    return result, stubs


def calls_by_index(messages: Sequence[Message]) -> dict[int, ToolCall]:
    """The call each tool result answers, by position: results follow their calls in
    order, and some servers reuse ids across turns, so ids alone cannot pair them."""
    found: dict[int, ToolCall] = {}
    pending: list[ToolCall] = []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            pending = list(message.tool_calls)
        elif message.role == "tool" and pending:
            found[index] = pending.pop(0)
    return found


def edited_paths(messages: Sequence[Message]) -> set[str]:
    """Paths the edit tools touched in `messages`, normalised like `_path_of`."""
    found: set[str] = set()
    for message in messages:
        for call in message.tool_calls:
            if call.name not in _EDIT_TOOLS:
                continue
            if call.name == "apply_patch":
                from tether.patch import patch_paths  # loads with the first patch

                patch = _arguments(call).get("patch")
                found.update(_norm(p) for p in patch_paths(patch if isinstance(patch, str) else ""))
            else:
                path = _path_of(call)
                if path is not None:
                    found.add(path)
    return found


def _turn_start(messages: Sequence[Message], turns: int) -> int:
    """Index of the `turns`-th assistant message from the end (0 if there are fewer)."""
    if turns <= 0:
        return len(messages)
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            seen += 1
            if seen == turns:
                return index
    return 0


def _stub(message: Message, call: ToolCall | None, spill: Spill | None) -> str:
    name = message.name or (call.name if call else "tool")
    args = call.arguments if call is not None else ""
    shown_args = " ".join(args.split())
    if len(shown_args) > 160:
        shown_args = shown_args[:157] + "..."
    where = _SPILLED.search(message.content)
    path = _unquote(where.group(1)) if where else None
    if path is None and spill is not None:
        spilled = spill(message.content, name)
        path = str(spilled) if spilled is not None else None
    status = "an error of " if message.is_error else ""
    text = (
        f"{STUB_PREFIX} to keep the context small: {name}({shown_args}) returned "
        f"{status}{len(message.content):,} characters."
    )
    if path is not None:
        shown = path if re.fullmatch(r"[\w./+-]+", path) else json.dumps(path)
        return text + f" Full text: {shown} (read_file with offset/limit, or search_files)."
    return text + " Run the call again if you need it."


def _unquote(text: str) -> str:
    if text.startswith('"'):
        try:
            return str(json.loads(text))
        except ValueError:
            return text
    return text


def _arguments(call: ToolCall) -> dict[str, object]:
    try:
        value = json.loads(call.arguments)
    except (ValueError, TypeError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _path_of(call: ToolCall) -> str | None:
    path = _arguments(call).get("path")
    return _norm(path) if isinstance(path, str) and path.strip() else None


def _norm(path: str) -> str:
    text = path.strip()
    while text.startswith("./"):
        text = text[2:]
    return text

"""The context manager's decisions on real message lists (the summary is a plain function)."""

from __future__ import annotations

import json

from tether.context.manager import ContextLimits, ContextManager, rebuild
from tether.context.stale import STUB_PREFIX
from tether.messages import Message, ToolCall, ToolResult
from tether.models.base import ToolSpec

TOOLS = (ToolSpec("bash", "run a command", {"type": "object", "properties": {}}),)


def manager(window: int = 8000, keep_turns: int = 4) -> ContextManager:
    limits = ContextLimits(window=window, keep_turns=keep_turns)
    return ContextManager(limits, system="You are tether.", tools=TOOLS)


def turn(n: int, size: int, call_id: str | None = None) -> list[Message]:
    call = ToolCall(call_id or f"c{n}", "bash", json.dumps({"command": f"cat f{n}"}))
    return [
        Message(role="assistant", content=f"step {n}", tool_calls=(call,)),
        Message.tool(ToolResult(call.id, "bash", f"out {n} " + "word " * (size // 5))),
    ]


def test_one_turn_larger_than_the_window_is_stubbed_too() -> None:
    cm = manager()
    messages = [Message.user("task"), *turn(0, 200), *turn(1, 60_000)]
    fitted = cm.fit(messages, lambda ms: "## Goal\ntask")
    assert fitted.action == "compact"
    assert fitted.after < cm.limits.hard_tokens
    assert fitted.messages[-1].content.startswith(STUB_PREFIX)


def test_a_failed_summary_is_not_asked_for_again_every_turn() -> None:
    cm = manager()
    calls: list[int] = []

    def failing(messages: list[Message]) -> str:
        calls.append(len(messages))
        raise RuntimeError("provider down")

    messages = [Message.user("task")]
    notes = []
    for n in range(120):  # outputs too small to stub: only a summary could help
        messages += turn(n, 300)
        fitted = cm.fit(messages, failing)
        messages = fitted.messages
        if fitted.note:
            notes.append(fitted.note)
    assert 1 <= len(calls) <= 120 // 5  # then again only after each cool-down
    assert notes and "Compaction failed" in notes[0]


def test_reused_call_ids_stub_the_right_call_and_replay_exactly() -> None:
    cm = manager(window=8000, keep_turns=2)
    messages = [Message.user("task")]
    entries = [{"type": "message", "message": messages[0].to_dict()}]
    for n in range(14):
        new = turn(n, 4000, call_id="call_0")  # a server that reuses ids
        messages += new
        entries += [{"type": "message", "message": m.to_dict()} for m in new]
        fitted = cm.fit(messages, lambda ms: "summary")
        if fitted.entry is not None:
            entries.append(fitted.entry)
        messages = fitted.messages
    stubs = [m.content for m in messages if m.content.startswith(STUB_PREFIX)]
    assert stubs and len({s.split("cat f")[1][:3] for s in stubs}) == len(stubs)  # distinct
    assert rebuild(entries) == messages


def test_reasoning_is_not_counted_as_context() -> None:
    cm = manager(window=100_000)
    messages = [Message.user("task"), *turn(0, 400)]
    reply = Message(role="assistant", content="ok", reasoning="thinking " * 3000)
    cm.report(len(messages) + 1, 500, reply)
    assert cm.size([*messages, reply]) < 600

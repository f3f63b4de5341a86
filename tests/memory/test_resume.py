"""Reading a session back: damaged lines skipped, every call answered exactly once."""

from __future__ import annotations

import json
from typing import Any

from tether.memory.resume import INTERRUPTED_RESULT, resume_state
from tether.messages import Message, ToolCall, ToolResult


def msg(message: Message, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": message.to_dict(), **extra}


def call(n: int) -> ToolCall:
    return ToolCall(f"c{n}", "bash", json.dumps({"command": f"echo {n}"}))


def test_damaged_lines_are_skipped_and_the_conversation_repaired() -> None:
    entries = [
        {"type": "header", "workspace": "/w", "system_prompt": "S"},
        msg(Message.user("go")),
        msg(Message(role="assistant", tool_calls=(call(1), call(2))), usage={"input_tokens": 7}),
        msg(Message.tool(ToolResult("c1", "bash", "one"))),
        # the result of c2 was on a line that got damaged:
        {"type": "message", "message": "oops"},
        {"type": "message", "message": {"role": "wizard"}},
        msg(Message.tool(ToolResult("c9", "bash", "a result of no call"))),
        msg(Message(role="assistant", tool_calls=(call(3),)), usage={"input_tokens": 5}),
        {"type": "todos", "todos": [{"content": "a", "status": "pending"}, "junk"]},
    ]
    state = resume_state(entries)
    roles = [(m.role, m.tool_call_id) for m in state.messages]
    assert roles == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),  # closed as interrupted, in place
        ("assistant", None),
        ("tool", "c3"),  # the open call of the last message, closed on record
    ]
    assert state.messages[3].content == INTERRUPTED_RESULT and state.messages[3].is_error
    assert [m.tool_call_id for m in state.closed] == ["c3"]
    assert state.usage.input_tokens == 12 and state.turns == 2
    assert state.todos == ({"content": "a", "status": "pending"},)


def test_a_repaired_context_is_recorded_so_a_later_resume_rebuilds_the_same(
    tmp_path: Any,
) -> None:
    from tether.context.manager import rebuild
    from tether.memory.sessions import Transcript, read_transcript, record_resume
    from tether.observe.redact import Redactor

    transcript = Transcript.create(tmp_path, "s1", {"workspace": "/w"}, Redactor())
    transcript.message(Message.user("go"))
    transcript.message(Message(role="assistant", tool_calls=(call(1), call(2))))
    transcript.message(Message.tool(ToolResult("c1", "bash", "one")))
    # (the result of c2 lost)
    transcript.message(Message(role="assistant", content="next", tool_calls=(call(3),)))
    transcript.append({"type": "context", "action": "stub", "stubs": {"1O": "damaged key"}})
    state = resume_state(list(read_transcript(transcript.path)))
    assert state.repaired
    record_resume(transcript, state, torn=0, model="m")
    # The live session stubs position 3 (c2's interrupted result) later on:
    transcript.append({"type": "context", "action": "stub", "stubs": {"3": "[stub]"}})
    transcript.close()
    again = resume_state(list(read_transcript(transcript.path)))
    replayed = rebuild(
        [
            e
            for e in read_transcript(transcript.path)
            if e["type"] != "context" or e.get("action") != "stub" or "1O" not in e["stubs"]
        ]
    )
    assert [(m.role, m.tool_call_id) for m in again.messages] == [
        (m.role, m.tool_call_id) for m in replayed
    ]
    assert again.messages[3].content == "[stub]" and again.messages[3].tool_call_id == "c2"
    assert not again.repaired and again.closed == ()

"""The Anthropic request body: shape rules the API enforces, and cache breakpoints."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.messages import Message, Thinking, ToolCall, ToolResult
from tether.models.anthropic_request import (
    INTERRUPTED,
    LOOKBACK_MARGIN,
    MAX_BREAKPOINTS,
    AnthropicEncoder,
    request_body,
)
from tether.models.base import ModelRequest, ToolSpec

TOOLS = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}),)


def body(messages: list[Message], **kw: Any) -> dict[str, Any]:
    request = ModelRequest(system="You are tether.", messages=tuple(messages), tools=TOOLS, **kw)
    return request_body(request, model="claude-x", stream=True, max_tokens=1000)


def call(n: int, name: str = "read_file") -> ToolCall:
    return ToolCall(f"toolu_{n}", name, json.dumps({"path": f"f{n}.py"}))


def result(n: int, text: str = "ok", error: bool = False) -> Message:
    return Message.tool(ToolResult(f"toolu_{n}", "read_file", text, error))


def marked(data: dict[str, Any]) -> list[tuple[str, int, int]]:
    """Where cache_control sits: ("system"|"tools"|"messages", message, block)."""
    spots = [("system", 0, i) for i, b in enumerate(data.get("system", [])) if "cache_control" in b]
    spots += [("tools", 0, i) for i, t in enumerate(data.get("tools", [])) if "cache_control" in t]
    for m, message in enumerate(data["messages"]):
        content = message["content"]
        for b, block in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in block:
                spots.append(("messages", m, b))
    return spots


def test_a_tool_turn_becomes_tool_use_then_results_first_in_the_next_user_message() -> None:
    reply = Message(role="assistant", content="Reading.", tool_calls=(call(1), call(2)))
    data = body([Message.user("fix it"), reply, result(2, "two"), result(1, "boom", True)])
    assert data["model"] == "claude-x" and data["max_tokens"] == 1000 and data["stream"] is True
    assert data["tool_choice"] == {"type": "auto"}
    assert data["tools"][0]["input_schema"] == {"type": "object", "properties": {}}
    assistant = data["messages"][1]
    assert [b["type"] for b in assistant["content"]] == ["text", "tool_use", "tool_use"]
    assert assistant["content"][1]["input"] == {"path": "f1.py"}
    user = data["messages"][2]["content"]
    # Results in the order of the calls, whatever order they were recorded in.
    assert [(b["tool_use_id"], b.get("is_error", False)) for b in user] == [
        ("toolu_1", True),
        ("toolu_2", False),
    ]


def test_a_call_left_without_result_is_closed_as_interrupted_never_dangling() -> None:
    reply = Message(role="assistant", tool_calls=(call(1), call(2)))
    data = body([Message.user("go"), reply, result(1)])
    blocks = data["messages"][2]["content"]
    assert [b["tool_use_id"] for b in blocks] == ["toolu_1", "toolu_2"]
    assert blocks[1] == {
        "type": "tool_result",
        "tool_use_id": "toolu_2",
        "content": INTERRUPTED,
        "is_error": True,
        "cache_control": {"type": "ephemeral"},
    }
    # A trailing assistant call with no user message after it gets one, too.
    data = body([Message.user("go"), reply])
    assert data["messages"][-1]["role"] == "user"
    assert [b["tool_use_id"] for b in data["messages"][-1]["content"]] == ["toolu_1", "toolu_2"]


def test_orphan_results_and_user_notes_become_text_after_the_results() -> None:
    reply = Message(role="assistant", tool_calls=(call(1),))
    stray = Message.tool(ToolResult("toolu_9", "bash", "late"))
    data = body([Message.user("go"), reply, result(1), stray, Message.user("[tether] undone")])
    blocks = data["messages"][2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "text", "text"]
    assert blocks[1]["text"].startswith("[result of call toolu_9 (bash)]")
    assert len(data["messages"]) == 3  # one user message: roles alternate


def test_thinking_goes_back_verbatim_first_and_broken_arguments_stay_visible() -> None:
    thinking = (Thinking("Let me look.", "sig-abc"), Thinking(redacted="opaque=="))
    bad = ToolCall("toolu_1", "read_file", '{"path": "a.py"')
    reply = Message(role="assistant", content="", tool_calls=(bad,), thinking=thinking)
    data = body([Message.user("go"), reply, result(1, "invalid JSON", True)])
    blocks = data["messages"][1]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "Let me look.", "signature": "sig-abc"}
    assert blocks[1] == {"type": "redacted_thinking", "data": "opaque=="}
    assert blocks[2]["input"] == {"unparsed_arguments": '{"path": "a.py"'}


def test_first_message_is_user_and_no_text_block_is_empty() -> None:
    data = body([Message(role="assistant", content="hello"), Message.user("")])
    assert data["messages"][0]["role"] == "user"
    for message in data["messages"]:
        for block in message["content"]:
            assert block.get("text", "x") != ""


def test_breakpoints_on_system_and_on_the_last_block() -> None:
    reply = Message(role="assistant", content="Reading.", tool_calls=(call(1),))
    data = body([Message.user("go"), reply, result(1)])
    assert marked(data) == [("system", 0, 0), ("messages", 2, 0)]
    assert data["tool_choice"] == {"type": "auto"}
    none = body([Message.user("go"), reply, result(1)], tool_choice="none")
    assert none["tool_choice"] == {"type": "none"} and marked(none) == marked(data)


def test_without_a_system_prompt_the_tool_list_carries_the_first_breakpoint() -> None:
    request = ModelRequest(system="", messages=(Message.user("hi"),), tools=TOOLS)
    data = request_body(request, model="m", stream=False, max_tokens=10)
    assert "system" not in data and marked(data) == [("tools", 0, 0), ("messages", 0, 0)]


def test_a_turn_adding_many_blocks_also_marks_where_the_last_request_ended() -> None:
    calls = tuple(call(n) for n in range(LOOKBACK_MARGIN + 1))
    history = [Message.user("go"), Message(role="assistant", tool_calls=calls)]
    history += [result(n) for n in range(len(calls))]
    data = body(history)
    # The previous request ended with the user message (index 0): it is marked too.
    assert marked(data) == [("system", 0, 0), ("messages", 0, 0), ("messages", 2, len(calls) - 1)]
    few = body([Message.user("go"), Message(role="assistant", tool_calls=calls[:2])])
    assert ("messages", 0, 0) not in marked(few)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.booleans()), min_size=1, max_size=12))
def test_any_history_has_at_most_four_breakpoints_and_no_dangling_call(
    turns: list[tuple[int, bool]],
) -> None:
    history = [Message.user("start")]
    n = 0
    for calls, answered in turns:
        batch = tuple(call(n + i) for i in range(calls))
        history.append(Message(role="assistant", content="t", tool_calls=batch))
        if answered:
            history += [result(n + i) for i in range(calls)]
        n += calls
    data = body(history)
    assert len(marked(data)) <= MAX_BREAKPOINTS
    roles = [m["role"] for m in data["messages"]]
    assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
    for before, after in itertools.pairwise(data["messages"]):
        wanted = [b["id"] for b in before["content"] if b["type"] == "tool_use"]
        results = [b["tool_use_id"] for b in after["content"] if b["type"] == "tool_result"]
        assert results[: len(wanted)] == wanted


def test_the_encoder_reuses_json_but_moves_the_breakpoint() -> None:
    encoder = AnthropicEncoder()
    history = [Message.user("go"), Message(role="assistant", tool_calls=(call(1),)), result(1)]
    first = encoder.encode(
        ModelRequest(system="s", messages=tuple(history), tools=TOOLS),
        model="m",
        stream=True,
        max_tokens=5,
    )
    history += [Message(role="assistant", tool_calls=(call(2),)), result(2)]
    request = ModelRequest(system="s", messages=tuple(history), tools=TOOLS)
    second = encoder.encode(request, model="m", stream=True, max_tokens=5)
    fresh = json.dumps(request_body(request, model="m", stream=True, max_tokens=5))
    assert json.loads(second) == json.loads(fresh)
    # The earlier turn lost its breakpoint; the bodies share the prefix up to it.
    first_data, second_data = json.loads(first), json.loads(second)
    assert "cache_control" in first_data["messages"][2]["content"][0]
    assert "cache_control" not in second_data["messages"][2]["content"][0]
    assert "cache_control" in second_data["messages"][4]["content"][0]

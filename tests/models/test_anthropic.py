"""The real Anthropic Messages client against the scripted endpoint, over real HTTP.

The endpoint rejects what the real API would (tool pairing, breakpoint count,
thinking signatures and placement), so every 200 here also says the request was
well formed. Failures and retries are in `test_anthropic_faults.py`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from tests.models.wire_cases import FAST, READ, REQUEST, STREAMS

from tether.errors import BadRequestError, ConfigError
from tether.messages import FinishReason, Message, Thinking, ToolCall, ToolResult, Usage
from tether.models.anthropic import ANTHROPIC_VERSION, AnthropicModel
from tether.models.anthropic_response import parse_usage
from tether.models.base import ModelRequest
from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn
from tether.models.scripted_anthropic import prompt_blocks, thinking_signature
from tether.models.scripted_anthropic_check import MAX_CACHE_BREAKPOINTS
from tether.observe.events import Event, ReasoningDelta, RetryScheduled, TextDelta, ToolCallDelta

KEY = "sk-ant-test-9f8e7d6c5b4a"
MODEL = "claude-test"

TOOL_TURN = Turn(
    text="Let me read both.",
    tool_calls=(
        ScriptedCall("read_file", {"path": "a.py"}),
        ScriptedCall("read_file", {"path": "b.py"}, id="toolu_given"),
        ScriptedCall("grep", {"pattern": "def main", "paths": ["src", "tests"]}),
    ),
)
THINKING_TURN = Turn(
    reasoning="The bug is in a.py; read it first.",
    text="Reading a.py.",
    tool_calls=(ScriptedCall("read_file", {"path": "a.py"}, id="toolu_r1"),),
)

pytestmark = pytest.mark.timeout(30)


def client(ep: ScriptedEndpoint, base_url: str | None = None, **kwargs: Any) -> AnthropicModel:
    options: dict[str, Any] = {"api_key": None, "model": MODEL, "retry": FAST}
    options.update(kwargs)
    return AnthropicModel(base_url=ep.root if base_url is None else base_url, **options)


def ignore(event: Event) -> None:
    pass


def of_type(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def marks(body: dict[str, Any]) -> int:
    """Blocks carrying cache_control anywhere in a request body."""
    blocks = [*body.get("tools", ()), *body.get("system", ())]
    for message in body["messages"]:
        blocks += message["content"] if isinstance(message["content"], list) else []
    return sum("cache_control" in b for b in blocks)


def answered(history: tuple[Message, ...], reply: Message) -> tuple[Message, ...]:
    """The history, the reply, and a result for each of its calls."""
    results = [
        Message.tool(ToolResult(c.id, c.name, f"contents of {c.id}")) for c in reply.tool_calls
    ]
    return (*history, reply, *results)


@STREAMS
def test_text_and_several_tool_calls(stream: bool, events: list[Event]) -> None:
    with ScriptedEndpoint([TOOL_TURN]) as ep, client(ep, stream=stream) as model:
        response = model.complete(REQUEST, events.append)
        (sent,) = ep.requests
    assert sent.body["stream"] is stream
    message = response.message
    assert message.content == "Let me read both."
    assert [(c.id, c.name) for c in message.tool_calls] == [
        ("toolu_0_0", "read_file"),
        ("toolu_given", "read_file"),
        ("toolu_0_2", "grep"),
    ]
    assert [json.loads(c.arguments) for c in message.tool_calls] == [
        {"path": "a.py"},
        {"path": "b.py"},
        {"pattern": "def main", "paths": ["src", "tests"]},
    ]
    assert message.reasoning is None and message.thinking == ()
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.model == MODEL
    text = of_type(events, TextDelta)
    assert "".join(e.text for e in text) == message.content
    deltas = of_type(events, ToolCallDelta)
    for index, call in enumerate(message.tool_calls):
        first, *rest = [d for d in deltas if d.index == index]
        assert (first.id, first.name, first.arguments) == (call.id, call.name, "")
        assert rest and all(d.id is None and d.name is None and d.arguments for d in rest)
        assert "".join(d.arguments for d in rest) == call.arguments
    assert events.index(text[-1]) < events.index(deltas[0])  # text streams before the calls
    if stream:
        assert len(text) >= 2 and len(deltas) >= 2 * len(message.tool_calls) + 1
    assert not of_type(events, ReasoningDelta) and not of_type(events, RetryScheduled)


@STREAMS
def test_broken_call_arguments_come_through_and_go_back_acceptably(stream: bool) -> None:
    turn = Turn(tool_calls=(ScriptedCall("read_file", '{"path": "a.py"'),))
    with ScriptedEndpoint([turn, Turn(text="ok")]) as ep, client(ep, stream=stream) as model:
        first = model.complete(REQUEST, lambda e: None)
        (call,) = first.message.tool_calls
        # Streaming passes the text verbatim; a whole message carries only objects.
        assert call.arguments == ('{"path": "a.py"' if stream else "{}")
        history = answered(REQUEST.messages, first.message)
        second = model.complete(ModelRequest(system="s", messages=history, tools=(READ,)), ignore)
    assert second.message.content == "ok"


@pytest.mark.parametrize(
    ("turn", "reason"),
    [
        (Turn(text="done"), FinishReason.STOP),
        (Turn(text="done", finish_reason="stop_sequence"), FinishReason.STOP),
        (Turn(tool_calls=(ScriptedCall("read_file", {}),)), FinishReason.TOOL_CALLS),
        (Turn(text="cut", finish_reason="length"), FinishReason.LENGTH),
        (Turn(text="cut", finish_reason="max_tokens"), FinishReason.LENGTH),
        (Turn(text="no", finish_reason="refusal"), FinishReason.CONTENT_FILTER),
        (Turn(text="wait", finish_reason="pause_turn"), FinishReason.OTHER),
    ],
    ids=["end_turn", "stop_sequence", "tool_use", "length", "max_tokens", "refusal", "pause"],
)
@STREAMS
def test_stop_reasons(turn: Turn, reason: FinishReason, stream: bool) -> None:
    with ScriptedEndpoint([turn]) as ep, client(ep, stream=stream) as model:
        assert model.complete(REQUEST, lambda e: None).finish_reason is reason


@STREAMS
def test_thinking_comes_back_signed_and_is_accepted_on_the_next_request(
    stream: bool, events: list[Event]
) -> None:
    script = [THINKING_TURN, Turn(text="Fixed.")]
    with (
        ScriptedEndpoint(script) as ep,
        client(ep, stream=stream, thinking_budget=2048, max_tokens=4096) as model,
    ):
        first = model.complete(REQUEST, events.append)
        signature = thinking_signature(THINKING_TURN.reasoning)
        assert first.message.thinking == (Thinking(THINKING_TURN.reasoning, signature),)
        assert first.message.reasoning == THINKING_TURN.reasoning
        assert "".join(e.text for e in of_type(events, ReasoningDelta)) == first.message.reasoning
        assert events.index(of_type(events, ReasoningDelta)[-1]) < events.index(
            of_type(events, TextDelta)[0]
        )
        history = answered(REQUEST.messages, first.message)
        second = model.complete(ModelRequest(system="s", messages=history, tools=(READ,)), ignore)
        assert second.message.content == "Fixed." and not of_type(events, RetryScheduled)
        first_sent, second_sent = (r.body for r in ep.requests)
    assert first_sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert first_sent["max_tokens"] == 4096
    assistant = second_sent["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": THINKING_TURN.reasoning,
        "signature": signature,
    }
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]


def test_an_output_limit_with_thinking_on_leaves_room_beyond_the_budget() -> None:
    request = replace(REQUEST, max_output_tokens=1000)  # below the thinking budget
    with (
        ScriptedEndpoint([THINKING_TURN]) as ep,
        client(ep, thinking_budget=2048, max_tokens=8192) as model,
    ):
        response = model.complete(request, ignore)
        (sent,) = ep.requests
    assert response.message.thinking and sent.body["max_tokens"] == 1000 + 2048


def test_a_tampered_thinking_block_is_refused_and_not_retried() -> None:
    forged = Message(
        role="assistant",
        tool_calls=(ToolCall("toolu_x", "read_file", "{}"),),
        thinking=(Thinking("I changed my mind.", thinking_signature("the original")),),
    )
    history = (Message.user("go"), forged, Message.tool(ToolResult("toolu_x", "read_file", "")))
    with (
        ScriptedEndpoint([Turn(text="never")]) as ep,
        client(ep, thinking_budget=2048, max_tokens=4096) as model,
        pytest.raises(BadRequestError) as info,
    ):
        model.complete(ModelRequest(system="s", messages=history), lambda e: None)
    assert len(ep.requests) == 1 and "Invalid `signature`" in str(info.value)


@STREAMS
def test_usage_counts_cached_and_written_tokens_in_the_input(stream: bool) -> None:
    first_request = ModelRequest(
        system="rules " * 1200, messages=(Message.user("go"),), tools=(READ,)
    )
    script = [Turn(text="first answer"), Turn(text="second answer")]
    with ScriptedEndpoint(script) as ep, client(ep, stream=stream) as model:
        first = model.complete(first_request, lambda e: None)
        history = (*first_request.messages, first.message, Message.user("and more"))
        second_request = ModelRequest(system=first_request.system, messages=history, tools=(READ,))
        second = model.complete(second_request, lambda e: None)
        sizes = [sum(b.tokens for b in prompt_blocks(r.body)) for r in ep.requests]
    # The endpoint counts as Anthropic does: `input_tokens` is only what was neither
    # read from nor written to the cache; tether's input count is the whole prompt.
    assert sizes[0] >= 1024
    assert first.usage.input_tokens == sizes[0]
    assert first.usage.cached_tokens == 0
    assert first.usage.cache_write_tokens == sizes[0]  # written up to the last block
    assert second.usage.input_tokens == sizes[1]
    assert second.usage.cached_tokens == sizes[0]  # the whole first prompt is read back
    assert second.usage.cache_write_tokens == sizes[1] - sizes[0]
    assert first.usage.output_tokens == 3 and second.usage.output_tokens == 4  # ceil(chars/4)


def test_a_thinking_tool_loop_stays_valid_and_reads_the_cache() -> None:
    script = [
        Turn(
            reasoning=f"step {n}: look further",
            tool_calls=tuple(
                ScriptedCall("read_file", {"path": f"f{n}_{k}.py"}) for k in range(3 + 4 * n)
            ),
        )
        for n in range(4)
    ] + [Turn(text="All read.")]
    request = ModelRequest(system="rules " * 1200, messages=(Message.user("go"),), tools=(READ,))
    with (
        ScriptedEndpoint(script) as ep,
        client(ep, thinking_budget=1024, max_tokens=2048) as model,
    ):
        responses = []
        while True:
            response = model.complete(request, lambda e: None)
            responses.append(response)
            if not response.message.tool_calls:
                break
            request = ModelRequest(
                system=request.system,
                messages=answered(request.messages, response.message),
                tools=(READ,),
            )
        bodies = [r.body for r in ep.requests]
    assert len(bodies) == 5 and responses[-1].message.content == "All read."
    assert all(marks(body) <= MAX_CACHE_BREAKPOINTS for body in bodies)
    assert max(marks(body) for body in bodies) == 3  # the big turns add a lookback mark
    for body in bodies[1:]:  # each earlier reply is sent back with its thinking first
        replies = [m for m in body["messages"] if m["role"] == "assistant"]
        assert all(m["content"][0]["type"] == "thinking" for m in replies)
    for response in responses[1:]:
        assert response.usage.cached_tokens > response.usage.input_tokens // 2


def test_a_cut_short_history_never_leaves_a_tool_use_unanswered() -> None:
    calls = (ToolCall("toolu_1", "read_file", '{"path": "a"}'), ToolCall("toolu_2", "x", "{}"))
    history = (
        Message.user("go"),
        Message(role="assistant", content="Reading.", tool_calls=calls),
        Message.tool(ToolResult("toolu_2", "x", "only the second finished")),
        Message.tool(ToolResult("toolu_old", "x", "a result for no call here")),
        Message.user("What happened?"),
        Message(role="assistant", tool_calls=(ToolCall("toolu_3", "x", "{}"),)),
        Message.user("Stop; answer now."),
    )
    with ScriptedEndpoint([Turn(text="ok")]) as ep, client(ep) as model:
        response = model.complete(ModelRequest(system="", messages=history), lambda e: None)
        (sent,) = ep.requests
    assert response.message.content == "ok"  # the endpoint found the request valid
    second_user = sent.body["messages"][2]["content"]
    assert [b.get("tool_use_id") for b in second_user[:2]] == ["toolu_1", "toolu_2"]
    assert second_user[0]["is_error"] is True
    assert marks(sent.body) <= MAX_CACHE_BREAKPOINTS


def test_headers_name_the_key_and_version_and_no_bearer_token() -> None:
    with ScriptedEndpoint([Turn(text="ok")], api_key=KEY) as ep:
        with client(ep, api_key=f"  {KEY}\n") as model:  # surrounding whitespace is dropped
            model.complete(REQUEST, lambda e: None)
        (sent,) = ep.requests
    assert sent.method == "POST" and sent.path == "/v1/messages"
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert sent.headers["content-type"] == "application/json"
    assert sent.headers["accept"] == "text/event-stream"
    assert sent.headers["user-agent"].startswith("tether/")
    assert "authorization" not in sent.headers


def test_no_key_sends_no_key_header() -> None:
    with ScriptedEndpoint([Turn(text="ok")]) as ep:
        with client(ep, stream=False) as model:
            model.complete(REQUEST, lambda e: None)
        (sent,) = ep.requests
    assert "x-api-key" not in sent.headers and "authorization" not in sent.headers
    assert sent.headers["accept"] == "application/json" and sent.body["stream"] is False


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/messages", "/v1/messages/"])
def test_every_form_of_the_base_url_reaches_messages(suffix: str) -> None:
    with ScriptedEndpoint([Turn(text="ok")]) as ep:
        with client(ep, base_url=ep.root + suffix) as model:
            assert model.complete(REQUEST, lambda e: None).message.content == "ok"
        assert [r.path for r in ep.requests] == ["/v1/messages"]


def test_the_request_body() -> None:
    request = ModelRequest(
        system="You are terse.",
        messages=(Message.user("hi"),),
        tools=(READ,),
        tool_choice="none",
        max_output_tokens=100,
    )
    with ScriptedEndpoint([Turn(text="ok")]) as ep, client(ep, model="claude-x") as model:
        response = model.complete(request, lambda e: None)
        (sent,) = ep.requests
    assert response.model == "claude-x"
    ephemeral = {"type": "ephemeral"}
    assert sent.body == {
        "model": "claude-x",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You are terse.", "cache_control": ephemeral}],
        "tools": [
            {"name": "read_file", "description": "Read a file.", "input_schema": READ.parameters}
        ],
        "tool_choice": {"type": "none"},
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": ephemeral}],
            }
        ],
    }


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "api.anthropic.com"},
        {"model": ""},
        {"request_timeout": 0},
        {"thinking_budget": 4096, "max_tokens": 4096},
        {"thinking_budget": 0},
        {"api_key": "sk-ant-\u201cquoted\u201d"},
    ],
    ids=["scheme", "model", "timeout", "budget-too-big", "budget-zero", "key"],
)
def test_bad_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    options: dict[str, Any] = {"base_url": "http://localhost", "api_key": None, "model": "m"}
    with pytest.raises(ConfigError) as info:
        AnthropicModel(**{**options, **kwargs})
    assert "quoted" not in str(info.value)


def test_null_usage_fields_in_a_later_event_keep_the_earlier_counts() -> None:
    start = parse_usage(
        {"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}
    )
    nulls = {"input_tokens": None, "cache_read_input_tokens": None, "output_tokens": 7}
    assert parse_usage(nulls, start) == Usage(115, 7, cached_tokens=100, cache_write_tokens=5)

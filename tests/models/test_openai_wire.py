"""The wire conversion on its own: request bodies, and answers as odd servers send them."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

import pytest

from tether.messages import FinishReason, Message, ToolCall, ToolResult, Usage
from tether.models.base import ModelRequest, ToolSpec
from tether.models.error_text import is_context_length, provider_message
from tether.models.openai_request import BodyEncoder, request_body
from tether.models.openai_response import ResponseAssembler, map_finish_reason, parse_usage
from tether.observe.events import Event, ReasoningDelta, TextDelta, ToolCallDelta


def assembler(events: list[Event]) -> ResponseAssembler:
    numbers = iter(range(1, 100))
    return ResponseAssembler(events.append, lambda: f"call_{next(numbers)}")


def test_request_body_shapes_every_role() -> None:
    call = ToolCall(id="c1", name="read", arguments='{"path": "a"}')
    request = ModelRequest(
        system="be brief",
        messages=(
            Message.user("hi"),
            Message(role="assistant", tool_calls=(call,), reasoning="secret thoughts"),
            Message.tool(ToolResult(call_id="c1", name="read", content="text", is_error=True)),
            Message(role="assistant", content="done", reasoning="more thoughts"),
        ),
        tools=(ToolSpec("read", "Read a file.", MappingProxyType({"type": "object"})),),
        tool_choice="none",
        max_output_tokens=256,
    )
    body = request_body(request, model="m", stream=True)
    assert body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "text"},
            {"role": "assistant", "content": "done"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file.",
                    "parameters": {"type": "object"},
                },
            }
        ],
        "tool_choice": "none",
        "max_tokens": 256,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    json.dumps(body)  # read-only schemas became plain JSON


def test_request_body_without_tools_or_limits() -> None:
    body = request_body(
        ModelRequest(system="", messages=(Message.user("x"),)), model="m", stream=False
    )
    assert body == {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": False}


def test_streamed_deltas_assemble_text_reasoning_and_calls() -> None:
    events: list[Event] = []
    a = assembler(events)
    a.add_delta({"role": "assistant", "content": ""})
    a.add_delta({"reasoning_content": "think"})
    a.add_delta({"reasoning": "ing"})  # OpenRouter's name
    a.add_delta({"content": "Hel"})
    a.add_delta({"content": "lo"})
    a.add_delta(
        {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}]}
    )
    a.add_delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"x"'}}]})
    a.add_delta({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]})
    a.add_delta({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]})
    a.finish_reason = "tool_calls"
    a.usage = Usage(input_tokens=3)
    response = a.response(model="m")
    assert response.message == Message(
        role="assistant",
        content="Hello",
        tool_calls=(ToolCall("a", "f", '{"x": 1}'), ToolCall("b", "g", "{}")),
        reasoning="thinking",
    )
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.usage == Usage(input_tokens=3)
    assert events[:4] == [
        ReasoningDelta("think"),
        ReasoningDelta("ing"),
        TextDelta("Hel"),
        TextDelta("lo"),
    ]
    assert events[4] == ToolCallDelta(index=0, id="a", name="f", arguments="")
    assert events[-1] == ToolCallDelta(index=0, id=None, name=None, arguments=": 1}")


def test_reasoning_sent_under_both_names_counts_once() -> None:
    a = assembler([])
    a.add_delta({"reasoning_content": "x", "reasoning": "x"})
    assert a.response(model="m").message.reasoning == "x"


def calls_of(*deltas: dict[str, Any]) -> tuple[ToolCall, ...]:
    a = assembler([])
    for delta in deltas:
        a.add_delta(delta)
    return a.response(model="m").message.tool_calls


def tc(**fields: Any) -> dict[str, Any]:
    return {"tool_calls": [fields]}


def test_calls_without_index_are_told_apart_by_id() -> None:
    got = calls_of(
        tc(id="a", function={"name": "f", "arguments": '{"n": '}),
        tc(id="a", function={"arguments": "1}"}),
        tc(id="b", function={"name": "g", "arguments": "{}"}),
    )
    assert got == (ToolCall("a", "f", '{"n": 1}'), ToolCall("b", "g", "{}"))


def test_calls_without_index_or_id_continue_until_a_new_name() -> None:
    got = calls_of(
        tc(function={"name": "f", "arguments": '{"a"'}),
        tc(function={"arguments": ": 2}"}),
        tc(function={"name": "g", "arguments": {"b": 3}}),  # arguments as an object
    )
    assert got == (ToolCall("call_1", "f", '{"a": 2}'), ToolCall("call_2", "g", '{"b": 3}'))


def test_several_calls_all_numbered_zero_are_split_by_id() -> None:
    got = calls_of(
        tc(index=0, id="a", function={"name": "f", "arguments": "{}"}),
        tc(index=0, id="b", function={"name": "g", "arguments": '{"k": 1}'}),
    )
    assert [c.id for c in got] == ["a", "b"] and got[1].arguments == '{"k": 1}'


def test_whole_call_in_one_chunk_and_blank_arguments() -> None:
    got = calls_of(tc(index=0, id="a", function={"name": "f", "arguments": "  "}))
    assert got == (ToolCall("a", "f", "{}"),)


def test_plain_message_reports_one_delta_of_each_kind() -> None:
    events: list[Event] = []
    a = assembler(events)
    a.add_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hi"}],
            "reasoning_content": "hmm",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"type": "function", "function": {"name": "g", "arguments": '{"q": 1}'}},
            ],
        }
    )
    message = a.response(model="m").message
    assert message.content == "Hi" and message.reasoning == "hmm"
    assert message.tool_calls == (ToolCall("a", "f", "{}"), ToolCall("call_1", "g", '{"q": 1}'))
    assert [type(e).__name__ for e in events] == [
        "ReasoningDelta",
        "TextDelta",
        "ToolCallDelta",
        "ToolCallDelta",
    ]


@pytest.mark.parametrize(
    ("raw", "calls", "expected"),
    [
        ("stop", False, FinishReason.STOP),
        ("stop", True, FinishReason.TOOL_CALLS),
        ("tool_calls", True, FinishReason.TOOL_CALLS),
        ("length", False, FinishReason.LENGTH),
        ("content_filter", False, FinishReason.CONTENT_FILTER),
        ("eos", False, FinishReason.STOP),
        ("weird", False, FinishReason.OTHER),
        (None, False, FinishReason.STOP),
        (None, True, FinishReason.TOOL_CALLS),
    ],
)
def test_finish_reasons(raw: str | None, calls: bool, expected: FinishReason) -> None:
    assert map_finish_reason(raw, has_tool_calls=calls) is expected


def test_usage_in_its_several_shapes() -> None:
    openai = {
        "prompt_tokens": 10,
        "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 8},
    }
    assert parse_usage(openai) == Usage(input_tokens=10, output_tokens=2, cached_tokens=8)
    top_level = {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 4}
    assert parse_usage(top_level) == Usage(10, 2, 4)
    deepseek = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 6}
    assert parse_usage(deepseek) == Usage(10, 2, 6)
    nulls = {"prompt_tokens": None, "completion_tokens": True, "prompt_tokens_details": None}
    assert parse_usage(nulls) == Usage()
    assert parse_usage(None) is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '{"error": {"message": "Bad key", "type": "auth", "code": "invalid_api_key"}}',
            "Bad key [invalid_api_key]",
        ),
        ('{"error": "plain string"}', "plain string"),
        ('{"object": "error", "message": "vLLM says no"}', "vLLM says no"),
        ('{"detail": "Not Found"}', "Not Found"),
        ("<html>\n  <h1>502 Bad Gateway</h1>\n</html>", "<html> <h1>502 Bad Gateway</h1> </html>"),
        ("", "(empty body)"),
        (
            '{"error": {"message": "Provider returned error", "code": 400,'
            ' "metadata": {"raw": "boom"}}}',
            "Provider returned error (upstream: boom)",
        ),
    ],
)
def test_provider_message(body: str, expected: str) -> None:
    assert provider_message(body) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"error": {"code": "context_length_exceeded"}}',
        "This model's maximum context length is 8192 tokens. However, you requested 9000",
        "the request exceeds the available context size, try increasing it",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Please reduce the length of the messages or completion.",
    ],
)
def test_context_length_messages_are_recognised(text: str) -> None:
    assert is_context_length(text)


def test_other_messages_are_not_context_length() -> None:
    assert not is_context_length("Rate limit reached for requests")
    assert not is_context_length("Invalid value for 'tool_choice'")


def test_body_encoder_matches_a_full_encode_as_the_conversation_changes() -> None:
    tools = (ToolSpec("read_file", "Read.", {"type": "object", "properties": {}}),)
    encoder = BodyEncoder()
    messages: list[Message] = [Message.user("fix it — “quoted” ünïcode")]
    requests = []
    for i in range(6):
        call = ToolCall(f"c{i}", "read_file", json.dumps({"path": f"f{i}.py"}))
        messages.append(Message(role="assistant", content=f"step {i}", tool_calls=(call,)))
        messages.append(Message.tool(ToolResult(call.id, call.name, f"body {i}\n")))
        requests.append(ModelRequest(system="sys", messages=tuple(messages), tools=tools))
    # The last two: tools switched off for a summary, then a rewritten history.
    requests.append(
        ModelRequest(system="sys", messages=tuple(messages), tools=tools, tool_choice="none")
    )
    requests.append(
        ModelRequest(system="sys2", messages=(Message.user("summary"), *messages[-2:]), tools=())
    )
    for request in requests:
        for stream in (True, False):
            expected = json.dumps(
                request_body(request, model="m", stream=stream), ensure_ascii=False
            )
            assert encoder.encode(request, model="m", stream=stream) == expected.encode()


def test_provider_message_redacts_before_it_cuts() -> None:
    key = "sk-live-0123456789abcdef"
    body = json.dumps({"error": {"message": "x" * 490 + f" key {key} was refused"}})
    message = provider_message(body, redact=lambda text: text.replace(key, "[redacted]"))
    assert len(message) == 500 and key[:4] not in message
    assert message.endswith(" key [reda")  # the key began at 495


# -- tool calls as odd servers stream them ------------------------------------------------


def test_calls_all_at_index_zero_without_ids_split_at_each_new_name() -> None:
    got = calls_of(
        tc(index=0, function={"name": "shell", "arguments": '{"command": "a"}'}),
        tc(index=0, function={"name": "read", "arguments": '{"path": "x"}'}),
    )
    assert got == (
        ToolCall("call_1", "shell", '{"command": "a"}'),
        ToolCall("call_2", "read", '{"path": "x"}'),
    )


def test_calls_all_at_index_zero_split_at_a_new_id_after_an_id_less_call() -> None:
    got = calls_of(
        tc(index=0, function={"name": "shell", "arguments": ""}),
        tc(index=0, function={"arguments": '{"command": "a"}'}),
        tc(index=0, id="b", function={"name": "read", "arguments": ""}),
        tc(index=0, function={"arguments": '{"path": "x"}'}),
    )
    assert got == (
        ToolCall("call_1", "shell", '{"command": "a"}'),
        ToolCall("b", "read", '{"path": "x"}'),
    )


def test_the_same_name_at_index_zero_starts_a_new_call_once_the_last_is_whole() -> None:
    got = calls_of(
        tc(index=0, function={"name": "read", "arguments": '{"path": "a}{"'}),
        tc(index=0, function={"name": "read", "arguments": "}"}),  # name repeated
        tc(index=0, function={"name": "read", "arguments": '{"path": "b"}'}),
    )
    assert got == (
        ToolCall("call_1", "read", '{"path": "a}{"}'),
        ToolCall("call_2", "read", '{"path": "b"}'),
    )


def test_an_id_arriving_after_the_name_belongs_to_the_same_call() -> None:
    got = calls_of(
        tc(index=0, function={"name": "read", "arguments": ""}),
        tc(index=0, id="late", function={"arguments": '{"path": "a"}'}),
    )
    assert got == (ToolCall("late", "read", '{"path": "a"}'),)


def test_a_name_repeated_in_every_fragment_without_index_is_one_call() -> None:
    got = calls_of(
        tc(function={"name": "write", "arguments": '{"text": "a \\" }'}),
        tc(function={"name": "write", "arguments": ' b\\\\", "n": '}),
        tc(function={"name": "write", "arguments": "1}"}),
        tc(function={"name": "write", "arguments": '{"text": "again", "n": 2}'}),
    )
    assert got == (
        ToolCall("call_1", "write", '{"text": "a \\" } b\\\\", "n": 1}'),
        ToolCall("call_2", "write", '{"text": "again", "n": 2}'),
    )


def test_a_new_name_always_starts_a_new_call() -> None:
    # An argument-less call streamed as its name alone, then the next call.
    got = calls_of(
        tc(function={"name": "list_files", "arguments": ""}),
        tc(function={"name": "read", "arguments": '{"path": "a"}'}),
    )
    assert got == (
        ToolCall("call_1", "list_files", "{}"),
        ToolCall("call_2", "read", '{"path": "a"}'),
    )


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_an_id_given_twice_is_made_unique(streamed: bool) -> None:
    calls = [
        {"id": "call_0", "function": {"name": "f", "arguments": '{"n": 1}'}},
        {"id": "call_0", "function": {"name": "f", "arguments": '{"n": 2}'}},
        {"id": "call_0_2", "function": {"name": "g", "arguments": "{}"}},
    ]
    a = assembler([])
    if streamed:
        for index, call in enumerate(calls):
            a.add_delta({"tool_calls": [{**call, "index": index}]})
    else:
        a.add_message({"role": "assistant", "content": None, "tool_calls": calls})
    got = a.response(model="m").message.tool_calls
    assert [c.id for c in got] == ["call_0", "call_0_3", "call_0_2"]
    assert [c.arguments for c in got] == ['{"n": 1}', '{"n": 2}', "{}"]


def test_an_id_given_twice_at_index_zero_still_means_two_calls() -> None:
    got = calls_of(
        tc(index=0, id="call_0", function={"name": "f", "arguments": '{"n": 1}'}),
        tc(index=0, id="call_0", function={"name": "f", "arguments": '{"n": 2}'}),
    )
    assert [(c.id, c.arguments) for c in got] == [("call_0", '{"n": 1}'), ("call_0_2", '{"n": 2}')]


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "whole"])
def test_empty_ids_are_generated_and_never_clash_with_given_ones(streamed: bool) -> None:
    calls = [
        {"id": "", "function": {"name": "f", "arguments": "{}"}},
        {"id": "  ", "function": {"name": "g", "arguments": "{}"}},
        {"id": "call_1", "function": {"name": "h", "arguments": "{}"}},
    ]
    a = assembler([])
    if streamed:
        for index, call in enumerate(calls):
            a.add_delta({"tool_calls": [{**call, "index": index}]})
    else:
        a.add_message({"role": "assistant", "tool_calls": calls})
    got = a.response(model="m").message.tool_calls
    assert [(c.id, c.name) for c in got] == [("call_2", "f"), ("call_3", "g"), ("call_1", "h")]


def test_surrogate_halves_are_joined_and_lone_ones_replaced() -> None:
    a = assembler([])
    for piece in ["smile \ud83d", "\ude00 and half \ud83d", "!"]:
        a.add_delta({"content": piece, "reasoning_content": piece})
    a.add_delta(tc(index=0, function={"name": "f", "arguments": '{"s": "\ud83d'}))
    a.add_delta(tc(index=0, function={"arguments": '\ude00"}'}))
    message = a.response(model="m").message
    assert message.content == message.reasoning == "smile \U0001f600 and half \ufffd!"
    assert message.tool_calls[0].arguments == '{"s": "\U0001f600"}'


def test_body_encoder_survives_a_lone_surrogate() -> None:
    request = ModelRequest(system="", messages=(Message.user("bad byte: \udcff"),))
    body = json.loads(BodyEncoder().encode(request, model="m", stream=False))
    assert body["messages"] == [{"role": "user", "content": "bad byte: \ufffd"}]

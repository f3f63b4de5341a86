"""The scripted endpoint's Anthropic side, spoken to with plain HTTP: the Messages wire
format, its faults, the checks the real API makes, and the prompt-cache model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tether.models.scripted import Fault, ScriptedCall, ScriptedEndpoint, Turn
from tether.models.scripted_anthropic import (
    ERROR_TYPES,
    PromptBlock,
    cache_usage,
    prompt_blocks,
    thinking_signature,
)
from tether.models.sse import iter_sse

VERSION = {"anthropic-version": "2023-06-01"}
TURN = Turn(
    text="Reading both files now.",
    reasoning="The user wants the files.",
    tool_calls=(
        ScriptedCall("read_file", {"path": "a.py"}, id="toolu_a"),
        ScriptedCall("read_file", '{"path": "b.py"'),  # broken JSON
    ),
)
HI = [{"role": "user", "content": "hi"}]


def post(
    endpoint: ScriptedEndpoint,
    messages: list[dict[str, Any]] | None = None,
    *,
    stream: bool = False,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> httpx.Response:
    body = {"model": "claude-test", "max_tokens": 1000, "messages": messages or HI, **extra}
    if stream:
        body["stream"] = True
    sent = VERSION if headers is None else headers
    return httpx.post(endpoint.root + "/v1/messages", json=body, headers=sent, timeout=5)


def events(response: httpx.Response) -> list[tuple[str, Any]]:
    return [(e.event, json.loads(e.data)) for e in iter_sse([response.content])]


def error_of(response: httpx.Response) -> tuple[str, str]:
    body = response.json()
    assert body["type"] == "error"
    return body["error"]["type"], body["error"]["message"]


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint([TURN, Turn(text="second")]) as ep:
        yield ep


def test_root_is_the_url_without_v1(endpoint: ScriptedEndpoint) -> None:
    assert endpoint.url == endpoint.root + "/v1"
    assert endpoint.root.startswith("http://127.0.0.1:")


def test_plain_answer(endpoint: ScriptedEndpoint) -> None:
    response = post(endpoint)
    assert response.status_code == 200
    assert response.headers["request-id"].startswith("req_")
    body = response.json()
    assert (body["id"], body["type"], body["role"]) == ("msg_scripted_0", "message", "assistant")
    assert body["model"] == "claude-test"
    assert body["stop_reason"] == "tool_use" and body["stop_sequence"] is None
    thinking, text, first, second = body["content"]
    assert thinking == {
        "type": "thinking",
        "thinking": TURN.reasoning,
        "signature": thinking_signature(TURN.reasoning),
    }
    assert text == {"type": "text", "text": TURN.text}
    assert first == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "read_file",
        "input": {"path": "a.py"},
    }
    assert second == {"type": "tool_use", "id": "toolu_0_1", "name": "read_file", "input": {}}
    usage = body["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0
    assert post(endpoint).json()["content"] == [{"type": "text", "text": "second"}]


def test_streamed_answer_event_by_event(endpoint: ScriptedEndpoint) -> None:
    response = post(endpoint, stream=True)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content.isascii()
    got = events(response)
    assert all(data["type"] == name for name, data in got)
    names = [name for name, _ in got]
    assert names[0] == "message_start" and "ping" in names
    assert names[-2:] == ["message_delta", "message_stop"]
    start = got[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["output_tokens"] == 1 and start["usage"]["input_tokens"] > 0
    assert "cache_read_input_tokens" in start["usage"]
    starts = [d["content_block"] for n, d in got if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["thinking", "text", "tool_use", "tool_use"]
    assert [(b["id"], b["name"]) for b in starts[2:]] == [
        ("toolu_a", "read_file"),
        ("toolu_0_1", "read_file"),
    ]
    assert names.count("content_block_stop") == 4

    def deltas(index: int, kind: str, field: str) -> list[str]:
        return [
            d["delta"][field]
            for n, d in got
            if n == "content_block_delta" and d["index"] == index and d["delta"]["type"] == kind
        ]

    thinking = deltas(0, "thinking_delta", "thinking")
    assert len(thinking) >= 2 and "".join(thinking) == TURN.reasoning
    assert deltas(0, "signature_delta", "signature") == [thinking_signature(TURN.reasoning)]
    text = deltas(1, "text_delta", "text")
    assert len(text) >= 2 and "".join(text) == TURN.text
    for index, expected in [(2, '{"path": "a.py"}'), (3, '{"path": "b.py"')]:
        pieces = deltas(index, "input_json_delta", "partial_json")
        assert len(pieces) >= 2 and pieces[0] == "" and "".join(pieces) == expected
    delta = got[-2][1]
    assert delta["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert delta["usage"]["output_tokens"] > 1


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        (Turn(text="done"), "end_turn"),
        (Turn(text="cut", finish_reason="length"), "max_tokens"),
        (Turn(text="done", finish_reason="stop"), "end_turn"),
        (Turn(text="no", finish_reason="refusal"), "refusal"),
    ],
)
def test_stop_reasons(turn: Turn, expected: str) -> None:
    with ScriptedEndpoint([turn, turn]) as ep:
        assert post(ep).json()["stop_reason"] == expected
        assert events(post(ep, stream=True))[-2][1]["delta"]["stop_reason"] == expected


def follow_up(content: list[dict[str, Any]], results: list[str]) -> list[dict[str, Any]]:
    """HI, the assistant's `content`, then a user message with a result for each id."""
    answers = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in results]
    return [*HI, {"role": "assistant", "content": content}, {"role": "user", "content": answers}]


def test_thinking_signature_round_trips_and_a_tampered_one_is_refused(
    endpoint: ScriptedEndpoint,
) -> None:
    content = post(endpoint).json()["content"]
    ids = [b["id"] for b in content if b["type"] == "tool_use"]
    assert post(endpoint, follow_up(content, ids)).status_code == 200
    tampered = [{**content[0], "thinking": "Something else."}, *content[1:]]
    response = post(endpoint, follow_up(tampered, ids))
    assert response.status_code == 400
    assert error_of(response) == (
        "invalid_request_error",
        "messages.1.content.0: Invalid `signature` in `thinking` block",
    )
    assert endpoint.turns_served == 2  # a refused request uses no turn


def test_requests_are_recorded_and_callable_steps_see_the_body() -> None:
    seen: list[dict[str, Any]] = []

    def echo(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn(text=f"{len(body['messages'])} messages")

    with ScriptedEndpoint([echo]) as ep:
        assert post(ep).json()["content"][0]["text"] == "1 messages"
        recorded = ep.requests
    assert seen[0]["max_tokens"] == 1000
    assert [(r.method, r.path) for r in recorded] == [("POST", "/v1/messages")]
    assert recorded[0].headers["anthropic-version"] == "2023-06-01"


def test_a_step_that_raises_answers_api_error() -> None:
    def broken(body: dict[str, Any]) -> Turn:
        raise KeyError("tools")

    with ScriptedEndpoint([broken]) as ep:
        response = post(ep)
        assert response.status_code == 500
        kind, message = error_of(response)
        assert kind == "api_error" and "KeyError: 'tools'" in message
        assert ep.turns_served == 0


def test_x_api_key_version_header_and_model_are_checked() -> None:
    with ScriptedEndpoint(
        [Turn(text="ok")], api_key="sk-ant-right", model="claude-a", strict_model=True
    ) as ep:
        for headers in [VERSION, {**VERSION, "Authorization": "Bearer sk-ant-right"}]:
            denied = post(ep, headers=headers)
            assert denied.status_code == 401
            assert error_of(denied) == ("authentication_error", "invalid x-api-key")
        key = {"x-api-key": "sk-ant-right"}
        missing = post(ep, headers=key)
        assert missing.status_code == 400
        assert error_of(missing) == (
            "invalid_request_error",
            "anthropic-version: header is required",
        )
        unknown = post(ep, headers={**key, **VERSION})
        assert unknown.status_code == 404
        assert error_of(unknown) == ("not_found_error", "model: claude-test")
        body = {"model": "claude-a", "max_tokens": 10, "messages": HI}
        ok = httpx.post(ep.root + "/v1/messages", json=body, headers={**key, **VERSION})
        assert ok.json()["content"] == [{"type": "text", "text": "ok"}]


# -- faults --------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "kind"), sorted(ERROR_TYPES.items()))
def test_status_faults_have_anthropic_error_bodies(status: int, kind: str) -> None:
    with ScriptedEndpoint([Turn(text="after")]) as ep:
        ep.add_fault(Fault("status", status=status, retry_after=3))
        response = post(ep)
        assert response.status_code == status
        assert response.headers["retry-after"] == "3"
        assert error_of(response)[0] == kind
        assert response.json()["request_id"] == response.headers["request-id"]
        assert post(ep).json()["content"][0]["text"] == "after"  # the fault used no turn


def test_529_says_overloaded() -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("status", status=529))
        assert error_of(post(ep)) == ("overloaded_error", "Overloaded")


def test_reset_and_hang_faults() -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("reset"))
        with pytest.raises(httpx.TransportError):
            post(ep)
        ep.add_fault(Fault("hang", hang_s=5))
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(ep.root + "/v1/messages", json={}, headers=VERSION, timeout=0.2)
        assert [r.path for r in ep.requests] == ["/v1/messages"] * 2


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_fault(stream: bool) -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("malformed"))
        response = post(ep, stream=stream)
    assert response.status_code == 200
    payloads = [e.data for e in iter_sse([response.content])] if stream else [response.text]
    with pytest.raises(ValueError):
        [json.loads(p) for p in payloads]


def test_truncated_fault() -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("truncated"))
        names = [name for name, _ in events(post(ep, stream=True))]
        assert names[0] == "message_start" and "content_block_delta" in names
        assert "message_stop" not in names and "message_delta" not in names
        ep.add_fault(Fault("truncated"))
        with pytest.raises(httpx.RemoteProtocolError):
            post(ep)


@pytest.mark.parametrize("stream", [False, True])
def test_keepalive_fault_sends_only_pings(stream: bool) -> None:
    with ScriptedEndpoint([Turn(text="never")]) as ep:
        ep.add_fault(Fault("keepalive", hang_s=0.3))
        body = {"model": "m", "max_tokens": 5, "messages": HI, "stream": stream}
        seen = b""
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("POST", ep.root + "/v1/messages", json=body, headers=VERSION) as response,
        ):
            assert response.status_code == 200
            for piece in response.iter_bytes():
                seen += piece
        if stream:
            got = [(e.event, e.data) for e in iter_sse([seen])]
            assert len(got) >= 3 and set(got) == {("ping", '{"type": "ping"}')}
        else:
            assert seen.count(b"\n") >= 3 and seen.strip() == b""
        assert ep.turns_served == 0


def test_stream_error_fault_ends_the_stream_with_an_error_event() -> None:
    with ScriptedEndpoint([Turn(text="after")]) as ep:
        ep.add_fault(Fault("stream_error"))
        got = events(post(ep, stream=True))
        names = [name for name, _ in got]
        assert names[0] == "message_start" and "content_block_delta" in names
        assert names[-1] == "error" and "message_stop" not in names
        assert got[-1][1] == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
        ep.add_fault(Fault("stream_error"))
        plain = post(ep)
        assert plain.status_code == 529 and error_of(plain)[0] == "overloaded_error"
        assert post(ep).json()["content"][0]["text"] == "after"


@pytest.mark.parametrize("stream", [False, True])
def test_stream_error_fault_on_the_openai_route(stream: bool) -> None:
    with ScriptedEndpoint([Turn(text="after")]) as ep:
        ep.add_fault(Fault("stream_error", message="upstream overloaded"))
        body = {"model": "m", "messages": HI, "stream": stream}
        response = httpx.post(ep.url + "/chat/completions", json=body, timeout=5)
        assert response.status_code == 200
        if stream:
            payloads = [e.data for e in iter_sse([response.content])]
            assert "[DONE]" not in payloads
            assert "choices" in json.loads(payloads[0])
            last = json.loads(payloads[-1])
        else:
            last = response.json()
        assert last["error"]["message"] == "upstream overloaded"
        assert ep.turns_served == 0


# -- what the real API rejects -------------------------------------------------------

USE = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}
USE2 = {**USE, "id": "toolu_2"}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}
RESULT2 = {**RESULT, "tool_use_id": "toolu_2"}
TEXT = {"type": "text", "text": "and then"}
MARK = {"cache_control": {"type": "ephemeral"}}


def conversation(*contents: Any) -> list[dict[str, Any]]:
    roles = ["user", "assistant"] * len(contents)
    return [{"role": r, "content": c} for r, c in zip(roles, contents, strict=False)]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"messages": []}, "messages: at least one message is required"),
        (
            {"messages": [{"role": "assistant", "content": "hi"}]},
            'messages: first message must use the "user" role',
        ),
        (
            {"messages": [*HI, {"role": "system", "content": "x"}]},
            "messages.1.role: Input should be 'user' or 'assistant'",
        ),
        (
            {"messages": conversation("hi", [USE, USE2], [RESULT])},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_2. Each `tool_use` block must have a corresponding `tool_result` "
            "block in the next message.",
        ),
        (
            {"messages": conversation("hi", [USE])},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1.",
        ),
        (
            {"messages": conversation("hi", [USE], [TEXT, RESULT])},
            "ids were found without `tool_result` blocks immediately after: toolu_1.",
        ),
        (
            {"messages": conversation("hi", [USE], [RESULT, RESULT2])},
            "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_2. Each `tool_result` block must have a corresponding `tool_use` block in "
            "the previous message.",
        ),
        (
            {"messages": conversation([RESULT])},
            "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks",
        ),
        (
            {"messages": conversation([{"type": "text", "text": ""}])},
            "messages: text content blocks must be non-empty",
        ),
        (
            {"messages": conversation("hi", [{"type": "text", "text": " \n"}], "go on")},
            "messages: text content blocks must contain non-whitespace text",
        ),
        (
            {"messages": conversation("hi", "", "more")},
            "messages.1: all messages must have non-empty content except for the optional "
            "final assistant message",
        ),
        (
            {"system": [{"type": "text", "text": ""}]},
            "system: text content blocks must be non-empty",
        ),
        (
            {"messages": conversation("hi", [{**USE, "id": "call:1"}], [RESULT])},
            "messages.1.content.0.tool_use.id: String should match pattern",
        ),
        (
            {"messages": conversation("hi", [{**USE, "input": "{}"}], [RESULT])},
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        ),
        (
            {
                "messages": conversation(
                    "hi",
                    [{"type": "thinking", "thinking": "hm", "signature": "forged"}, USE],
                    [RESULT],
                )
            },
            "messages.1.content.0: Invalid `signature` in `thinking` block",
        ),
        (
            {
                "messages": conversation(
                    [{**TEXT, **MARK}, {**TEXT, **MARK}, {**TEXT, **MARK}],
                    [{**TEXT, **MARK}, {**TEXT, **MARK}],
                )
            },
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        (
            {"tools": [{"name": "ls", "description": "list", **MARK}], "messages": HI},
            "tools.0.custom.input_schema: Field required",
        ),
        ({"tool_choice": {"type": "sometimes"}}, "tool_choice: Input tag 'sometimes' found"),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 2000}},
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ),
        (
            {
                "max_tokens": 4000,
                "thinking": {"type": "enabled", "budget_tokens": 2000},
                "messages": conversation("hi", [TEXT, USE], [RESULT]),
            },
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            "`text`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block",
        ),
        (
            {"messages": conversation("hi", "Sure: ")},
            "final assistant content cannot end with trailing whitespace",
        ),
    ],
)
def test_requests_the_real_api_rejects(
    endpoint: ScriptedEndpoint, body: dict[str, Any], message: str
) -> None:
    sent = {"model": "claude-test", "max_tokens": 1000, "messages": HI, **body}
    sent = {k: v for k, v in sent.items() if v is not None}
    response = httpx.post(endpoint.root + "/v1/messages", json=sent, headers=VERSION)
    assert response.status_code == 400
    kind, said = error_of(response)
    assert kind == "invalid_request_error"
    assert said.startswith(message) or message in said
    assert endpoint.turns_served == 0


def test_requests_the_real_api_accepts(endpoint: ScriptedEndpoint) -> None:
    signed = {"type": "thinking", "thinking": "hm", "signature": thinking_signature("hm")}
    accepted = [
        {"messages": conversation("hi", [USE, USE2], [RESULT2, RESULT, TEXT])},
        {"messages": conversation("hi", "Sure:")},  # a prefill
        {
            "messages": conversation(
                "hi", [{"type": "redacted_thinking", "data": "xyz"}, USE], [RESULT]
            )
        },
        {
            "max_tokens": 4000,
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "messages": conversation("hi", [signed, USE], [RESULT]),
        },
        {
            "system": [{"type": "text", "text": "be brief", **MARK}],
            "tools": [{"name": "ls", "description": "list", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "ls"},
            "messages": HI,
        },
    ]
    for body in accepted:
        sent = {"model": "claude-test", "max_tokens": 1000, **body}
        response = httpx.post(endpoint.root + "/v1/messages", json=sent, headers=VERSION)
        assert response.status_code == 200, response.text


# -- the prompt-cache model ----------------------------------------------------------

BIG = "x" * 5000  # about 1250 tokens: enough to be cached on its own


def text_blocks(count: int, mark_last: bool = True) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": BIG}]
    blocks += [{"type": "text", "text": f"note {i}"} for i in range(1, count)]
    if mark_last:
        blocks[-1] = {**blocks[-1], **MARK}
    return blocks


def usage_for(ep: ScriptedEndpoint, content: list[dict[str, Any]], **extra: Any) -> dict[str, int]:
    response = post(ep, [{"role": "user", "content": content}], **extra)
    assert response.status_code == 200, response.text
    usage: dict[str, int] = response.json()["usage"]
    return usage


def test_a_longer_request_reads_the_prefix_an_earlier_one_wrote() -> None:
    with ScriptedEndpoint([]) as ep:
        first = usage_for(ep, text_blocks(6))
        assert first["cache_read_input_tokens"] == 0 and first["input_tokens"] == 0
        assert first["cache_creation_input_tokens"] > 1024
        second = usage_for(ep, text_blocks(10))
        assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
        assert 0 < second["cache_creation_input_tokens"] < 100
        assert second["input_tokens"] == 0
        again = usage_for(ep, text_blocks(10))
        total = second["cache_read_input_tokens"] + second["cache_creation_input_tokens"]
        assert again["cache_read_input_tokens"] == total
        assert again["cache_creation_input_tokens"] == 0


def test_tokens_after_the_last_breakpoint_are_plain_input() -> None:
    with ScriptedEndpoint([]) as ep:
        content = text_blocks(3)
        content.append({"type": "text", "text": "y" * 400})
        usage = usage_for(ep, content)
        assert usage["input_tokens"] >= 100 and usage["cache_creation_input_tokens"] > 1024


@pytest.mark.parametrize(("added", "hit"), [(19, True), (20, False)])
def test_a_breakpoint_looks_back_twenty_blocks(added: int, hit: bool) -> None:
    with ScriptedEndpoint([]) as ep:
        first = usage_for(ep, text_blocks(6))
        later = usage_for(ep, text_blocks(6 + added))
        read = later["cache_read_input_tokens"]
        assert read == (first["cache_creation_input_tokens"] if hit else 0)


def test_prefixes_under_1024_tokens_are_not_written() -> None:
    with ScriptedEndpoint([]) as ep:
        short = [{"type": "text", "text": "y" * 3000, **MARK}]  # about 750 tokens
        for _ in range(2):
            usage = usage_for(ep, short)
            assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0
            assert usage["input_tokens"] > 700


def test_tools_and_system_stay_cached_when_the_messages_change() -> None:
    tools = [
        {"name": f"tool_{i}", "description": "d" * 1000, "input_schema": {"type": "object"}}
        for i in range(5)
    ]
    tools[-1] = {**tools[-1], **MARK}
    system = [{"type": "text", "text": "You are terse.", **MARK}]
    with ScriptedEndpoint([]) as ep:
        one = usage_for(ep, [{"type": "text", "text": "first task"}], tools=tools, system=system)
        two = usage_for(ep, [{"type": "text", "text": "other task"}], tools=tools, system=system)
        assert one["cache_read_input_tokens"] == 0
        assert two["cache_read_input_tokens"] == one["cache_creation_input_tokens"] > 1024
        assert two["input_tokens"] == one["input_tokens"] > 0


def test_the_cache_model_as_a_pure_function() -> None:
    body = {
        "model": "m",
        "system": "sys",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a", **MARK}]}],
    }
    blocks = prompt_blocks(body)
    assert [b.breakpoint for b in blocks] == [False, True]
    assert blocks[0].key.startswith("system") and blocks[1].key.startswith("messages.0.user")
    big = [PromptBlock(f"b{i}", 600, i == 1) for i in range(3)]
    usage, writes = cache_usage(big, set(), model="m")
    assert usage == {
        "input_tokens": 600,
        "cache_creation_input_tokens": 1200,
        "cache_read_input_tokens": 0,
    }
    again, _ = cache_usage(big, writes, model="m")
    assert again["cache_read_input_tokens"] == 1200
    other, _ = cache_usage(big, writes, model="another-model")
    assert other["cache_read_input_tokens"] == 0

"""The Anthropic Messages client's failures, against the scripted endpoint's faults.

Transient trouble (429, 529, 5xx, resets, hangs, broken or cut streams, an `error`
event mid-stream) is retried, each retry reported; the rest fails at once as the
`ProviderError` that says what to fix, never showing the API key.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from tests.models.wire_cases import FAST, STREAMS

from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    ModelNotFoundError,
    ProviderError,
    TransientError,
)
from tether.messages import FinishReason, Message
from tether.models.anthropic import AnthropicModel
from tether.models.base import ModelRequest, ToolSpec
from tether.models.retry import RetryPolicy
from tether.models.scripted import Fault, ScriptedCall, ScriptedEndpoint, Turn
from tether.models.scripted_wire import FaultKind
from tether.observe.events import Event, RetryScheduled

KEY = "sk-ant-test-9f8e7d6c5b4a"
TOO_LONG = "prompt is too long: 210000 tokens > 200000 maximum"
REQUEST = ModelRequest(system="You are terse.", messages=(Message.user("Fix the bug."),))
TURN = Turn(
    text="Reading it.",
    tool_calls=(ScriptedCall("read_file", {"path": "a.py"}, id="toolu_a"),),
)

pytestmark = pytest.mark.timeout(30)


def client(ep: ScriptedEndpoint, **kwargs: Any) -> AnthropicModel:
    options: dict[str, Any] = {"api_key": None, "model": "claude-test", "retry": FAST}
    options.update(kwargs)
    return AnthropicModel(base_url=ep.root, **options)


def retries(events: list[Event]) -> list[RetryScheduled]:
    return [e for e in events if isinstance(e, RetryScheduled)]


def fails_once(ep: ScriptedEndpoint, error: type[ProviderError], **kwargs: Any) -> ProviderError:
    """The error of one call, after asserting it was not retried."""
    events: list[Event] = []
    with client(ep, **kwargs) as model, pytest.raises(error) as info:
        model.complete(REQUEST, events.append)
    assert len(ep.requests) == 1 and not retries(events)
    return info.value


def chain(error: BaseException) -> str:
    """Every message and repr along the error's causes."""
    texts: list[str] = []
    current: BaseException | None = error
    while current is not None:
        texts += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


TRANSIENT = {
    "429": Fault("status", status=429, retry_after=0.05),
    "500": Fault("status", status=500),
    "529": Fault("status", status=529),
    "stream_error": Fault("stream_error"),
    "truncated": Fault("truncated"),
    "malformed": Fault("malformed"),
    "reset": Fault("reset"),
    "hang": Fault("hang", hang_s=3),
}


@pytest.mark.parametrize("fault", TRANSIENT.values(), ids=TRANSIENT.keys())
@STREAMS
def test_a_transient_fault_is_retried_and_the_turn_survives(
    fault: Fault, stream: bool, events: list[Event]
) -> None:
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        with client(ep, stream=stream, request_timeout=0.3) as model:
            response = model.complete(REQUEST, events.append)
        assert len(ep.requests) == 2 and ep.turns_served == 1
    assert response.message.content == "Reading it."
    assert [c.id for c in response.message.tool_calls] == ["toolu_a"]
    assert response.finish_reason is FinishReason.TOOL_CALLS
    (retry,) = retries(events)
    assert retry.attempt == 1
    if fault.retry_after is not None:
        assert retry.delay == fault.retry_after
        assert "HTTP 429" in retry.reason
    else:
        assert 0 < retry.delay <= FAST.base_delay
    assert f"{ep.root}/v1/messages" in retry.reason


def test_a_mid_stream_error_event_is_retried_with_its_message(events: list[Event]) -> None:
    with ScriptedEndpoint([TURN], faults={0: Fault("stream_error")}) as ep, client(ep) as model:
        response = model.complete(REQUEST, events.append)
    (retry,) = retries(events)
    assert "Overloaded" in retry.reason and "overloaded_error" in retry.reason
    assert response.message.content == "Reading it."  # nothing of the cut answer is kept


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (Fault("status", status=529), ["HTTP 529", "Overloaded"]),
        (Fault("stream_error"), ["reported an error", "Overloaded"]),
        (Fault("truncated"), ["truncated stream", "no message_stop"]),
        (Fault("malformed"), ["malformed JSON"]),
        (Fault("reset"), ["connection", "broke"]),
        (Fault("hang", hang_s=3), ["sent nothing for 0.2 s"]),
    ],
    ids=["529", "stream_error", "truncated", "malformed", "reset", "hang"],
)
def test_a_persistent_fault_ends_in_one_clear_error(fault: Fault, words: list[str]) -> None:
    events: list[Event] = []
    with ScriptedEndpoint([TURN], faults={i: fault for i in range(3)}) as ep:
        with client(ep, request_timeout=0.2) as model, pytest.raises(TransientError) as info:
            model.complete(REQUEST, events.append)
        assert len(ep.requests) == 3
    message = str(info.value)
    assert message.startswith("gave up after 3 attempts; last error: ")
    assert f"{ep.root}/v1/messages" in message
    for word in words:
        assert word in message
    assert [e.attempt for e in retries(events)] == [1, 2]


def test_retry_after_longer_than_we_wait_fails_at_once() -> None:
    fault = Fault("status", status=429, retry_after=900)
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        error = fails_once(ep, TransientError)
    assert isinstance(error, TransientError)
    assert "HTTP 429" in str(error) and "900 s" in str(error)
    assert error.status == 429 and error.retry_after == 900


def test_a_wrong_key_is_an_authentication_error_without_the_key() -> None:
    with ScriptedEndpoint([TURN], api_key="sk-ant-the-right-one") as ep:
        error = fails_once(ep, AuthenticationError, api_key=KEY)
    assert error.status == 401
    assert "rejected the API key; check ANTHROPIC_API_KEY" in str(error)
    assert "HTTP 401" in str(error) and "invalid x-api-key" in str(error)
    assert KEY not in chain(error)


@STREAMS
def test_a_key_echoed_back_by_the_server_is_redacted(stream: bool) -> None:
    fault = Fault("status", status=401, message=f"invalid x-api-key: {KEY}")
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        error = fails_once(ep, AuthenticationError, api_key=KEY, stream=stream)
    assert "ANTHROPIC_API_KEY" in str(error) and "[redacted]" in str(error)
    assert KEY not in chain(error)


def test_a_key_echoed_in_a_mid_stream_error_is_redacted() -> None:
    fault = Fault("stream_error", message=f"upstream failed for key {KEY}")
    with (
        ScriptedEndpoint([TURN], faults={i: fault for i in range(3)}) as ep,
        client(ep, api_key=KEY) as model,
        pytest.raises(TransientError) as info,
    ):
        model.complete(REQUEST, lambda e: None)
    assert "[redacted]" in str(info.value) and KEY not in chain(info.value)


def test_a_missing_key_says_to_set_one() -> None:
    with ScriptedEndpoint([TURN], api_key="sk-ant-needed") as ep:
        error = fails_once(ep, AuthenticationError)
    assert "wants an API key; set ANTHROPIC_API_KEY" in str(error)


def test_an_unknown_model_names_the_model_and_the_api_root() -> None:
    with ScriptedEndpoint([TURN], model="claude-real", strict_model=True) as ep:
        error = fails_once(ep, ModelNotFoundError, model="claude-typo")
    message = str(error)
    assert error.status == 404 and "HTTP 404" in message and "model: claude-typo" in message
    assert "'claude-typo'" in message and f"{ep.root}/v1/messages" in message
    assert "TETHER_MODEL" in message and "TETHER_BASE_URL" in message
    assert "the API root (https://api.anthropic.com, without /v1/messages)" in message


@STREAMS
def test_a_prompt_too_long_is_a_context_length_error(stream: bool) -> None:
    fault = Fault("status", status=400, message=TOO_LONG)
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        error = fails_once(ep, ContextLengthError, stream=stream)
    assert error.status == 400 and "context window" in str(error) and TOO_LONG in str(error)


def test_a_prompt_too_long_mid_stream_is_a_context_length_error() -> None:
    fault = Fault("stream_error", message=TOO_LONG)
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        error = fails_once(ep, ContextLengthError)
    assert TOO_LONG in str(error)


def test_another_400_is_a_bad_request_carrying_the_api_message() -> None:
    # A real refusal from the endpoint's checks: tool names allow no spaces.
    bad = ModelRequest(
        system="s", messages=REQUEST.messages, tools=(ToolSpec("read file", "", {}),)
    )
    events: list[Event] = []
    with ScriptedEndpoint([TURN]) as ep, client(ep) as model:
        with pytest.raises(BadRequestError) as info:
            model.complete(bad, events.append)
        assert len(ep.requests) == 1 and not retries(events)
    message = str(info.value)
    assert info.value.status == 400 and "HTTP 400" in message
    assert "tools.0.custom.name: String should match pattern" in message
    assert "invalid_request_error" in message


@pytest.mark.parametrize("status", [400, 413, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    fault = Fault("status", status=status, message="messages.0: something is off")
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        error = fails_once(ep, BadRequestError if status != 413 else ContextLengthError)
    assert f"HTTP {status}" in str(error) and "something is off" in str(error)


@pytest.mark.parametrize("kind", ["hang", "keepalive"])
@STREAMS
def test_the_deadline_bounds_the_call_retries_included(kind: FaultKind, stream: bool) -> None:
    faults = {i: Fault(kind, hang_s=10) for i in range(6)}
    retry = RetryPolicy(max_attempts=6, base_delay=0.05, max_delay=0.1)
    with (
        ScriptedEndpoint([TURN], faults=faults) as ep,
        client(ep, stream=stream, request_timeout=30, retry=retry) as model,
    ):
        start = time.monotonic()
        request = replace(REQUEST, deadline=start + 0.5)
        with pytest.raises(TransientError) as info:
            model.complete(request, lambda e: None)
        elapsed = time.monotonic() - start
    assert elapsed < 1.5
    assert "time limit" in str(info.value) or "sent nothing" in str(info.value)


def test_the_deadline_stops_retries_that_would_start_too_late() -> None:
    fault = Fault("status", status=429, retry_after=2)
    with ScriptedEndpoint([TURN], faults={0: fault}) as ep:
        request = replace(REQUEST, deadline=time.monotonic() + 1)
        with client(ep) as model, pytest.raises(TransientError) as info:
            model.complete(request, lambda e: None)
        assert len(ep.requests) == 1
    assert "no time left to retry" in str(info.value) and "HTTP 429" in str(info.value)

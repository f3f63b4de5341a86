"""The real OpenAI-compatible client against real local endpoints over HTTP.

`ScriptedEndpoint` covers the happy paths and every fault. `CannedServer` answers
with exactly the bytes a test gives it, to show the client copes with what other
servers send (no `index` on tool calls, errors inside a stream, redirects, ...).
Nothing of ours is mocked.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.models.wire_cases import FAST, READ, REQUEST

from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ContextLengthError,
    ModelNotFoundError,
    ProviderError,
    TransientError,
)
from tether.messages import FinishReason, Message, ToolCall, ToolResult
from tether.models.base import ModelRequest
from tether.models.openai_compat import OpenAICompatModel
from tether.models.openai_errors import display_url
from tether.models.retry import RetryPolicy
from tether.models.scripted import Fault, ScriptedCall, ScriptedEndpoint, Turn
from tether.observe.events import (
    Event,
    ReasoningDelta,
    RetryScheduled,
    TextDelta,
    ToolCallDelta,
)

KEY = "sk-test-9f8e7d6c5b4a"


@dataclass
class Canned:
    """One response: status, headers, and body pieces (each sent as one HTTP chunk)."""

    status: int = 200
    body: Sequence[bytes] = (b"",)
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def sse(cls, *payloads: str, done: bool = True) -> Canned:
        pieces = [f"data: {p}\n\n".encode() for p in payloads]
        if done:
            pieces.append(b"data: [DONE]\n\n")
        return cls(body=pieces, headers={"Content-Type": "text/event-stream"})

    @classmethod
    def json(cls, text: str, status: int = 200, **headers: str) -> Canned:
        return cls(status, [text.encode()], {"Content-Type": "application/json", **headers})


class CannedServer:
    """Answers requests with the queued `Canned` responses, in order, over chunked HTTP."""

    def __init__(self) -> None:
        self.queue: list[Canned] = []
        self.bodies: list[bytes] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                outer.bodies.append(self.rfile.read(length))
                canned = outer.queue.pop(0)
                self.send_response(canned.status)
                for name, value in canned.headers.items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece in canned.body:
                    if piece:
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def client_for(url: str, **kwargs: Any) -> OpenAICompatModel:
    options: dict[str, Any] = {"api_key": None, "model": "scripted", "retry": FAST}
    options.update(kwargs)
    return OpenAICompatModel(base_url=url, **options)


@pytest.fixture
def canned() -> Iterator[CannedServer]:
    server = CannedServer()
    yield server
    server.close()


TOOL_TURN = Turn(
    text="Let me read both.",
    reasoning="Two files matter.",
    tool_calls=(
        ScriptedCall("read_file", {"path": "a.py"}),
        ScriptedCall("read_file", {"path": "b.py"}, id="call_given"),
    ),
)

pytestmark = pytest.mark.timeout(30)


def of_type(events: list[Event], kind: type[Event]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_a_turn_with_text_reasoning_and_two_tool_calls(stream: bool, events: list[Event]) -> None:
    with ScriptedEndpoint([TOOL_TURN]) as ep, client_for(ep.url, stream=stream) as model:
        response = model.complete(REQUEST, events.append)
    assert response.message == Message(
        role="assistant",
        content="Let me read both.",
        tool_calls=(
            ToolCall("call_0_0", "read_file", '{"path": "a.py"}'),
            ToolCall("call_given", "read_file", '{"path": "b.py"}'),
        ),
        reasoning="Two files matter.",
    )
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.model == "scripted"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    text = of_type(events, TextDelta)
    assert "".join(e.text for e in text) == response.message.content
    assert "".join(e.text for e in of_type(events, ReasoningDelta)) == "Two files matter."
    deltas = of_type(events, ToolCallDelta)
    for index, call in enumerate(response.message.tool_calls):
        mine = [d for d in deltas if d.index == index]
        assert "".join(d.arguments for d in mine) == call.arguments
        assert [d.name for d in mine if d.name] == ["read_file"]
    if stream:
        assert len(text) >= 2 and len(deltas) >= 6
    assert not of_type(events, RetryScheduled)


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_usage_reports_cached_tokens_of_a_shared_prefix(stream: bool) -> None:
    long = ModelRequest(system="rules " * 1200, messages=(Message.user("go"),), tools=(READ,))
    longer = ModelRequest(
        system=long.system, messages=(*long.messages, Message.user("and more")), tools=(READ,)
    )
    script = [Turn(text="a"), Turn(text="b")]
    with ScriptedEndpoint(script) as ep, client_for(ep.url, stream=stream) as model:
        first = model.complete(long, lambda e: None)
        second = model.complete(longer, lambda e: None)
    assert first.usage.cached_tokens == 0
    assert second.usage.cached_tokens >= 1024 and second.usage.cached_tokens % 128 == 0
    assert second.usage.input_tokens > second.usage.cached_tokens


def test_the_exact_request_body() -> None:
    call = ToolCall("call_1", "read_file", '{"path": "a.py"}')
    request = ModelRequest(
        system="You are terse.",
        messages=(
            Message.user("Fix the bug."),
            Message(role="assistant", tool_calls=(call,), reasoning="private"),
            Message.tool(ToolResult("call_1", "read_file", "print('hi')")),
        ),
        tools=(READ,),
        tool_choice="none",
        max_output_tokens=100,
    )
    with ScriptedEndpoint([Turn(text="ok")], api_key=KEY) as ep:
        with client_for(ep.url + "/", api_key=KEY) as model:  # a trailing slash is fine
            model.complete(request, lambda e: None)
        (sent,) = ep.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": "scripted",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Fix the bug."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file.",
                    "parameters": READ.parameters,
                },
            }
        ],
        "tool_choice": "none",
        "max_tokens": 100,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_no_key_no_tools_no_stream_means_none_of_their_fields() -> None:
    with ScriptedEndpoint([Turn(text="ok")]) as ep:
        with client_for(ep.url, stream=False) as model:
            model.complete(ModelRequest(system="", messages=(Message.user("hi"),)), lambda e: None)
        (sent,) = ep.requests
    assert "authorization" not in sent.headers
    assert sent.body == {
        "model": "scripted",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": False,
    }


TRANSIENT_FAULTS = [
    Fault("status", status=429, retry_after=0.05),
    Fault("status", status=500),
    Fault("status", status=529),
    Fault("reset"),
    Fault("hang", hang_s=3),
    Fault("malformed"),
    Fault("truncated"),
]
FAULT_IDS = ["429", "500", "529", "reset", "hang", "malformed", "truncated"]


@pytest.mark.parametrize("fault", TRANSIENT_FAULTS, ids=FAULT_IDS)
@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_a_transient_fault_is_retried_and_the_turn_survives(
    fault: Fault, stream: bool, events: list[Event]
) -> None:
    with ScriptedEndpoint([TOOL_TURN], faults={0: fault}) as ep:
        with client_for(ep.url, stream=stream, request_timeout=0.3) as model:
            response = model.complete(REQUEST, events.append)
        assert len(ep.requests) == 2
    assert response.message.content == TOOL_TURN.text
    assert len(response.message.tool_calls) == 2
    (retry,) = of_type(events, RetryScheduled)
    assert retry.attempt == 1
    if fault.retry_after is not None:
        assert retry.delay == fault.retry_after
    else:
        assert 0 < retry.delay <= FAST.base_delay
    assert ep.url.removesuffix("/v1") in retry.reason


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (Fault("status", status=503), ["HTTP 503"]),
        (Fault("reset"), ["connection", "broke"]),
        (Fault("hang", hang_s=3), ["sent nothing for 0.2 s"]),
        (Fault("malformed"), ["malformed JSON"]),
        (Fault("truncated"), ["truncated stream"]),
    ],
    ids=["503", "reset", "hang", "malformed", "truncated"],
)
def test_a_persistent_fault_ends_in_one_clear_error(fault: Fault, words: list[str]) -> None:
    events: list[Event] = []
    with ScriptedEndpoint([TOOL_TURN], faults={i: fault for i in range(3)}) as ep:
        with (
            client_for(ep.url, request_timeout=0.2) as model,
            pytest.raises(TransientError) as info,
        ):
            model.complete(REQUEST, events.append)
        assert len(ep.requests) == 3
    message = str(info.value)
    assert message.startswith("gave up after 3 attempts; last error: ")
    assert f"{ep.url}/chat/completions" in message
    for word in words:
        assert word in message
    assert [e.attempt for e in of_type(events, RetryScheduled)] == [1, 2]


def test_retry_after_longer_than_we_wait_fails_at_once() -> None:
    fault = Fault("status", status=429, retry_after=900)
    with ScriptedEndpoint([TOOL_TURN], faults={0: fault}) as ep:
        with client_for(ep.url) as model, pytest.raises(TransientError) as info:
            model.complete(REQUEST, lambda e: None)
        assert len(ep.requests) == 1
    assert "HTTP 429" in str(info.value) and "900 s" in str(info.value)
    assert info.value.status == 429 and info.value.retry_after == 900


def test_refused_connection_is_transient_and_named() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with client_for(f"http://127.0.0.1:{port}/v1") as model, pytest.raises(TransientError) as info:
        model.complete(REQUEST, lambda e: None)
    assert "gave up after 3 attempts" in str(info.value)
    assert f"cannot connect to http://127.0.0.1:{port}/v1/chat/completions" in str(info.value)


def fails_once(ep: ScriptedEndpoint, error: type[ProviderError], **kwargs: Any) -> ProviderError:
    """The error of one call, after asserting it was not retried."""
    with client_for(ep.url, **kwargs) as model, pytest.raises(error) as info:
        model.complete(REQUEST, lambda e: None)
    assert len(ep.requests) == 1
    return info.value


def test_wrong_key_is_an_authentication_error_without_the_key() -> None:
    # The endpoint echoes the key it was given, as some servers do.
    with ScriptedEndpoint([TOOL_TURN], api_key="sk-the-right-one") as ep:
        error = fails_once(ep, AuthenticationError, api_key=KEY)
    assert error.status == 401
    assert "TETHER_API_KEY" in str(error) and "HTTP 401" in str(error)
    assert KEY not in str(error) and "[redacted]" in str(error)


def test_missing_key_says_to_set_one() -> None:
    with ScriptedEndpoint([TOOL_TURN], api_key="sk-needed") as ep:
        error = fails_once(ep, AuthenticationError)
    assert "set TETHER_API_KEY" in str(error)


def test_unknown_model_names_model_and_endpoint() -> None:
    with ScriptedEndpoint([TOOL_TURN], model="real-model", strict_model=True) as ep:
        error = fails_once(ep, ModelNotFoundError, model="typo-model")
    message = str(error)
    assert "'typo-model'" in message and ep.url in message and "HTTP 404" in message
    assert "TETHER_MODEL" in message and "TETHER_BASE_URL" in message


def test_context_length_is_its_own_error() -> None:
    fault = Fault(
        "status",
        status=400,
        message="This model's maximum context length is 8192 tokens. "
        "However, your messages resulted in 9120 tokens.",
    )
    with ScriptedEndpoint([TOOL_TURN], faults={0: fault}) as ep:
        error = fails_once(ep, ContextLengthError)
    assert "context window" in str(error) and "8192" in str(error)


def test_other_client_errors_carry_the_provider_message() -> None:
    fault = Fault("status", status=422, message="tools[0].function.name: bad name")
    with ScriptedEndpoint([TOOL_TURN], faults={0: fault}) as ep:
        error = fails_once(ep, BadRequestError)
    assert "HTTP 422" in str(error) and "tools[0].function.name: bad name" in str(error)


SECRET_CASES = [
    Canned.json('{"error": {"message": "Incorrect API key provided: ' + KEY + '"}}', 401),
    Canned.json('{"error": "model gone, key was ' + KEY + '"}', 404),
    Canned.json(
        '{"error": {"message": "too long for ' + KEY + '", "code": "context_length_exceeded"}}', 400
    ),
    Canned.json('{"detail": "bad request by ' + KEY + '"}', 400),
    Canned.json('{"error": "overloaded; Authorization: Bearer ' + KEY + '"}', 503),
    Canned.json('{"choices": [' + KEY, 200),
    Canned.sse('{"error": {"message": "upstream failed for ' + KEY + '"}}'),
]


@pytest.mark.parametrize(
    "answer", SECRET_CASES, ids=["401", "404", "ctx", "400", "503", "json", "sse"]
)
def test_the_api_key_never_appears_in_an_error(canned: CannedServer, answer: Canned) -> None:
    canned.queue = [answer] * 3
    retry = RetryPolicy(max_attempts=2, base_delay=0.0)
    with (
        client_for(canned.url, api_key=KEY, retry=retry) as model,
        pytest.raises(ProviderError) as info,
    ):
        model.complete(REQUEST, lambda e: None)
    error: BaseException | None = info.value
    while error is not None:
        assert KEY not in str(error) and KEY not in repr(error)
        error = error.__cause__


def test_credentials_in_the_base_url_stay_out_of_errors(canned: CannedServer) -> None:
    basic = base64.b64encode(b"alice:hunter2").decode()
    echo = f'{{"error": "denied Authorization: Basic {basic}"}}'
    canned.queue = [Canned.json(echo, 500)] * 3
    url = canned.url.replace("http://", "http://alice:hunter2@")
    with client_for(url) as model, pytest.raises(TransientError) as info:
        model.complete(REQUEST, lambda e: None)
    message = str(info.value)
    assert "hunter2" not in message and "alice" not in message and basic not in message
    assert "127.0.0.1" in message and "Basic [redacted]" in message


def test_bad_base_url_is_a_config_error_without_credentials() -> None:
    with pytest.raises(ConfigError, match="http://") as info:
        OpenAICompatModel(base_url="ftp://bob:pw@host/v1", api_key=None, model="m")
    assert "pw" not in str(info.value)


# -- what other servers send ---------------------------------------------------------


def sse_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


def test_tool_calls_without_index_or_ids_and_reasoning_field(canned: CannedServer) -> None:
    canned.queue = [
        Canned.sse(
            sse_chunk({"reasoning": "hm"}),
            sse_chunk({"tool_calls": [{"function": {"name": "ls", "arguments": ""}}]}),
            sse_chunk({"tool_calls": [{"function": {"arguments": '{"p": 1}'}}]}),
            sse_chunk({"tool_calls": [{"function": {"name": "cat", "arguments": "{}"}}]}),
            sse_chunk({}, "tool_calls"),
            json.dumps(
                {
                    "choices": [],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 3, "cached_tokens": 5},
                }
            ),
        )
    ]
    with client_for(canned.url) as model:
        response = model.complete(REQUEST, lambda e: None)
    assert response.message.reasoning == "hm"
    assert response.message.tool_calls == (
        ToolCall("call_1", "ls", '{"p": 1}'),
        ToolCall("call_2", "cat", "{}"),
    )
    assert (response.usage.input_tokens, response.usage.cached_tokens) == (9, 5)


def test_a_stream_without_done_but_with_finish_reason_is_complete(canned: CannedServer) -> None:
    canned.queue = [Canned.sse(sse_chunk({"content": "hi"}), sse_chunk({}, "stop"), done=False)]
    with client_for(canned.url) as model:
        response = model.complete(REQUEST, lambda e: None)
    assert response.message.content == "hi" and response.finish_reason is FinishReason.STOP


def test_an_error_inside_the_stream_is_retried(canned: CannedServer, events: list[Event]) -> None:
    canned.queue = [
        Canned.sse(
            sse_chunk({"content": "par"}), '{"error": {"message": "upstream timeout", "code": 502}}'
        ),
        Canned.sse(sse_chunk({"content": "full"}), sse_chunk({}, "stop")),
    ]
    with client_for(canned.url) as model:
        response = model.complete(REQUEST, events.append)
    assert response.message.content == "full"
    (retry,) = of_type(events, RetryScheduled)
    assert "upstream timeout" in retry.reason
    # The abandoned attempt's text came before the retry; the answer starts over after it.
    assert [type(e).__name__ for e in events] == ["TextDelta", "RetryScheduled", "TextDelta"]


def test_context_length_inside_a_200_is_not_retried(canned: CannedServer) -> None:
    body = (
        '{"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum", "code": 400}}'
    )
    canned.queue = [Canned.json(body, 200)]
    with client_for(canned.url, stream=False) as model, pytest.raises(ContextLengthError):
        model.complete(REQUEST, lambda e: None)
    assert len(canned.bodies) == 1


def test_a_server_that_ignores_stream_true_is_understood(canned: CannedServer) -> None:
    message = {"role": "assistant", "content": "plain"}
    body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    canned.queue = [Canned.json(json.dumps(body))]
    with client_for(canned.url, stream=True) as model:
        assert model.complete(REQUEST, lambda e: None).message.content == "plain"


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            Canned.json(
                '{"error": {"message": "the request exceeds the available context size"}}', 400
            ),
            ContextLengthError,
        ),
        (Canned(413, [b"<html>Request Entity Too Large</html>"]), ContextLengthError),
        (
            Canned.json('{"error": "This model\'s maximum context length is 4096 tokens"}', 500),
            ContextLengthError,
        ),
        (Canned.json('{"error": "forbidden"}', 403), AuthenticationError),
        (
            Canned(301, [b""], {"Location": "https://api.example.com/v1/chat/completions"}),
            BadRequestError,
        ),
    ],
    ids=["llama.cpp", "413", "500-context", "403", "redirect"],
)
def test_status_mapping_not_retried(
    canned: CannedServer, answer: Canned, error: type[ProviderError]
) -> None:
    canned.queue = [answer]
    with client_for(canned.url) as model, pytest.raises(error) as info:
        model.complete(REQUEST, lambda e: None)
    assert len(canned.bodies) == 1
    assert f"HTTP {answer.status}" in str(info.value)
    if answer.status == 301:
        assert "https://api.example.com/v1/chat/completions" in str(info.value)


def test_retry_after_ms_header_wins(canned: CannedServer, events: list[Event]) -> None:
    canned.queue = [
        Canned.json('{"error": "slow down"}', 429, **{"retry-after-ms": "30", "retry-after": "1"}),
        Canned.sse(sse_chunk({"content": "ok"}, "stop")),
    ]
    with client_for(canned.url) as model:
        model.complete(REQUEST, events.append)
    assert of_type(events, RetryScheduled)[0].delay == 0.03


def test_client_is_lazy_and_reusable_after_close() -> None:
    with ScriptedEndpoint([Turn(text="a"), Turn(text="b")]) as ep:
        model = client_for(ep.url)
        assert model.name == "scripted"
        assert model.complete(REQUEST, lambda e: None).message.content == "a"
        model.close()
        model.close()
        assert model.complete(REQUEST, lambda e: None).message.content == "b"
        model.close()


def test_importing_the_client_does_not_import_httpx() -> None:
    code = (
        "import sys, tether.models.openai_compat, tether.models.scripted; "
        "from tether.models.openai_compat import OpenAICompatModel; "
        "OpenAICompatModel(base_url='http://127.0.0.1:9/v1', api_key=None, model='m'); "
        "print('httpx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- secrets near a cut, URLs with secrets ----------------------------------------------


def straddling(cut: int, before: str = "") -> str:
    """Text in which KEY starts 5 characters before position `cut` of what is shown."""
    return "x" * (cut - 5 - len(before)) + before + KEY + " was refused"


CUT_CASES = [
    Canned.json(json.dumps({"error": {"message": straddling(500)}}), 400),
    Canned.json(json.dumps({"error": straddling(500)}), 503),
    Canned(400, [straddling(500).encode()], {"Content-Type": "text/plain"}),
    Canned.sse(json.dumps({"error": {"message": straddling(500)}})),
    Canned.json(straddling(200), 200),  # not JSON: shown cut to 200
    Canned.json(straddling(200, '{"id": "'), 200),  # JSON without choices: cut to 200
]


@pytest.mark.parametrize(
    "answer", CUT_CASES, ids=["400-json", "503-text", "400-plain", "sse-error", "bad", "empty"]
)
def test_a_key_cut_in_two_by_the_message_limit_does_not_leak(
    canned: CannedServer, answer: Canned
) -> None:
    canned.queue = [answer] * 2
    retry = RetryPolicy(max_attempts=2, base_delay=0.0)
    with (
        client_for(canned.url, api_key=KEY, retry=retry) as model,
        pytest.raises(ProviderError) as info,
    ):
        model.complete(REQUEST, lambda e: None)
    error: BaseException | None = info.value
    while error is not None:
        assert KEY[:5] not in str(error)
        error = error.__cause__


def test_urls_are_shown_without_credentials_query_or_fragment() -> None:
    assert display_url("https://u:p@host:8443/v1?api_key=s3cret#frag") == "https://host:8443/v1"
    assert display_url("u:p@host/v1?api_key=s3cret") == "host/v1"


def test_a_query_string_in_the_base_url_stays_out_of_errors_and_retry_reasons(
    canned: CannedServer, events: list[Event]
) -> None:
    secret = "qs-secret-4711"
    echo = f"cannot serve http://127.0.0.1/v1/chat/completions?api_key={secret}&x=1"
    canned.queue = [Canned.json(json.dumps({"error": echo}), 500)] * 2
    canned.queue.append(
        Canned(302, [b""], {"Location": f"https://elsewhere.example/v1?api_key={secret}#top"})
    )
    retry = RetryPolicy(max_attempts=2, base_delay=0.0)
    with client_for(f"{canned.url}?api_key={secret}", retry=retry) as model:
        with pytest.raises(TransientError) as transient:
            model.complete(REQUEST, events.append)
        with pytest.raises(BadRequestError) as redirect:
            model.complete(REQUEST, events.append)
    (retry_event,) = of_type(events, RetryScheduled)
    for text in (str(transient.value), str(redirect.value), retry_event.reason):
        assert secret not in text and "api_key" not in text and "#top" not in text
    assert f"{canned.url}/chat/completions (HTTP 500)" in str(transient.value)
    assert "https://elsewhere.example/v1" in str(redirect.value)


def test_a_query_value_echoed_alone_is_redacted(canned: CannedServer) -> None:
    canned.queue = [Canned.json('{"error": "unknown key qs-secret-4711"}', 400)]
    with (
        client_for(f"{canned.url}?key=qs-secret-4711") as model,
        pytest.raises(BadRequestError) as info,
    ):
        model.complete(REQUEST, lambda e: None)
    assert "qs-secret-4711" not in str(info.value) and "[redacted]" in str(info.value)


# -- tool calls as other servers send them ------------------------------------------------


def test_calls_streamed_all_at_index_zero_with_their_own_names_stay_apart(
    canned: CannedServer,
) -> None:
    canned.queue = [
        Canned.sse(
            sse_chunk(
                {"tool_calls": [{"index": 0, "function": {"name": "shell", "arguments": ""}}]}
            ),
            sse_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command":"a"}'}}]}),
            sse_chunk({"tool_calls": [{"index": 0, "id": "x", "function": {"name": "read_file"}}]}),
            sse_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"x"}'}}]}),
            sse_chunk({"tool_calls": [{"index": 0, "function": {"name": "read_file"}}]}),
            sse_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"y"}'}}]}),
            sse_chunk({}, "tool_calls"),
        )
    ]
    with client_for(canned.url) as model:
        calls = model.complete(REQUEST, lambda e: None).message.tool_calls
    assert calls == (
        ToolCall("call_1", "shell", '{"command":"a"}'),
        ToolCall("x", "read_file", '{"path":"x"}'),
        ToolCall("call_2", "read_file", '{"path":"y"}'),
    )


def test_a_name_repeated_in_each_fragment_without_index_is_one_call(
    canned: CannedServer,
) -> None:
    def piece(arguments: str) -> str:
        return sse_chunk({"tool_calls": [{"function": {"name": "ls", "arguments": arguments}}]})

    canned.queue = [Canned.sse(piece('{"pa'), piece('th": "'), piece('."}'), sse_chunk({}, "stop"))]
    with client_for(canned.url) as model:
        calls = model.complete(REQUEST, lambda e: None).message.tool_calls
    assert calls == (ToolCall("call_1", "ls", '{"path": "."}'),)


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_repeated_and_empty_ids_become_distinct(canned: CannedServer, stream: bool) -> None:
    wire = [
        {"id": "call_0", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
        {"id": "call_0", "type": "function", "function": {"name": "ls", "arguments": '{"a":1}'}},
        {"id": "", "type": "function", "function": {"name": "pwd", "arguments": "{}"}},
    ]
    if stream:
        deltas = [sse_chunk({"tool_calls": [{**c, "index": i}]}) for i, c in enumerate(wire)]
        canned.queue = [Canned.sse(*deltas, sse_chunk({}, "tool_calls"))]
    else:
        message = {"role": "assistant", "content": None, "tool_calls": wire}
        body = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
        canned.queue = [Canned.json(json.dumps(body))]
    with client_for(canned.url, stream=stream) as model:
        calls = model.complete(REQUEST, lambda e: None).message.tool_calls
    assert [(c.id, c.arguments) for c in calls] == [
        ("call_0", "{}"),
        ("call_0_2", '{"a":1}'),
        ("call_1", "{}"),
    ]


# -- the API key as it may be pasted --------------------------------------------------------


def test_surrounding_whitespace_is_stripped_from_the_key() -> None:
    with ScriptedEndpoint([Turn(text="ok")], api_key=KEY) as ep:
        with client_for(ep.url, api_key=f"  {KEY}\n") as model:
            assert model.complete(REQUEST, lambda e: None).message.content == "ok"
        assert ep.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("key", "words"),
    [
        (f"\u201c{KEY}\u201d", ["non-ASCII", "U+201C", "position 1"]),
        (f"{KEY}\nsk-second-line", ["control character", "position 21"]),
        ("sk-ключ-abcdef", ["non-ASCII", "U+043A"]),
    ],
    ids=["smart-quotes", "two-lines", "cyrillic"],
)
def test_a_key_http_cannot_carry_is_a_config_error_without_the_key(
    key: str, words: list[str]
) -> None:
    with pytest.raises(ConfigError, match="TETHER_API_KEY") as info:
        OpenAICompatModel(base_url="http://127.0.0.1:9/v1", api_key=key, model="m")
    message = str(info.value)
    assert KEY not in message and "sk-" not in message
    for word in words:
        assert word in message


def test_a_request_that_cannot_be_sent_is_not_retried() -> None:
    with ScriptedEndpoint([Turn(text="ok")]) as ep:
        model = client_for(ep.url, api_key=KEY)
        # What a key with a line break did before keys were checked: h11 refuses the header.
        model._transport._headers["Authorization"] = f"Bearer {KEY}\n"
        with model, pytest.raises(BadRequestError) as info:
            model.complete(REQUEST, lambda e: None)
        assert ep.requests == []
    message = str(info.value)
    assert "could not send the request" in message and "TETHER_API_KEY" in message
    assert "gave up" not in message and KEY not in message
    assert info.value.__cause__ is None  # h11's message quotes the header


# -- quota, empty answers ---------------------------------------------------------------------

QUOTA = {
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "type": "insufficient_quota",
    "param": None,
    "code": "insufficient_quota",
}


@pytest.mark.parametrize(
    "answer",
    [
        Canned.json(json.dumps({"error": QUOTA}), 429, **{"retry-after": "1"}),
        Canned.sse(json.dumps({"error": QUOTA})),
    ],
    ids=["429", "sse"],
)
def test_an_exhausted_quota_is_not_retried(canned: CannedServer, answer: Canned) -> None:
    canned.queue = [answer] * 3
    with client_for(canned.url) as model, pytest.raises(BadRequestError) as info:
        model.complete(REQUEST, lambda e: None)
    assert len(canned.bodies) == 1
    assert "no quota left" in str(info.value) and "billing" in str(info.value)


NO_ANSWERS = [
    Canned.sse(),
    Canned.sse(json.dumps({"choices": [], "usage": {"prompt_tokens": 3}})),
    Canned.sse(
        json.dumps({"choices": [{"index": 1, "delta": {"content": "x"}, "finish_reason": "stop"}]})
    ),
    Canned.json(json.dumps({"choices": []})),
    Canned.json(
        json.dumps(
            {"choices": [{"index": 1, "message": {"content": "x"}, "finish_reason": "stop"}]}
        )
    ),
]


@pytest.mark.parametrize(
    "answer", NO_ANSWERS, ids=["done-only", "usage-only", "choice-1", "plain-none", "plain-1"]
)
def test_an_answer_without_choice_zero_is_retried(
    canned: CannedServer, answer: Canned, events: list[Event]
) -> None:
    good = Canned.sse(sse_chunk({"content": "here"}, "stop"))
    canned.queue = [answer, good]
    with client_for(canned.url) as model:
        assert model.complete(REQUEST, events.append).message.content == "here"
    (retry,) = of_type(events, RetryScheduled)
    assert "sent no answer" in retry.reason


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_an_empty_answer_with_a_finish_reason_is_an_answer(
    canned: CannedServer, stream: bool
) -> None:
    if stream:
        canned.queue = [Canned.sse(sse_chunk({}, "stop"))]
    else:
        message = {"role": "assistant", "content": ""}
        body = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        canned.queue = [Canned.json(json.dumps(body))]
    with client_for(canned.url, stream=stream) as model:
        response = model.complete(REQUEST, lambda e: None)
    assert response.message.content == "" and len(canned.bodies) == 1


# -- the scripted endpoint's odd answers, and keep-alives past the deadline -----------------


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_half_a_surrogate_pair_streams_through(stream: bool, events: list[Event]) -> None:
    turn = Turn(text="half an emoji: \ud83d", tool_calls=(ScriptedCall("f", {"s": "\udcff"}),))
    with ScriptedEndpoint([turn]) as ep, client_for(ep.url, stream=stream) as model:
        response = model.complete(REQUEST, events.append)
        assert ep.turns_served == 1
    assert response.message.content == "half an emoji: \ufffd"
    assert json.loads(response.message.tool_calls[0].arguments) == {"s": "\ufffd"}
    assert not of_type(events, RetryScheduled)


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_keep_alives_alone_do_not_outlast_the_deadline(stream: bool) -> None:
    faults = {i: Fault("keepalive", hang_s=20) for i in range(3)}
    with (
        ScriptedEndpoint([TOOL_TURN], faults=faults) as ep,
        client_for(ep.url, stream=stream, request_timeout=5) as model,
    ):
        start = time.monotonic()
        request = replace(REQUEST, deadline=start + 0.5)
        with pytest.raises(TransientError) as info:
            model.complete(request, lambda e: None)
        elapsed = time.monotonic() - start
    assert elapsed < 3
    assert "time limit" in str(info.value)

"""The scripted endpoint's HTTP side: a local server speaking OpenAI chat-completions
and the Anthropic Messages API.

`ScriptedServer` answers each request on its own thread from a `ScriptState`:
it routes `/v1/models`, `/v1/chat/completions` and `/v1/messages`, checks the key
and the model (and, for Anthropic, the request as the real API would), writes
answers as one JSON body or as SSE, and acts out the faults listed in
`scripted.py`. What the answers say comes from `scripted_wire.py` and
`scripted_anthropic.py`.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tether.models.scripted_anthropic import (
    anthropic_error,
    error_type,
    message_body,
    stream_events,
)
from tether.models.scripted_anthropic_check import validate_request
from tether.models.scripted_state import RecordedRequest, ScriptState
from tether.models.scripted_wire import (
    Fault,
    Turn,
    completion_body,
    error_body,
    stream_payloads,
)

__all__ = ["ScriptedServer"]

_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_CUT_TEXT = Turn(text="This answer is cut off before it ends.")


class ScriptedServer(ThreadingHTTPServer):
    """Serves requests from `state`, one thread each; set `stopping` to end waits."""

    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], state: ScriptState, stopping: threading.Event
    ) -> None:
        self.state = state
        self.stopping = stopping
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up mid-answer are normal here; stay quiet (no printing)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Real servers answer without Nagle's delay; without this, small writes meet the
    # client's delayed ACK and every response stalls ~40 ms.
    disable_nagle_algorithm = True
    server: ScriptedServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    # -- routing ----------------------------------------------------------------------

    def _serve(self) -> None:
        received_at = time.perf_counter()
        state = self.server.state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest(self.command, self.path, headers, body, received_at)
        fault = state.record(record)
        anthropic = self.command == "POST" and self.path.split("?")[0].rstrip("/") == "/v1/messages"
        stream = isinstance(body, dict) and bool(body.get("stream"))
        try:
            if fault is not None and anthropic:
                self._anthropic_fault(fault, stream=stream)
            elif fault is not None:
                self._fault(fault, stream=stream)
            elif anthropic:
                self._messages(body, headers)
            elif not state.authorized(headers):
                presented = headers.get("authorization", "").removeprefix("Bearer ")
                message = f"Incorrect API key provided: {presented or '(none)'}."
                error = error_body(message, type_="invalid_request_error", code="invalid_api_key")
                self._json(401, error)
            elif self.command == "GET" and self.path.rstrip("/") == "/v1/models":
                model = {
                    "id": state.model,
                    "object": "model",
                    "created": 0,
                    "owned_by": "tether",
                }
                self._json(200, {"object": "list", "data": [model]})
            elif self.command == "POST" and self.path.rstrip("/") == "/v1/chat/completions":
                self._chat(body)
            else:
                message = f"no route for {self.command} {self.path}"
                self._json(404, error_body(message, type_="invalid_request_error"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        record.answered_at = time.perf_counter()

    def _chat(self, body: Any) -> None:
        state = self.server.state
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            message = "the request body must be a JSON object with a 'messages' list"
            self._json(400, error_body(message, type_="invalid_request_error"))
            return
        requested = body.get("model")
        if state.strict_model and requested != state.model:
            message = f"The model `{requested}` does not exist or you have no access to it."
            error = error_body(message, type_="invalid_request_error", code="model_not_found")
            self._json(404, error)
            return
        try:
            turn, usage, number = state.answer(body)
        except Exception as exc:  # a bug in a test's script: make it visible to the client
            message = f"the script's step raised {type(exc).__name__}: {exc}"
            self._json(500, error_body(message, type_="server_error"))
            return
        model = requested if isinstance(requested, str) and requested else state.model
        response_id = f"chatcmpl-scripted-{number}"
        call_ids = [c.id or f"call_{number}_{i}" for i, c in enumerate(turn.tool_calls)]
        try:
            if not body.get("stream"):
                answer = completion_body(
                    turn, model=model, response_id=response_id, call_ids=call_ids, usage=usage
                )
                self._json(200, answer)
                return
            wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            payloads = stream_payloads(
                turn,
                model=model,
                response_id=response_id,
                call_ids=call_ids,
                usage=usage if wants_usage else None,
            )
            self._sse(payloads)
        except BaseException:  # not delivered (the client hung up): the next request gets it
            state.give_back(number)
            raise

    # -- answers ----------------------------------------------------------------------

    def _json(self, status: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()  # ASCII: any text, even half a surrogate pair
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, payloads: Sequence[str], *, last: bool = False) -> None:
        """Stream payloads as `data:` events, one HTTP chunk each, after a comment.

        `last` closes the connection afterwards (and says so, so no client reuses it).
        """
        self._start_stream(last=last)
        self._chunk(b": keep-alive\n\n")
        for payload in payloads:
            self._chunk(f"data: {payload}\n\n".encode())
        self.wfile.write(b"0\r\n\r\n")

    def _sse_events(self, events: Sequence[tuple[str, str]], *, last: bool = False) -> None:
        """Stream named events (`event:` and `data:` lines), one HTTP chunk each."""
        self._start_stream(last=last, extra={"request-id": _request_id()})
        for event, data in events:
            self._chunk(f"event: {event}\ndata: {data}\n\n".encode())
        self.wfile.write(b"0\r\n\r\n")

    def _start_stream(self, *, last: bool, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if last:
            self.send_header("Connection", "close")
        self.end_headers()

    def _keep_alive(
        self, seconds: float, *, stream: bool, beat: bytes = b": keep-alive\n\n"
    ) -> None:
        """A 200 that sends only keep-alives (`beat` when streaming, else whitespace),
        never an answer, then hangs up mid-body."""
        self.send_response(200)
        kind = "text/event-stream; charset=utf-8" if stream else "application/json"
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        until = time.monotonic() + seconds
        stopping = self.server.stopping
        while time.monotonic() < until and not stopping.is_set():
            self._chunk(beat if stream else b"\n")
            stopping.wait(0.05)
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

    def _fault(self, fault: Fault, *, stream: bool) -> None:
        if fault.kind == "status":
            extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            message = fault.message or f"scripted fault: HTTP {fault.status}"
            kind = "rate_limit_error" if fault.status == 429 else "server_error"
            if 400 <= fault.status < 500 and fault.status != 429:
                kind = "invalid_request_error"
            self._json(fault.status, error_body(message, type_=kind), extra)
        elif fault.kind == "reset":
            linger = struct.pack("ii", 1, 0)  # close with RST, not FIN
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            self.connection.close()
            self.close_connection = True
        elif fault.kind == "hang":
            self.server.stopping.wait(fault.hang_s)
            self.close_connection = True
        elif fault.kind == "keepalive":
            self._keep_alive(fault.hang_s, stream=stream)
        elif fault.kind == "malformed":
            if stream:
                start = '{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}'
                self._sse([start, '{"choices": [{"index": 0, "delta": {"content": "hel'])
            else:
                data = b'{"id": "chatcmpl-broken", "choices": [{"message": '
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
        elif fault.kind == "stream_error":  # an error object where the answer should be
            error = error_body(fault.message or "Overloaded", type_="server_error")
            if stream:
                self._sse([*self._cut_payloads(), json.dumps(error)])
            else:
                self._json(200, error)
        elif stream:  # truncated
            self._sse(self._cut_payloads(), last=True)
        else:  # truncated
            self._cut_body(b'{"id": "chatcmpl-cut", "choices": [')

    def _cut_payloads(self) -> list[str]:
        """The start of a streamed answer: role, then two pieces of text."""
        model = self.server.state.model
        payloads = stream_payloads(_CUT_TEXT, model=model, response_id="x", call_ids=[], usage=None)
        return payloads[:3]

    def _cut_body(self, start: bytes) -> None:
        """Promise more body than is sent, then hang up."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "4096")
        self.end_headers()
        self.wfile.write(start)
        self.close_connection = True

    # -- the Anthropic Messages API -----------------------------------------------------

    def _messages(self, body: Any, headers: Mapping[str, str]) -> None:
        """`POST /v1/messages`: key, version header, request and model checked in that order."""
        state = self.server.state
        if not state.anthropic_authorized(headers):
            self._anthropic_error(401, "invalid x-api-key")
            return
        if not headers.get("anthropic-version"):
            self._anthropic_error(400, "anthropic-version: header is required")
            return
        problem = validate_request(body)
        if problem is not None:
            self._anthropic_error(400, problem)
            return
        model = body["model"]
        if state.strict_model and model != state.model:
            self._anthropic_error(404, f"model: {model}")
            return
        try:
            turn, usage, number = state.answer_messages(body)
        except Exception as exc:  # a bug in a test's script: make it visible to the client
            self._anthropic_error(500, f"the script's step raised {type(exc).__name__}: {exc}")
            return
        message_id = f"msg_scripted_{number}"
        call_ids = [c.id or f"toolu_{number}_{i}" for i, c in enumerate(turn.tool_calls)]
        try:
            if body.get("stream"):
                events = stream_events(
                    turn, model=model, message_id=message_id, call_ids=call_ids, usage=usage
                )
                self._sse_events(events)
            else:
                answer = message_body(
                    turn, model=model, message_id=message_id, call_ids=call_ids, usage=usage
                )
                self._json(200, answer, {"request-id": _request_id()})
        except BaseException:  # not delivered (the client hung up): the next request gets it
            state.give_back(number)
            raise

    def _anthropic_error(
        self, status: int, message: str, extra: Mapping[str, str] | None = None
    ) -> None:
        request_id = _request_id()
        body = {**anthropic_error(message, type_=error_type(status)), "request_id": request_id}
        self._json(status, body, {"request-id": request_id, **(extra or {})})

    def _anthropic_fault(self, fault: Fault, *, stream: bool) -> None:
        """The faults of `_fault`, shaped as the Anthropic API would show them."""
        model = self.server.state.model
        cut = stream_events(
            _CUT_TEXT, model=model, message_id="msg_scripted_fault", call_ids=[], usage=_NO_USAGE
        )  # message_start, ping, content_block_start, then text deltas
        if fault.kind == "status":
            extra = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            default = (
                "Overloaded" if fault.status == 529 else f"scripted fault: HTTP {fault.status}"
            )
            self._anthropic_error(fault.status, fault.message or default, extra)
        elif fault.kind in ("reset", "hang"):
            self._fault(fault, stream=stream)
        elif fault.kind == "keepalive":
            self._keep_alive(fault.hang_s, stream=stream, beat=_PING)
        elif fault.kind == "stream_error":
            message = fault.message or "Overloaded"
            if not stream:  # before any byte of the answer, the API says so with a status
                self._anthropic_error(529, message)
                return
            error = json.dumps(anthropic_error(message, type_="overloaded_error"))
            self._sse_events([*cut[:4], ("error", error)])
        elif fault.kind == "malformed" and stream:
            broken = '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta'
            self._sse_events([*cut[:3], ("content_block_delta", broken)])
        elif fault.kind == "malformed":
            data = b'{"id": "msg_broken", "type": "message", "content": ['
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif stream:  # truncated: no content_block_stop, message_delta or message_stop
            self._sse_events(cut[:5], last=True)
        else:  # truncated
            self._cut_body(b'{"id": "msg_cut", "type": "message", "content": [')


_NO_USAGE = {
    "input_tokens": 0,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 0,
}


def _request_id() -> str:
    return f"req_scripted_{uuid.uuid4().hex[:20]}"

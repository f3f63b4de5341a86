"""The scripted endpoint's HTTP side: a local server speaking OpenAI chat-completions.

`ScriptedServer` answers each request on its own thread from a `ScriptState`:
it routes `/v1/models` and `/v1/chat/completions`, checks the bearer token and
the model, writes answers as one JSON body or as SSE, and acts out the faults
listed in `scripted.py`. What the answers say comes from `scripted_wire.py`.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tether.models.scripted_state import RecordedRequest, ScriptState
from tether.models.scripted_wire import (
    Fault,
    Turn,
    completion_body,
    error_body,
    stream_payloads,
)

__all__ = ["ScriptedServer"]


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
        try:
            if fault is not None:
                self._fault(fault, stream=isinstance(body, dict) and bool(body.get("stream")))
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
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        if last:
            self.send_header("Connection", "close")
        self.end_headers()
        self._chunk(b": keep-alive\n\n")
        for payload in payloads:
            self._chunk(f"data: {payload}\n\n".encode())
        self.wfile.write(b"0\r\n\r\n")

    def _keep_alive(self, seconds: float, *, stream: bool) -> None:
        """A 200 that sends only keep-alives, never an answer, then hangs up mid-body."""
        self.send_response(200)
        kind = "text/event-stream; charset=utf-8" if stream else "application/json"
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        until = time.monotonic() + seconds
        stopping = self.server.stopping
        while time.monotonic() < until and not stopping.is_set():
            self._chunk(b": keep-alive\n\n" if stream else b"\n")
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
        elif stream:  # truncated
            turn = Turn(text="This answer is cut off before it ends.")
            payloads = stream_payloads(
                turn, model=self.server.state.model, response_id="x", call_ids=[], usage=None
            )
            self._sse(payloads[:3], last=True)
        else:  # truncated: promise more body than is sent, then hang up
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-cut", "choices": [')
            self.close_connection = True

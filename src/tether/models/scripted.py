"""A scripted model behind a real local HTTP endpoint speaking OpenAI chat-completions.

Tests and `tether demo` point the real OpenAI-compatible client at it, so the real
HTTP, SSE and retry code runs with no network and no key. It answers from a script
of turns (or functions of the request), records every request it receives, and
injects faults on chosen requests:

- `status`: that status code with an OpenAI-shaped error body (and Retry-After);
- `reset`: the connection is dropped with no response;
- `hang`: the request is read and never answered (for `hang_s` seconds);
- `malformed`: a 200 whose JSON (or an SSE data line) does not parse;
- `truncated`: part of the answer, then the body ends without finish or `[DONE]`;
- `keepalive`: a 200 that only ever sends SSE `: keep-alive` comments (or, for a
  plain request, whitespace), every 50 ms for `hang_s` seconds, and then hangs up.

A faulted request does not use up a turn, so the retry gets the turn the failed
request would have had; nor does an answer that could not be delivered (the
client hung up halfway). Try it by hand: `python -m tether.models.scripted SCRIPT.json`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from tether.models.scripted_wire import (
    END_OF_SCRIPT,
    Fault,
    ScriptedCall,
    ScriptStep,
    Turn,
    completion_body,
    error_body,
    estimate_usage,
    load_script,
    output_chars,
    prompt_text,
    stream_payloads,
)

__all__ = ["Fault", "RecordedRequest", "ScriptStep", "ScriptedCall", "ScriptedEndpoint", "Turn"]


@dataclass(slots=True)
class RecordedRequest:
    """One request as received; header names are lower-case, `body` is None unless JSON.

    `received_at` (headers parsed, body not yet read) and `answered_at` (last byte of
    the answer written) are `time.perf_counter()` readings, for benchmarks.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = 0.0
    answered_at: float | None = None


class ScriptedEndpoint:
    """Serves a script on 127.0.0.1 (a free port) until `stop()`; usable as a context manager.

    Answers name the model the request asked for; `model` is what /v1/models
    lists, and with `strict_model` a request for any other model gets OpenAI's 404.
    With `api_key` set, a missing or wrong bearer token gets OpenAI's 401.
    """

    def __init__(
        self,
        script: Sequence[ScriptStep],
        *,
        faults: Mapping[int, Fault] | None = None,
        api_key: str | None = None,
        model: str = "scripted",
        strict_model: bool = False,
    ) -> None:
        self.model = model
        self.strict_model = strict_model
        self._script = list(script)
        self._faults = dict(faults or {})
        self._api_key = api_key
        self._lock = threading.Lock()
        self._next_faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._turns_served = 0
        self._previous_prompt: str | None = None
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    @classmethod
    def from_file(
        cls, path: str | Path, *, api_key: str | None = None, model: str = "scripted"
    ) -> ScriptedEndpoint:
        """An endpoint for a JSON script file (see `scripted_wire.load_script`)."""
        turns, faults = load_script(Path(path))
        return cls(turns, faults=faults, api_key=api_key, model=model)

    @property
    def url(self) -> str:
        """The base URL, ending in /v1, as `TETHER_BASE_URL` would hold it (kept after stop)."""
        if self._url is None:
            raise RuntimeError("the scripted endpoint has not been started; call start() first")
        return self._url

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, faulted ones included (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def turns_served(self) -> int:
        with self._lock:
            return self._turns_served

    def add_fault(self, fault: Fault) -> None:
        """Give the next request (not yet received) this fault; several queue up."""
        with self._lock:
            self._next_faults.append(fault)

    def start(self) -> ScriptedEndpoint:
        if self._server is None:
            self._stopping.clear()
            self._server = _Server(("127.0.0.1", 0), _Handler, self)
            self._url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="tether-scripted-endpoint",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- called from handler threads -------------------------------------------------

    def _record(self, request: RecordedRequest) -> Fault | None:
        """Store the request and say which fault, if any, it gets."""
        with self._lock:
            index = len(self._requests)
            self._requests.append(request)
            if index in self._faults:
                return self._faults[index]
            return self._next_faults.popleft() if self._next_faults else None

    def _authorized(self, headers: Mapping[str, str]) -> bool:
        return self._api_key is None or headers.get("authorization") == f"Bearer {self._api_key}"

    def _answer(self, body: dict[str, Any]) -> tuple[Turn, dict[str, Any], int]:
        """The next turn, its usage and its number; consumes one script step.

        A callable step runs outside the lock: the demo's steps sleep to pace it.
        A step that raises is not used up, so a retry meets the same error again.
        """
        with self._lock:
            number = self._turns_served
            self._turns_served += 1
            step = self._script[number] if number < len(self._script) else END_OF_SCRIPT
        try:
            turn = step if isinstance(step, Turn) else step(body)
        except Exception:
            with self._lock:
                self._turns_served = number
            raise
        prompt = prompt_text(body)
        with self._lock:
            usage = estimate_usage(prompt, self._previous_prompt, output_chars(turn))
            self._previous_prompt = prompt
        return turn, usage, number

    def _give_back(self, number: int) -> None:
        """Turn `number` was not delivered: the next request gets it again."""
        with self._lock:
            if self._turns_served == number + 1:
                self._turns_served = number


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], endpoint: ScriptedEndpoint
    ) -> None:
        self.endpoint = endpoint
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up mid-answer are normal here; stay quiet (no printing)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Real servers answer without Nagle's delay; without this, small writes meet the
    # client's delayed ACK and every response stalls ~40 ms.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    # -- routing ----------------------------------------------------------------------

    def _serve(self) -> None:
        received_at = time.perf_counter()
        endpoint = self.server.endpoint
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        record = RecordedRequest(self.command, self.path, headers, body, received_at)
        fault = endpoint._record(record)
        try:
            if fault is not None:
                self._fault(fault, stream=isinstance(body, dict) and bool(body.get("stream")))
            elif not endpoint._authorized(headers):
                presented = headers.get("authorization", "").removeprefix("Bearer ")
                message = f"Incorrect API key provided: {presented or '(none)'}."
                error = error_body(message, type_="invalid_request_error", code="invalid_api_key")
                self._json(401, error)
            elif self.command == "GET" and self.path.rstrip("/") == "/v1/models":
                model = {
                    "id": endpoint.model,
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
        endpoint = self.server.endpoint
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            message = "the request body must be a JSON object with a 'messages' list"
            self._json(400, error_body(message, type_="invalid_request_error"))
            return
        requested = body.get("model")
        if endpoint.strict_model and requested != endpoint.model:
            message = f"The model `{requested}` does not exist or you have no access to it."
            error = error_body(message, type_="invalid_request_error", code="model_not_found")
            self._json(404, error)
            return
        try:
            turn, usage, number = endpoint._answer(body)
        except Exception as exc:  # a bug in a test's script: make it visible to the client
            message = f"the script's step raised {type(exc).__name__}: {exc}"
            self._json(500, error_body(message, type_="server_error"))
            return
        model = requested if isinstance(requested, str) and requested else endpoint.model
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
            endpoint._give_back(number)
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
        stopping = self.server.endpoint._stopping
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
            self.server.endpoint._stopping.wait(fault.hang_s)
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
                turn, model=self.server.endpoint.model, response_id="x", call_ids=[], usage=None
            )
            self._sse(payloads[:3], last=True)
        else:  # truncated: promise more body than is sent, then hang up
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-cut", "choices": [')
            self.close_connection = True


def _main(argv: Sequence[str] | None = None) -> int:
    """Serve a script file until Ctrl-C: `python -m tether.models.scripted SCRIPT.json`."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tether.models.scripted")
    parser.add_argument("script", type=Path, help="JSON script: a list of turns")
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--api-key", default=None)
    args = parser.parse_args(argv)
    endpoint = ScriptedEndpoint.from_file(args.script, api_key=args.api_key, model=args.model)
    with endpoint:
        print(f"serving {args.script} as model {args.model!r} at {endpoint.url}", flush=True)
        print(f"try: TETHER_BASE_URL={endpoint.url} TETHER_MODEL={args.model}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())

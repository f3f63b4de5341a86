"""A scripted model behind a real local HTTP endpoint speaking OpenAI chat-completions
(`POST {url}/chat/completions`) and the Anthropic Messages API (`POST {root}/v1/messages`).

Tests and `tether demo` point the real clients at it, so the real HTTP, SSE and
retry code runs with no network and no key. It answers from a script of turns (or
functions of the request), records every request it receives, rejects Messages
requests the real API would reject (`scripted_anthropic_check.py`), models
Anthropic's prompt cache (`scripted_anthropic.cache_usage`), and injects faults on
chosen requests, each shaped for the protocol asked:

- `status`: that status code with the protocol's error body (and Retry-After);
- `reset`: the connection is dropped with no response;
- `hang`: the request is read and never answered (for `hang_s` seconds);
- `malformed`: a 200 whose JSON (or an SSE data line) does not parse;
- `truncated`: part of the answer, then the body ends without finish or `[DONE]`
  (Anthropic: without `message_stop`);
- `keepalive`: a 200 that only ever sends SSE `: keep-alive` comments (Anthropic:
  `ping` events; a plain request: whitespace), every 50 ms for `hang_s` seconds,
  and then hangs up;
- `stream_error`: a stream that starts and then carries an error instead of the
  rest (OpenAI: a `{"error": ...}` chunk, no `[DONE]`; Anthropic: an `error` event
  with `overloaded_error`); a plain request gets a 200 error object (OpenAI) or a
  529 (Anthropic), which is what those servers send before an answer starts.

A faulted request does not use up a turn, so the retry gets the turn the failed
request would have had; nor does an answer that could not be delivered (the
client hung up halfway). Try it by hand: `python -m tether.models.scripted SCRIPT.json`.

The HTTP side lives in `scripted_server.py`, the script's progress and the record
of requests in `scripted_state.py`, and the wire form of answers in `scripted_wire.py`
(OpenAI) and `scripted_anthropic.py` (Anthropic).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from tether.models.scripted_server import ScriptedServer
from tether.models.scripted_state import RecordedRequest, ScriptState
from tether.models.scripted_wire import Fault, ScriptedCall, ScriptStep, Turn, load_script

__all__ = ["Fault", "RecordedRequest", "ScriptStep", "ScriptedCall", "ScriptedEndpoint", "Turn"]


class ScriptedEndpoint:
    """Serves a script on 127.0.0.1 (a free port) until `stop()`; usable as a context manager.

    Answers name the model the request asked for; `model` is what /v1/models
    lists, and with `strict_model` a request for any other model gets a 404. With
    `api_key` set, a missing or wrong key (bearer token for OpenAI, `x-api-key` for
    Anthropic) gets a 401.
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
        self._state = ScriptState(
            script, faults=faults, api_key=api_key, model=model, strict_model=strict_model
        )
        self._stopping = threading.Event()
        self._server: ScriptedServer | None = None
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
    def root(self) -> str:
        """The API root without /v1, as Anthropic clients take it (kept after stop)."""
        return self.url.removesuffix("/v1")

    @property
    def model(self) -> str:
        return self._state.model

    @model.setter
    def model(self, model: str) -> None:
        self._state.model = model

    @property
    def strict_model(self) -> bool:
        return self._state.strict_model

    @strict_model.setter
    def strict_model(self, strict: bool) -> None:
        self._state.strict_model = strict

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, faulted ones included (a copy)."""
        return self._state.requests

    @property
    def turns_served(self) -> int:
        return self._state.turns_served

    def add_fault(self, fault: Fault) -> None:
        """Give the next request (not yet received) this fault; several queue up."""
        self._state.add_fault(fault)

    def start(self) -> ScriptedEndpoint:
        if self._server is None:
            self._stopping.clear()
            self._server = ScriptedServer(("127.0.0.1", 0), self._state, self._stopping)
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


if __name__ == "__main__":  # the front end (it prints) lives in ui/
    from tether.ui.serve_script import main

    raise SystemExit(main())

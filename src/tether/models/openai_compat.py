"""A thin client for OpenAI-compatible chat-completions endpoints.

One class serves OpenAI, OpenRouter, vLLM, Ollama and llama.cpp's server: they
all speak `POST {base_url}/chat/completions`, streamed as SSE or as one JSON
body. Conversion lives in `openai_request.py` and `openai_response.py`; this
module does the HTTP, turns each failure into one of our `ProviderError`s (worded
by `openai_errors.py`, with no secret in the text), and retries the transient
ones through `retry.py`, reporting each retry as a `RetryScheduled` event.

After a `RetryScheduled` event the answer starts over: text and tool-call deltas
streamed before the failure belong to the abandoned attempt.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from tether import __version__
from tether.errors import ConfigError
from tether.models.base import ModelRequest, ModelResponse, OnEvent
from tether.models.openai_errors import EndpointErrors, display_url
from tether.models.openai_request import BodyEncoder
from tether.models.openai_response import ResponseAssembler, parse_usage
from tether.models.retry import RetryPolicy, call_with_retries
from tether.models.sse import iter_sse
from tether.models.transport import Transport
from tether.observe.events import RetryScheduled

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAICompatModel"]


def _checked_key(api_key: str | None) -> str | None:
    """The key without surrounding whitespace, or ConfigError if HTTP cannot carry it.

    A header may hold only printable ASCII: a key read with `$(cat key.txt)` keeps
    its line break, a pasted one may bring a curly quote. The message never shows
    the key.
    """
    key = (api_key or "").strip()
    for position, char in enumerate(key, 1):
        if not " " <= char <= "~":
            what = (
                f"a non-ASCII character (U+{ord(char):04X})"
                if ord(char) > 0x7F
                else "a control character"
            )
            raise ConfigError(
                f"the API key has {what} at position {position}, which an HTTP header "
                "cannot carry; check TETHER_API_KEY (or OPENAI_API_KEY): a pasted key may "
                "have picked up a quote mark or a line break"
            )
    return key or None


def _chat_url(base_url: str) -> str:
    """`{base_url}/chat/completions`, keeping any query string (Azure's api-version)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class OpenAICompatModel:
    """The `Model` for any chat-completions endpoint; one HTTP client per instance.

    `request_timeout` is the longest wait for the next bytes of an answer, not
    for the whole answer; connecting may take 10 s and sending the request 30 s.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        stream: bool = True,
        request_timeout: float = 600.0,
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008 -- frozen, so sharing is safe
        echo_reasoning: bool = False,
    ) -> None:
        if urlsplit(base_url).scheme.lower() not in ("http", "https"):
            shown = display_url(base_url)
            raise ConfigError(
                f"the base URL must start with http:// or https://, not {shown!r} "
                "(set TETHER_BASE_URL, e.g. http://127.0.0.1:8000/v1)"
            )
        if not model:
            raise ConfigError("no model name is set (set TETHER_MODEL)")
        if not request_timeout > 0:
            raise ConfigError(f"request_timeout must be positive, not {request_timeout!r}")
        self._base_url = base_url
        self._url = _chat_url(base_url)
        self._shown_url = display_url(self._url)
        self._api_key = _checked_key(api_key)
        self._model = model
        self._stream = stream
        self._timeout = request_timeout
        self._retry = retry
        self._call_numbers = itertools.count(1)
        self._encoder = BodyEncoder(echo_reasoning=echo_reasoning)
        self._errors = EndpointErrors(
            shown_url=self._shown_url,
            base_url=base_url,
            api_key=self._api_key,
            model=model,
            request_timeout=request_timeout,
        )
        headers = {"User-Agent": f"tether/{__version__}"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._transport = Transport(
            base_url=base_url,
            url=self._url,
            headers=headers,
            request_timeout=request_timeout,
            errors=self._errors,
            shown_url=self._shown_url,
            key_hint="TETHER_API_KEY",
        )

    @property
    def name(self) -> str:
        return self._model

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        """One chat completion, retried on transient failures (see the module doc)."""
        body = self._encoder.encode(request, model=self._model, stream=self._stream)

        def report(attempt: int, delay: float, reason: str) -> None:
            on_event(RetryScheduled(attempt=attempt, delay=delay, reason=reason))

        return call_with_retries(
            lambda: self._attempt(body, on_event, request.deadline),
            self._retry,
            on_retry=report,
            deadline=request.deadline,
        )

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> OpenAICompatModel:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- one attempt ------------------------------------------------------------------

    def _attempt(self, body: bytes, on_event: OnEvent, deadline: float | None) -> ModelResponse:
        accept = "text/event-stream" if self._stream else "application/json"
        headers = {"Content-Type": "application/json", "Accept": accept}
        assembler = ResponseAssembler(on_event, lambda: f"call_{next(self._call_numbers)}")

        def read(response: httpx.Response, chunks: Iterator[bytes]) -> ModelResponse:
            content_type = response.headers.get("content-type", "")
            if self._stream and "json" not in content_type:
                return self._read_stream(chunks, assembler)
            return self._read_json(b"".join(chunks), assembler)

        return self._transport.post(body, headers=headers, deadline=deadline, read=read)

    def _read_stream(self, chunks: Iterator[bytes], assembler: ResponseAssembler) -> ModelResponse:
        """Consume the whole SSE body (so the connection can be reused) and assemble it."""
        done = finished = answered = False
        model = self._model
        for event in iter_sse(chunks):
            if done:
                continue
            if event.is_done:
                done = True
                continue
            payload = self._parse_json(event.data, "in the stream")
            if event.event == "error" or payload.get("error"):
                raise self._errors.stream_error(payload)
            if isinstance(payload.get("model"), str) and payload["model"]:
                model = payload["model"]
            assembler.usage = parse_usage(payload.get("usage")) or assembler.usage
            choices = payload.get("choices")
            for choice in choices if isinstance(choices, list) else ():
                if not isinstance(choice, Mapping) or choice.get("index") not in (None, 0):
                    continue
                answered = True
                delta = choice.get("delta") or choice.get("message") or {}
                if isinstance(delta, Mapping):
                    assembler.add_delta(delta)
                if choice.get("finish_reason"):
                    assembler.finish_reason = str(choice["finish_reason"])
                    finished = True
        if not (done or finished):
            raise self._errors.transient(
                f"truncated stream: {self._shown_url} ended the answer early "
                "(no finish_reason and no [DONE])"
            )
        if not answered:
            raise self._errors.transient(
                f"the endpoint sent no answer: {self._shown_url} streamed no choice 0"
            )
        return assembler.response(model=model)

    def _read_json(self, content: bytes, assembler: ResponseAssembler) -> ModelResponse:
        payload = self._parse_json(content.decode("utf-8", "replace"), "as the answer")
        if payload.get("error"):
            raise self._errors.stream_error(payload)
        choices = payload.get("choices")
        choice = next(
            (
                c
                for c in (choices if isinstance(choices, list) else ())
                if isinstance(c, Mapping) and c.get("index") in (None, 0)
            ),
            None,
        )
        if choice is None or not isinstance(choice.get("message"), Mapping):
            detail = self._errors.clean(json.dumps(payload))[:200]
            raise self._errors.transient(
                f"the endpoint sent no answer: {self._shown_url} answered without "
                f"a message in choice 0: {detail}"
            )
        assembler.add_message(choice["message"])
        reason = choice.get("finish_reason")
        assembler.finish_reason = reason if isinstance(reason, str) else None
        assembler.usage = parse_usage(payload.get("usage"))
        model = payload.get("model")
        return assembler.response(model=model if isinstance(model, str) else self._model)

    def _parse_json(self, text: str, where: str) -> dict[str, Any]:
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            shown = self._errors.clean(text)[:200]
            raise self._errors.transient(
                f"{self._shown_url} sent malformed JSON {where}: {shown!r}"
            )
        return payload

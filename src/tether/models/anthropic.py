"""A thin client for Anthropic's Messages API (`POST {base}/v1/messages`).

The same shape as the OpenAI-compatible client: conversion lives in
`anthropic_request.py` and `anthropic_response.py`, the HTTP in `transport.py`,
failures become our `ProviderError`s with no secret in the text, and transient ones
(429, 529 "overloaded", 5xx, broken streams, an `error` event mid-stream) are
retried through `retry.py`, each retry reported as a `RetryScheduled` event.

The base URL is the API root (`https://api.anthropic.com`); a base that already
ends in `/v1` is accepted too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from tether import __version__
from tether.errors import ConfigError
from tether.models.anthropic_request import AnthropicEncoder
from tether.models.anthropic_response import AnthropicAssembler
from tether.models.base import ModelRequest, ModelResponse, OnEvent
from tether.models.openai_compat import _checked_key
from tether.models.openai_errors import EndpointErrors, display_url
from tether.models.retry import RetryPolicy, call_with_retries
from tether.models.sse import iter_sse
from tether.models.transport import Transport
from tether.observe.events import RetryScheduled

if TYPE_CHECKING:
    import httpx

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_URL", "AnthropicModel"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"
_KEY_ENV = "ANTHROPIC_API_KEY (or TETHER_API_KEY)"


def _messages_url(base_url: str) -> str:
    """`{base}/v1/messages`, whether the base names the root or already ends in /v1."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if not path.endswith("/messages"):
        path += "/messages" if path.endswith("/v1") else "/v1/messages"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class AnthropicModel:
    """The `Model` for Anthropic's Messages API; one HTTP client per instance.

    `max_tokens` is required by the API on every request; `thinking_budget` turns on
    extended thinking with that many tokens (it must stay below `max_tokens`).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        max_tokens: int = 16_384,
        thinking_budget: int | None = None,
        stream: bool = True,
        request_timeout: float = 600.0,
        retry: RetryPolicy = RetryPolicy(),  # noqa: B008 -- frozen, so sharing is safe
    ) -> None:
        if urlsplit(base_url).scheme.lower() not in ("http", "https"):
            raise ConfigError(
                f"the base URL must start with http:// or https://, not "
                f"{display_url(base_url)!r} (set TETHER_BASE_URL, e.g. {DEFAULT_ANTHROPIC_URL})"
            )
        if not model:
            raise ConfigError("no model name is set (set TETHER_MODEL)")
        if not request_timeout > 0:
            raise ConfigError(f"request_timeout must be positive, not {request_timeout!r}")
        if thinking_budget is not None and not 0 < thinking_budget < max_tokens:
            raise ConfigError(
                f"the thinking budget ({thinking_budget}) must be positive and below the "
                f"output limit ({max_tokens} tokens)"
            )
        self._model = model
        self._stream = stream
        self._max_tokens = max_tokens
        self._thinking = thinking_budget
        self._retry = retry
        self._call_numbers = itertools.count(1)
        self._encoder = AnthropicEncoder()
        url = _messages_url(base_url)
        self._shown_url = display_url(url)
        key = _checked_key(api_key)
        self._errors = EndpointErrors(
            shown_url=self._shown_url,
            base_url=base_url,
            api_key=key,
            model=model,
            request_timeout=request_timeout,
            key_env=_KEY_ENV,
            root_hint=f"the API root ({DEFAULT_ANTHROPIC_URL}, without /v1/messages)",
        )
        headers = {"User-Agent": f"tether/{__version__}", "anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        self._transport = Transport(
            base_url=base_url,
            url=url,
            headers=headers,
            request_timeout=request_timeout,
            errors=self._errors,
            shown_url=self._shown_url,
            key_hint="ANTHROPIC_API_KEY",
        )

    @property
    def name(self) -> str:
        return self._model

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        """One Messages call, retried on transient failures (see the module doc)."""
        body = self._encoder.encode(
            request,
            model=self._model,
            stream=self._stream,
            max_tokens=self._max_tokens,
            thinking_budget=self._thinking,  # also on summaries: a change would void the cache
        )

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

    def __enter__(self) -> AnthropicModel:
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
        assembler = AnthropicAssembler(on_event, lambda: f"toolu_tether_{next(self._call_numbers)}")

        def read(response: httpx.Response, chunks: Iterator[bytes]) -> ModelResponse:
            content_type = response.headers.get("content-type", "")
            if self._stream and "json" not in content_type:
                return self._read_stream(chunks, assembler)
            return self._read_json(b"".join(chunks), assembler)

        return self._transport.post(body, headers=headers, deadline=deadline, read=read)

    def _read_stream(self, chunks: Iterator[bytes], assembler: AnthropicAssembler) -> ModelResponse:
        for event in iter_sse(chunks):
            if assembler.done:
                continue  # read to the end, so the connection can be reused
            if not event.data.strip():
                continue
            payload = self._parse_json(event.data, "in the stream")
            kind = str(payload.get("type") or event.event)
            if kind == "error" or event.event == "error":
                raise self._errors.stream_error(payload)
            assembler.add_event(kind, payload)
        if not assembler.done:
            raise self._errors.transient(
                f"truncated stream: {self._shown_url} ended the answer early (no message_stop)"
            )
        return assembler.response(model=self._model)

    def _read_json(self, content: bytes, assembler: AnthropicAssembler) -> ModelResponse:
        payload = self._parse_json(content.decode("utf-8", "replace"), "as the answer")
        if payload.get("type") == "error" or payload.get("error"):
            raise self._errors.stream_error(payload)
        if not isinstance(payload.get("content"), list):
            detail = self._errors.clean(json.dumps(payload))[:200]
            raise self._errors.transient(
                f"the endpoint sent no answer: {self._shown_url} answered without "
                f"a content list: {detail}"
            )
        assembler.add_message(payload)
        return assembler.response(model=self._model)

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

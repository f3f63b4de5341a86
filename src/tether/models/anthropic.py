"""A thin client for Anthropic's Messages API (`POST {base}/v1/messages`).

The same shape as the OpenAI-compatible client: conversion lives in
`anthropic_request.py` and `anthropic_response.py`, the rest in `wire.py`. Transient
failures (429, 529 "overloaded", 5xx, broken streams, an `error` event mid-stream)
are retried, each retry reported as a `RetryScheduled` event.

The base URL is the API root (`https://api.anthropic.com`); a base that already
ends in `/v1` is accepted too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from tether.errors import ConfigError
from tether.models.anthropic_request import AnthropicEncoder
from tether.models.anthropic_response import AnthropicAssembler
from tether.models.base import ModelRequest, ModelResponse, OnEvent
from tether.models.retry import RetryPolicy
from tether.models.sse import iter_sse
from tether.models.wire import WireClient

if TYPE_CHECKING:
    pass

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_ANTHROPIC_URL", "AnthropicModel"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_ANTHROPIC_URL = "https://api.anthropic.com"


def _messages_url(base_url: str) -> str:
    """`{base}/v1/messages`, whether the base names the root or already ends in /v1."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if not path.endswith("/messages"):
        path += "/messages" if path.endswith("/v1") else "/v1/messages"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class AnthropicModel(WireClient):
    """The `Model` for Anthropic's Messages API (see `WireClient` for the rest).

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
        super().__init__(
            base_url=base_url,
            url=_messages_url(base_url),
            api_key=api_key,
            model=model,
            stream=stream,
            request_timeout=request_timeout,
            retry=retry,
            auth=lambda key: {"x-api-key": key},
            key_env="ANTHROPIC_API_KEY (or TETHER_API_KEY)",
            root_hint=f"the API root ({DEFAULT_ANTHROPIC_URL}, without /v1/messages)",
            example_url=DEFAULT_ANTHROPIC_URL,
            headers={"anthropic-version": ANTHROPIC_VERSION},
        )
        if thinking_budget is not None and not 0 < thinking_budget < max_tokens:
            raise ConfigError(
                f"the thinking budget ({thinking_budget}) must be positive and below the "
                f"output limit ({max_tokens} tokens)"
            )
        self._max_tokens = max_tokens
        self._thinking = thinking_budget
        self._call_numbers = itertools.count(1)
        self._encoder = AnthropicEncoder()

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        """One Messages call, retried on transient failures (see the module doc)."""
        body = self._encoder.encode(
            request,
            model=self._model,
            stream=self._stream,
            max_tokens=self._max_tokens,
            thinking_budget=self._thinking,  # also on summaries: a change would void the cache
        )
        return self._retried(
            lambda: self._attempt(body, on_event, request.deadline), on_event, request.deadline
        )

    def _attempt(self, body: bytes, on_event: OnEvent, deadline: float | None) -> ModelResponse:
        assembler = AnthropicAssembler(on_event, lambda: f"toolu_tether_{next(self._call_numbers)}")
        return self._exchange(
            body,
            deadline,
            lambda chunks: self._read_stream(chunks, assembler),
            lambda content: self._read_json(content, assembler),
        )

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

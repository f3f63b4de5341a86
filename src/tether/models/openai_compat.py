"""A thin client for OpenAI-compatible chat-completions endpoints.

One class serves OpenAI, OpenRouter, vLLM, Ollama and llama.cpp's server: they
all speak `POST {base_url}/chat/completions`, streamed as SSE or as one JSON
body. Conversion lives in `openai_request.py` and `openai_response.py`; what every
wire client shares (HTTP, retries reported as events, errors with no secret in
them) in `wire.py`. This module reads chat-completions answers.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from tether.models.base import ModelRequest, ModelResponse, OnEvent
from tether.models.openai_request import BodyEncoder
from tether.models.openai_response import ResponseAssembler, parse_usage
from tether.models.retry import RetryPolicy
from tether.models.sse import iter_sse
from tether.models.wire import WireClient

if TYPE_CHECKING:
    pass

__all__ = ["OpenAICompatModel"]


def _chat_url(base_url: str) -> str:
    """`{base_url}/chat/completions`, keeping any query string (Azure's api-version)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


class OpenAICompatModel(WireClient):
    """The `Model` for any chat-completions endpoint (see `WireClient` for the rest).

    `echo_reasoning` sends the model's reasoning back as `reasoning_content`, for the
    servers that require it during tool use.
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
        super().__init__(
            base_url=base_url,
            url=_chat_url(base_url),
            api_key=api_key,
            model=model,
            stream=stream,
            request_timeout=request_timeout,
            retry=retry,
            auth=lambda key: {"Authorization": f"Bearer {key}"},
            key_env="TETHER_API_KEY (or OPENAI_API_KEY)",
            root_hint="the API root (usually ending in /v1)",
            example_url="http://127.0.0.1:8000/v1",
        )
        self._call_numbers = itertools.count(1)
        self._encoder = BodyEncoder(echo_reasoning=echo_reasoning)

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        """One chat completion, retried on transient failures (see the module doc)."""
        body = self._encoder.encode(request, model=self._model, stream=self._stream)
        return self._retried(
            lambda: self._attempt(body, on_event, request.deadline), on_event, request.deadline
        )

    def _attempt(self, body: bytes, on_event: OnEvent, deadline: float | None) -> ModelResponse:
        assembler = ResponseAssembler(on_event, lambda: f"call_{next(self._call_numbers)}")
        return self._exchange(
            body,
            deadline,
            lambda chunks: self._read_stream(chunks, assembler),
            lambda content: self._read_json(content, assembler),
        )

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

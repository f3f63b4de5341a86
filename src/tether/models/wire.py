"""What every wire client shares, whatever format it speaks.

`WireClient` checks the settings, holds the one `Transport`, reports retries as
`RetryScheduled` events, picks streamed or whole-body reading by what the endpoint
actually sent, parses JSON with errors that name the endpoint and hide the key, and
closes the HTTP client. `openai_compat.py` and `anthropic.py` add only their URL,
their auth header and their wire format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

from tether import __version__
from tether.errors import ConfigError
from tether.models.base import ModelResponse, OnEvent
from tether.models.openai_errors import EndpointErrors, display_url
from tether.models.retry import RetryPolicy, call_with_retries
from tether.models.transport import Transport
from tether.observe.events import RetryScheduled

if TYPE_CHECKING:
    import httpx

__all__ = ["WireClient", "checked_key"]


def checked_key(api_key: str | None, key_env: str) -> str | None:
    """The key without surrounding whitespace, or ConfigError if HTTP cannot carry it.

    A header may hold only printable ASCII: a key read with `$(cat key.txt)` keeps
    its line break, a pasted one may bring a curly quote. The message never shows
    the key; `key_env` names where it came from.
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
                f"cannot carry; check {key_env}: a pasted key may "
                "have picked up a quote mark or a line break"
            )
    return key or None


class WireClient:
    """The shared half of a `Model` over HTTP; one HTTP client per instance.

    `request_timeout` is the longest wait for the next bytes of an answer, not for
    the whole answer; connecting may take 10 s and sending the request 30 s.
    `auth` turns the key into the provider's header; `key_env` and `root_hint` word
    the errors about the key and the base URL; `example_url` is a base URL to suggest.
    """

    def __init__(
        self,
        *,
        base_url: str,
        url: str,
        api_key: str | None,
        model: str,
        stream: bool,
        request_timeout: float,
        retry: RetryPolicy,
        auth: Callable[[str], Mapping[str, str]],
        key_env: str,
        root_hint: str,
        example_url: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if urlsplit(base_url).scheme.lower() not in ("http", "https"):
            raise ConfigError(
                f"the base URL must start with http:// or https://, not "
                f"{display_url(base_url)!r} (set TETHER_BASE_URL, e.g. {example_url})"
            )
        if not model:
            raise ConfigError("no model name is set (set TETHER_MODEL)")
        if not request_timeout > 0:
            raise ConfigError(f"request_timeout must be positive, not {request_timeout!r}")
        self._model = model
        self._stream = stream
        self._retry = retry
        self._shown_url = display_url(url)
        key = checked_key(api_key, key_env)
        self._errors = EndpointErrors(
            shown_url=self._shown_url,
            base_url=base_url,
            api_key=key,
            model=model,
            request_timeout=request_timeout,
            key_env=key_env,
            root_hint=root_hint,
        )
        sent = {"User-Agent": f"tether/{__version__}", **(headers or {})}
        if key:
            sent.update(auth(key))
        self._transport = Transport(
            base_url=base_url,
            url=url,
            headers=sent,
            request_timeout=request_timeout,
            errors=self._errors,
            shown_url=self._shown_url,
            key_hint=key_env.split()[0],
        )

    @property
    def name(self) -> str:
        return self._model

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _retried(
        self, attempt: Callable[[], ModelResponse], on_event: OnEvent, deadline: float | None
    ) -> ModelResponse:
        """`attempt` until it succeeds or retrying cannot help; each retry an event.

        After a `RetryScheduled` event the answer starts over: deltas streamed before
        the failure belong to the abandoned attempt.
        """

        def report(number: int, delay: float, reason: str) -> None:
            on_event(RetryScheduled(attempt=number, delay=delay, reason=reason))

        return call_with_retries(attempt, self._retry, on_retry=report, deadline=deadline)

    def _exchange(
        self,
        body: bytes,
        deadline: float | None,
        read_stream: Callable[[Iterator[bytes]], ModelResponse],
        read_json: Callable[[bytes], ModelResponse],
    ) -> ModelResponse:
        """POST `body`; read SSE or one JSON body, by what the endpoint sent (a server
        asked to stream may answer whole, e.g. with an error object)."""
        accept = "text/event-stream" if self._stream else "application/json"
        headers = {"Content-Type": "application/json", "Accept": accept}

        def read(response: httpx.Response, chunks: Iterator[bytes]) -> ModelResponse:
            content_type = response.headers.get("content-type", "")
            if self._stream and "json" not in content_type:
                return read_stream(chunks)
            return read_json(b"".join(chunks))

        return self._transport.post(body, headers=headers, deadline=deadline, read=read)

    def _parse_json(self, text: str, where: str) -> dict[str, Any]:
        """A JSON object from the endpoint; anything else is a transient failure."""
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

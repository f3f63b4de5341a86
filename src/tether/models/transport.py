"""One POST to a model endpoint, with every transport failure worded as a `ProviderError`.

Both wire adapters (`openai_compat.py`, `anthropic.py`) send their bodies through a
`Transport`: it owns the HTTP client, shortens the timeouts so no wait outlasts the
run's deadline, checks the deadline between chunks (an endpoint that sends only
keep-alives never trips the read timeout), turns an error status into the right
`ProviderError` (via `EndpointErrors`) and network trouble into a `TransientError`.
What the body means is the adapter's business: it gets the response and its chunks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from tether.errors import BadRequestError
from tether.models.http import make_client
from tether.models.openai_errors import EndpointErrors

if TYPE_CHECKING:
    import httpx

__all__ = ["Transport"]

T = TypeVar("T")

Reader = Callable[["httpx.Response", Iterator[bytes]], T]


class Transport:
    """POSTs to one URL with fixed headers; one HTTP client, made on first use.

    `request_timeout` is the longest wait for the next bytes of an answer; connecting
    may take 10 s and sending the request 30 s.
    """

    def __init__(
        self,
        *,
        base_url: str,
        url: str,
        headers: Mapping[str, str],
        request_timeout: float,
        errors: EndpointErrors,
        shown_url: str,
        key_hint: str,
    ) -> None:
        self._base_url = base_url
        self._url = url
        self._headers = dict(headers)
        self._timeout = request_timeout
        self._errors = errors
        self._shown_url = shown_url
        self._key_hint = key_hint
        self._client: httpx.Client | None = None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def post(
        self,
        body: bytes,
        *,
        headers: Mapping[str, str],
        deadline: float | None,
        read: Reader[T],
    ) -> T:
        """Send `body`; `read` turns a 2xx response and its chunks into the answer."""
        client = self._http()  # imports httpx on first use
        import httpx

        try:
            # No deadline: the client's own timeouts (None would mean "wait forever").
            timeout = self._timeouts(deadline) or httpx.USE_CLIENT_DEFAULT
            with client.stream(
                "POST", self._url, content=body, headers=dict(headers), timeout=timeout
            ) as response:
                chunks = self._until_deadline(response.iter_bytes(), deadline)
                if response.status_code >= 300:
                    raw = b"".join(chunks).decode("utf-8", "replace")
                    raise self._errors.status_error(response, raw)
                return read(response, chunks)
        except httpx.LocalProtocolError as exc:
            # The request could not even be written: retrying cannot help. The cause
            # is dropped because h11's message quotes the offending header (the key).
            message = (
                f"could not send the request to {self._shown_url}: {exc}. A header or the "
                f"URL holds characters HTTP does not allow; check {self._key_hint} and "
                "TETHER_BASE_URL"
            )
            raise BadRequestError(self._errors.clean(message)) from None
        except httpx.TimeoutException as exc:
            raise self._errors.transient(self._errors.timeout_reason(exc)) from exc
        except httpx.ConnectError as exc:
            raise self._errors.transient(f"cannot connect to {self._shown_url}: {exc}") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            reason = f"the connection to {self._shown_url} broke ({type(exc).__name__}: {exc})"
            raise self._errors.transient(reason) from exc

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = make_client(
                self._base_url, timeout_s=self._timeout, headers=self._headers
            )
        return self._client

    def _timeouts(self, deadline: float | None) -> httpx.Timeout | None:
        """The client's timeouts, shortened so no wait outlasts the run's deadline."""
        if deadline is None:
            return None
        import httpx

        left = max(0.001, deadline - time.monotonic())
        return httpx.Timeout(
            connect=min(10.0, left),
            read=min(self._timeout, left),
            write=min(30.0, left),
            pool=min(10.0, left),
        )

    def _until_deadline(self, chunks: Iterator[bytes], deadline: float | None) -> Iterator[bytes]:
        """The body's chunks, checking the deadline at each: an endpoint that sends
        only keep-alive comments (or whitespace) never trips the read timeout."""
        for chunk in chunks:
            if deadline is not None and time.monotonic() > deadline:
                raise self._errors.transient(
                    "the run's time limit passed while the answer was arriving"
                )
            yield chunk

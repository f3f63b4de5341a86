"""How the failures of an OpenAI-compatible endpoint become our `ProviderError`s.

`EndpointErrors` words each failure (an HTTP error status, an error object inside
a 200 answer, a timeout) as the `ProviderError` subclass that says whether a
retry can help, and cleans every message of secrets. `openai_compat.py` decides
when a request has failed; this module says what the failure is.

Error messages name the endpoint and the HTTP status, never the API key: the key
is scrubbed from every message we build (before any text is cut short, so no
prefix of it survives), and URLs are shown without user:password, query string
or fragment (where `?api_key=...` would sit).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from tether.errors import (
    AuthenticationError,
    BadRequestError,
    ContextLengthError,
    ModelNotFoundError,
    ProviderError,
    TransientError,
)
from tether.models.error_text import is_context_length, is_quota_exhausted, provider_message
from tether.models.retry import parse_retry_after

if TYPE_CHECKING:
    import httpx

__all__ = ["EndpointErrors", "display_url"]

_USERINFO = re.compile(r"(?<=://)[^/\s@]+@")
_URL_TAIL = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#\"'<>]*)[?#][^\s\"'<>]*")
_CREDENTIALS = re.compile(r"(?i)\b((?:bearer|basic)\s+)[^\s\"',;]+")
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
_MIN_SECRET = 4  # shorter query values and user names are not worth scrubbing from text


def display_url(url: str) -> str:
    """The URL without user:password, query string or fragment, fit for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL we can take apart: scrub it as text
        return _scrub_urls(url)
    netloc = parts.netloc.rpartition("@")[2]
    if parts.netloc:
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    head, slash, rest = url.split("?", 1)[0].split("#", 1)[0].partition("/")
    return head.rpartition("@")[2] + slash + rest  # `user:pw@host/v1`, no scheme


def _scrub_urls(text: str) -> str:
    """Every URL in `text` without user:password, query string or fragment."""
    return _URL_TAIL.sub(r"\1", _USERINFO.sub("", text))


def _url_secrets(url: str) -> list[str]:
    """What a base URL may carry that must not show: its user:password and query values."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    values = [v for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    if parts.username:
        values.append(unquote(parts.username))
    if parts.password:
        values.append(unquote(parts.password))
    return [v for v in values if len(v) >= _MIN_SECRET]


class EndpointErrors:
    """The errors of one endpoint: `shown_url` is its address as messages show it,
    and `api_key` and whatever `base_url` carries are the secrets they must not show."""

    __slots__ = (
        "_has_key",
        "_key_env",
        "_model",
        "_root_hint",
        "_secrets",
        "_shown_url",
        "_timeout",
    )

    def __init__(
        self,
        *,
        shown_url: str,
        base_url: str,
        api_key: str | None,
        model: str,
        request_timeout: float,
        key_env: str = "TETHER_API_KEY (or OPENAI_API_KEY)",
        root_hint: str = "the API root (usually ending in /v1)",
    ) -> None:
        self._shown_url = shown_url
        self._key_env = key_env
        self._root_hint = root_hint
        secrets = [api_key or "", *_url_secrets(base_url)]
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._has_key = bool(api_key)
        self._model = model
        self._timeout = request_timeout

    def clean(self, text: str) -> str:
        """The text without the API key, bearer/basic credentials, or what the base URL
        carries (user:password, query values); URLs lose their query and fragment.

        Clean whole texts, then cut them: a key cut in two is no longer found.
        """
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return _scrub_urls(_CREDENTIALS.sub(r"\1[redacted]", text))

    def transient(
        self, reason: str, *, status: int | None = None, retry_after: float | None = None
    ) -> TransientError:
        return TransientError(self.clean(reason), status=status, retry_after=retry_after)

    def stream_error(self, payload: Mapping[str, Any]) -> ProviderError:
        """An error object inside a 200 answer: worth a retry unless the prompt is too
        long or the account has no quota left."""
        detail = provider_message(dict(payload), redact=self.clean)
        error = payload.get("error")
        code = error.get("code") if isinstance(error, Mapping) else None
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        raw = json.dumps(payload)
        if is_context_length(raw):
            message = f"the conversation no longer fits the model's context window: {detail}"
            return ContextLengthError(self.clean(message), status=status)
        if is_quota_exhausted(raw):
            return BadRequestError(self.clean(_no_quota(self._shown_url, detail)), status=status)
        return self.transient(f"{self._shown_url} reported an error: {detail}", status=status)

    def timeout_reason(self, exc: httpx.TimeoutException) -> str:
        import httpx

        if isinstance(exc, httpx.ConnectTimeout):
            return f"timed out connecting to {self._shown_url}"
        if isinstance(exc, httpx.ReadTimeout):
            return f"{self._shown_url} sent nothing for {self._timeout:g} s (request_timeout)"
        return f"timed out talking to {self._shown_url} ({type(exc).__name__})"

    def status_error(self, response: httpx.Response, raw: str) -> ProviderError:
        """The `ProviderError` for an HTTP error status with body `raw`; only transient
        ones are retried."""
        status = response.status_code
        detail = provider_message(raw, redact=self.clean)
        where = f"{self._shown_url} (HTTP {status})"
        if status in (401, 403):
            hint = (
                f"the endpoint rejected the API key; check {self._key_env}"
                if self._has_key
                else f"the endpoint wants an API key; set {self._key_env}"
            )
            return AuthenticationError(self.clean(f"{hint}. {where}: {detail}"), status=status)
        if status == 404:
            message = (
                f"{where} does not know model {self._model!r}: {detail}. Check TETHER_MODEL, "
                f"and that TETHER_BASE_URL is {self._root_hint}"
            )
            return ModelNotFoundError(self.clean(message), status=status)
        if is_quota_exhausted(raw):  # OpenAI sends it as a 429, but waiting cannot help
            return BadRequestError(self.clean(_no_quota(where, detail)), status=status)
        if status != 429 and (status == 413 or is_context_length(raw)):
            message = (
                f"the conversation no longer fits the model's context window. {where}: {detail}"
            )
            return ContextLengthError(self.clean(message), status=status)
        if status in _TRANSIENT_STATUSES or status >= 500:
            return self.transient(
                f"{where}: {detail}", status=status, retry_after=_retry_after(response.headers)
            )
        if 300 <= status < 400:
            target = display_url(response.headers.get("location", "elsewhere"))
            message = f"{where} redirects to {target}; set TETHER_BASE_URL to the final address"
            return BadRequestError(self.clean(message), status=status)
        return BadRequestError(self.clean(f"{where} rejected the request: {detail}"), status=status)


def _no_quota(where: str, detail: str) -> str:
    return (
        "the account has no quota left; check its plan and billing with the provider "
        f"(retrying cannot help). {where}: {detail}"
    )


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms` (OpenAI) or `Retry-After`."""
    try:
        millis = float(headers.get("retry-after-ms", ""))
    except ValueError:
        return parse_retry_after(headers.get("retry-after"))
    return max(0.0, millis / 1000) if math.isfinite(millis) else None

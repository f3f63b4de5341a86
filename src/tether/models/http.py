"""httpx, imported on first use and without the parts tether never runs.

Startup time is a feature: from process start to the first request we have a
budget of 250 ms. Two imports that tether never uses eat most of it:

- `import httpx` loads `httpx._main`, httpx's own CLI, which pulls in rich and
  click. `import_httpx()` registers a stub for it first.
- building the first client imports httpcore, which imports trio (if installed)
  only to support async clients under trio. `make_client` defers that import.

Measured with `python -X importtime` (cumulative ms, median of 15 runs, Python
3.11.7, httpx 0.28.1, httpcore 1.0.9, trio 0.22 installed, on the dev machine):

    httpx      plain import  134 ms   with the _main stub    67 ms
    httpcore   plain import  100 ms   with trio deferred     24 ms

and from process start to the request arriving at a local scripted endpoint
(`OpenAICompatModel.complete` in a fresh `python` process, median of 15):
no tricks 325 ms; _main stub 265 ms; stub and deferred trio 175 ms.

For a plain `http://` endpoint (vLLM, Ollama, llama.cpp on localhost)
`make_client` also skips loading a CA bundle, which saves another ~35 ms: there
is no TLS on such a connection to verify.

Rule for the rest of tether: call `import_httpx()` (or `make_client`) before the
first `import httpx`, and only inside functions, never at module level.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx

__all__ = ["import_httpx", "is_loopback", "make_client"]

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def _cli_not_loaded() -> None:
    """Stands in for `httpx.main`, which tether never calls."""
    raise RuntimeError("httpx's command-line client is not loaded in this process (see tether)")


def import_httpx() -> types.ModuleType:
    """Import httpx without its CLI module; a no-op when httpx is already loaded."""
    if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
        stub = types.ModuleType("httpx._main", "Stub: tether does not use httpx's CLI.")
        stub.main = _cli_not_loaded  # type: ignore[attr-defined]
        sys.modules["httpx._main"] = stub
    import httpx

    return httpx


class _DeferredModule(types.ModuleType):
    """Imports the real module of the same name on first attribute access."""

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self.__name__), attr)


def _import_httpcore() -> None:
    """Import httpcore, deferring its import of trio (if installed) to first use.

    httpcore imports trio at module level only to support async clients running
    under trio; tether's client is synchronous. Where trio is installed that import
    costs ~60-90 ms, a third of the startup budget. So trio is hidden while httpcore
    loads, and httpcore gets a stand-in that imports trio when first touched: async
    code under trio still works, it just pays for trio when it uses it. (While
    httpcore loads, another thread importing trio would fail; tether builds its
    client before any such thread could exist.)
    """
    if "httpcore" in sys.modules or "trio" in sys.modules:
        return
    sys.modules["trio"] = None  # type: ignore[assignment]  # makes `import trio` fail
    try:
        import httpcore._synchronization as sync
    finally:
        del sys.modules["trio"]
    if getattr(sync, "trio", False) is None and importlib.util.find_spec("trio") is not None:
        sync.trio = _DeferredModule("trio")  # type: ignore[attr-defined]


def is_loopback(base_url: str) -> bool:
    """True when the URL names this machine, where no proxy should sit in between."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


def make_client(
    base_url: str,
    *,
    timeout_s: float,
    connect_timeout_s: float = 10.0,
    write_timeout_s: float = 30.0,
    headers: Mapping[str, str] | None = None,
) -> httpx.Client:
    """A client for one endpoint: `timeout_s` is the longest silence between bytes.

    Plain `http://` gets no CA bundle (nothing to verify); `https://` verifies as
    usual, honouring SSL_CERT_FILE/SSL_CERT_DIR. Redirects are not followed: a
    redirected API call is a misconfigured base URL, and the caller says so.
    Plain loopback endpoints ignore proxy settings from the environment.
    """
    import_httpx()
    _import_httpcore()
    import httpx

    plain = urlsplit(base_url).scheme.lower() == "http"
    timeout = httpx.Timeout(
        connect=connect_timeout_s, read=timeout_s, write=write_timeout_s, pool=connect_timeout_s
    )
    return httpx.Client(
        timeout=timeout,
        headers=dict(headers or {}),
        verify=not plain,
        follow_redirects=False,
        trust_env=not (plain and is_loopback(base_url)),
    )

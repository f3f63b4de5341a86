"""Which endpoint a run talks to, with which key and model: flags, environment, ~/.agents/env.

Two wire protocols are spoken: `openai` (chat completions: OpenAI, OpenRouter, vLLM,
Ollama, llama.cpp) and `anthropic` (Messages). The provider is what `--provider` or
`TETHER_PROVIDER` says; with neither, and no other endpoint or key configured, an
`ANTHROPIC_API_KEY` alone means Anthropic. Each provider has its own environment
names (`OPENAI_*`, `ANTHROPIC_*`) under the shared `TETHER_*` ones, and its own
default base URL. A key from `~/.agents/env` is only ever sent to that file's own
endpoint.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from tether.errors import ConfigError

__all__ = [
    "DEFAULT_BASE_URLS",
    "PROVIDERS",
    "Endpoint",
    "Provider",
    "public_endpoint",
    "resolve_endpoint",
]

Provider = Literal["openai", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic")
DEFAULT_BASE_URLS: Mapping[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
_ENV_PREFIX = {"openai": "OPENAI", "anthropic": "ANTHROPIC"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    provider: Provider
    base_url: str
    api_key: str | None
    model: str


def _provider(
    given: str | None,
    base_url: str | None,
    env: Mapping[str, str],
    agents_env: Mapping[str, str],
) -> Provider:
    """The provider named, else Anthropic when an Anthropic key is all that is set.

    Any endpoint given by flag or environment, or any other key, means the OpenAI
    protocol: an Anthropic key must never travel to a server that was not chosen
    for it.
    """
    name = (given or env.get("TETHER_PROVIDER") or agents_env.get("PROVIDER") or "").strip()
    if not name:
        others = ("TETHER_BASE_URL", "OPENAI_BASE_URL", "TETHER_API_KEY", "OPENAI_API_KEY")
        configured = (
            bool(base_url)
            or any(env.get(k) for k in others)
            or any(agents_env.get(k) for k in ("BASE_URL", "API_KEY"))
        )
        return "anthropic" if env.get("ANTHROPIC_API_KEY") and not configured else "openai"
    lowered = name.lower()
    if lowered == "anthropic":
        return "anthropic"
    if lowered != "openai":
        raise ConfigError(
            f"Unknown provider {name!r}; use one of {', '.join(PROVIDERS)} "
            "(openai covers every chat-completions server: OpenRouter, vLLM, Ollama, llama.cpp)."
        )
    return "openai"


def resolve_endpoint(
    *,
    provider: str | None,
    base_url: str | None,
    model: str | None,
    env: Mapping[str, str],
    agents_env: Mapping[str, str],
    require_model: bool,
) -> Endpoint:
    """The endpoint, key and model for this run, or ConfigError saying what to set."""
    chosen = _provider(provider, base_url, env, agents_env)
    prefix = _ENV_PREFIX[chosen]
    default = DEFAULT_BASE_URLS[chosen]
    url = (
        base_url
        or env.get("TETHER_BASE_URL")
        or env.get(f"{prefix}_BASE_URL")
        or agents_env.get("BASE_URL")
        or default
    ).rstrip("/")
    _check_url(url, default)
    key_names = f"TETHER_API_KEY (or {prefix}_API_KEY)"
    api_key = _clean_key(env.get("TETHER_API_KEY") or env.get(f"{prefix}_API_KEY"), "environment")
    file_key = _clean_key(agents_env.get("API_KEY"), "~/.agents/env")
    # The file's key belongs to the file's endpoint: its BASE_URL, else the default of
    # the file's own PROVIDER (not of the provider chosen for this run).
    file_provider = (agents_env.get("PROVIDER") or "openai").strip().lower()
    file_default = DEFAULT_BASE_URLS.get(file_provider, DEFAULT_BASE_URLS["openai"])
    file_url = (agents_env.get("BASE_URL") or file_default).rstrip("/")
    withheld = None
    if not api_key and file_key:
        # A key in the shared env file belongs to that file's endpoint: it is never
        # sent to an endpoint that came from somewhere else.
        if _same_endpoint(file_url, url):
            api_key = file_key
        else:
            withheld = file_url
    name = model or env.get("TETHER_MODEL") or env.get(f"{prefix}_MODEL")
    name = name or agents_env.get("MODEL") or ""
    if require_model and not name:
        example = "claude-sonnet-4-5" if chosen == "anthropic" else "gpt-4.1"
        raise ConfigError(
            "No model is set. Set TETHER_MODEL in the environment (for example "
            f"TETHER_MODEL={example}), add a MODEL= line to ~/.agents/env, or pass --model. "
            f"The endpoint in use is {public_endpoint(url)} ({chosen} protocol)."
        )
    if require_model and not api_key and not _is_local(url):
        if withheld is not None:
            raise ConfigError(
                f"The API key in ~/.agents/env belongs to {public_endpoint(withheld)} and is "
                f"not sent to {public_endpoint(url)}. Set TETHER_API_KEY for that "
                "endpoint, or change BASE_URL in ~/.agents/env."
            )
        raise ConfigError(
            f"No API key is set for {public_endpoint(url)}. Set {key_names} in the "
            "environment, or add an API_KEY= line to ~/.agents/env. "
            "To use a server that needs no key (Ollama, llama.cpp, vLLM on this machine), "
            "point TETHER_BASE_URL or --base-url at it instead, e.g. "
            "http://127.0.0.1:11434/v1."
        )
    return Endpoint(chosen, url, api_key or None, name)


def public_endpoint(url: str) -> str:
    """The URL with any user:password and query string removed: safe to log."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # malformed: drop what could hold a secret, keep what helps
        return re.sub(r"//[^/@]*@", "//", url).split("?")[0].split("#")[0]
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _same_endpoint(a: str, b: str) -> bool:
    return public_endpoint(a).rstrip("/").lower() == public_endpoint(b).rstrip("/").lower()


def _clean_key(key: str | None, source: str) -> str | None:
    """The key without surrounding whitespace; refused if no HTTP header can carry it."""
    if key is None:
        return None
    key = key.strip()
    if not key:
        return None
    if not all(33 <= ord(ch) <= 126 for ch in key):
        raise ConfigError(
            f"The API key from the {source} contains spaces, control characters or "
            "non-ASCII characters (a pasted smart quote?), which no HTTP header can carry. "
            "Set it again as plain text."
        )
    return key


def _check_url(url: str, example: str) -> None:
    try:
        parts = urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # raises on a port that is not a number in 0-65535
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(
            f"The base URL {public_endpoint(url)!r} is not a valid http(s) URL. "
            f"Set TETHER_BASE_URL to something like {example}."
        )


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

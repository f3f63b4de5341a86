"""What an endpoint's error body says: its readable part, and whether it is one of the
errors that retrying cannot cure (a prompt too long, no quota left). Pure; no I/O.

Providers word these differently, so the checks look for the fragments used by
OpenAI, vLLM, llama.cpp, OpenRouter/Anthropic, Groq, Mistral, Gemini and friends.
`openai_errors.py` turns the verdicts into `ProviderError`s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["is_context_length", "is_quota_exhausted", "provider_message"]

# Lower-case fragments of the "prompt too long" errors of OpenAI, vLLM, llama.cpp,
# OpenRouter/Anthropic, Groq, Mistral, Gemini and friends.
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "exceeds the available context size",
    "exceed_context_size",
    "prompt is too long",
    "prompt too long",
    "input is too long",
    "too many input tokens",
    "input token count",
    "reduce the length of the messages",
)


def provider_message(
    body: Any, *, limit: int = 500, redact: Callable[[str], str] | None = None
) -> str:
    """The human-readable part of an error body (JSON in any common shape, or text).

    `redact` (which removes secrets) runs on the whole text before it is cut to
    `limit`: cutting first could leave the first part of a secret for it to miss.
    """
    text = _provider_text(body)
    if redact is not None:
        text = redact(text)
    return text[:limit]


def _provider_text(body: Any) -> str:
    data = body
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except ValueError:
            return " ".join(text.split()) or "(empty body)"
    if isinstance(data, Mapping):
        error = data.get("error", data)
        if isinstance(error, str):
            return error
        if isinstance(error, Mapping):
            message = error.get("message") or error.get("detail") or error.get("msg")
            if message:
                parts = [str(message)]
                code = error.get("code") or error.get("type")
                if isinstance(code, str) and code not in parts[0]:
                    parts.append(f"[{code}]")
                metadata = error.get("metadata")
                if isinstance(metadata, Mapping) and metadata.get("raw"):
                    parts.append(f"(upstream: {metadata['raw']})")  # OpenRouter
                return " ".join(parts)
    return json.dumps(data, ensure_ascii=False)


def is_context_length(text: str) -> bool:
    """Whether an error text says the prompt does not fit the context window."""
    lowered = text.lower()
    return any(marker in lowered for marker in _CONTEXT_MARKERS)


def is_quota_exhausted(text: str) -> bool:
    """Whether an error text says the account has no quota (credit) left.

    OpenAI sends this as a 429 with code/type `insufficient_quota`; unlike a rate
    limit, waiting does not help.
    """
    return "insufficient_quota" in text.lower()

"""Keep secrets out of everything tether writes.

The API key is scrubbed from the tool environment, but a key can still reach text
(a user pastes it, a tool prints a config file); every line written to a transcript
or an output stream passes through a `Redactor` first.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
_MIN_SECRET = 8  # shorter strings would redact ordinary words


class Redactor:
    """Replaces each known secret with a fixed marker."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        unique = {s for s in secrets if s and len(s) >= _MIN_SECRET}
        self._secrets = tuple(sorted(unique, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self._secrets)

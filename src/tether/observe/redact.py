"""Keep secrets out of everything tether writes.

The API key is scrubbed from the tool environment, but a key can still reach text
(a user pastes it, a tool prints a config file, the model echoes one); every line
written to a transcript or an output stream passes through a `Redactor` first, which
also replaces lone surrogates so that the write itself cannot fail. Streamed text
arrives in pieces, so `StreamRedactor` holds back the tail of each piece that could
be the start of a secret until the next piece shows whether it is.
"""

from __future__ import annotations

from collections.abc import Iterable

from tether.messages import scrub

__all__ = ["REDACTED", "Redactor", "StreamRedactor"]

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
        return scrub(text)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        return self._secrets

    def stream(self) -> StreamRedactor:
        return StreamRedactor(self)


class StreamRedactor:
    """Redacts text that arrives in pieces, where a secret may span two pieces."""

    __slots__ = ("_held", "_redact")

    def __init__(self, redact: Redactor) -> None:
        self._redact = redact
        self._held = ""

    def feed(self, piece: str) -> str:
        """What can be shown now; a possible start of a secret is kept back."""
        if not self._redact:
            return scrub(piece)
        text = self._redact(self._held + piece)
        keep = 0
        for secret in self._redact.secrets:
            for size in range(min(len(secret) - 1, len(text)), keep, -1):
                if text.endswith(secret[:size]):
                    keep = size
                    break
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The rest, at the end of the stream."""
        held, self._held = self._held, ""
        return held

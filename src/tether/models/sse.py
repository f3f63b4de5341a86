"""Server-sent events, parsed by us: a pure function from body chunks to events.

Follows the WHATWG event-stream rules that matter for model APIs: `data:` lines
accumulate (joined by newlines), `event:`/`id:`/`retry:` set fields, lines starting
with `:` are comments (`: keep-alive`, OpenRouter's `: OPENROUTER PROCESSING`), a
blank line dispatches, and CR, LF and CRLF all end a line, also when a chunk
boundary falls between CR and LF. A stream that ends without a final blank line
still delivers its last event: some servers close right after `data: [DONE]`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["DONE", "SSEEvent", "events_from_lines", "iter_sse", "split_lines"]

_EOL = re.compile(r"\r\n|\r|\n")

DONE = "[DONE]"
"""The data of the sentinel event OpenAI-compatible servers send last."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event; `event` is "message" unless the server named it."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None

    @property
    def is_done(self) -> bool:
        return self.data.strip() == DONE


def split_lines(chunks: Iterable[str | bytes]) -> Iterator[str]:
    """Lines (without terminators) from body chunks of any size; bytes are UTF-8.

    Only CR, LF and CRLF end a line: `str.splitlines` would also split on U+2028
    and friends, which JSON strings may carry verbatim.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    for chunk in chunks:
        text = decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        if not text:
            continue
        pending += text
        start = 0
        for match in _EOL.finditer(pending):
            if match.group() == "\r" and match.end() == len(pending):
                break  # may be the first half of a CRLF split across chunks
            yield pending[start : match.start()]
            start = match.end()
        pending = pending[start:]
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending.removesuffix("\r")


def events_from_lines(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Events from lines already split (as `httpx.Response.iter_lines` gives them)."""
    data: list[str] = []
    event = ""
    last_id: str | None = None
    retry: int | None = None
    first = True
    for raw in lines:
        line = raw.rstrip("\r\n")
        if first:
            line = line.removeprefix("\ufeff")
            first = False
        if not line:
            if data:
                yield SSEEvent("\n".join(data), event or "message", last_id, retry)
            data, event = [], ""
            continue
        if line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field == "id" and "\0" not in value:
            last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            retry = int(value)
    if data:
        yield SSEEvent("\n".join(data), event or "message", last_id, retry)


def iter_sse(chunks: Iterable[str | bytes]) -> Iterator[SSEEvent]:
    """Events from raw body chunks (bytes or text, split anywhere)."""
    return events_from_lines(split_lines(chunks))

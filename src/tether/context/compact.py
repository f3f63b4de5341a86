"""Compaction: the conversation becomes a handoff summary plus a recent tail.

The model writes the summary (goal, decisions, files, state, next steps); tether
builds the new context around it. What is never summarised: the system prompt (with
the project's instructions), which stays as it is, and the user's own words — every
request is carried over verbatim (the latest always; older ones while they fit).
The tail starts at an assistant message, so a tool call never loses its result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tether.messages import Message

__all__ = [
    "COMPACTED_PREFIX",
    "SUMMARY_REQUEST",
    "Compacted",
    "build_compacted",
    "is_tether_note",
    "user_requests",
]

COMPACTED_PREFIX = "[tether] This conversation was compacted"
STOPPING_PREFIX = "[tether] The run is stopping"
SUMMARY_REQUEST = (
    "[tether] The context is nearly full and will be compacted. Do not call any tools. "
    "Write a handoff summary for yourself, to continue the work from it alone:\n"
    "## Goal\nwhat the user wants, in their terms\n"
    "## Decisions\nwhat was decided and why, including approaches that failed\n"
    "## Files\nevery file read, created or changed, and what matters in it\n"
    "## Current state\nwhat works, what does not, the last test results\n"
    "## Next steps\nwhat to do next, in order\n"
    "Be specific: names, paths, line numbers, commands, error messages. The user's "
    "requests will be kept verbatim, so do not restate them."
)


@dataclass(frozen=True, slots=True)
class Compacted:
    """The new context: `messages[0]` is the summary with the user's requests."""

    messages: list[Message]
    tail_from: int  # index in the old messages where the kept tail starts
    requests_kept: int
    requests_total: int


def is_tether_note(message: Message) -> bool:
    """User-role messages tether wrote itself, which are not the user's words."""
    return message.content.startswith((COMPACTED_PREFIX, STOPPING_PREFIX, SUMMARY_REQUEST[:40]))


def user_requests(messages: Sequence[Message]) -> list[str]:
    """The user's requests, oldest first, including those carried in a summary."""
    found: list[str] = []
    for message in messages:
        if message.role != "user":
            continue
        if message.content.startswith(COMPACTED_PREFIX):
            found = list(_carried(message.content))
        elif not is_tether_note(message):
            found.append(message.content)
    return found


def build_compacted(
    messages: Sequence[Message],
    summary: str,
    *,
    estimate: Callable[[Sequence[Message]], int],
    tail_budget: int,
    requests_budget: int,
) -> Compacted:
    """Summary + requests verbatim + the longest tail of whole turns within budget."""
    latest = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    starts = [i for i, m in enumerate(messages) if m.role == "assistant" and i > latest]
    tail_from = len(messages)
    for start in reversed(starts):
        if tail_from < len(messages) and estimate(messages[start:]) > tail_budget:
            break
        tail_from = start
    tail = list(messages[tail_from:])
    requests = user_requests(messages)
    kept = _fit_requests(requests, requests_budget, estimate)
    head = _head(summary, kept, len(requests))
    return Compacted([Message.user(head), *tail], tail_from, len(kept), len(requests))


def _fit_requests(
    requests: list[str], budget: int, estimate: Callable[[Sequence[Message]], int]
) -> list[str]:
    """The newest requests that fit `budget`; the latest one always."""
    kept: list[str] = []
    used = 0
    for index, text in enumerate(reversed(requests)):
        cost = estimate([Message.user(text)])
        if index > 0 and used + cost > budget:
            break
        kept.insert(0, text)
        used += cost
    return kept


_REQUEST_MARK = "\n\n--- user request {n} (verbatim) ---\n"
_REQUESTS_HEADER = "\n\n[tether] The user's requests, verbatim, oldest first; the last one is "
_REQUESTS_HEADER += "the current request."


def _head(summary: str, requests: list[str], total: int) -> str:
    text = (
        f"{COMPACTED_PREFIX} to fit the context window; earlier messages were replaced by "
        "this handoff summary, which you wrote before the compaction.\n\n"
        f"{summary.strip() or '(the summary was empty)'}"
        f"{_REQUESTS_HEADER}"
    )
    if total > len(requests):
        text += f" ({total - len(requests)} older request(s) left out for space.)"
    first = total - len(requests) + 1
    for offset, request in enumerate(requests):
        text += _REQUEST_MARK.format(n=first + offset) + request
    return text


def _carried(head: str) -> list[str]:
    """The verbatim requests a previous summary message carried."""
    _, _, rest = head.partition(_REQUESTS_HEADER)
    parts = rest.split("\n\n--- user request ")
    found = []
    for part in parts[1:]:
        _, sep, body = part.partition(" (verbatim) ---\n")
        if sep:
            found.append(body)
    return found

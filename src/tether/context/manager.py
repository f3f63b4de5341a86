"""Keeps the conversation inside the model's window: decide when, then stub or compact.

Before each model call the agent asks `fit`. The size of the next request is the
provider's own count for the last one plus an estimate of what was added since (an
estimate of everything until the provider has reported). Below the soft threshold
requests extend each other byte for byte, so the provider's prompt cache keeps
hitting; the one exception is a big output leaving the recent turns, stubbed when the
one cache miss on the few messages after it costs less than keeping it (`stub_spilled`).
Past the soft threshold, old tool output is stubbed in one batch. Past the hard
threshold (or when asked), the model writes a handoff summary and the context is
rebuilt around it. If that fails, stale output is dropped hard instead, the user is
told, and no summary is asked for again for a few turns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from tether.context.compact import build_compacted
from tether.context.stale import Spill, stub_spilled, stub_stale
from tether.context.tokens import estimate_request_tokens
from tether.messages import Message
from tether.models.base import ToolSpec

__all__ = ["ContextLimits", "ContextManager", "Fitted", "rebuild"]

Action = Literal["none", "stub", "compact", "compact-failed"]
_COOLDOWN_TURNS = 5
_ROOM = 0.1  # of the window: how far under the soft threshold a stub batch must bring it


@dataclass(frozen=True, slots=True)
class ContextLimits:
    """`window` in tokens; thresholds as fractions of it (or absolute when > 1)."""

    window: int = 128_000
    soft: float = 0.6
    hard: float = 0.85
    keep_turns: int = 4
    tail_share: float = 0.2  # of the window, for the tail kept after compaction
    requests_share: float = 0.1  # of the window, for the user's requests kept verbatim

    def tokens(self, threshold: float) -> int:
        return int(threshold) if threshold > 1 else int(threshold * self.window)

    @property
    def soft_tokens(self) -> int:
        """Never so close to the hard threshold that stubbing has no room to work."""
        return min(self.tokens(self.soft), int(self.hard_tokens * 0.75))

    @property
    def hard_tokens(self) -> int:
        return min(self.tokens(self.hard), self.window)


@dataclass(frozen=True, slots=True)
class Fitted:
    """What `fit` did: the messages to send, and the record for the transcript."""

    messages: list[Message]
    action: Action
    before: int
    after: int
    entry: dict[str, Any] | None = None
    note: str | None = None


class ContextManager:
    """Decides, per request, whether the context must shrink and does it."""

    def __init__(self, limits: ContextLimits, *, system: str, tools: Sequence[ToolSpec]) -> None:
        self.limits = limits
        self._system = system
        self._tools = [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in tools
        ]
        self._reported: tuple[int, int] | None = None  # (messages sent, tokens counted)
        self._cooldown = 0  # fits to skip the summary for, after one failed
        self.spill: Spill | None = None

    def check(self) -> str | None:
        """Why these limits cannot work (the fixed part alone passes a threshold), or None."""
        fixed = estimate_request_tokens(self._system, (), self._tools)
        if self.limits.soft_tokens <= fixed * 1.2:
            return (
                f"the context thresholds (drop old output at {self.limits.soft_tokens:,} "
                f"tokens, compact at {self.limits.hard_tokens:,}) leave no room: the system "
                f"prompt and tool list alone take about {fixed:,} tokens"
            )
        return None

    def report(self, messages_sent: int, input_tokens: int, reply: Message) -> None:
        """The provider's count for the request just answered (0: it did not say). The
        reply is estimated, not taken from the output count: that includes reasoning,
        which is not sent back."""
        if input_tokens > 0:
            self._reported = (messages_sent, input_tokens + self._estimate_messages([reply]))

    def size(self, messages: Sequence[Message]) -> int:
        """Tokens the next request would hold: reported + estimated since, or estimated."""
        if self._reported is not None and self._reported[0] <= len(messages):
            sent, counted = self._reported
            added = messages[sent:]
            extra = estimate_request_tokens("", added, ()) if added else 0
            return int(counted + extra)
        return int(estimate_request_tokens(self._system, messages, self._tools))

    def fit(
        self,
        messages: list[Message],
        summarize: Callable[[list[Message]], str],
        *,
        force: bool = False,
    ) -> Fitted:
        """Shrink `messages` if needed. `summarize` asks the model for the handoff summary
        (it may raise; then stale output is dropped hard instead)."""
        lim = self.limits
        before = self.size(messages)
        if not force and before < lim.soft_tokens:
            early, stubs = stub_spilled(
                messages,
                keep_turns=lim.keep_turns,
                estimate=self._estimate_messages,
                spill=self.spill,
            )
            if not stubs:
                return Fitted(messages, "none", before, before)
            batch = {"type": "context", "action": "stub", "stubs": stubs, "early": True}
            return self._done(early, "stub", before, self._estimate(early), batch)
        if not force and before < lim.hard_tokens:
            stubbed, stubs = stub_stale(messages, keep_turns=lim.keep_turns, spill=self.spill)
            after = self._estimate(stubbed)
            # Only a batch that makes real room: otherwise the next turns would each
            # stub a little more, and every change breaks the cache after it.
            if stubs and after <= lim.soft_tokens - _ROOM * lim.window:
                batch = {"type": "context", "action": "stub", "stubs": stubs}
                return self._done(stubbed, "stub", before, after, batch)
        if self._cooldown > 0 and not force:  # a summary just failed: do not ask every turn
            self._cooldown -= 1
            return self._fallback(messages, before, None)
        source = messages
        if before >= lim.window * 0.9:  # the summary request itself must fit
            source = stub_stale(messages, keep_turns=0, spill=self.spill)[0]
        try:
            summary = summarize(source)
        except Exception as exc:  # a provider failure must not end the run
            self._cooldown = _COOLDOWN_TURNS
            return self._fallback(messages, before, exc)
        compacted = build_compacted(
            messages,
            summary,
            estimate=lambda ms: estimate_request_tokens("", ms, ()),
            tail_budget=self._tail_budget(),
            requests_budget=int(lim.window * lim.requests_share),
        )
        result, stubs = compacted.messages, {}
        after = self._estimate(result)
        result, stubs, after = self._squeeze(result, after)
        entry: dict[str, Any] = {
            "type": "compaction",
            "head": result[0].to_dict(),
            "tail_from": compacted.tail_from,
            "stubs": stubs,
            "summary": summary,
            "requests_kept": compacted.requests_kept,
            "requests_total": compacted.requests_total,
            "forced": force,
        }
        return self._done(result, "compact", before, after, entry)

    def _tail_budget(self) -> int:
        """A share of the window, but at most half the room the fixed part leaves under
        the soft threshold, so that a compaction buys many turns, not one."""
        fixed = estimate_request_tokens(self._system, (), self._tools)
        room = self.limits.soft_tokens - fixed
        return max(0, min(int(self.limits.window * self.limits.tail_share), room // 2))

    def _squeeze(
        self, messages: list[Message], size: int
    ) -> tuple[list[Message], dict[str, str], int]:
        """Over the soft threshold still (a tail of huge outputs): stub all but the last
        turn's; over the hard one even then (one turn larger than the window): all."""
        stubs: dict[str, str] = {}
        for keep, limit in ((1, self.limits.soft_tokens), (0, self.limits.hard_tokens)):
            if size >= limit:
                messages, more = stub_stale(messages, keep_turns=keep, spill=self.spill)
                stubs.update(more)
                size = self._estimate(messages)
        return messages, stubs, size

    def _fallback(self, messages: list[Message], before: int, exc: Exception | None) -> Fitted:
        stubbed, stubs, after = self._squeeze(messages, self.limits.window)
        if not stubs and exc is None:
            return Fitted(messages, "none", before, before)
        entry: dict[str, Any] = {"type": "context", "action": "stub", "stubs": stubs}
        note = None
        if exc is not None:
            entry["error"] = str(exc)
            note = (
                f"Compaction failed ({exc}); dropped old tool output instead "
                f"(about {before:,} -> {after:,} tokens)."
            )
        fitted = self._done(stubbed, "compact-failed", before, after, entry)
        return Fitted(fitted.messages, fitted.action, before, after, fitted.entry, note)

    def _done(
        self,
        messages: list[Message],
        action: Action,
        before: int,
        after: int,
        entry: dict[str, Any],
    ) -> Fitted:
        self._reported = None  # earlier messages changed: the provider's count is stale
        entry = {**entry, "tokens_before": before, "tokens_after": after}
        return Fitted(messages, action, before, after, entry)

    @staticmethod
    def _estimate_messages(messages: Sequence[Message]) -> int:
        return int(estimate_request_tokens("", messages, ()))

    def _estimate(self, messages: Sequence[Message]) -> int:
        return int(estimate_request_tokens(self._system, messages, self._tools))


def rebuild(entries: Sequence[dict[str, Any]]) -> list[Message]:
    """The context as it stood at the end of a transcript: messages appended, stubs
    applied, compactions replayed. What resume sends is what the session last sent."""
    view: list[Message] = []
    for entry in entries:
        kind = entry.get("type")
        if kind == "message":
            view.append(Message.from_dict(entry["message"]))
        elif kind == "context" and entry.get("action") == "stub":
            view = _apply_stubs(view, entry.get("stubs") or {})
        elif kind == "context" and entry.get("action") == "rebase":  # a repaired resume
            view = [Message.from_dict(m) for m in entry["messages"]]
        elif kind == "compaction":
            view = [Message.from_dict(entry["head"]), *view[int(entry["tail_from"]) :]]
            view = _apply_stubs(view, entry.get("stubs") or {})
    return view


def _apply_stubs(view: list[Message], stubs: dict[str, str]) -> list[Message]:
    """Stubs are keyed by position in the context at the time they were made."""
    result = list(view)
    for key, stub in stubs.items():
        index = int(key)
        if 0 <= index < len(result) and result[index].role == "tool":
            result[index] = replace(result[index], content=stub)
    return result

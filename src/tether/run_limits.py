"""What bounds a run and how it ended: `Limits`, the check against them, `RunResult`.

Kept apart from the loop so the loop reads as the loop; the CLI's exit codes are
decided here, from the stop reason alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from tether.errors import EXIT_INTERRUPTED, EXIT_LIMIT, EXIT_OK, EXIT_PROVIDER
from tether.messages import StopReason, Usage
from tether.observe.accounting import ContextStats

__all__ = ["Limits", "RunResult", "limit_hit", "remaining"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-run limits; `max_tokens` counts input plus output over all turns."""

    max_turns: int = 100
    max_tokens: int | None = None
    timeout: float | None = None
    loop_guard: int = 3
    max_cost: float | None = None  # USD, at the catalogue's prices (`price`)
    price: Callable[[Usage], float | None] | None = None


@dataclass(frozen=True, slots=True)
class RunResult:
    session_id: str
    stop_reason: StopReason
    result: str
    turns: int
    usage: Usage
    duration_s: float
    error: str | None = None
    context: ContextStats | None = None
    cost_usd: float | None = None

    @property
    def exit_code(self) -> int:
        """The CLI's documented exit code for how this run ended."""
        if self.stop_reason is StopReason.COMPLETED:
            return EXIT_OK
        if self.stop_reason in (StopReason.PROVIDER_ERROR, StopReason.TOOL_FORMAT):
            return EXIT_PROVIDER
        if self.stop_reason is StopReason.INTERRUPTED:
            return EXIT_INTERRUPTED
        return EXIT_LIMIT


def limit_hit(
    limits: Limits, turns: int, usage: Usage, start: float
) -> tuple[StopReason, str] | None:
    """The first limit `turns` and `usage` reach (with why, in words), or None."""
    if turns >= limits.max_turns:
        return StopReason.MAX_TURNS, f"the turn limit ({limits.max_turns}) was reached"
    if limits.max_tokens is not None and usage.total_tokens >= limits.max_tokens:
        return StopReason.MAX_TOKENS, (
            f"the token limit ({limits.max_tokens:,}) was reached "
            f"({usage.total_tokens:,} tokens used)"
        )
    spent = limits.price(usage) if limits.price is not None else None
    if limits.max_cost is not None and spent is not None and spent >= limits.max_cost:
        return StopReason.MAX_COST, f"the cost limit (${limits.max_cost:g}) was reached"
    if limits.timeout is not None and time.monotonic() - start >= limits.timeout:
        return StopReason.TIMEOUT, f"the time limit ({limits.timeout:g} s) was reached"
    return None


def remaining(
    limits: Limits, spent: Usage, deadline: float | None
) -> tuple[int | None, float | None, float | None]:
    """What is left of the tokens, cost (USD) and seconds (None: no limit), never zero
    or less: a subagent given what is left stops at its first check."""
    tokens = None if limits.max_tokens is None else max(1, limits.max_tokens - spent.total_tokens)
    priced = limits.price(spent) if limits.price is not None else None
    cost = (
        None if limits.max_cost is None or priced is None else max(1e-9, limits.max_cost - priced)
    )
    left = None if deadline is None else max(0.001, deadline - time.monotonic())
    return tokens, cost, left

"""Retries for model calls, in one place.

Only `TransientError` is retried (rate limits, server errors, network trouble,
broken streams); every other `ProviderError` means trying again cannot help.
Waits grow exponentially with jitter, so a crowd of clients does not retry in
step; a Retry-After from the provider wins over our own guess, unless it asks for
longer than we are willing to wait, in which case we fail at once and say so.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from tether.errors import TransientError

__all__ = ["OnRetry", "RetryPolicy", "call_with_retries", "parse_retry_after"]

T = TypeVar("T")

OnRetry = Callable[[int, float, str], None]
"""Told (failed attempt number from 1, delay in seconds, reason) before each wait."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard to try: attempts in all (first one included) and wait bounds in seconds."""

    max_attempts: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    max_retry_after: float = 300.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts!r}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if not value >= 0:  # also rejects NaN
                raise ValueError(f"{name} must be a non-negative number, not {value!r}")

    def backoff(self, failed_attempt: int, unit: float) -> float:
        """The wait after attempt `failed_attempt` (from 1); `unit` in [0, 1) is the jitter.

        Equal jitter: between half and all of `base_delay * 2**(n-1)`, capped at
        `max_delay`, so waits never shrink from one attempt to the next.
        """
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** min(failed_attempt - 1, 62))
        return ceiling * (0.5 + 0.5 * unit)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        from email.utils import parsedate_to_datetime  # rare; keeps startup lean

        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        current = datetime.now(UTC).timestamp() if now is None else now
        return max(0.0, when.timestamp() - current)
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return None
    return max(0.0, seconds)


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    on_retry: OnRetry,
    sleep: Callable[[float], None] = time.sleep,
    jitter: Callable[[], float] = random.random,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """Call `fn` until it succeeds, retrying `TransientError` as `policy` allows.

    Raises the first non-transient error unchanged; a `TransientError` naming the
    attempt count and the last reason once attempts run out; and at once when the
    provider's Retry-After exceeds `policy.max_retry_after`, or when the next attempt
    would start after `deadline` (a `clock()` reading).
    """
    attempt = 1
    while True:
        try:
            return fn()
        except TransientError as exc:
            reason = str(exc)
            if exc.retry_after is not None and exc.retry_after > policy.max_retry_after:
                raise TransientError(
                    f"{reason} (the endpoint asks to retry after {exc.retry_after:.0f} s, "
                    f"longer than the {policy.max_retry_after:.0f} s tether is set to wait)",
                    status=exc.status,
                    retry_after=exc.retry_after,
                ) from exc
            if attempt >= policy.max_attempts:
                noun = "attempt" if attempt == 1 else "attempts"
                raise TransientError(
                    f"gave up after {attempt} {noun}; last error: {reason}",
                    status=exc.status,
                    retry_after=exc.retry_after,
                ) from exc
            if exc.retry_after is not None:
                delay = exc.retry_after
            else:
                delay = policy.backoff(attempt, jitter())
            if deadline is not None and clock() + delay >= deadline:
                raise TransientError(
                    f"{reason} (no time left to retry within the run's time limit)",
                    status=exc.status,
                    retry_after=exc.retry_after,
                ) from exc
            on_retry(attempt, delay, reason)
            sleep(delay)
            attempt += 1

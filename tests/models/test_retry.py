"""Retries: only transient errors, growing waits, Retry-After honoured, a clear final error.

The tests pass a recording `sleep`: that is the clock, not our code.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from tether.errors import AuthenticationError, TransientError
from tether.models.retry import RetryPolicy, call_with_retries, parse_retry_after


class Flaky:
    """Fails with the given errors in order, then returns "ok"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def run(
    fn: Callable[[], str], policy: RetryPolicy, jitter: float = 0.5
) -> tuple[str, list[float], list[tuple[int, float, str]]]:
    sleeps: list[float] = []
    retries: list[tuple[int, float, str]] = []
    result = call_with_retries(
        fn,
        policy,
        on_retry=lambda *a: retries.append(a),
        sleep=sleeps.append,
        jitter=lambda: jitter,
    )
    return result, sleeps, retries


def test_success_needs_no_sleep() -> None:
    assert run(Flaky(), RetryPolicy()) == ("ok", [], [])


def test_transient_errors_are_retried_and_reported() -> None:
    fn = Flaky(TransientError("HTTP 500"), TransientError("reset"))
    result, sleeps, retries = run(fn, RetryPolicy(base_delay=1.0), jitter=0.0)
    assert result == "ok" and fn.calls == 3
    assert sleeps == [0.5, 1.0]
    assert retries == [(1, 0.5, "HTTP 500"), (2, 1.0, "reset")]


@pytest.mark.parametrize("jitter", [0.0, 0.37, 0.999])
def test_backoff_grows_and_is_capped(jitter: float) -> None:
    policy = RetryPolicy(max_attempts=10, base_delay=1.0, max_delay=20.0)
    fn = Flaky(*(TransientError("busy") for _ in range(9)))
    _, sleeps, _ = run(fn, policy, jitter=jitter)
    assert len(sleeps) == 9
    assert all(a <= b for a, b in itertools.pairwise(sleeps))
    assert all(10.0 <= s <= 20.0 for s in sleeps[5:])
    assert sleeps[0] == pytest.approx(0.5 + 0.5 * jitter)


def test_jitter_spreads_waits_between_half_and_full() -> None:
    policy = RetryPolicy(base_delay=4.0)
    assert policy.backoff(1, 0.0) == 2.0
    assert policy.backoff(1, 0.999) == pytest.approx(3.998)
    assert policy.backoff(3, 0.0) == 8.0


def test_retry_after_is_honoured_over_backoff() -> None:
    fn = Flaky(TransientError("HTTP 429", status=429, retry_after=7.0))
    _, sleeps, retries = run(fn, RetryPolicy(base_delay=0.01))
    assert sleeps == [7.0] and retries[0][1] == 7.0


def test_retry_after_longer_than_allowed_fails_at_once() -> None:
    fn = Flaky(TransientError("HTTP 429: slow down", status=429, retry_after=3600))
    with pytest.raises(TransientError) as info:
        run(fn, RetryPolicy(max_retry_after=300))
    assert fn.calls == 1
    message = str(info.value)
    assert "HTTP 429: slow down" in message and "3600 s" in message and "300 s" in message
    assert info.value.status == 429


def test_gives_up_after_max_attempts_naming_count_and_last_reason() -> None:
    fn = Flaky(*(TransientError(f"HTTP 503 #{i}", status=503) for i in range(5)))
    with pytest.raises(TransientError) as info:
        run(fn, RetryPolicy(max_attempts=3, base_delay=0.0))
    assert fn.calls == 3
    assert str(info.value) == "gave up after 3 attempts; last error: HTTP 503 #2"
    assert info.value.status == 503
    assert isinstance(info.value.__cause__, TransientError)


def test_single_attempt_policy() -> None:
    with pytest.raises(TransientError, match="gave up after 1 attempt; "):
        run(Flaky(TransientError("x")), RetryPolicy(max_attempts=1))


def test_other_errors_are_not_retried() -> None:
    fn = Flaky(AuthenticationError("bad key", status=401))
    with pytest.raises(AuthenticationError):
        run(fn, RetryPolicy())
    assert fn.calls == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_attempts", 0), ("base_delay", -1.0), ("max_delay", float("nan"))],
)
def test_policy_rejects_bad_values_showing_them(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field) as info:
        RetryPolicy(**{field: value})
    assert repr(value) in str(info.value)


def test_parse_retry_after() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("  ") is None
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("inf") is None and parse_retry_after("nan") is None
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(datetime(2025, 1, 1, 12, 0, 30, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(later, now=now.timestamp()) == 30.0
    earlier = "Wed, 01 Jan 2025 11:00:00 GMT"
    assert parse_retry_after(earlier, now=now.timestamp()) == 0.0


def test_no_retry_starts_after_the_deadline() -> None:
    now = [100.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    flaky = Flaky(*(TransientError("HTTP 500") for _ in range(10)))
    with pytest.raises(TransientError, match="no time left to retry"):
        call_with_retries(
            flaky,
            RetryPolicy(max_attempts=10, base_delay=1.0),
            on_retry=lambda *_: None,
            sleep=sleep,
            jitter=lambda: 1.0,
            deadline=104.5,
            clock=lambda: now[0],
        )
    assert sleeps == [1.0, 2.0]  # a third wait (4 s) would end past the deadline
    assert flaky.calls == 3

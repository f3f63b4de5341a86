"""The event bus: fan-out in order; a failing subscriber is turned off, not fatal."""

from __future__ import annotations

import pytest

from tether.messages import StopReason, Usage
from tether.observe.events import Event, EventBus, Notice, RunFinished, TextDelta


def test_subscribers_hear_events_in_order_and_can_leave() -> None:
    bus, heard = EventBus(), []
    leave = bus.subscribe(lambda e: heard.append(("a", e)))
    bus.subscribe(lambda e: heard.append(("b", e)))
    bus.emit(TextDelta("x"))
    leave()
    bus.emit(TextDelta("y"))
    assert heard == [("a", TextDelta("x")), ("b", TextDelta("x")), ("b", TextDelta("y"))]


def test_a_failing_subscriber_is_turned_off_and_reported() -> None:
    bus, heard = EventBus(), []

    def broken(event: Event) -> None:
        raise BrokenPipeError("stdout closed")

    bus.subscribe(broken)
    bus.subscribe(heard.append)
    bus.emit(TextDelta("x"))
    bus.emit(TextDelta("y"))
    assert heard[0] == TextDelta("x")
    assert isinstance(heard[1], Notice) and "BrokenPipeError: stdout closed" in heard[1].text
    assert heard[2] == TextDelta("y")


def test_ctrl_c_in_a_subscriber_still_propagates() -> None:
    bus = EventBus()

    def interrupted(event: Event) -> None:
        raise KeyboardInterrupt

    bus.subscribe(interrupted)
    with pytest.raises(KeyboardInterrupt):
        bus.emit(TextDelta("x"))


def test_events_serialise_flat_with_their_type() -> None:
    event = RunFinished(
        "s1", StopReason.MAX_TURNS, "sum", 3, Usage(10, 2, 5), 1.5, session_usage=Usage(30, 4)
    )
    assert event.to_dict() == {
        "type": "run_finished",
        "session_id": "s1",
        "stop_reason": "max_turns",
        "result": "sum",
        "turns": 3,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 2,
            "cached_tokens": 5,
            "cache_write_tokens": 0,
        },
        "duration_s": 1.5,
        "error": None,
        "session_usage": {
            "input_tokens": 30,
            "output_tokens": 4,
            "cached_tokens": 0,
            "cache_write_tokens": 0,
        },
    }

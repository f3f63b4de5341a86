"""The loop guard: the same call N times in a row gets a note; anything else resets it."""

from __future__ import annotations

from tether.loop_guard import LoopGuard
from tether.messages import ToolCall, ToolResult


def test_the_third_identical_call_gets_a_note_and_a_different_one_resets() -> None:
    guard = LoopGuard(3)
    result = ToolResult("1", "bash", "out")
    same = [ToolCall("1", "bash", '{"a": 1, "b": 2}'), ToolCall("2", "bash", '{"b":2,"a":1}')]
    assert guard.check(same[0], result) is None
    assert guard.check(same[1], result) is None  # key order does not matter
    noted = guard.check(same[0], result)
    assert noted is not None and noted.content.startswith("out\n\n[tether] You have made")
    assert "3 times in a row" in noted.content and guard.repeats == 3
    assert guard.check(ToolCall("3", "bash", "{not json"), result) is None
    assert guard.repeats == 1

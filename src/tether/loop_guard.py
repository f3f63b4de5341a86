"""Noticing a model that repeats itself: the same call, N times in a row, earns a note.

The note goes at the end of that call's result, the tail of the conversation, so the
cached prefix stays as it was.
"""

from __future__ import annotations

import json

from tether.messages import ToolCall, ToolResult

__all__ = ["LoopGuard"]


class LoopGuard:
    """Counts identical consecutive calls (name + arguments, key order ignored)."""

    __slots__ = ("_last", "repeats", "threshold")

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self._last: tuple[str, str] | None = None
        self.repeats = 0

    def check(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """The result with a note when the call is one repeat too many, else None."""
        signature = (call.name, _canonical(call.arguments))
        self.repeats = self.repeats + 1 if signature == self._last else 1
        self._last = signature
        if self.repeats < self.threshold:
            return None
        note = (
            f"\n\n[tether] You have made this exact call {self.repeats} times in a row. "
            "Repeating it will not give a different result: step back, reconsider what you "
            "know, and try a different approach."
        )
        return ToolResult(result.call_id, result.name, result.content + note, result.is_error)


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, TypeError, RecursionError):
        return arguments

"""The demo's scripted model: replies written in advance, served over real HTTP.

Each reply is a function of the request so that the last one can tell the truth
about the test run that actually happened.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

from tether.models.scripted import ScriptedCall, Turn

__all__ = ["demo_script", "test_command", "test_rule"]


def _python() -> str:
    return "python3" if shutil.which("python3") else sys.executable


def test_command() -> str:
    """How the demo runs the sample's tests: the stdlib runner, no pytest needed."""
    return f"{_python()} -m unittest -v"


def test_rule() -> str:
    """The one rule the demo adds, so its tests run without a prompt."""
    return f"Bash({_python()} -m unittest:*)"


def demo_script(pause_s: float = 0.6) -> list[Callable[[dict[str, Any]], Turn]]:
    """The six turns of the demo; `pause_s` lets a person follow along."""
    test = test_command()

    def paced(turn: Turn) -> Callable[[dict[str, Any]], Turn]:
        def reply(_request: dict[str, Any]) -> Turn:
            time.sleep(pause_s)
            return turn

        return reply

    def verdict(request: dict[str, Any]) -> Turn:
        time.sleep(pause_s)
        messages = request.get("messages") or [{}]
        last = str(messages[-1].get("content") or "")
        if "[exit code: 0]" in last:
            return Turn(
                text="Fixed. `mean()` in mathutils.py divided by `len(values) - 1` (the "
                "sample-variance denominator) instead of `len(values)`. I changed that one "
                "line; all five tests pass now."
            )
        return Turn(text="The tests still fail after my change; the output above shows why.")

    return [
        paced(
            Turn(
                text="I'll start by looking at what the project contains.",
                tool_calls=(ScriptedCall("list_files", {}),),
            )
        ),
        paced(
            Turn(
                text="A module and its tests. Let me read both.",
                tool_calls=(
                    ScriptedCall("read_file", {"path": "mathutils.py"}),
                    ScriptedCall("read_file", {"path": "test_mathutils.py"}),
                ),
            )
        ),
        paced(
            Turn(
                text="Now let me run the tests to see what fails.",
                tool_calls=(ScriptedCall("bash", {"command": test}),),
            )
        ),
        paced(
            Turn(
                text="`mean([1, 2, 3])` returns 3.0: the sum is divided by `len(values) - 1`. "
                "The mean divides by the count. Fixing that line.",
                tool_calls=(
                    ScriptedCall(
                        "str_replace",
                        {
                            "path": "mathutils.py",
                            "old_str": "return sum(values) / (len(values) - 1)",
                            "new_str": "return sum(values) / len(values)",
                        },
                    ),
                ),
            )
        ),
        paced(
            Turn(
                text="Running the tests again to check the fix.",
                tool_calls=(ScriptedCall("bash", {"command": test}),),
            )
        ),
        verdict,
    ]

"""The plain renderer, rendered into a string and compared exactly."""

from __future__ import annotations

import io

from tether.messages import FinishReason, Message, StopReason, ToolCall, ToolResult, Usage
from tether.observe.events import (
    AssistantMessage,
    RetryScheduled,
    RunFinished,
    TextDelta,
    ToolFinished,
    ToolStarted,
)
from tether.observe.redact import Redactor
from tether.ui.terminal import TerminalRenderer, describe_call


def test_a_turn_renders_as_text() -> None:
    out = io.StringIO()
    r = TerminalRenderer(out, color=False, redact=Redactor(["sk-hidden-12345"]))
    call = ToolCall("c1", "bash", '{"command": "pytest -q"}')
    output = "\n".join(f"line {i}" for i in range(10)) + "\n[exit code: 1]"
    for event in [
        TextDelta("Running "),
        TextDelta("the tests (key sk-hidden-12345)."),
        AssistantMessage(Message(role="assistant"), Usage(), FinishReason.TOOL_CALLS),
        ToolStarted(call),
        ToolFinished(call, ToolResult("c1", "bash", output), 0.5),
        RetryScheduled(1, 2.0, "HTTP 500"),
        RunFinished("s", StopReason.COMPLETED, "", 2, Usage(100, 20, 50), 1.25),
    ]:
        r(event)
    assert out.getvalue() == (
        "Running the tests (key [REDACTED]).\n"
        "→ bash: pytest -q\n"
        "  ✓ line 0\n"
        "    line 1\n"
        "    … 6 more lines …\n"
        "    line 8\n"
        "    line 9\n"
        "    [exit code: 1]\n"
        "  endpoint trouble (HTTP 500); retry 1 in 2.0 s\n"
        "[completed · 2 turns · 100 in (50 cached) / 20 out · 1.2 s]\n"
    )


def test_describe_call_prefers_the_main_argument() -> None:
    assert (
        describe_call("read_file", '{"path": "a.py", "offset": 3}') == "read_file: a.py  offset=3"
    )
    assert describe_call("bash", "{broken") == "bash {broken"
    assert describe_call("list_files", "") == "list_files "

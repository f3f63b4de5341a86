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
    TurnUsage,
)
from tether.observe.redact import Redactor
from tether.ui.terminal import TerminalRenderer, describe_call, usage_line


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


def test_each_response_gets_a_status_line_and_a_later_run_the_session_total() -> None:
    out = io.StringIO()
    r = TerminalRenderer(out, color=False)
    turn = Usage(12345, 456, 11000, 0)
    for event in [
        TextDelta("Done."),
        AssistantMessage(Message(role="assistant"), turn, FinishReason.STOP),
        TurnUsage(1, turn, 12000, 23456, 128000, Usage(20000, 900, 15000, 64)),
        RunFinished(
            "s", StopReason.COMPLETED, "", 1, turn, 0.5, session_usage=Usage(20000, 900, 15000, 64)
        ),
    ]:
        r(event)
    assert out.getvalue() == (
        "Done.\n"
        "tokens: in 12,345 (cached 11,000, written 0) · out 456 · context ~23,456 / 128,000 (18%)\n"
        "[completed · 1 turns · 12,345 in (11,000 cached) / 456 out · 0.5 s]\n"
        "session total: in 20,000 (cached 15,000, written 64) · out 900\n"
    )


def test_the_session_total_is_not_repeated_when_it_is_the_runs() -> None:
    out = io.StringIO()
    usage = Usage(100, 20, 50)
    TerminalRenderer(out, color=False)(
        RunFinished("s", StopReason.COMPLETED, "", 1, usage, 1.0, session_usage=usage)
    )
    assert "session total" not in out.getvalue()


def test_the_status_line_marks_an_estimate_and_is_dim_only_in_colour() -> None:
    unreported = TurnUsage(2, Usage(output_tokens=7), 3210, 3217, None, Usage())
    assert usage_line(unreported) == "tokens: in ~3,210 (estimated) · out 7 · context ~3,217"
    bare = TurnUsage(1, Usage(5, 1), None, None, None, Usage(5, 1))
    assert usage_line(bare) == "tokens: in 5 (cached 0, written 0) · out 1"
    priced = TurnUsage(2, Usage(5, 1), None, None, None, Usage(9, 2), 0.00123, 0.0456)
    assert usage_line(priced).endswith(" · out 1 · $0.0012 (session $0.0456)")
    out = io.StringIO()
    TerminalRenderer(out, color=True)(bare)
    assert out.getvalue() == f"\x1b[2m{usage_line(bare)}\x1b[0m\n"
    assert TurnUsage(1, Usage(5, 1), 4, 6, 100, Usage(5, 1)).to_dict() == {
        "type": "turn_usage",
        "call": 1,
        "usage": {
            "input_tokens": 5,
            "output_tokens": 1,
            "cached_tokens": 0,
            "cache_write_tokens": 0,
        },
        "estimated_input_tokens": 4,
        "context_tokens": 6,
        "window": 100,
        "total": {
            "input_tokens": 5,
            "output_tokens": 1,
            "cached_tokens": 0,
            "cache_write_tokens": 0,
        },
        "cost_usd": None,
        "total_cost_usd": None,
    }

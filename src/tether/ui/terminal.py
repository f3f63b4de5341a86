"""A plain terminal renderer: the answer streams, tool activity shows as it happens.

It is only an event subscriber, so a richer UI can replace it without touching the
core. Colour is used only on a terminal and never when NO_COLOR is set.
"""

from __future__ import annotations

import json
import os
from typing import TextIO

from tether.messages import Usage
from tether.observe.events import (
    AssistantMessage,
    Event,
    LimitReached,
    LoopWarning,
    Notice,
    ReasoningDelta,
    RetryScheduled,
    RunFinished,
    SubagentStep,
    TextDelta,
    TodosUpdated,
    ToolFinished,
    ToolStarted,
    TurnUsage,
)
from tether.observe.redact import Redactor

__all__ = ["TerminalRenderer", "describe_call", "usage_line"]

_HEAD = 2
_TAIL = 3


class TerminalRenderer:
    """Writes a human-readable account of a run to `out`."""

    def __init__(
        self,
        out: TextIO,
        *,
        redact: Redactor | None = None,
        color: bool | None = None,
        show_answer: bool = True,
    ) -> None:
        self._out = out
        self._redact = redact or Redactor()
        if color is None:
            color = out.isatty() and not os.environ.get("NO_COLOR")
        self._color = color
        self._show_answer = show_answer
        self._mid_line = False
        self._in_reasoning = False
        # Streamed pieces are redacted as a stream: a secret may span two pieces.
        self._answer = self._redact.stream()
        self._thinking = self._redact.stream()

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if self._show_answer:
                self._write_answer(self._answer.feed(event.text))
        elif isinstance(event, ReasoningDelta):
            if self._show_answer:
                self._write_thinking(self._thinking.feed(event.text))
        else:
            self._write_thinking(self._thinking.flush())
            self._write_answer(self._answer.flush())
            self._render(event)
        self._out.flush()

    def _write_answer(self, text: str) -> None:
        if text:
            self._end_reasoning()
            self._write(text)

    def _write_thinking(self, text: str) -> None:
        if text:
            if not self._in_reasoning:
                self._line(self._style("thinking: ", "2"))
                self._in_reasoning = True
            self._write(self._style(text, "2"))

    def _render(self, event: Event) -> None:
        if isinstance(event, AssistantMessage):
            self._end_reasoning()
            self._newline()
        elif isinstance(event, TurnUsage):
            self._line(self._style(usage_line(event), "2"))
        elif isinstance(event, ToolStarted):
            self._line(
                self._style("→ " + describe_call(event.call.name, event.call.arguments), "36")
            )
        elif isinstance(event, SubagentStep):
            step = describe_call(event.call.name, event.call.arguments)
            self._line(self._style(f"  ↳ [{_cut(event.description, 40)}] {step}", "2"))
        elif isinstance(event, ToolFinished):
            self._tool_finished(event)
        elif isinstance(event, TodosUpdated):
            from tether.tools.todos import render_todos

            listed = render_todos(event.todos) or "(empty)"
            self._line(self._style("todos:\n" + _indent(listed), "35"))
        elif isinstance(event, RetryScheduled):
            self._line(
                self._style(
                    f"  endpoint trouble ({event.reason}); retry {event.attempt} "
                    f"in {event.delay:.1f} s",
                    "33",
                )
            )
        elif isinstance(event, LoopWarning):
            self._line(self._style(f"  same call {event.repeats} times in a row: nudged", "33"))
        elif isinstance(event, LimitReached):
            self._line(self._style(f"Stopping: {event.detail}; asking for a summary.", "33"))
        elif isinstance(event, Notice) and event.level != "debug":
            self._line(self._style(event.text, "33" if event.level != "info" else "2"))
        elif isinstance(event, RunFinished):
            self._run_finished(event)

    def _tool_finished(self, event: ToolFinished) -> None:
        """A short preview: the head and the tail, where results and errors show."""
        lines = event.result.content.rstrip("\n").splitlines() or [""]
        mark = self._style("✗", "31") if event.result.is_error else self._style("✓", "32")
        if len(lines) > _HEAD + _TAIL + 1:
            hidden = len(lines) - _HEAD - _TAIL
            note = f"… {hidden} more lines …"
            lines = [*lines[:_HEAD], note, *lines[-_TAIL:]]
        for i, text in enumerate(lines):
            prefix = f"  {mark} " if i == 0 else "    "
            self._line(prefix + self._style(_cut(text, 160), "2"))

    def _run_finished(self, event: RunFinished) -> None:
        self._newline()
        if event.error:
            self._line(self._style(f"Error: {event.error}", "31"))
        u = event.usage
        self._line(
            self._style(
                f"[{event.stop_reason} · {event.turns} turns · {u.input_tokens:,} in "
                f"({u.cached_tokens:,} cached) / {u.output_tokens:,} out · "
                f"{event.duration_s:.1f} s]",
                "2",
            )
        )
        total = event.session_usage
        if total is not None and total != u:  # a later request, or a /compact: say the sum
            self._line(self._style("session total: " + _tokens(total), "2"))

    def _end_reasoning(self) -> None:
        if self._in_reasoning:
            self._in_reasoning = False
            self._newline()

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self._color else text

    def _write(self, text: str) -> None:
        """Text already redacted (streamed pieces go through a StreamRedactor)."""
        if text:
            self._out.write(text)
            self._mid_line = not text.endswith("\n")

    def _newline(self) -> None:
        if self._mid_line:
            self._out.write("\n")
            self._mid_line = False

    def _line(self, text: str) -> None:
        self._newline()
        self._out.write(self._redact(text) + "\n")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def usage_line(event: TurnUsage) -> str:
    """The status line of one response: its tokens as the provider reported them (or
    the estimate, marked, when it reported none) and how full the window is now."""
    u, estimate = event.usage, event.estimated_input_tokens
    if u.input_tokens == 0 and estimate is not None:
        text = f"tokens: in ~{estimate:,} (estimated) · out {u.output_tokens:,}"
    else:
        text = "tokens: " + _tokens(u)
    if event.context_tokens is not None:
        text += f" · context ~{event.context_tokens:,}"
        if event.window:
            text += f" / {event.window:,} ({event.context_tokens / event.window:.0%})"
    if event.cost_usd is not None:
        text += f" · ${event.cost_usd:.4f}"
        if event.total_cost_usd is not None:
            text += f" (session ${event.total_cost_usd:.4f})"
    return text


def _tokens(u: Usage) -> str:
    return (
        f"in {u.input_tokens:,} (cached {u.cached_tokens:,}, written {u.cache_write_tokens:,})"
        f" · out {u.output_tokens:,}"
    )


def describe_call(name: str, arguments: str) -> str:
    """`bash: pytest -q` rather than a JSON blob; falls back to the raw text."""
    try:
        return _describe(name, arguments)
    except (ValueError, RecursionError):  # arguments are untrusted model output
        return f"{name} {_cut(arguments, 120)}"


def _describe(name: str, arguments: str) -> str:
    args = json.loads(arguments) if arguments.strip() else {}
    if not isinstance(args, dict):
        return f"{name} {_cut(arguments, 120)}"
    main = args.get("command") or args.get("path") or args.get("pattern") or args.get("description")
    if isinstance(main, str) and main:
        rest = {k: v for k, v in args.items() if v is not None and v is not main}
        extra = "  " + " ".join(f"{k}={_short(v)}" for k, v in rest.items()) if rest else ""
        return f"{name}: {_cut(main, 120)}{extra}"
    return f"{name} " + " ".join(f"{k}={_short(v)}" for k, v in args.items())


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return _cut(text.replace("\n", "⏎"), 40)


def _cut(text: str, width: int) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"

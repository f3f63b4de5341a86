"""The agent loop: call the model, run the tools it asks for, repeat until it stops.

`Agent.run(task)` handles one user request and returns a `RunResult`; the
conversation lives on across runs (interactive sessions call `run` again). Limits
on turns, tokens and wall time end a run with one last tool-less call asking for a
summary. Every tool call gets exactly one result, whatever happens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from tether.context.compact import SUMMARY_REQUEST
from tether.errors import ProviderError, ToolFormatError
from tether.loop_guard import LoopGuard
from tether.memory.sessions import Transcript
from tether.messages import (
    FinishReason,
    Message,
    StopReason,
    ToolCall,
    ToolResult,
    Usage,
    scrub_message,
)
from tether.models.base import Model, ModelRequest, ModelResponse
from tether.observe.accounting import ContextStats
from tether.observe.events import (
    AssistantMessage,
    Event,
    EventBus,
    LimitReached,
    LoopWarning,
    Notice,
    RetryScheduled,
    RunFinished,
    ToolFinished,
    ToolStarted,
    TurnStarted,
    TurnUsage,
    UserMessage,
)
from tether.run_limits import Limits, RunResult, limit_hit, remaining
from tether.tools.dispatch import Dispatcher, Interrupted, batches, run_together

if TYPE_CHECKING:
    from tether.context.manager import ContextManager

__all__ = ["SUMMARY_GRACE_S", "Agent", "Limits", "RunResult"]  # the last two re-exported

SUMMARY_GRACE_S = 30.0  # time the closing summary may take after the time limit


class Agent:
    """Owns the conversation of one session and drives its turns."""

    def __init__(
        self,
        *,
        model: Model,
        dispatcher: Dispatcher,
        system_prompt: str,
        bus: EventBus,
        transcript: Transcript,
        limits: Limits = Limits(),  # noqa: B008 -- frozen, so sharing is safe
        context: ContextManager | None = None,
        reminder: Callable[[], str | None] | None = None,
        stop: threading.Event | None = None,
        parallel: int = 4,
    ) -> None:
        """`context` keeps requests inside the model's window (None: send everything).
        `reminder` is asked after each turn's tools for a note to append (todos).
        `stop` ends the run at the next turn (a subagent whose task was abandoned);
        `parallel` bounds how many `task` calls of one turn run at once."""
        self.reminder = reminder
        self._stop = stop
        self._parallel = max(1, parallel)
        self._usage_lock = threading.Lock()
        self._run_usage = Usage()  # the current run's, for budget()
        self.model = model
        self.context = context
        self._side_usage = Usage()  # spent on handoff summaries, counted into the run
        self.dispatcher = dispatcher
        self.system_prompt = system_prompt
        self.bus = bus
        self.transcript = transcript
        self.limits = limits
        self.messages: list[Message] = []
        self.usage = Usage()
        self._tools = dispatcher.registry.specs()
        self._loop_guard = LoopGuard(limits.loop_guard)
        self._next_size: int | None = None  # the count fit_context made for the next request
        self._deadline: float | None = None
        self._stats = ContextStats()
        self._calls = 0  # model responses in this run

    @property
    def session_id(self) -> str:
        return self.transcript.session_id

    def run(self, task: str) -> RunResult:
        """Work on `task` until the model answers without tool calls or a limit hits."""
        start, turns, usage = time.monotonic(), 0, Usage()
        timeout = self.limits.timeout
        self._deadline = None if timeout is None else start + timeout
        window = None if self.context is None else self.context.limits.window
        self._stats, self._calls = ContextStats(window), 0
        self.bus.emit(UserMessage(task))
        self._append(Message.user(task))
        limit: tuple[StopReason, str] | None = None
        try:
            while True:
                if self._stop is not None and self._stop.is_set():
                    why = "stopped: the task was abandoned (its time ran out, or Ctrl-C)"
                    return self._finish(StopReason.INTERRUPTED, "", turns, usage, start, why)
                self._run_usage = usage
                limit = limit_hit(self.limits, turns, usage, start)
                if limit is not None:
                    break
                turns += 1
                self.bus.emit(TurnStarted(turns))
                self.fit_context()
                response = self._call_model(deadline=self._deadline)
                usage += response.usage + self._take_side_usage()
                self._run_usage = usage  # what a subagent started now may still spend
                if not response.message.tool_calls:
                    self._warn_if_cut(response.finish_reason)
                    return self._finish(
                        StopReason.COMPLETED, response.message.content, turns, usage, start
                    )
                self._execute_all(response.message.tool_calls)
                usage += self._take_side_usage()  # subagents' spend counts for the limits now
                note = self.reminder() if self.reminder is not None else None
                if note:  # at the tail, never in the system prompt (the prefix stays put)
                    self._append(Message.user(note), reminder=True)
                self.transcript.sync()
        except ProviderError as exc:
            if isinstance(exc, ToolFormatError) and isinstance(exc.usage, Usage):
                self.add_usage(exc.usage)  # the unreadable replies were paid for
                usage += self._take_side_usage()
            if self._deadline is None or time.monotonic() < self._deadline:
                bad_format = isinstance(exc, ToolFormatError)
                why = StopReason.TOOL_FORMAT if bad_format else StopReason.PROVIDER_ERROR
                return self._finish(why, "", turns, usage, start, str(exc))
            limit = (StopReason.TIMEOUT, f"the time limit ({timeout:g} s) was reached")
        except (KeyboardInterrupt, Interrupted) as exc:
            if isinstance(exc, Interrupted):
                self._append(Message.tool(exc.result))
            self._close_dangling("Not run: the user interrupted the step.")
            return self._finish(StopReason.INTERRUPTED, "", turns, usage, start)
        reason, detail = limit
        self.bus.emit(LimitReached(reason, detail))
        text, extra = self._summarize(detail)
        return self._finish(reason, text, turns, usage + extra + self._take_side_usage(), start)

    def fit_context(self, *, force: bool = False) -> str | None:
        """Shrink the context if it must (or if `force`: /compact); what was done, if any."""
        if self.context is None or not self.messages:
            return None
        if force:
            self._deadline = None  # by hand, between runs: the last run's clock is over
            try:
                return self._fit(force=True)
            finally:
                self._side_usage = Usage()  # in the session's total, not the next run's
        return self._fit(force=False)

    def _fit(self, *, force: bool) -> str | None:
        if self.context is None:
            return None
        try:
            fitted = self.context.fit(self.messages, self._handoff_summary, force=force)
        except Exception as exc:  # a fault of ours must not end the run: send as it is
            self.bus.emit(Notice("warning", f"Context management failed ({exc!r}); continuing."))
            return None
        self._next_size = fitted.after
        if fitted.action == "none" or fitted.entry is None:
            return None
        self.messages = fitted.messages
        self._stats = self._stats.fitted(fitted.action)
        self.transcript.append(fitted.entry)
        self.transcript.sync()
        what = {"stub": "old tool output dropped", "compact": "compacted"}.get(
            fitted.action, "compaction failed; old tool output dropped"
        )
        text = f"Context {what}: about {fitted.before:,} -> {fitted.after:,} tokens."
        self.bus.emit(Notice("warning" if fitted.note else "info", fitted.note or text))
        return fitted.note or text

    def _handoff_summary(self, messages: list[Message]) -> str:
        """One tool-less call over the same prefix (a cache hit) for the summary."""
        request = ModelRequest(
            system=self.system_prompt,
            messages=(*messages, Message.user(SUMMARY_REQUEST)),
            tools=self._tools,
            tool_choice="none",
            deadline=self._deadline,
        )
        response = self.model.complete(request, _quiet(self.bus.emit))
        self.add_usage(response.usage)
        reply = scrub_message(response.message)
        summary = reply.content.strip()
        if not summary or reply.tool_calls:  # "let me check first" is no handoff summary
            raise ProviderError("the model did not write a summary (empty, or it called tools)")
        return summary

    def _take_side_usage(self) -> Usage:
        with self._usage_lock:  # a subagent abandoned to its thread may still add
            taken, self._side_usage = self._side_usage, Usage()
        return taken

    def _call_model(
        self, *, tool_choice: str = "auto", deadline: float | None = None
    ) -> ModelResponse:
        # Before sending, to compare with the report: fit_context has just counted it.
        estimate, self._next_size = self._next_size or self._context_size(), None
        request = ModelRequest(
            system=self.system_prompt,
            messages=tuple(self.messages),
            tools=self._tools,
            tool_choice="none" if tool_choice == "none" else "auto",
            deadline=deadline,
        )
        response = self.model.complete(request, self.bus.emit)
        u = response.usage
        if self.context is not None:
            # No count from the provider: the estimate stands in, so the next count only
            # estimates what is added (not the whole history again).
            counted = u.input_tokens or estimate or 0
            self.context.report(len(request.messages) + 1, counted, response.message)
        message = scrub_message(response.message)
        if message is not response.message:
            response = replace(response, message=message)
        with self._usage_lock:
            self.usage += u
        self.add_usage(response.side_usage)  # in the run's total, not the context's size
        price = self.limits.price
        paid = u + response.side_usage
        cost, total = (price(paid), price(self.usage)) if price is not None else (None, None)
        extra: dict[str, object] = {} if estimate is None else {"estimated_input_tokens": estimate}
        if cost is not None:
            extra["cost_usd"] = round(cost, 6)
        self._append(message, usage=u.to_dict(), **extra, finish_reason=str(response.finish_reason))
        self.bus.emit(AssistantMessage(message, u, response.finish_reason))
        self._calls += 1
        self._stats = replace(self._stats, last_request_tokens=u.input_tokens or estimate or 0)
        size, window = self._context_size(), self._stats.window
        self.bus.emit(TurnUsage(self._calls, u, estimate, size, window, self.usage, cost, total))
        return response

    def _context_size(self) -> int | None:
        """The manager's count of the next request (None without one). Only for show
        and comparison here, so a failure costs the number, not the run."""
        if self.context is None:
            return None
        try:
            return self.context.size(self.messages)
        except Exception:
            return None

    def budget(self) -> tuple[int | None, float | None, float | None]:
        """What is left of the run's tokens, cost (USD) and time (s), for a subagent."""
        return remaining(self.limits, self._run_usage + self._side_usage, self._deadline)

    def add_usage(self, usage: Usage) -> None:
        """Usage spent on the session's behalf elsewhere (a subagent), from any thread."""
        with self._usage_lock:
            self._side_usage += usage
            self.usage += usage

    def _execute_all(self, calls: tuple[ToolCall, ...]) -> None:
        """Each call in order, except that a run of `task` calls goes out at once."""
        for batch in batches(calls):
            if len(batch) > 1:
                self._execute_together(batch)
            else:
                self._execute(batch[0])

    def _execute_together(self, calls: tuple[ToolCall, ...]) -> None:
        """Run `calls` on threads; Ctrl-C stops them all (each still gets its result)."""
        for call in calls:
            self.bus.emit(ToolStarted(call))
        began = time.monotonic()
        remaining = None if self._deadline is None else max(0.0, self._deadline - began)
        results, interrupted = run_together(self.dispatcher, calls, remaining, self._parallel)
        duration = time.monotonic() - began
        for call, result in zip(calls, results, strict=True):
            self._append(Message.tool(result), duration_s=round(duration, 6))
            self.bus.emit(ToolFinished(call, result, duration))
        if interrupted:
            raise KeyboardInterrupt

    def _execute(self, call: ToolCall) -> None:
        """Run one call and append its result (with how long it took)."""
        self.bus.emit(ToolStarted(call))
        began = time.monotonic()
        remaining = None if self._deadline is None else max(0.0, self._deadline - began)
        try:
            result = self.dispatcher.execute(call, timeout=remaining)
        except Interrupted as exc:
            self.bus.emit(ToolFinished(call, exc.result, time.monotonic() - began))
            raise
        result = self._guard_loops(call, result)
        duration = time.monotonic() - began
        self._append(Message.tool(result), duration_s=round(duration, 6))
        self.bus.emit(ToolFinished(call, result, duration))

    def _warn_if_cut(self, finish: FinishReason) -> None:
        """A final answer that did not end by itself is shown, but not silently."""
        if finish is FinishReason.LENGTH:
            self.bus.emit(Notice("warning", "The answer was cut off at the model's output limit."))
        elif finish is FinishReason.CONTENT_FILTER:
            self.bus.emit(Notice("warning", "The provider's content filter stopped the answer."))

    def _guard_loops(self, call: ToolCall, result: ToolResult) -> ToolResult:
        noted = self._loop_guard.check(call, result)
        if noted is None:
            return result
        self.bus.emit(LoopWarning(call, self._loop_guard.repeats))
        return noted

    def _summarize(self, detail: str) -> tuple[str, Usage]:
        """One last call, tools switched off, for a report the user can act on."""
        self.fit_context()  # the closing request must fit the window like any other
        self._append(
            Message.user(
                f"[tether] The run is stopping because {detail}. Do not call any tools. "
                "Reply with a short summary: what you did, what remains to be done, and "
                "anything the user should check."
            )
        )
        self._next_size = None  # the count fit_context made does not hold this note
        deadline = None
        if self._deadline is not None:
            deadline = max(self._deadline, time.monotonic() + SUMMARY_GRACE_S)
        try:
            response = self._call_model(tool_choice="none", deadline=deadline)
        except (ProviderError, KeyboardInterrupt):
            return "", Usage()
        self._close_dangling("Not run: the run had stopped at a limit.")
        return response.message.content, response.usage

    def _close_dangling(self, text: str) -> None:
        """Give every tool call of the last assistant message a result (invariant 2).

        Results follow their calls in order, so the calls still open are the ones past
        the number of results; matching by id would fail when a server reuses ids.
        """
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == "assistant":
                calls = self.messages[index].tool_calls
                done = sum(1 for m in self.messages[index + 1 :] if m.role == "tool")
                for call in calls[done:]:
                    self._append(Message.tool(ToolResult(call.id, call.name, text, True)))
                return

    def _append(self, message: Message, **extra: object) -> None:
        message = scrub_message(message)
        self.messages.append(message)
        self.transcript.message(message, **extra)

    def _finish(
        self,
        reason: StopReason,
        text: str,
        turns: int,
        usage: Usage,
        start: float,
        error: str | None = None,
    ) -> RunResult:
        duration = time.monotonic() - start
        cost = self.limits.price(usage) if self.limits.price is not None else None
        result = RunResult(
            self.session_id, reason, text, turns, usage, duration, error, self._stats, cost
        )
        self.transcript.append(
            {
                "type": "run_end",
                "stop_reason": str(reason),
                "turns": turns,
                "usage": usage.to_dict(),
                "cost_usd": cost,
                "duration_s": round(result.duration_s, 3),
                "error": error,
                "context": self._stats.to_dict(),
            }
        )
        self.transcript.sync()
        self.bus.emit(
            RunFinished(self.session_id, reason, text, turns, usage, duration, error, self.usage)
        )
        return result


def _quiet(emit: Callable[[Event], None]) -> Callable[[Event], None]:
    """The summary call's stream is not the conversation: only retries are shown."""

    def forward(event: Event) -> None:
        if isinstance(event, RetryScheduled):
            emit(event)

    return forward

"""The defensive execute: whatever the model sends, a readable tool result comes back.

Model output is untrusted input. Broken JSON, an unknown tool, missing, extra or
mistyped arguments, a tool that raises and a tool that hangs all become a result
the model can act on; none escapes as an exception. The one thing that does escape
is the user's Ctrl-C, as `Interrupted`, carrying the result for the call it cut.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tether.context.clamp import spill
from tether.errors import ToolError
from tether.messages import ToolCall, ToolResult
from tether.tools.registry import Registry, Tool, ToolContext

if TYPE_CHECKING:
    from concurrent.futures import Future

    from tether.policy.relay import ApprovalRelay

__all__ = ["Around", "Dispatcher", "Interrupted"]

# Wraps each permitted run of a tool (checkpoints): (call, tool name, bound arguments).
Around = Callable[[ToolCall, str, dict[str, Any]], AbstractContextManager[None]]

_SLACK_S = 1.0  # lets a tool that keeps its own time (bash) report its own timeout
_GRACE_S = 3.0  # how long a cancelled tool gets to clean up (kill its processes)


class Interrupted(KeyboardInterrupt):
    """The user pressed Ctrl-C while a tool ran; `result` closes that call.

    A KeyboardInterrupt, so that no `except Exception` on the way up can swallow it.
    """

    def __init__(self, result: ToolResult) -> None:
        super().__init__("interrupted by the user")
        self.result = result


@dataclass(slots=True)
class _Outcome:
    text: str = ""
    error: str | None = None
    # An Event rather than Thread.join: in CPython 3.11 a join interrupted by Ctrl-C
    # marks the thread as stopped while it still runs, so later joins return at once.
    done: threading.Event = field(default_factory=threading.Event)


class Dispatcher:
    """Runs tool calls from the model against a registry, never raising on bad input."""

    __slots__ = (
        "_around",
        "_context",
        "_gate",
        "_on_internal_error",
        "_registry",
        "_relay",
        "_stop",
        "_timeout",
    )

    def __init__(
        self,
        registry: Registry,
        context: ToolContext,
        *,
        timeout: float = 600.0,
        on_internal_error: Callable[[str], None] | None = None,
        gate: Callable[[str, dict[str, Any]], str | None] | None = None,
        around: Around | None = None,
        stop: threading.Event | None = None,
        relay: ApprovalRelay | None = None,
    ) -> None:
        """`gate(tool, arguments)` runs before each valid call: None lets it run, a
        string refuses it (the string is what the model reads). `around` wraps each
        run the gate let through. `stop`, once set, cancels the running call as Ctrl-C
        would (a subagent's calls stop when its task is abandoned). `relay` carries
        approval questions from the threads a call starts (subagents) to this thread,
        which asks them while it waits."""
        self._stop = stop
        self._relay = relay
        self._gate = gate
        self._around = around
        self._registry = registry
        self._context = context
        self._timeout = timeout
        self._on_internal_error = on_internal_error

    @property
    def registry(self) -> Registry:
        return self._registry

    @property
    def around(self) -> Around | None:
        return self._around

    @property
    def relay(self) -> ApprovalRelay | None:
        return self._relay

    def execute(
        self,
        call: ToolCall,
        *,
        timeout: float | None = None,
        stop: threading.Event | None = None,
        wrap: bool = True,
    ) -> ToolResult:
        """Run one call; `timeout` (s) caps the run below the dispatcher's own limit;
        `stop` cancels this call too (calls run on other threads, where Ctrl-C is not);
        `wrap=False` leaves out `around` (the caller wraps a batch of calls as one)."""
        try:
            return self._execute(call, timeout, stop, wrap)
        except Exception as exc:  # a bug of ours must still give the call its result
            self._report(f"dispatching {call.name!r} raised", exc)
            return self._error(call, f"the call could not be run ({type(exc).__name__}: {exc}).")

    def _execute(
        self, call: ToolCall, timeout: float | None, stop: threading.Event | None, wrap: bool
    ) -> ToolResult:
        name = call.name if isinstance(call.name, str) else repr(call.name)
        tool = self._registry.get(name)
        if tool is None:
            return self._error(call, self._unknown_tool(name))
        try:
            arguments = _parse_arguments(call.arguments, tool)
            bound = tool.bind(arguments)
        except ToolError as exc:
            return self._error(call, str(exc))
        if self._gate is not None:
            refusal = self._gate(tool.name, bound)
            if refusal is not None:
                return self._error(call, refusal)
        limit = self._timeout if timeout is None else max(0.0, min(timeout, self._timeout))
        stops = tuple(e for e in (self._stop, stop) if e is not None)
        if self._around is None or not wrap:
            return self._run(call, tool, bound, limit, stops)
        with self._around(call, tool.name, bound):
            return self._run(call, tool, bound, limit, stops)

    def _run(
        self,
        call: ToolCall,
        tool: Tool,
        bound: dict[str, Any],
        limit: float,
        stops: tuple[threading.Event, ...] = (),
    ) -> ToolResult:
        ctx = replace(self._context, cancel=threading.Event())
        if limit < ctx.bash_timeout:
            ctx = replace(ctx, bash_timeout=max(limit, 0.001), max_timeout=max(limit, 0.001))
        outcome = _Outcome()

        def work() -> None:
            try:
                outcome.text = tool.fn(ctx, **bound)
                if not isinstance(outcome.text, str):
                    outcome.error = f"tool {tool.name!r} returned {type(outcome.text).__name__}"
                    outcome.text = ""
            except ToolError as exc:
                outcome.error = str(exc)
            except Exception as exc:
                self._report(f"tool {tool.name!r} raised", exc)
                outcome.error = (
                    f"tool {tool.name!r} failed unexpectedly ({type(exc).__name__}: {exc}). "
                    "This is a fault in the tool, not in your call; try another way."
                )
            finally:
                outcome.done.set()

        worker = threading.Thread(target=work, name=f"tool-{tool.name}", daemon=True)
        worker.start()
        relay = self._relay
        try:
            with relay.serving() if relay is not None else contextlib.nullcontext():
                serve = relay.serve if relay is not None else None
                stopped = _wait(outcome.done, limit + _SLACK_S, stops, serve)
        except KeyboardInterrupt:
            ctx.cancel.set()
            _wait_through_interrupts(outcome.done, _GRACE_S)
            text = outcome.text if outcome.done.is_set() else ""
            text = spill(
                _finish(text, "Interrupted by the user."),
                ctx.output_limit,
                ctx.overflow_dir,
                tool.name,
            )
            raise Interrupted(ToolResult(call.id, tool.name, text, True)) from None
        if stopped:
            ctx.cancel.set()
            outcome.done.wait(_GRACE_S)
            text = outcome.text if outcome.done.is_set() else ""
            text = _finish(text, "Stopped: the work this call belonged to was abandoned.")
            return ToolResult(
                call.id, tool.name, spill(text, ctx.output_limit, ctx.overflow_dir, tool.name), True
            )
        if not outcome.done.is_set():
            ctx.cancel.set()
            outcome.done.wait(_GRACE_S)
            return self._error(
                call,
                f"tool {tool.name!r} did not finish within {limit:g} s and was abandoned. "
                "Try a smaller or different step.",
            )
        if outcome.error is not None:
            return self._error(call, outcome.error)
        text = spill(outcome.text, ctx.output_limit, ctx.overflow_dir, tool.name)
        return ToolResult(call.id, tool.name, text)

    def _report(self, what: str, exc: BaseException) -> None:
        if self._on_internal_error is not None:
            detail = "".join(traceback.format_exception(exc))
            self._on_internal_error(f"{what}:\n{detail}")

    def _error(self, call: ToolCall, message: str) -> ToolResult:
        name = call.name if isinstance(call.name, str) else "?"
        ctx = self._context
        text = spill(f"Error: {message}", ctx.output_limit, ctx.overflow_dir, name)
        return ToolResult(call_id=call.id, name=name, content=text, is_error=True)

    def _unknown_tool(self, name: str) -> str:
        names = self._registry.names
        shown = name if len(name) <= 60 else name[:60] + "..."
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        return (
            f"there is no tool named {shown!r}.{hint} "
            f"Available tools: {', '.join(names)}. Call one of them by its exact name."
        )


def _wait(
    done: threading.Event,
    seconds: float,
    stops: tuple[threading.Event, ...],
    serve: Callable[[], None] | None = None,
) -> bool:
    """Wait for `done` up to `seconds`, asking relayed questions meanwhile; True if a
    stop came first."""
    if not stops and serve is None:
        done.wait(seconds)
        return False
    until = time.monotonic() + seconds
    while not done.wait(min(0.05, max(0.0, until - time.monotonic()))):
        if serve is not None:
            serve()
        if any(e.is_set() for e in stops):
            return True
        if time.monotonic() >= until:
            return False
    return False


def _wait_through_interrupts(done: threading.Event, grace: float) -> None:
    """Give a cancelled tool its grace to kill what it started, even if Ctrl-C repeats.

    Leaving early would let the process exit with the tool's children still running.
    """
    deadline = time.monotonic() + grace
    while not done.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            done.wait(left)
        except KeyboardInterrupt:
            continue


def _finish(text: str, note: str) -> str:
    return f"{text}\n{note}" if text else note


def _parse_arguments(raw: Any, tool: Tool) -> dict[str, Any]:
    """The call's arguments as a dict; tolerant of empty and double-encoded JSON."""
    if isinstance(raw, dict):
        return raw
    if not isinstance(raw, str):
        raise ToolError(f"the arguments for {tool.name!r} must be a JSON object.")
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
        if isinstance(value, str) and value.strip().startswith("{"):
            value = json.loads(value)
    except (ValueError, RecursionError) as exc:  # ValueError: also huge integers
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)[:120]
        where = f" at character {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        raise ToolError(
            f"the arguments for {tool.name!r} are not valid JSON ({detail}{where}). "
            f"Send one JSON object, for example {_example(tool)}."
        ) from None
    if not isinstance(value, dict):
        raise ToolError(
            f"the arguments for {tool.name!r} must be a JSON object, not "
            f"{type(value).__name__}; for example {_example(tool)}."
        )
    return value


def _example(tool: Tool) -> str:
    sample: dict[str, Any] = {}
    for param in tool.params:
        if param.required:
            schema = param.schema()
            kind = schema.get("type")
            sample[param.name] = {"integer": 1, "number": 1.0, "boolean": True}.get(
                str(kind), "..."
            )
    return json.dumps(sample)


def batches(calls: Sequence[ToolCall]) -> list[tuple[ToolCall, ...]]:
    """The calls in order, grouped: each run of `task` calls together, others alone."""
    groups: list[tuple[ToolCall, ...]] = []
    for call in calls:
        if groups and call.name == "task" and groups[-1][-1].name == "task":
            groups[-1] = (*groups[-1], call)
        else:
            groups.append((call,))
    return groups


def run_together(
    dispatcher: Dispatcher, calls: Sequence[ToolCall], timeout: float | None, workers: int
) -> tuple[list[ToolResult], bool]:
    """Run `task` calls at once on up to `workers` threads: their results in order, and
    whether Ctrl-C came. Ctrl-C reaches only the main thread, so it sets a stop the
    calls watch; each then ends within its grace period and still has its result.
    The batch is one step for `around` (one checkpoint before, one after): steps that
    each held the checkpoint store would run one after another."""
    from concurrent.futures import ThreadPoolExecutor

    stop, interrupted = threading.Event(), False
    wrap = dispatcher.around
    tools = sorted({t for c in calls for t in _asked_tools(c)})
    whole = contextlib.nullcontext() if wrap is None else wrap(calls[0], "task", {"tools": tools})

    def job(call: ToolCall) -> ToolResult:
        if stop.is_set():  # still waiting for a thread when Ctrl-C came: never starts
            return ToolResult(call.id, call.name, "Not run: the user interrupted the step.", True)
        return dispatcher.execute(call, timeout=timeout, stop=stop, wrap=False)

    pool = ThreadPoolExecutor(max(1, min(workers, len(calls))), "tether-together")
    relay = dispatcher.relay
    with whole, relay.serving() if relay is not None else contextlib.nullcontext():
        try:
            futures = [pool.submit(job, c) for c in calls]
            try:
                results = [_served(f, relay) for f in futures]
            except KeyboardInterrupt:
                stop.set()
                interrupted = True
                results = [_settled(f, call) for f, call in zip(futures, calls, strict=True)]
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    return results, interrupted


def _served(future: Future[ToolResult], relay: ApprovalRelay | None) -> ToolResult:
    """The call's result, asking the questions its subagent relays meanwhile."""
    while True:
        try:
            return future.result(timeout=0.05)
        except TimeoutError:
            if relay is not None:
                relay.serve()


def _settled(future: Future[ToolResult], call: ToolCall) -> ToolResult:
    """A stopped call's result, waiting through further Ctrl-C for its grace period."""
    until = time.monotonic() + _GRACE_S + _SLACK_S
    while time.monotonic() < until:
        try:
            return future.result(timeout=max(0.0, until - time.monotonic()))
        except KeyboardInterrupt:
            continue
        except TimeoutError:
            break
    return ToolResult(call.id, call.name, "Stopped: the user interrupted the step.", True)


def _asked_tools(call: ToolCall) -> list[str]:
    """The tools a task call asks for (the read-only default when it names none)."""
    from tether.memory.step_checkpoints import SUBAGENT_DEFAULT_TOOLS

    try:
        tools = json.loads(call.arguments).get("tools")
    except (ValueError, AttributeError):
        tools = None
    if not isinstance(tools, list):
        return list(SUBAGENT_DEFAULT_TOOLS)
    return [str(t) for t in tools]

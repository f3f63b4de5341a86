"""`task`: hand a piece of work to a subagent and get back only its answer.

A subagent is a child `Agent` with a fresh context, its own system prompt, a subset
of the parent's tools (read-only unless the call asks for more; never `task` or
`write_todos`), its own turn limit, and the parent's permission gate and sandbox.
The whole task is one step for checkpoints (taken by the parent, only when the
child may change files), so `tether undo` takes back a subagent's work at once. It
keeps its own transcript, linked from the parent's by a `subagent` entry, so replay
sees everything; its usage joins the parent's totals. At its limit
it is asked once, without tools, for a summary (the loop's ordinary closing call).
Only the final answer comes back, as the tool result: exploration that would flood
the parent's context stays in the child's.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tether.errors import ToolError
from tether.memory.step_checkpoints import SUBAGENT_DEFAULT_TOOLS
from tether.tools.registry import Registry, Tool, ToolContext, tool

if TYPE_CHECKING:
    from tether.context.manager import ContextLimits
    from tether.messages import Usage
    from tether.models.base import Model
    from tether.observe.redact import Redactor

__all__ = ["SubagentRunner", "SubagentSetup", "task_tool"]

NEVER = frozenset({"task", "write_todos"})


@dataclass(frozen=True, slots=True)
class SubagentSetup:
    """What every child of one session shares with it."""

    home: Path
    workspace: Path
    parent_session: str
    model_name: str
    system_prompt: str
    registry: Registry
    new_model: Callable[[], Model]
    gate: Callable[[str, dict[str, Any]], str | None] | None
    redact: Redactor
    max_turns: int
    tool_timeout: float
    context: ContextLimits  # the parent's: a child's context has the same room
    price: Callable[[Usage], float | None] | None
    on_usage: Callable[[Usage], None]
    link: Callable[[dict[str, Any]], None]
    report: Callable[[Any], None]  # the parent's bus: the UI shows what children do
    # What is left of the parent's run: tokens, cost (USD), seconds (None: no limit).
    budget: Callable[[], tuple[int | None, float | None, float | None]] = lambda: (
        None,
        None,
        None,
    )


class SubagentRunner:
    """Runs children one per `task` call; `limit` of them at once across the session.

    `setup` is given once the session has built what children share (its gate and
    checkpoints come after its tool list, of which `task` is part)."""

    def __init__(self, *, limit: int) -> None:
        self.setup: SubagentSetup | None = None
        self._slots = threading.BoundedSemaphore(max(1, limit))
        self._numbers = itertools.count(1)
        self._gate_lock = threading.Lock()  # one approval question at a time

    def run(self, ctx: ToolContext, description: str, prompt: str, tools: list[str] | None) -> str:
        if self.setup is None:
            raise ToolError("subagents are not available in this session")
        used_up = [
            name
            for name, left in zip(("tokens", "cost", "time"), self.setup.budget(), strict=True)
            if left is not None and left <= 0
        ]
        if used_up:
            raise ToolError(f"no subagent started: the run's {used_up[0]} budget is used up")
        chosen = self._tools(self.setup.registry, tools)
        with self._slots:
            return self._run(self.setup, ctx, description, prompt, chosen)

    def _tools(self, registry: Registry, asked: list[str] | None) -> tuple[Tool, ...]:
        known = {n: t for n in registry.names if n not in NEVER and (t := registry.get(n))}
        names = [n for n in SUBAGENT_DEFAULT_TOOLS if n in known] if asked is None else list(asked)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ToolError(
                f"a subagent cannot have {', '.join(map(repr, unknown))}; it may use "
                + ", ".join(sorted(known))
            )
        return tuple(known[n] for n in dict.fromkeys(names))

    def _run(
        self,
        setup: SubagentSetup,
        ctx: ToolContext,
        description: str,
        prompt: str,
        chosen: tuple[Tool, ...],
    ) -> str:
        from tether.agent import Agent, Limits
        from tether.context.manager import ContextManager
        from tether.memory.sessions import Transcript, transcript_path
        from tether.observe.events import EventBus
        from tether.tools.dispatch import Dispatcher

        child_id = f"{setup.parent_session}.task{next(self._numbers)}"
        while transcript_path(setup.home, child_id).exists():  # a resumed session's earlier
            child_id = f"{setup.parent_session}.task{next(self._numbers)}"
        registry = Registry(chosen)
        system = _child_prompt(setup.system_prompt, description)
        transcript = Transcript.create(
            setup.home,
            child_id,
            {
                "session_id": child_id,
                "parent_session": setup.parent_session,
                "description": description,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "model": setup.model_name,
                "workspace": str(setup.workspace),
                "tools": [t.name for t in chosen],
                "system_prompt": system,
            },
            setup.redact,
        )
        try:
            model = setup.new_model()
        except BaseException:
            transcript.close()
            raise
        tokens, cost, seconds = setup.budget()
        child_bus = EventBus()
        child_bus.subscribe(partial(_forward, setup.report, description, ctx.cancel))
        agent = Agent(
            model=model,
            dispatcher=Dispatcher(
                registry,
                ctx,
                timeout=setup.tool_timeout,
                gate=partial(self._gate, ctx.cancel),
                # No checkpoints of its own: the parent's task step is one checkpoint
                stop=ctx.cancel,  # the task abandoned (Ctrl-C, timeout): its call stops too
            ),
            context=ContextManager(setup.context, system=system, tools=registry.specs()),
            system_prompt=system,
            bus=child_bus,
            transcript=transcript,
            limits=Limits(
                max_turns=setup.max_turns,
                max_tokens=tokens,
                max_cost=cost,
                timeout=seconds,
                price=setup.price,
            ),
            stop=ctx.cancel,
        )
        try:
            result = agent.run(prompt)
        finally:
            transcript.close()
            model.close()
            setup.on_usage(agent.usage)
        setup.link(
            {
                "type": "subagent",
                "session_id": child_id,
                "transcript": str(transcript.path),
                "description": description,
                "stop_reason": str(result.stop_reason),
                "turns": result.turns,
                "usage": agent.usage.to_dict(),
            }
        )
        if result.error:
            raise ToolError(f"the subagent ({description}) failed: {result.error}")
        answer = result.result.strip() or "(the subagent gave no answer)"
        if result.stop_reason.is_limit:
            answer = f"[the subagent stopped at a limit: {result.stop_reason}]\n{answer}"
        return answer

    def _gate(self, stop: threading.Event, tool_name: str, arguments: dict[str, Any]) -> str | None:
        """The parent's gate, one question at a time; nothing runs once the task is
        abandoned, whatever answer a question still open at that moment gets."""
        gate = self.setup.gate if self.setup is not None else None
        if gate is None:
            return None
        abandoned = "Not run: the task was abandoned (Ctrl-C or its time ran out)."
        with self._gate_lock:
            if stop.is_set():
                return abandoned
            refusal = gate(tool_name, arguments)
        return abandoned if stop.is_set() else refusal


def _forward(
    report: Callable[[Any], None], description: str, stop: threading.Event, event: Any
) -> None:
    """The child's tool calls, shown to the user through the parent's events (not once
    its task is abandoned: the parent has moved on)."""
    from tether.observe.events import SubagentStep, ToolStarted

    if isinstance(event, ToolStarted) and not stop.is_set():
        report(SubagentStep(description, event.call))


def _child_prompt(parent: str, description: str) -> str:
    return (
        f"{parent}\n\nYou are a subagent: another agent handed you one task "
        f"({description}). Only your final answer goes back to it, so make that answer "
        "complete and self-contained: what you found, with file paths and line numbers, "
        "and anything uncertain. Nobody can answer questions; do not ask any."
    )


def task_tool(runner: SubagentRunner) -> Tool:
    """The task tool; several calls in one turn run at once."""

    @tool
    def task(
        ctx: ToolContext, description: str, prompt: str, tools: list[str] | None = None
    ) -> str:
        """Hand a self-contained piece of work to a subagent; returns only its final answer.

        Use it for exploration that would otherwise fill your context (searching a
        large codebase, reading many files, answering a focused question). The
        subagent starts with no knowledge of this conversation: put everything it
        needs in the prompt. Several task calls in one reply run at the same time.

        Args:
            description: a few words naming the task, shown to the user.
            prompt: the full instructions for the subagent, with what to return.
            tools: tool names the subagent may use (default: read_file, list_files,
                search_files, read_skill; add bash or edit tools only when needed).
        """
        if not description.strip() or not prompt.strip():
            raise ToolError("description and prompt must not be empty")
        return runner.run(ctx, description.strip(), prompt, tools)

    return task

"""A session wires settings into a running agent: model, tools, transcript, events.

The CLI, `tether demo` and library callers all start here, so every front end runs
the same loop with the same persistence. `Session` is a context manager; closing it
syncs the transcript and releases the HTTP client.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from tether import __version__
from tether.agent import Agent, Limits, RunResult
from tether.config import Settings, public_endpoint
from tether.context.manager import ContextLimits, ContextManager
from tether.context.system_prompt import session_prompt
from tether.errors import ConfigError
from tether.memory.instructions import config_home
from tether.memory.sessions import Transcript, new_session_id, read_transcript, record_resume
from tether.memory.step_checkpoints import StepCheckpoints, open_store
from tether.models.base import Model
from tether.models.catalogue import cost_usd, lookup
from tether.models.choose import build_model
from tether.observe.events import (
    Event,
    EventBus,
    Notice,
    PermissionChecked,
    SessionStarted,
    TodosUpdated,
    TurnStarted,
)
from tether.observe.redact import Redactor
from tether.policy.actions import Decision
from tether.policy.gate import Approver, Gate
from tether.policy.relay import ApprovalRelay
from tether.sandbox.base import SandboxPolicy, protected_paths
from tether.sandbox.choose import for_run
from tether.sandbox.environment import tool_environment
from tether.sandbox.workspace import Workspace
from tether.tools.builtin import builtin_tools
from tether.tools.dispatch import Dispatcher
from tether.tools.registry import Registry, ToolContext
from tether.tools.skills import read_skill_tool
from tether.tools.task import SubagentRunner, SubagentSetup, task_tool
from tether.tools.tests import gate_view, run_tests_tool
from tether.tools.todos import TodoList, write_todos_tool

if TYPE_CHECKING:
    from tether.memory.checkpoints import RestoreResult
    from tether.memory.resume import Resumed

__all__ = ["Session"]


class Session:
    """One conversation with one model in one workspace, recorded in one transcript."""

    def __init__(
        self,
        settings: Settings,
        *,
        bus: EventBus | None = None,
        model: Model | None = None,
        environ: Mapping[str, str] | None = None,
        approver: Approver | None = None,
        resume: str | None = None,
        subagent_model: Callable[[], Model] | None = None,
    ) -> None:
        """`approver` answers permission questions; without one (headless), a call
        that needs approval is refused with an explanation the model can read.
        `resume` continues the session with that id from its transcript;
        `subagent_model` makes the model of each subagent (default: like `model`'s)."""
        self.settings = settings
        self.bus = bus or EventBus()
        self.redact = Redactor([settings.api_key])
        self.resumed: Resumed | None = None
        # Decided first: a run that may not start must not leave a transcript behind.
        env = os.environ if environ is None else environ
        prompt = session_prompt(
            settings.workspace,
            config_home=config_home(env),
            max_bytes=settings.instructions_max_bytes,
        )
        system_prompt = prompt.text
        if resume is not None:
            self.transcript, torn = Transcript.reopen(
                settings.home, resume, self.redact, workspace=settings.workspace
            )
            from tether.memory.resume import resume_state

            self.resumed = resumed = resume_state(list(read_transcript(self.transcript.path)))
            system_prompt = str(resumed.header.get("system_prompt") or system_prompt)
        self.todos = TodoList()
        self.subagents = SubagentRunner(limit=settings.subagent_concurrency)
        skills = (read_skill_tool(prompt.skills),) if prompt.skills.skills else ()
        tools = (
            *builtin_tools(),
            run_tests_tool(settings.test_command),
            *skills,
            write_todos_tool(self.todos, self._todos_changed),
        )
        registry = Registry((*tools, task_tool(self.subagents)))
        self.model_info = lookup(settings.model, settings.models)
        limits = ContextLimits(
            window=settings.context_window or self.model_info.context_window,
            soft=settings.context_soft,
            hard=settings.compact_at,
            keep_turns=settings.keep_turns,
        )
        context_manager = ContextManager(limits, system=system_prompt, tools=registry.specs())
        if settings.max_cost is not None and self.model_info.input is None:
            raise ConfigError(
                f"--max-cost needs the prices of {settings.model!r}, which tether does not "
                f'know; give them in config under [models."{settings.model}"] (input, output).'
            )
        problem = context_manager.check()
        if problem is not None:
            raise ConfigError(f"{problem}. Raise --context-window or --compact-at.")
        self.sandbox, sandbox_notices = for_run(
            settings.sandbox,
            settings.home,
            permission_mode=settings.permission_mode,
            skip=settings.skip_sandbox,
        )
        self._tmp = Path(tempfile.mkdtemp(prefix="tether-tmp-"))
        self.model = model or build_model(settings, self.model_info)
        self._notes: list[str] = []
        if resume is not None and self.resumed is not None:
            self.session_id = resume
            record_resume(self.transcript, self.resumed, torn=torn, model=settings.model)
        else:
            self.session_id = new_session_id()
            self.transcript = Transcript.create(
                settings.home,
                self.session_id,
                {
                    "session_id": self.session_id,
                    "tether": __version__,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "python": sys.version.split()[0],
                    "model": settings.model,
                    "endpoint": public_endpoint(settings.base_url),
                    "workspace": str(settings.workspace),
                    "sandbox": self.sandbox.name if self.sandbox is not None else "none",
                    "settings": settings.public(),
                    "system_prompt": system_prompt,
                },
                self.redact,
            )
        overflow = settings.home / "sessions" / self.session_id / "overflow"
        workspace = Workspace(settings.workspace, reserved=(settings.home,))
        if prompt.skills.roots:  # user-level skills: read_file may open their files
            workspace = workspace.with_readable(*prompt.skills.roots)
        writable = tuple(
            (workspace.root / Path(p).expanduser()).resolve() for p in settings.allow_write
        )
        policy = SandboxPolicy(
            workspace=workspace.root,
            tmp=self._tmp,
            writable=writable,
            readonly=protected_paths(workspace.root, state=settings.home, writable=writable),
            network=settings.sandbox_network,
            max_processes=settings.max_processes,
        )
        sandbox = self.sandbox
        context = ToolContext(
            workspace=workspace,
            env=tool_environment(env, secrets=[settings.api_key or ""], pass_env=settings.pass_env),
            sandbox=None if sandbox is None else partial(sandbox.launch, policy=policy),
            bash_timeout=settings.bash_timeout,
            output_limit=settings.output_limit,
            overflow_dir=overflow,
        )
        # Subagents ask on threads; the questions are put to the user on this one.
        relay = None if approver is None else ApprovalRelay(approver)
        # The context's workspace also reads the overflow files: the gate judges with it.
        self.gate = Gate(
            settings.rules,
            settings.permission_mode,
            context.workspace,
            home=Path(env.get("HOME") or Path.home()),
            approver=relay,
            on_decision=self._report_decision,
            test_command=partial(
                gate_view,
                settings.workspace,
                settings.test_command,
                context.env.get("PATH"),
                self.sandbox is not None,
            ),
        )
        self.checkpoints = (
            StepCheckpoints(
                partial(
                    open_store, settings.home, workspace.root, settings.checkpoint_max_file_bytes
                ),
                session=self.session_id,
                transcript=self.transcript,
                warn=lambda text: self.bus.emit(Notice("warning", text)),
                redact=self.redact,
                read_only_command=_read_only_command,
            )
            if settings.checkpoints
            else None
        )
        if self.checkpoints is not None:
            self.bus.subscribe(self._count_turns)
        self.bus.subscribe(self._record_warnings)
        dispatcher = Dispatcher(
            registry,
            context,
            timeout=settings.tool_timeout,
            on_internal_error=lambda text: self.bus.emit(Notice("debug", text)),
            gate=self.gate.check,
            around=None if self.checkpoints is None else self.checkpoints.around,
            relay=relay,
        )
        context_manager.spill = partial(_spill_stale, overflow)
        self.agent = Agent(
            model=self.model,
            dispatcher=dispatcher,
            context=context_manager,
            reminder=self.todos.reminder,
            system_prompt=system_prompt,
            bus=self.bus,
            transcript=self.transcript,
            limits=Limits(
                max_turns=settings.max_turns,
                max_tokens=settings.max_tokens,
                timeout=settings.timeout,
                loop_guard=settings.loop_guard,
                max_cost=settings.max_cost,
                price=partial(cost_usd, self.model_info),
            ),
            parallel=settings.subagent_concurrency,
        )
        self.subagents.setup = SubagentSetup(
            home=settings.home,
            workspace=settings.workspace,
            parent_session=self.session_id,
            model_name=settings.model,
            system_prompt=system_prompt,
            registry=Registry(tools),
            new_model=subagent_model or partial(build_model, settings, self.model_info),
            gate=self.gate.check,
            redact=self.redact,
            max_turns=settings.subagent_max_turns,
            tool_timeout=settings.tool_timeout,
            context=limits,
            price=self.agent.limits.price,
            on_usage=self.agent.add_usage,
            link=self.transcript.append,
            budget=self.agent.budget,
            report=self.bus.emit,
        )
        if self.resumed is not None:
            self.agent.messages = list(self.resumed.messages)
            self.agent.usage = self.resumed.usage
            self.todos.replace(self.resumed.todos)
            if self.checkpoints is not None:
                self.checkpoints.turn = self.resumed.turns
        self.bus.emit(
            SessionStarted(
                self.session_id,
                settings.model,
                str(settings.workspace),
                str(self.transcript.path),
                resumed=self.resumed is not None,
            )
        )
        for text in sandbox_notices:
            self.bus.emit(Notice("warning", text))
        if not self.model_info.known and settings.context_window is None:
            self.bus.emit(
                Notice(
                    "info",
                    f"Model {settings.model!r} is not in tether's catalogue: assuming a "
                    f"{limits.window:,}-token window and unknown prices. Set --context-window, "
                    f'or describe it in config under [models."{settings.model}"].',
                )
            )

    def run(self, task: str) -> RunResult:
        """Work on `task`; notes about what happened between requests (an undo) go first."""
        if self._notes:
            task = "\n".join(self._notes) + "\n\n" + task
            self._notes.clear()
        return self.agent.run(task)

    def compact(self) -> str | None:
        """/compact: a handoff summary now, whatever the size; what was done."""
        return self.agent.fit_context(force=True)

    def undo(self, to: str | None = None, *, force: bool = False) -> RestoreResult | None:
        """Restore checkpoint `to` (default: before the last change); None: nothing to undo.

        Recorded in the transcript, and told to the model with the next request, so
        that it does not build on edits that are gone.
        """
        from tether.memory.checkpoint_git import CheckpointError

        store = self.checkpoints.store() if self.checkpoints is not None else None
        if store is None:
            raise CheckpointError("checkpoints are off for this session")
        target = store.get(to) if to else store.undo_target()
        if target is None:
            return None
        turn = self.checkpoints.turn if self.checkpoints is not None else 0
        result = store.restore(target.id, force=force, session=self.session_id, turn=turn)
        self.transcript.append(
            {
                "type": "undo",
                "target": target.id,
                "before": result.before.id,
                "after": result.after.id,
                "written": list(result.written),
                "deleted": list(result.deleted),
                "overridden": list(result.overridden),
                "kept": list(result.kept),
                "skipped": list(result.skipped),
            }
        )
        self.transcript.sync()
        what = f"{target.tool} {target.summary}".strip()[:200]
        files = [*result.written, *result.deleted]
        shown = ", ".join(files[:20]) + (f" (+{len(files) - 20} more)" if len(files) > 20 else "")
        self._notes.append(
            f"[tether] The user undid changes: the workspace is back at checkpoint {target.id} "
            f"(turn {target.turn}, {what}). Files restored or removed: {shown or 'none'}. "
            + (f"Left as they are: {', '.join(result.kept[:20])}. " if result.kept else "")
            + "Changes made after that point are gone; read files again before editing them."
        )
        return result

    def _todos_changed(self, todos: tuple[dict[str, Any], ...]) -> None:
        """Shown to the user, and on record so that a resumed session has its list."""
        self.transcript.append({"type": "todos", "todos": list(todos)})
        self.bus.emit(TodosUpdated(todos))

    def _record_warnings(self, event: Event) -> None:
        """Warnings (no undo, a weaker sandbox) belong in the record of the session."""
        if isinstance(event, Notice) and event.level in ("warning", "error"):
            self.transcript.append({"type": "notice", "level": event.level, "text": event.text})

    def _count_turns(self, event: Event) -> None:
        """Checkpoints carry the session's turn number (turns counted across requests)."""
        if isinstance(event, TurnStarted) and self.checkpoints is not None:
            self.checkpoints.turn += 1

    def _report_decision(self, tool: str, decision: Decision, ran: bool) -> None:
        parts = tuple((p.text, p.verdict, p.reason) for p in decision.parts)
        event = PermissionChecked(
            tool, decision.verdict, decision.reason, ran, decision.matched_rules, parts
        )
        self.bus.emit(event)

    def close(self) -> None:
        self.transcript.close()
        self.model.close()
        if self.sandbox is not None:
            self.sandbox.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _spill_stale(directory: Path, text: str, tool: str) -> Path | None:
    """Stubbed output that was never spilled gets its own overflow file (nothing lost)."""
    from tether.context.overflow import write_text

    try:
        return write_text(directory, tool, text)
    except OSError:
        return None


def _read_only_command(command: str) -> bool:
    from tether.policy.knowledge import is_read_only_script  # the parser loads on first use

    return is_read_only_script(command)

"""The gate between a validated tool call and its run: decide, maybe ask, then run or refuse.

`decide` is pure; the gate does the rest: it turns a tool call into an action, asks
the user when the verdict is "ask" and someone can answer (interactive), remembers
"always" answers as rules for the session or the project, and otherwise writes the
refusal the model reads — saying why and how a user would allow it. An
`apply_patch` call is judged by every file its patch touches (`patchcheck.py`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from tether.config import PermissionMode
from tether.errors import ToolError
from tether.policy.actions import (
    Action,
    Decision,
    Part,
    ReadAction,
    ShellAction,
    ToolAction,
    WriteAction,
)
from tether.policy.rules import RuleSet, RuleSpec, compile_rules
from tether.sandbox.workspace import Workspace

__all__ = ["Approval", "ApprovalRequest", "Approver", "Gate", "generalise", "proposals"]

_READS = frozenset({"read_file", "list_files", "search_files"})
_SUBCOMMANDS = frozenset(
    {
        "apt", "brew", "bun", "cargo", "conda", "deno", "docker", "dotnet", "gh", "git", "go",
        "gradle", "helm", "kubectl", "mvn", "npm", "pip", "pip3", "pnpm", "poetry", "rustup",
        "systemctl", "terraform", "uv", "yarn",
    }
)  # fmt: skip
_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--prefix", "--cwd", "-w"})
_RUNNERS = frozenset({("npm", "run"), ("pnpm", "run"), ("yarn", "run"), ("bun", "run")})


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the user is asked about: the call, the decision, rules that would cover it."""

    tool: str
    subject: str
    decision: Decision
    proposals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Approval:
    answer: Literal["yes", "no", "always"]
    scope: Literal["session", "project"] = "session"


class Approver(Protocol):
    def __call__(self, request: ApprovalRequest) -> Approval: ...


class Gate:
    """Checks each call against the rules in force; None means "run it"."""

    def __init__(
        self,
        rules: RuleSet,
        mode: PermissionMode,
        workspace: Workspace,
        *,
        home: Path,
        approver: Approver | None = None,
        on_decision: Callable[[str, Decision, bool], None] | None = None,
        test_command: Callable[[Mapping[str, Any]], tuple[str, bool]] | None = None,
    ) -> None:
        """`test_command` gives the command a `run_tests` call would run, and whether it
        is exactly the one the user configured (which then needs no approval)."""
        self.rules = rules
        self.mode = mode
        self._workspace = workspace
        self._home = home
        self._approver = approver
        self._on_decision = on_decision
        self._test_command = test_command

    def check(self, tool: str, arguments: Mapping[str, Any]) -> str | None:
        """None to run the call; otherwise the refusal, written for the model."""
        from tether.policy.decide import decide  # the parser loads on the first call, not at start

        if tool == "apply_patch":
            judged = self._patch(arguments)
            if judged is None:
                return None  # no patch at all: the tool refuses it, and writes nothing
            subject, decision = judged
        else:
            action = self.action(tool, arguments)
            if action is None:
                return None  # the tool itself refuses what cannot be placed
            if isinstance(action, ReadAction) and self._workspace.readable_root(action.path):
                decision = _own_output(tool, action.path)
            else:
                decision = decide(
                    action, self.rules, self.mode, workspace=self._workspace.root, home=self._home
                )
            if isinstance(action, WriteAction) and action.kind == "edit":
                from tether.policy.patchcheck import read_denials

                denied = read_denials(
                    action.path, tool, self.rules, self.mode, self._workspace.root, self._home
                )
                if denied:
                    decision = Decision.of([*decision.parts, *denied])
            subject = _subject(action)
        refusal = self._outcome(tool, subject, decision)
        if self._on_decision is not None:
            self._on_decision(tool, decision, refusal is None)
        return refusal

    def action(self, tool: str, arguments: Mapping[str, Any]) -> Action | None:
        """What a tool call would do, in the policy's terms (one action; `apply_patch`
        touches many paths and is judged by `check` through `judge_patch` instead)."""
        try:
            if tool == "bash":
                return ShellAction(str(arguments.get("command", "")))
            if tool in _READS:
                where = self._workspace.resolve(arguments.get("path") or ".", reading=True)
                return ReadAction(where, tool)
            if tool == "write_file":
                return WriteAction(self._workspace.resolve(arguments["path"]), tool, "write")
            if tool == "str_replace":
                return WriteAction(self._workspace.resolve(arguments["path"]), tool, "edit")
            if tool == "run_tests" and self._test_command is not None:
                command, configured = self._test_command(arguments)
                if configured and self.mode != "plan":  # plan mode changes nothing
                    return ToolAction(tool)
                return ShellAction(command)
        except (ToolError, KeyError, TypeError):
            return None
        return ToolAction(tool)

    def _patch(self, arguments: Mapping[str, Any]) -> tuple[str, Decision] | None:
        """Every file the patch touches, judged as one decision; None if it is no patch."""
        from tether.patch import PatchError
        from tether.policy.patchcheck import judge_patch

        text = arguments.get("patch")
        if not isinstance(text, str):
            return None
        try:
            judged = judge_patch(text, self._workspace, self.rules, self.mode, home=self._home)
        except (PatchError, ValueError):
            return None
        return judged.subject, judged.decision

    def _outcome(self, tool: str, subject: str, decision: Decision) -> str | None:
        if decision.verdict == "allow":
            return None
        if decision.verdict == "deny":
            return f"Not allowed: {decision.reason}. The call `{subject}` was not run."
        wanted = proposals(decision, self._workspace.root)
        if self._approver is None:
            how = " or ".join(f"--allow {shlex.quote(p)}" for p in wanted) or "an allow rule"
            return (
                f"Not run: `{subject}` needs the user's approval ({decision.reason}), and "
                "this run cannot ask (it is headless). A user can allow it with "
                f"{how}, or the same rule in .tether/config.toml under [permissions] allow. "
                "Meanwhile, find a way that stays within what is allowed."
            )
        approval = self._approver(ApprovalRequest(tool, subject, decision, wanted))
        if approval.answer == "no":
            return f"The user declined `{subject}`. Ask them, or try something else."
        if approval.answer == "always" and wanted:
            self._remember(wanted, approval.scope)
        return None

    def _remember(self, texts: tuple[str, ...], scope: str) -> None:
        origin = "approved this session"
        if scope == "project":
            path = self._workspace.root / ".tether" / "config.toml"
            _append_rules(path, texts)
            origin = f"approved, saved in {path}"
        specs = [RuleSpec(text, "allow", origin) for text in texts]
        self.rules = self.rules.with_rules(compile_rules(specs, builtin=False).rules)


def proposals(decision: Decision, workspace: Path) -> tuple[str, ...]:
    """Rules that would allow the parts not yet allowed: general, never verbatim."""
    found: list[str] = []
    for part in decision.parts:
        if part.verdict != "ask":
            continue
        rule = _proposal(part, workspace)
        if rule is not None and rule not in found:
            found.append(rule)
    return tuple(found)


def _proposal(part: Part, workspace: Path) -> str | None:
    if part.argv:
        return f"Bash({generalise(part.argv)}:*)"
    if part.path is not None and part.access is not None:
        kind = "Read" if part.access == "Read" else "Edit"
        folder = Path(part.path).parent
        if folder == workspace or workspace in folder.parents:
            rel = folder.relative_to(workspace).as_posix()
            return f"{kind}({rel}/**)" if rel != "." else f"{kind}(**)"
        return f"{kind}({folder.as_posix().rstrip('/')}/**)"
    return None


def generalise(argv: tuple[str, ...]) -> str:
    """The program plus its subcommand (`npm run test`, `git commit`, `rm`)."""
    words = [argv[0]]
    rest: list[str] = []
    skip = False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg in _VALUE_OPTIONS:
            skip = True  # `git -C dir push`: the subcommand is push, not dir
        elif not arg.startswith("-"):
            rest.append(arg)
    if argv[0] in _SUBCOMMANDS and rest:
        words.append(rest[0])
        if (argv[0], rest[0]) in _RUNNERS and len(rest) > 1:
            words.append(rest[1])
    elif argv[0].startswith("python") and len(argv) > 2 and argv[1] == "-m":
        words += ["-m", argv[2]]
    return " ".join(shlex.quote(w) for w in words)


def _own_output(tool: str, path: Path) -> Decision:
    """Reading tether's own overflow files is always allowed, in every mode: they hold
    what the agent's own calls already printed, cut only to fit the context."""
    reason = "tether's own overflow file"
    return Decision.of([Part(f"{tool} {path}", "allow", reason, path=str(path), access="Read")])


def _subject(action: Action) -> str:
    if isinstance(action, ShellAction):
        return action.command.strip()
    if isinstance(action, ReadAction | WriteAction):
        return f"{action.tool} {action.path}"
    return action.tool


def _append_rules(path: Path, texts: tuple[str, ...]) -> None:
    """Add `[[permissions.rules]]` tables at the end: valid TOML whatever came before."""
    path.parent.mkdir(parents=True, exist_ok=True)
    block = "".join(
        f'\n[[permissions.rules]]\nrule = {json.dumps(t)}\nverdict = "allow"\n' for t in texts
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write(block)

"""The permission decision: allow, ask or deny, with the reason and the rules behind it.

Pure: no I/O. A shell line is judged command by command (`knowledge.judge_script`),
and each command item by item — the command's own words, every path it reads, every
path it writes. For each item, the matching rules decide if any match (the strictest
wins); otherwise the defaults do: read-only work and reads inside the workspace are
allowed, other commands and writes ask, reads outside the workspace ask. The mode
then adjusts the defaults. The whole action gets the strictest verdict of its parts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from tether.config import PermissionMode
from tether.policy.actions import (
    Action,
    Decision,
    Part,
    ReadAction,
    ShellAction,
    ToolAction,
    Verdict,
    WriteAction,
    strictest,
)
from tether.policy.knowledge import Judgement, judge_script
from tether.policy.rules import Rule, RuleSet

__all__ = ["decide", "is_protected"]

_CHANGES_DIR = frozenset({"cd", "pushd", "popd"})


@dataclass(frozen=True, slots=True)
class _Where:
    """The setting of a decision. `cwds` are the directories a relative path may be
    relative to: the workspace, and wherever an earlier `cd` in the line may lead."""

    workspace: Path
    home: Path
    mode: PermissionMode
    cwds: tuple[Path, ...] = ()


def decide(
    action: Action, rules: RuleSet, mode: PermissionMode, *, workspace: Path, home: Path
) -> Decision:
    """Judge one action. Deterministic: the same inputs always give the same decision."""
    root = Path(os.path.normpath(workspace))
    where = _Where(root, Path(os.path.normpath(home)), mode, (root,))
    if isinstance(action, ShellAction):
        parts = _shell(action.command, rules, where)
    elif isinstance(action, ReadAction):
        parts = [_path_item(action.path, "Read", rules, where, tool=action.tool)]
    elif isinstance(action, WriteAction):
        kind = "Write" if action.kind == "write" else "Edit"
        parts = [_path_item(action.path, kind, rules, where, tool=action.tool)]
    else:
        parts = [_tool_item(action, rules)]
    return Decision.of(parts)


def is_protected(path: Path, workspace: Path) -> bool:
    """Inside the workspace's `.tether/`, or any `.git/` in it (a nested repository's
    config or hooks run programs just the same)."""
    try:
        rel = path.relative_to(workspace)
    except ValueError:
        return False
    return bool(rel.parts) and (rel.parts[0] == ".tether" or ".git" in rel.parts)


def _shell(command: str, rules: RuleSet, where: _Where) -> list[Part]:
    judgements, problems = judge_script(command)
    parts = [
        _adjust(Part(command.strip(), "ask", p), where, read_only=False, floor=True)
        for p in problems
    ]
    for judgement in judgements:
        parts.extend(_command_items(judgement, rules, where))
        where = _after_cd(judgement, where)
    if not judgements and not problems:
        parts.append(Part(command.strip(), "allow", "an empty command does nothing"))
    return parts


def _command_items(j: Judgement, rules: RuleSet, where: _Where) -> list[Part]:
    text = j.source or " ".join(j.argv)
    matched = [r for r in rules.rules if r.matches_command(j.argv)]
    if j.ask is not None:
        default: Verdict = "ask"
        reason = j.ask
    elif j.effects_known:
        default, reason = "allow", j.reason or "read-only"
    else:
        default, reason = "ask", j.reason or "not known to be read-only"
    items = [
        _adjust(
            replace(_ruled(text, matched, default, reason), argv=j.argv),
            where,
            read_only=j.effects_known and j.ask is None,
            floor=j.ask is not None,
        )
    ]
    if j.argv and j.argv[0] in _CHANGES_DIR:
        target = _cd_target(j.argv)
        places = [_place(target, where, cwd) for cwd in where.cwds]
        if any(p is None or not _inside(p, where.workspace) for p in places):
            why = f"changes to {target}, outside the workspace: later paths would point there"
            items.append(_adjust(Part(text, "ask", why), where, read_only=True, floor=False))
    for raw in j.reads:
        items.append(_path_in_command(text, raw, "Read", rules, where))
    for raw in j.writes:
        items.append(_path_in_command(text, raw, "Write", rules, where))
    return items


def _path_in_command(text: str, raw: str, kind: str, rules: RuleSet, where: _Where) -> Part:
    """A path argument, judged from every directory the line may be in: the strictest."""
    verb = "reads" if kind == "Read" else "writes"
    parts = []
    for cwd in where.cwds:
        place = _place(raw, where, cwd)
        if place is None:
            part = Part(text, "ask", f"{verb} {raw}, a path known only when it runs")
            return _adjust(part, where, read_only=kind == "Read", floor=False)
        shown = f"{text}  ({verb} {raw})"
        parts.append(_path_item(place, kind, rules, where, tool=None, shown=shown))
    verdict = strictest([p.verdict for p in parts])
    return next(p for p in parts if p.verdict == verdict)


def _cd_target(argv: tuple[str, ...]) -> str:
    """Where `cd`/`pushd`/`popd` goes; "-" stands for "only the shell knows"."""
    args = [a for a in argv[1:] if a == "-" or not a.startswith("-")]
    if argv[0] == "popd" or (argv[0] == "pushd" and not args):
        return "-"
    return args[0] if args else "~"


def _after_cd(j: Judgement, where: _Where) -> _Where:
    """Where relative paths may point after this command: every `cd` adds places."""
    if not j.argv or j.argv[0] not in _CHANGES_DIR:
        return where
    target = _cd_target(j.argv)
    added = [_place(target, where, cwd) for cwd in where.cwds]
    cwds = list(where.cwds)
    for place in added:
        if place is not None and place not in cwds:
            cwds.append(place)
    return replace(where, cwds=tuple(cwds[:16]))


def _path_item(
    path: Path,
    kind: str,
    rules: RuleSet,
    where: _Where,
    *,
    tool: str | None,
    shown: str | None = None,
) -> Part:
    """A path read or written; `tool` (for file tools) lets bare tool rules match too."""
    path = Path(os.path.normpath(path))
    text = shown or str(path)
    part = _path_verdict(path, text, kind, rules, where, tool)
    return replace(part, path=str(path), access=kind)


def _path_verdict(
    path: Path, text: str, kind: str, rules: RuleSet, where: _Where, tool: str | None
) -> Part:
    matched = [
        r
        for r in rules.rules
        if r.matches_path(path, kind=kind, workspace=where.workspace, home=where.home)
        or (tool is not None and r.matches_tool(tool))
    ]
    inside = _inside(path, where.workspace)
    if kind == "Read":
        default: Verdict = "allow" if inside else "ask"
        reason = "reads inside the workspace" if inside else f"reads {path}, outside the workspace"
        return _adjust(_ruled(text, matched, default, reason), where, read_only=True, floor=False)
    if inside and is_protected(path, where.workspace):
        # A planted hook or config would later run outside any sandbox. Only a rule that
        # names `.git` or `.tether` itself may allow that: a broad `Edit(**)` (one
        # "always" answer) must not.
        matched = [r for r in matched if r.verdict != "allow" or _names_protected(r)]
        part = _ruled(text, matched, "ask", f"writes {path}: .git and .tether are protected")
        if where.mode == "plan" and part.verdict != "deny":
            return replace(part, verdict="deny", reason=_PLAN)
        return part
    default = "ask"
    if inside:
        reason = f"writes {_rel(path, where.workspace)} in the workspace"
        if where.mode in ("accept-edits", "auto"):
            default, reason = "allow", reason + f" ({where.mode} mode)"
    else:
        reason = f"writes {path}, outside the workspace"
    return _adjust(_ruled(text, matched, default, reason), where, read_only=False, floor=False)


def _names_protected(rule: Rule) -> bool:
    parts = (rule.pattern or "").replace("\\", "/").split("/")
    return any(p in (".git", ".tether") for p in parts)


def _tool_item(action: ToolAction, rules: RuleSet) -> Part:
    matched = [r for r in rules.rules if r.matches_tool(action.tool)]
    return _ruled(action.tool, matched, "allow", f"{action.tool} does not touch the workspace")


def _ruled(text: str, matched: list[Rule], default: Verdict, reason: str) -> Part:
    """Matching rules decide (the strictest wins); without any, the default does."""
    if not matched:
        return Part(text, default, reason)
    verdict = strictest([r.verdict for r in matched])
    first = next(r for r in matched if r.verdict == verdict)
    return Part(
        text, verdict, f"rule {first.text} ({first.origin})", tuple(r.label for r in matched)
    )


_PLAN = "plan mode: only read-only actions run; describe the change in your plan instead"


def _adjust(part: Part, where: _Where, *, read_only: bool, floor: bool) -> Part:
    """Apply the mode, and the floor for what cannot be proven plain."""
    verdict, reason = part.verdict, part.reason
    ruled = bool(part.matched_rules)
    if where.mode == "plan" and not read_only and verdict != "deny":
        return replace(part, verdict="deny", reason=f"{_PLAN} ({reason})")
    if floor and verdict == "allow" and where.mode != "auto":
        verdict, reason = "ask", f"{reason}; cannot be allowed without asking"
    if where.mode == "auto" and verdict == "ask" and not ruled:
        verdict, reason = "allow", f"{reason} (auto mode)"
    return replace(part, verdict=verdict, reason=reason)


def _place(raw: str, where: _Where, cwd: Path | None = None) -> Path | None:
    """Where a path argument points, or None when only the running shell knows."""
    if "$" in raw or "`" in raw or raw == "-":
        return None
    if raw == "~" or raw.startswith("~/"):
        return Path(os.path.normpath(where.home / raw[2:]))
    if raw.startswith("~"):
        return None  # ~user
    path = Path(raw)
    if not path.is_absolute():
        path = (cwd or where.workspace) / path
    return Path(os.path.normpath(path))


def _inside(path: Path, workspace: Path) -> bool:
    return path == workspace or workspace in path.parents


def _rel(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix() or "."
    except ValueError:
        return str(path)

"""Judging an `apply_patch` call: every file the patch touches, summed up as one decision.

A patch may add, delete, update and move many files at once, so like a shell line
it is judged piece by piece: each path becomes a `WriteAction` ("write" for adds,
deletes and both ends of a move, "edit" for updates) decided by `decide`, and the
call gets the strictest verdict of all (`Decision.of`). One protected or denied
file thus stops the whole patch, which matches the engine: all files or none.

A path outside the workspace (by `..`, an absolute path, `~` or a symlink) is
refused outright with a deny part, not asked about: the engine resolves every path
through the same `Workspace` fence and never writes there, so an approval would be
wasted and an "always" answer would save a rule for a place no patch can reach.
Refusing also keeps the answer the same in every mode (auto mode would otherwise
allow an unruled outside write and leave the refusal to the engine).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from tether.config import PermissionMode
from tether.errors import ToolError
from tether.patch import parse, touched
from tether.policy.actions import Decision, Part, ReadAction, WriteAction
from tether.policy.decide import decide
from tether.policy.rules import RuleSet
from tether.sandbox.workspace import Workspace

__all__ = ["PatchJudgement", "judge_patch", "read_denials"]

_SHOWN = 2  # files named in the subject before "(+n more)"


@dataclass(frozen=True, slots=True)
class PatchJudgement:
    """The decision for a whole patch and the files it touches, as a user sees them."""

    files: tuple[str, ...]
    decision: Decision

    @property
    def subject(self) -> str:
        """`apply_patch src/a.py, src/b.py (+2 more)`: short enough for one line."""
        more = len(self.files) - _SHOWN
        return (
            "apply_patch "
            + ", ".join(self.files[:_SHOWN])
            + (f" (+{more} more)" if more > 0 else "")
        )


def judge_patch(
    text: str, workspace: Workspace, rules: RuleSet, mode: PermissionMode, *, home: Path
) -> PatchJudgement:
    """Judge every path of the patch `text`; raises the parser's `PatchError` (or a
    `ValueError`) when it is no patch at all — nothing can then be written."""
    targets: dict[Path, _Target] = {}
    for raw, kind in touched(parse(text)):
        try:
            path = workspace.resolve(raw)
            target = _Target(workspace.relative(path), kind)
        except ToolError as exc:
            path, target = _lexical(raw, workspace.root), _Target(raw, kind, str(exc))
        except (OSError, ValueError, RuntimeError) as exc:  # `~nosuchuser/x`, NUL bytes
            path = _lexical(raw, workspace.root)
            target = _Target(raw, kind, f"cannot place {raw!r} in the workspace ({exc})")
        known = targets.get(path)
        if known is None:
            targets[path] = target
        elif kind == "write":  # `a.txt` and `./a.txt`: the stronger kind counts
            targets[path] = replace(known, kind="write")
    parts: list[Part] = []
    for path, target in targets.items():
        if target.outside is not None:
            parts.append(_outside(target, path))
            continue
        action = WriteAction(path, "apply_patch", target.kind)
        parts.extend(decide(action, rules, mode, workspace=workspace.root, home=home).parts)
        if target.kind == "edit":
            parts.extend(read_denials(path, "apply_patch", rules, mode, workspace.root, home))
    return PatchJudgement(tuple(t.shown for t in targets.values()), Decision.of(parts))


def read_denials(
    path: Path, tool: str, rules: RuleSet, mode: PermissionMode, workspace: Path, home: Path
) -> list[Part]:
    """An edit shows the file's lines when its context does not match, so a path the
    rules forbid reading may not be edited in place either."""
    decision = decide(ReadAction(path, tool), rules, mode, workspace=workspace, home=home)
    return [
        replace(p, reason=f"{p.reason}; an edit would show its lines")
        for p in decision.parts
        if p.verdict == "deny"
    ]


@dataclass(frozen=True, slots=True)
class _Target:
    """One file of the patch: how to show it, how it changes, why it is out of reach."""

    shown: str
    kind: Literal["write", "edit"]
    outside: str | None = None


def _lexical(raw: str, root: Path) -> Path:
    """Where `raw` points without following symlinks: how the refusal names it."""
    try:
        candidate = Path(raw.strip()).expanduser()
    except (RuntimeError, ValueError):
        candidate = Path(raw.strip())
    return Path(os.path.normpath(root / candidate))


def _outside(target: _Target, place: Path) -> Part:
    reason = (target.outside or "outside the workspace").rstrip(".")
    access = "Write" if target.kind == "write" else "Edit"
    return Part(target.shown, "deny", reason, path=str(place), access=access)

"""`tether permissions check`: the policy's answer, printed for a person or a script.

The same config files, flags and mode as a run, so a user can test a rule before
relying on it. Text for people; `--json` for one decision; `--jsonl` for many
actions read from stdin, one JSON object per line in and out; an `apply_patch`
line may carry the whole `"patch"` instead of a `"path"`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from tether.config import Settings
from tether.patch import PatchError
from tether.policy.actions import Action, Decision, ReadAction, ShellAction, ToolAction, WriteAction
from tether.policy.decide import decide
from tether.policy.patchcheck import judge_patch
from tether.sandbox.workspace import Workspace

__all__ = ["check_command", "check_lines", "decision_object"]

_READ_TOOLS = frozenset({"read_file", "list_files", "search_files"})


def check_command(settings: Settings, command: str, out: TextIO, *, as_json: bool) -> int:
    decision = _decide(settings, ShellAction(command))
    if as_json:
        out.write(json.dumps(decision_object(decision, command=command)) + "\n")
        return 0
    out.write(f"{decision.verdict:5}  {command}\n")
    out.write(f"       {decision.reason}\n")
    if len(decision.parts) > 1 or (decision.parts and decision.parts[0].text != command.strip()):
        out.write("parts:\n")
        for part in decision.parts:
            out.write(f"  {part.verdict:5}  {part.text}\n         {part.reason}\n")
    out.write("rules: " + ("\n       ".join(decision.matched_rules) or "(none matched)") + "\n")
    out.write(f"mode:  {settings.permission_mode}\n")
    return 0


def check_lines(settings: Settings, inp: TextIO, out: TextIO) -> int:
    """One decision object per input line; a bad line gets an error object, not a stop."""
    for number, line in enumerate(inp, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            decision = _judge(settings, request)
        except (ValueError, TypeError, PatchError) as exc:
            out.write(json.dumps({"line": number, "error": str(exc)}) + "\n")
            continue
        result = decision_object(decision, **request)
        out.write(json.dumps(result) + "\n")
        out.flush()
    return 0


def decision_object(decision: Decision, **request: Any) -> dict[str, Any]:
    """The JSON shape of a decision: the request's own keys, then the verdict."""
    return {
        **request,
        "verdict": decision.verdict,
        "reason": decision.reason,
        "matched_rules": list(decision.matched_rules),
        "parts": [
            {
                "text": p.text,
                "verdict": p.verdict,
                "reason": p.reason,
                "rules": list(p.matched_rules),
            }
            for p in decision.parts
        ],
    }


def _decide(settings: Settings, action: Action) -> Decision:
    return decide(
        action,
        settings.rules,
        settings.permission_mode,
        workspace=settings.workspace,
        home=_home(),
    )


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def _judge(settings: Settings, request: Any) -> Decision:
    """`{"tool": "apply_patch", "patch": ...}` is judged file by file, as in a run."""
    if isinstance(request, dict) and request.get("tool") == "apply_patch":
        text = request.get("patch")
        if isinstance(text, str):
            rules, mode = settings.rules, settings.permission_mode
            workspace = Workspace(settings.workspace, reserved=(settings.home,))
            return judge_patch(text, workspace, rules, mode, home=_home()).decision
    return _decide(settings, _action(request, settings.workspace))


def _action(request: Any, workspace: Path) -> Action:
    if not isinstance(request, dict):
        raise TypeError('each line must be an object like {"command": "ls"}')
    if isinstance(request.get("command"), str):
        return ShellAction(request["command"])
    tool = request.get("tool")
    if not isinstance(tool, str):
        raise TypeError(
            'give "command", or "tool" (with "path" for file tools, "patch" for apply_patch)'
        )
    path = request.get("path")
    if tool in _READ_TOOLS or tool in ("write_file", "str_replace", "apply_patch"):
        if not isinstance(path, str):
            wanted = '"patch" (or a "path")' if tool == "apply_patch" else '"path"'
            raise TypeError(f"{tool} needs a {wanted}")
        where = Path(path).expanduser()
        where = Path(os.path.normpath(where if where.is_absolute() else workspace / where))
        if tool in _READ_TOOLS:
            return ReadAction(where, tool)
        return WriteAction(where, tool, "write" if tool == "write_file" else "edit")
    return ToolAction(tool)

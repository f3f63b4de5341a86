"""The `tether` subcommands other than a run: their parsers and what they do.

`cli.py` dispatches; each subcommand imports what it needs only when it runs, so
`tether --help` and a plain run stay fast.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from tether.config import PERMISSION_MODES, CliOverrides, Settings
from tether.errors import EXIT_PATCH_FAILED, UsageError

__all__ = [
    "apply_patch_command",
    "apply_patch_parser",
    "at_least_zero",
    "checkpoints_command",
    "checkpoints_parser",
    "demo_parser",
    "doctor_command",
    "doctor_parser",
    "permissions",
    "permissions_parser",
    "positive",
    "rule_flags",
    "sandbox_command",
    "sandbox_parser",
    "undo_command",
    "undo_parser",
]


def rule_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="RULE",
        help="allow what RULE matches, e.g. 'Bash(npm run test:*)' (repeatable)",
    )
    parser.add_argument(
        "--deny",
        action="append",
        default=[],
        metavar="RULE",
        help="refuse what RULE matches, e.g. 'Bash(git push:*)' (repeatable)",
    )


def permissions_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether permissions",
        description="Try the permission policy by hand: what would happen to a command?",
        epilog="example: tether permissions check -- 'git log | head && rm -rf build'",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    check = sub.add_parser(
        "check",
        help="judge a command (or, with --jsonl, many actions read from stdin)",
        description="Print the verdict, each part with its verdict, the matching rules and "
        "the reason. Reads the same config files and flags as a run.",
    )
    check.add_argument("--mode", choices=PERMISSION_MODES, help="judge in this permission mode")
    check.add_argument("--json", action="store_true", help="print the decision as JSON")
    check.add_argument(
        "--jsonl",
        action="store_true",
        help='read {"command": ...} or {"tool": ..., "path": ...} objects, one per line, from '
        "stdin, and write one decision object per line",
    )
    check.add_argument("-C", "--workspace", type=Path, help="judge as if working here")
    rule_flags(check)
    check.add_argument("command", nargs="*", help="the command line (after --)")
    return parser


def permissions(ns: argparse.Namespace) -> int:
    from tether.config import load_settings
    from tether.ui.permissions import check_command, check_lines

    overrides = CliOverrides(
        workspace=ns.workspace,
        permission_mode=ns.mode,
        allow=tuple(ns.allow),
        deny=tuple(ns.deny),
    )
    settings = load_settings(overrides, require_model=False)
    if ns.jsonl:
        if ns.command:
            raise UsageError("--jsonl reads actions from stdin; give no command")
        return check_lines(settings, sys.stdin, sys.stdout)
    if not ns.command:
        raise UsageError("give a command to judge: tether permissions check -- COMMAND")
    return check_command(settings, " ".join(ns.command), sys.stdout, as_json=ns.json)


def doctor_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether doctor",
        description="Report the sandbox backends (works / why not), the one in use, the "
        "endpoint configuration (without secrets) and the paths in use.",
    )
    parser.add_argument("-C", "--workspace", type=Path, help="as if working here")
    return parser


def doctor_command(ns: argparse.Namespace) -> int:
    from tether.ui.doctor import doctor

    return doctor(_workspace_settings(ns), sys.stdout)


def sandbox_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether sandbox",
        description="Try the sandbox by hand.",
        epilog="example: tether sandbox exec -- touch /etc/x   (fails: read-only)",
    )
    sub = parser.add_subparsers(dest="action", required=True)
    run = sub.add_parser(
        "exec",
        help="run one command exactly as the agent's bash tool would",
        description="Run COMMAND exactly as the agent's bash tool would, and exit with its "
        "exit code (124 on timeout).",
    )
    run.add_argument("--workspace", "-C", type=Path, help="the writable workspace (default: here)")
    run.add_argument(
        "--allow-write",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="another writable path (repeatable)",
    )
    run.add_argument("--network", choices=("on", "off"), default="off")
    run.add_argument("--backend", choices=("auto", "bwrap", "landlock", "none"), default="auto")
    run.add_argument("--timeout", type=positive(float), default=120.0, metavar="SECONDS")
    run.add_argument("command", nargs="+", help="the command and its arguments (after --)")
    return parser


def sandbox_command(ns: argparse.Namespace) -> int:
    import shlex

    from tether.ui.doctor import sandbox_exec

    settings = _workspace_settings(ns)
    words = ns.command
    command = words[0] if len(words) == 1 else shlex.join(words)
    return sandbox_exec(
        settings,
        command,
        backend_name=ns.backend,
        allow_write=tuple(p.resolve() for p in ns.allow_write),
        network=ns.network == "on",
        timeout=float(ns.timeout),
        out=sys.stdout,
    )


def demo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether demo",
        description="Run a scripted agent session on a copy of a small project with a failing "
        "test. The model is scripted; the loop, tools and files are real.",
    )
    parser.add_argument("--keep", action="store_true", help="keep the project copy afterwards")
    parser.add_argument(
        "--pause",
        type=at_least_zero,
        default=0.6,
        metavar="SECONDS",
        help="pause before each scripted reply, so a person can follow (default 0.6)",
    )
    return parser


def positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
        return value

    return parse


def at_least_zero(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return value


def apply_patch_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether apply-patch",
        description="Apply a patch read from stdin ('*** Begin Patch' envelope or a unified "
        "diff such as git diff prints): every file or none.",
    )
    parser.add_argument(
        "--root", type=Path, default=Path(), help="the workspace root (default: here)"
    )
    parser.add_argument(
        "--check", action="store_true", help="only check that it applies; write nothing"
    )
    return parser


def apply_patch_command(ns: argparse.Namespace) -> int:
    """Exit 0 when applied (or, with --check, applicable), 6 when the patch does not apply."""
    from tether.patch import PatchError, apply_patch_text

    if not ns.root.is_dir():
        raise UsageError(f"--root {ns.root} is not a directory")
    try:
        summary = apply_patch_text(sys.stdin.read(), ns.root, check=ns.check)
    except PatchError as exc:
        sys.stderr.write(f"tether: {exc}\n")
        return EXIT_PATCH_FAILED
    sys.stdout.write(summary.text + "\n")
    return 0


def checkpoints_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether checkpoints",
        description="List the checkpoints recorded for this workspace, oldest first: one "
        "before and one after every step of the agent that could change files.",
    )
    parser.add_argument("--session", metavar="ID", help="only those of this session")
    parser.add_argument("--json", action="store_true", help="print them as a JSON array")
    parser.add_argument("-C", "--workspace", type=Path, help="the workspace (default: here)")
    return parser


def checkpoints_command(ns: argparse.Namespace) -> int:
    from tether.ui.checkpoints import list_checkpoints

    settings = _workspace_settings(ns)
    return list_checkpoints(settings, sys.stdout, session=ns.session, as_json=ns.json)


def undo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether undo",
        description="Put the workspace back as it was before the agent's last change (or at "
        "checkpoint ID, or before a whole session): changed and deleted files come back, "
        "files created since go. "
        "Files changed outside tether since are not overwritten unless --force (exit 7).",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--to", metavar="ID", help="restore this checkpoint (see tether checkpoints)"
    )
    which.add_argument(
        "--session",
        metavar="ID",
        nargs="?",
        const="",
        help="undo everything a session changed (default: the latest session)",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite files changed outside tether too"
    )
    parser.add_argument("--json", action="store_true", help="report as JSON")
    parser.add_argument("-C", "--workspace", type=Path, help="the workspace (default: here)")
    return parser


def undo_command(ns: argparse.Namespace) -> int:
    from tether.ui.checkpoints import undo

    settings = _workspace_settings(ns)
    return undo(
        settings,
        sys.stdout,
        to=ns.to,
        session=ns.session or None,
        whole_session=ns.session is not None,
        force=ns.force,
        as_json=ns.json,
    )


def sessions_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether sessions",
        description="List the sessions of this workspace, oldest first: id, start, turns, "
        "status and first request. `tether --continue` resumes the latest, "
        "`tether --resume ID` a given one.",
    )
    parser.add_argument("--json", action="store_true", help="print them as a JSON array")
    parser.add_argument("-C", "--workspace", type=Path, help="the workspace (default: here)")
    return parser


def sessions_command(ns: argparse.Namespace) -> int:
    from tether.ui.sessions import print_sessions

    settings = _workspace_settings(ns)
    return print_sessions(settings, sys.stdout, as_json=ns.json)


def _workspace_settings(ns: argparse.Namespace) -> Settings:
    """Settings for a subcommand that needs no model: config files and `-C` only."""
    from tether.config import load_settings

    return load_settings(CliOverrides(workspace=ns.workspace), require_model=False)

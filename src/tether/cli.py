"""The `tether` command: argument parsing and subcommands, nothing else.

Exit codes (also in `tether --help`):
  0    the model finished the task
  1    internal error (a bug in tether)
  2    usage error (bad command line)
  3    configuration error (missing key or model, bad config file)
  4    provider failure (the endpoint failed after retries, or refused the request)
  5    a limit was reached (--max-turns, --max-tokens, --timeout)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from tether import __version__
from tether.config import PERMISSION_MODES, CliOverrides
from tether.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, TetherError, UsageError

__all__ = ["main"]

_EXIT_CODES = """\
exit codes:
  0    the model finished the task
  1    internal error (a bug in tether)
  2    usage error (bad command line)
  3    configuration error (missing API key or model, bad config file)
  4    provider failure (the endpoint failed after retries, or refused the request)
  5    a limit was reached (--max-turns, --max-tokens, --timeout)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP)

endpoint and model: TETHER_BASE_URL, TETHER_API_KEY, TETHER_MODEL (or OPENAI_BASE_URL,
OPENAI_API_KEY), then BASE_URL=, API_KEY=, MODEL= lines in ~/.agents/env; --base-url and
--model override both. State (transcripts) lives under $TETHER_HOME
(default ~/.local/state/tether).

commands:
  tether demo                          watch a scripted agent fix a bug (no API key needed)
  tether permissions check -- COMMAND  what the permission policy says about a command
  tether doctor                        sandbox backends, endpoint, paths
  tether sandbox exec -- COMMAND       run a command exactly as the agent's bash tool would
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tether` command; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    termination = _Termination()
    termination.install()
    try:
        if args and args[0] == "demo":
            from tether.demo import run_demo

            demo = _demo_parser().parse_args(args[1:])
            return run_demo(demo.keep, pause_s=demo.pause)
        if args and args[0] == "permissions":
            return _permissions(_permissions_parser().parse_args(args[1:]))
        if args and args[0] == "doctor":
            return _doctor(_doctor_parser().parse_args(args[1:]))
        if args and args[0] == "sandbox":
            return _sandbox(_sandbox_parser().parse_args(args[1:]))
        return _run(_parser().parse_args(args), termination)
    except TetherError as exc:
        _error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_INTERNAL


class _Termination:
    """SIGTERM and SIGHUP stop the run like Ctrl-C does, and then end the program.

    Commands the agent runs live in their own process groups, out of reach of the
    terminal's signals; only tether's own cleanup kills them. Dying on a bare
    SIGTERM would leave them running and the last tool call without a result.
    """

    def __init__(self) -> None:
        self.signal: str | None = None

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                signal.signal(signum, self._handle)

    def requested(self) -> bool:
        return self.signal is not None

    def _handle(self, signum: int, _frame: object) -> None:
        self.signal = signal.Signals(signum).name
        raise KeyboardInterrupt(self.signal)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether",
        description="A coding agent that works inside the current directory.",
        epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"tether {__version__}")
    parser.add_argument(
        "-p",
        "--print",
        dest="task",
        metavar="TASK",
        help="run TASK headless and exit ('-' reads the task from stdin)",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="headless output: the final answer (text), one JSON object at the end (json), "
        "or one JSON event per line as it happens (stream-json)",
    )
    parser.add_argument("--model", help="model name (overrides TETHER_MODEL)")
    parser.add_argument(
        "--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1"
    )
    parser.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="how tool calls are approved (every call runs until permissions land)",
    )
    parser.add_argument(
        "--max-turns", type=_positive(int), help="model calls per task (default 100)"
    )
    parser.add_argument(
        "--max-tokens", type=_positive(int), help="input + output tokens per task (default: none)"
    )
    parser.add_argument("--timeout", type=_positive(float), help="wall-clock seconds per task")
    parser.add_argument(
        "-C", "--workspace", type=Path, help="work in this directory (default: the current one)"
    )
    _rule_flags(parser)
    parser.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "landlock", "none"),
        help="what confines the commands the agent runs (default: auto, the strongest that "
        "works here; none only when you say so)",
    )
    parser.add_argument(
        "--dangerously-skip-sandbox",
        action="store_true",
        help="run commands unconfined, even in auto permission mode",
    )
    parser.add_argument(
        "--no-stream", action="store_true", help="ask the endpoint for whole responses, not SSE"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="headless: show tool activity on stderr"
    )
    return parser


def _rule_flags(parser: argparse.ArgumentParser) -> None:
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


def _permissions_parser() -> argparse.ArgumentParser:
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
    _rule_flags(check)
    check.add_argument("command", nargs="*", help="the command line (after --)")
    return parser


def _permissions(ns: argparse.Namespace) -> int:
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


def _doctor_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether doctor",
        description="Report the sandbox backends (works / why not), the one in use, the "
        "endpoint configuration (without secrets) and the paths in use.",
    )
    parser.add_argument("-C", "--workspace", type=Path, help="as if working here")
    return parser


def _doctor(ns: argparse.Namespace) -> int:
    from tether.config import load_settings
    from tether.ui.doctor import doctor

    return doctor(
        load_settings(CliOverrides(workspace=ns.workspace), require_model=False), sys.stdout
    )


def _sandbox_parser() -> argparse.ArgumentParser:
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
    run.add_argument("--timeout", type=_positive(float), default=120.0, metavar="SECONDS")
    run.add_argument("command", nargs="+", help="the command and its arguments (after --)")
    return parser


def _sandbox(ns: argparse.Namespace) -> int:
    import shlex

    from tether.config import load_settings
    from tether.ui.doctor import sandbox_exec

    settings = load_settings(CliOverrides(workspace=ns.workspace), require_model=False)
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


def _demo_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tether demo",
        description="Run a scripted agent session on a copy of a small project with a failing "
        "test. The model is scripted; the loop, tools and files are real.",
    )
    parser.add_argument("--keep", action="store_true", help="keep the project copy afterwards")
    parser.add_argument(
        "--pause",
        type=_at_least_zero,
        default=0.6,
        metavar="SECONDS",
        help="pause before each scripted reply, so a person can follow (default 0.6)",
    )
    return parser


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
        return value

    return parse


def _at_least_zero(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be zero or more, got {text}")
    return value


def _run(ns: argparse.Namespace, termination: _Termination) -> int:
    if ns.command is not None:
        raise UsageError(
            f"unknown command {ns.command!r}. To run a task headless: tether -p {ns.command!r}; "
            "for the demo: tether demo"
        )
    from tether.config import load_settings

    overrides = CliOverrides(
        model=ns.model,
        base_url=ns.base_url,
        workspace=ns.workspace,
        permission_mode=ns.permission_mode,
        max_turns=ns.max_turns,
        max_tokens=ns.max_tokens,
        timeout=ns.timeout,
        stream=False if ns.no_stream else None,
        allow=tuple(ns.allow),
        deny=tuple(ns.deny),
        sandbox=ns.sandbox,
        skip_sandbox=True if ns.dangerously_skip_sandbox else None,
    )
    if ns.task is None:
        if ns.output_format != "text":
            raise UsageError("--output-format needs a task: tether -p TASK --output-format json")
        from tether.ui.prompt import interactive

        return interactive(load_settings(overrides), should_stop=termination.requested)
    if ns.task == "-" and isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="replace")
    task = sys.stdin.read() if ns.task == "-" else ns.task
    if not task.strip():
        raise UsageError("the task is empty; pass it as tether -p 'TASK'")
    settings = load_settings(overrides)
    from tether.ui.headless import run_headless

    return run_headless(settings, task, output_format=ns.output_format, verbose=ns.verbose)


def _error(text: str) -> None:
    with contextlib.suppress(BrokenPipeError, ValueError):
        sys.stderr.write(f"tether: {text}\n")

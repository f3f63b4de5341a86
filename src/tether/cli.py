"""The `tether` command: argument parsing and subcommands, nothing else.

Exit codes (also in `tether --help`):
  0    the model finished the task
  1    internal error (a bug in tether)
  2    usage error (bad command line)
  3    configuration error (missing key or model, bad config file)
  4    provider failure (the endpoint failed after retries, or refused the request)
  5    a limit was reached (--max-turns, --max-tokens, --timeout, --max-cost)
  6    tether apply-patch: the patch does not apply (nothing was changed)
  7    tether undo: files changed outside tether would be overwritten (nothing was changed)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from tether import __version__
from tether import cli_commands as commands
from tether.config import PERMISSION_MODES, CliOverrides, Settings
from tether.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, TetherError, UsageError

__all__ = ["main"]

_EXIT_CODES = """\
exit codes:
  0    the model finished the task
  1    internal error (a bug in tether)
  2    usage error (bad command line)
  3    configuration error (missing API key or model, bad config file)
  4    provider failure (the endpoint failed after retries, or refused the request)
  5    a limit was reached (--max-turns, --max-tokens, --timeout, --max-cost)
  6    tether apply-patch: the patch does not apply (nothing was changed)
  7    tether undo: files changed outside tether would be overwritten (nothing was changed)
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
  tether apply-patch [--check] < PATCH apply a patch: every file or none (exit 6 if it fails)
  tether checkpoints [--session ID]    what the agent changed, step by step
  tether undo [--to ID] [--force]      put the workspace back as it was before a step
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `tether` command; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    termination = _Termination()
    termination.install()
    try:
        if args and args[0] == "demo":
            from tether.demo import run_demo

            demo = commands.demo_parser().parse_args(args[1:])
            return run_demo(demo.keep, pause_s=demo.pause)
        if args and args[0] == "permissions":
            return commands.permissions(commands.permissions_parser().parse_args(args[1:]))
        if args and args[0] == "doctor":
            return commands.doctor_command(commands.doctor_parser().parse_args(args[1:]))
        if args and args[0] == "sandbox":
            return commands.sandbox_command(commands.sandbox_parser().parse_args(args[1:]))
        if args and args[0] == "apply-patch":
            parser = commands.apply_patch_parser()
            return commands.apply_patch_command(parser.parse_args(args[1:]))
        if args and args[0] == "checkpoints":
            return commands.checkpoints_command(commands.checkpoints_parser().parse_args(args[1:]))
        if args and args[0] == "undo":
            return commands.undo_command(commands.undo_parser().parse_args(args[1:]))
        if args and args[0] == "sessions":
            return commands.sessions_command(commands.sessions_parser().parse_args(args[1:]))
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
        "--provider",
        choices=("openai", "anthropic"),
        help="wire protocol (overrides TETHER_PROVIDER): openai for any chat-completions "
        "server (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp), anthropic for Messages",
    )
    parser.add_argument(
        "--base-url",
        help="the endpoint, e.g. http://localhost:11434/v1 (openai) or "
        "https://api.anthropic.com (anthropic)",
    )
    parser.add_argument(
        "--tool-protocol",
        choices=("auto", "native", "text"),
        help="how the model calls tools: native tool calls, a text format described in the "
        "prompt (for models without tool support), or auto (native, falling back to text)",
    )
    parser.add_argument(
        "--thinking-budget",
        type=commands.positive(int),
        metavar="TOKENS",
        help="anthropic: let the model think first, up to TOKENS (extended thinking)",
    )
    parser.add_argument(
        "--permission-mode",
        choices=PERMISSION_MODES,
        help="how tool calls are approved (every call runs until permissions land)",
    )
    parser.add_argument(
        "--max-turns", type=commands.positive(int), help="model calls per task (default 100)"
    )
    parser.add_argument(
        "--max-tokens",
        type=commands.positive(int),
        help="input + output tokens per task (default: none)",
    )
    parser.add_argument(
        "--timeout", type=commands.positive(float), help="wall-clock seconds per task"
    )
    parser.add_argument(
        "--max-cost",
        type=commands.positive(float),
        metavar="USD",
        help="stop a task once it has cost this much at the model's list prices",
    )
    parser.add_argument(
        "-C", "--workspace", type=Path, help="work in this directory (default: the current one)"
    )
    commands.rule_flags(parser)
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
        "--context-window",
        type=commands.positive(int),
        metavar="TOKENS",
        help="the model's context window, for when to drop old output and compact (default 128000)",
    )
    parser.add_argument(
        "--compact-at",
        type=commands.positive(float),
        metavar="N",
        help="compact the conversation at N: a fraction of the window (default 0.85) or "
        "a token count",
    )
    parser.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="do not record the workspace before and after each step (tether undo then "
        "cannot roll this run back)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="headless: show tool activity on stderr"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-c",
        "--continue",
        dest="continue_",
        action="store_true",
        help="continue this workspace's latest session (with -p: its next task)",
    )
    which.add_argument(
        "-r", "--resume", metavar="ID", help="continue the session ID (see tether sessions)"
    )
    return parser


def _run(ns: argparse.Namespace, termination: _Termination) -> int:
    if ns.command is not None:
        raise UsageError(
            f"unknown command {ns.command!r}. To run a task headless: tether -p {ns.command!r}; "
            "for the demo: tether demo"
        )
    from tether.config import load_settings

    overrides = CliOverrides(
        model=ns.model,
        provider=ns.provider,
        base_url=ns.base_url,
        tool_protocol=ns.tool_protocol,
        thinking_budget=ns.thinking_budget,
        workspace=ns.workspace,
        permission_mode=ns.permission_mode,
        max_turns=ns.max_turns,
        max_tokens=ns.max_tokens,
        timeout=ns.timeout,
        max_cost=ns.max_cost,
        stream=False if ns.no_stream else None,
        allow=tuple(ns.allow),
        deny=tuple(ns.deny),
        sandbox=ns.sandbox,
        skip_sandbox=True if ns.dangerously_skip_sandbox else None,
        checkpoints=False if ns.no_checkpoints else None,
        context_window=ns.context_window,
        compact_at=ns.compact_at,
    )
    if ns.task is None:
        if ns.output_format != "text":
            raise UsageError("--output-format needs a task: tether -p TASK --output-format json")
        from tether.ui.prompt import interactive

        settings = load_settings(overrides)
        resume = _resumed_session(settings, ns)
        return interactive(settings, should_stop=termination.requested, resume=resume)
    if ns.task == "-" and isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="replace")
    task = sys.stdin.read() if ns.task == "-" else ns.task
    if not task.strip():
        raise UsageError("the task is empty; pass it as tether -p 'TASK'")
    settings = load_settings(overrides)
    resume = _resumed_session(settings, ns)
    from tether.ui.headless import run_headless

    return run_headless(
        settings, task, output_format=ns.output_format, verbose=ns.verbose, resume=resume
    )


def _resumed_session(settings: Settings, ns: argparse.Namespace) -> str | None:
    """The session id --continue or --resume names (None: a new session)."""
    if ns.resume:
        return str(ns.resume)
    if not ns.continue_:
        return None
    from tether.memory.session_index import latest_session

    latest = latest_session(settings.home, settings.workspace)
    if latest is None:
        raise UsageError(
            f"no earlier session in {settings.workspace} to continue; start one without --continue"
        )
    return latest.session_id


def _error(text: str) -> None:
    with contextlib.suppress(BrokenPipeError, ValueError):
        sys.stderr.write(f"tether: {text}\n")

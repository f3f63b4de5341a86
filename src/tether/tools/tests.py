"""`run_tests`: run the project's test command and report the outcome in one line.

Running tests through bash costs the model a long log to read for two numbers. This
tool runs the configured (`[tests] command`) or detected command (test_command.py)
exactly as bash runs a command (sandbox, process group, timeout, Ctrl-C, git's setup
put back), then shows the exit code, the counts from the runner's summary
(test_summary.py) and only the last lines of the output; when lines were left out
the whole log is in an overflow file the model can page through.

The timeout is the longest a user lets one command run (`max_timeout`, 600 s by
default), or `bash_timeout` if that is larger: a whole suite is the longest thing an
agent routinely runs, and a run cut short reports nothing useful.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Mapping
from pathlib import Path

from tether.context import overflow
from tether.sandbox.gitguard import GitGuard
from tether.tools.registry import Tool, ToolContext, tool
from tether.tools.shell import CommandResult, run_command
from tether.tools.test_command import (
    TestCommand,
    detect_test_command,
    resolve_test_command,
    runner_of,
)
from tether.tools.test_summary import TestCounts, parse_summary, strip_ansi

__all__ = [
    "TestCommand",
    "TestCounts",
    "detect_test_command",
    "gate_view",
    "parse_summary",
    "resolve_test_command",
    "run_tests_tool",
    "runner_of",
]

TAIL_LINES = 60  # of output shown after the summary line
_MAX_PARSE = 32 << 20  # bytes of a saved log re-read to count every summary line
_PLAIN = re.compile(r"[\w./+@:%,=-]+")  # a path the model can copy as it stands


def gate_view(
    workspace: Path,
    configured: str | None,
    path: str | None,
    sandboxed: bool,
    arguments: Mapping[str, object],
) -> tuple[str, bool]:
    """What a run_tests call would run, for the permission gate, and whether it may run
    unasked: exactly the configured command, and only inside a sandbox (a cloned
    project's own config could name it)."""
    args = arguments.get("args")
    found = resolve_test_command(
        workspace, configured, args if isinstance(args, str) else None, path=path
    )
    return found.command, found.exact and sandboxed


def run_tests_tool(configured: str | None) -> Tool:
    """The run_tests tool, running `configured` (None: the detected command)."""

    @tool
    def run_tests(ctx: ToolContext, args: str | None = None) -> str:
        """Run the project's tests; returns the exit code, counts and the end of the output.

        Prefer this to bash for running tests. It runs the project's test command
        (configured by the user, or detected: pytest, unittest, npm, cargo or go
        test) in the workspace root, sandboxed like bash, with the longest timeout
        bash allows. The first line gives the outcome and counts, the second the
        command that ran, then the last lines of the output; when output was left
        out, the whole log is saved in a file named there (page it with read_file,
        search it with search_files).

        Args:
            args: Arguments appended to the test command to narrow the run, e.g.
                "tests/test_api.py -k login" for pytest or a test name for cargo
                test. Each word is passed literally (no shell syntax). Omit to run
                the whole suite.
        """
        return _run(ctx, configured, args)

    return run_tests


def _run(ctx: ToolContext, configured: str | None, args: str | None) -> str:
    root = ctx.workspace.root
    resolved = resolve_test_command(root, configured, args, path=ctx.env.get("PATH"))
    limit = max(ctx.bash_timeout, ctx.max_timeout)
    budget = ctx.output_limit // 2 if ctx.output_limit > 0 else 15_000
    guard = GitGuard(root) if ctx.sandbox is not None else None
    before = guard.snapshot() if guard is not None else {}
    try:
        result = run_command(
            resolved.command,
            cwd=root,
            env=ctx.env,
            timeout=limit,
            cancel=ctx.cancel,
            launcher=ctx.sandbox,
            overflow_dir=ctx.overflow_dir,
            spill_after=budget,
        )
    finally:
        restored = guard.restore(before) if guard is not None else []
    log, lines, saved, problem = _whole_log(result, ctx.overflow_dir)
    counts = parse_summary(_summary_source(result, log, resolved.runner), resolved.runner)
    head = [_outcome(result, counts, limit), f"command: {resolved.command}"]
    if restored:
        head.append(f"[put back {', '.join(restored)}: tests may not change git's setup]")
    if result.killed_background:
        head.append("[processes the tests left running were killed when they ended]")
    if result.output_left_open:
        head.append("[a process outside the run's process group still holds its output]")
    tail, shown = _tail(strip_ansi(log), TAIL_LINES, budget)
    if saved is not None and shown >= lines:
        saved.unlink(missing_ok=True)  # it all fits after all (multi-byte text)
        saved = None
    if shown < lines and saved is None and ctx.overflow_dir is not None and not problem:
        try:
            saved = overflow.write_text(ctx.overflow_dir, "run_tests", result.output)
        except OSError as exc:
            problem = exc.strerror or str(exc)
    body = tail if tail.strip() else "(no output)"
    if shown < lines:
        body = _marker(lines - shown, lines, saved, problem) + body
    return "\n".join(head) + "\n\n" + body


def _whole_log(result: CommandResult, directory: Path | None) -> tuple[str, int, Path | None, str]:
    """The end of the output (up to 1 MiB: all there is in memory), how many lines the
    whole has, where it is saved (if it was) and why it is incomplete (if it is)."""
    spilled = result.spilled
    if spilled is not None:
        text = spilled.tail if spilled.dropped else spilled.head
        return text, spilled.lines, spilled.path, spilled.error or ""
    text = result.output
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    problem = ""
    if result.dropped_bytes:  # lines are then counted in what was kept
        why = "it could not be written" if directory is not None else "no overflow directory"
        problem = f"{why}; {result.dropped_bytes:,} bytes were also dropped from the middle"
    return text, lines, None, problem


def _summary_source(result: CommandResult, log: str, runner: str) -> str:
    """The text to count in: for runners that print a summary per binary or package
    (cargo, go, maybe an unknown one), the whole saved log when its middle is not in
    memory, if that is not huge; else the end (other summaries come last)."""
    spilled = result.spilled
    whole = runner in ("cargo", "go", "unknown") and spilled is not None and spilled.dropped
    if spilled is None or not whole or spilled.size > _MAX_PARSE:
        return log
    try:
        return spilled.path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return log


def _outcome(result: CommandResult, counts: TestCounts | None, limit: float) -> str:
    described = f" — {counts.describe()}" if counts is not None else ""
    if result.timed_out:
        return f"tests: timed out after {limit:g} s; process group killed{described}"
    if result.interrupted:
        return f"tests: interrupted; process group killed{described}"
    code = result.exit_code
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"tests: killed by {name} (exit code {code}){described}"
    if counts is None:
        verdict = "passed (exit code 0; " if code == 0 else f"exit code {code} ("
        return f"tests: {verdict}no summary line found)"
    verdict = "passed" if code == 0 and not (counts.failed or counts.errors) else "FAILED"
    return f"tests: {verdict} (exit code {code}){described}"


def _tail(text: str, max_lines: int, budget: int) -> tuple[str, int]:
    """The last `max_lines` whole lines of `text` within `budget` characters, and how
    many lines that is (a single longer last line: its end, counted as one)."""
    body = text.removesuffix("\n")
    if not body:
        return "", 1 if text else 0  # no output, or one empty line
    start, shown = len(body), 0  # body[start:] is the tail so far
    while shown < max_lines and start > 0:
        end = start - 1 if start < len(body) else start  # body[end] ends the line before
        line_start = body.rfind("\n", 0, end) + 1
        if len(body) - line_start > budget:
            break
        start, shown = line_start, shown + 1
    if shown == 0:
        return body[-budget:], 1
    return body[start:], shown


def _marker(left_out: int, lines: int, saved: Path | None, problem: str) -> str:
    if saved is None:
        why = problem or "there is no overflow directory"
        return f"[... {left_out:,} earlier lines not shown; the log was not saved: {why} ...]\n"
    where = f"lines 1-{left_out:,} of {lines:,}"
    path = str(saved) if _PLAIN.fullmatch(str(saved)) else json.dumps(str(saved))
    note = f" The file is incomplete: {problem}." if problem else ""
    return (
        f"[... {left_out:,} earlier lines not shown ({where}). The full log is saved in "
        f"{path}.{note} Find failures in it with search_files pattern=<regex> path={path}, "
        f"or read it with read_file path={path} offset=<line> limit=2000 ...]\n"
    )

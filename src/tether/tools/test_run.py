"""The work of `run_tests` (see tools/tests.py), loaded on its first call: the
summary parsers and command detection are not needed to start a session."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tether.context import overflow
from tether.sandbox.gitguard import GitGuard
from tether.tools.registry import ToolContext
from tether.tools.shell import CommandResult, cut_short, killed_by, run_command
from tether.tools.test_command import resolve_test_command
from tether.tools.test_summary import TestCounts, parse_summary, strip_ansi

__all__ = ["run"]

TAIL_LINES = 60  # of output shown after the summary line
_MAX_PARSE = 32 << 20  # bytes of a saved log re-read to count every summary line
_PLAIN = re.compile(r"[\w./+@:%,=-]+")  # a path the model can copy as it stands


def run(ctx: ToolContext, configured: str | None, args: str | None) -> str:
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
    stopped = cut_short(result, limit)
    if stopped is not None:
        return f"tests: {stopped}{described}"
    code = result.exit_code
    name = killed_by(code)
    if name is not None:
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
    end = len(body)  # the next line to take ends here (exclusive)
    while shown < max_lines and end >= 0:
        line_start = body.rfind("\n", 0, end) + 1
        if len(body) - line_start > budget:
            break
        start, shown = line_start, shown + 1
        end = line_start - 1  # before the newline that ends the line above
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

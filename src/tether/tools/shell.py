"""`bash`: run a shell command in the workspace and report what it printed.

The command gets its own process group, so a timeout or Ctrl-C kills everything it
started (SIGTERM, a short grace, then SIGKILL), not just the shell. Output is read
with `select` in the calling thread into a `Capture` that keeps only the first and
last MiB in memory, so a runaway command can neither fill memory nor, by leaving a
child holding the pipe, keep the tool waiting forever. With an overflow directory
the whole stream is also written to a file, and the result shows its head and tail
with a marker naming that file.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.context.clamp import Cut, cut
from tether.errors import ToolError
from tether.sandbox.base import Launch, merged_env
from tether.sandbox.gitguard import GitGuard
from tether.tools.capture import KEEP_BYTES, Capture, Spilled
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import check_text

__all__ = ["CommandResult", "bash", "run_command"]

_POLL = 0.05  # seconds between checks of the clock and the cancel flag
_TERM_GRACE = 1.0  # SIGTERM -> SIGKILL
_LINGER = 0.5  # after the shell exits, how long background jobs may hold the output open
_DRAIN = 0.5  # after a kill, how long to keep reading what is left in the pipe
_STATUS_ROOM = 1000  # of the output limit left for the status lines after the output


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a command ended. `exit_code` is negative for a signal, None if killed by us.

    `killed_background`: the shell exited while something still held its output
    open, and live processes were left in its process group; they were killed.
    `output_left_open`: when we stopped reading, the output was still held open,
    necessarily by a process outside the group (setsid, a daemon) that we did not
    kill and that may still run. `spilled`: the whole output was saved to a file.
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    interrupted: bool = False
    killed_background: bool = False
    dropped_bytes: int = 0
    output_left_open: bool = False
    spilled: Spilled | None = None


@tool
def bash(ctx: ToolContext, command: str, timeout: float | None = None) -> str:
    """Run a shell command in the workspace root; returns stdout and stderr combined.

    Runs `bash -c` with stdin closed, so interactive programs cannot wait for input
    (pass input with flags like `-y`, files or heredocs). The last line reports the
    exit code, a timeout or an interruption; a nonzero exit is shown, not an error.
    The default timeout is 120 s; on timeout the whole process group is killed.
    Commands usually run in a sandbox: only the workspace and $TMPDIR are writable,
    the network is off unless the user allowed it, and every process a command
    started ends when it does (start a server and query it in the same command). Long output
    shows its start and end; a note in it says where the whole output was saved and
    how to page through it. For files prefer read_file, list_files, search_files and
    str_replace.

    Args:
        command: The command line, as typed into bash.
        timeout: Seconds before the command is killed (default 120; capped at 600).
    """
    if not command.strip():
        raise ToolError("The command is empty; give a shell command to run.")
    check_text(command, "The command")
    if timeout is not None and not math.isfinite(timeout):
        raise ToolError(
            f"timeout={timeout} is invalid; give a finite positive number of seconds "
            f"(at most {ctx.max_timeout:g})."
        )
    limit = ctx.bash_timeout if timeout is None else timeout
    if limit <= 0:
        raise ToolError(f"timeout={timeout} is invalid; give a positive number of seconds.")
    capped = limit > ctx.max_timeout
    limit = min(limit, ctx.max_timeout)
    guard = GitGuard(ctx.workspace.root) if ctx.sandbox is not None else None
    before = guard.snapshot() if guard is not None else {}
    try:
        result = run_command(
            command,
            cwd=ctx.workspace.root,
            env=ctx.env,
            timeout=limit,
            cancel=ctx.cancel,
            launcher=ctx.sandbox,
            overflow_dir=ctx.overflow_dir,
            spill_after=_spill_after(ctx.output_limit),
        )
    finally:
        restored = guard.restore(before) if guard is not None else []
    lines = [""]
    if capped:
        lines.append(f"[timeout capped at {ctx.max_timeout:g} s]")
    lines.append(_status_line(result, limit))
    if result.killed_background and ctx.sandbox is None:
        lines.append(
            "[the output was still held open after the shell exited, so the background "
            "processes left in the command's process group were killed; run them as "
            "`nohup cmd > file.log 2>&1 &` to keep them running]"
        )
    elif result.killed_background:
        lines.append(
            "[background processes were still running when the shell exited; in the "
            "sandbox nothing outlives its command, so they were killed]"
        )
    if restored:
        lines.append(
            f"[put back {', '.join(restored)}: commands may not change what git runs or "
            "where it looks for its configuration]"
        )
    if result.output_left_open:
        lines.append(
            "[a process outside the command's process group (e.g. started with setsid) "
            "still holds the output open; it was not killed and may still be running; "
            "what it prints from now on is not shown]"
        )
    status = "\n".join(lines)
    # Room for the dispatcher's own note (an interruption), so it need not save a copy.
    budget = max(ctx.output_limit - len(status) - 64, 1) if ctx.output_limit > 0 else 0
    output = _shown_output(result, budget)
    return (output.removesuffix("\n") if output else "(no output)") + status


def _spill_after(limit: int) -> int:
    """Save output that would not fit next to the status lines (all of it: no limit)."""
    if limit <= 0:
        return 2 * KEEP_BYTES
    return max(limit - _STATUS_ROOM, limit // 2)


def _shown_output(result: CommandResult, budget: int) -> str:
    """The output as the model sees it: when it was saved, head + tail within
    `budget` and a marker naming the file, so the dispatcher need not save it again."""
    spilled = result.spilled
    if spilled is None:
        return result.output
    if not spilled.dropped and budget > 0 and len(spilled.head) <= budget:
        spilled.path.unlink(missing_ok=True)  # it fits after all (multi-byte text)
        return spilled.head
    note = f"The file is incomplete: {spilled.error}." if spilled.error else ""
    whole = Cut(spilled.path, spilled.size, "bytes", spilled.lines, note)
    if budget <= 0:
        budget = len(spilled.head) + len(spilled.tail) + 2000
    tail_src = spilled.tail if spilled.dropped else spilled.head
    return cut(spilled.head, tail_src, budget, whole, spilled.newlines)


def cut_short(result: CommandResult, limit: float) -> str | None:
    """How tether ended the command, if it did: a timeout or Ctrl-C."""
    if result.timed_out:
        return f"timed out after {limit:g} s; process group killed"
    if result.interrupted:
        return "interrupted; process group killed"
    return None


def killed_by(code: int | None) -> str | None:
    """The signal's name when an exit code says one ended the command."""
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _status_line(result: CommandResult, limit: float) -> str:
    stopped = cut_short(result, limit)
    if stopped is not None:
        return f"[{stopped}]"
    code = result.exit_code
    name = killed_by(code)
    return f"[exit code: {code} (killed by {name})]" if name else f"[exit code: {code}]"


def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    cancel: threading.Event | None = None,
    launcher: Callable[[Sequence[str]], Launch] | None = None,
    overflow_dir: Path | None = None,
    spill_after: int = 2 * KEEP_BYTES,
) -> CommandResult:
    """Run `command` in a shell in its own process group, bounded in time and memory.

    `launcher` (the sandbox) turns the shell's argv into what actually runs. With
    `overflow_dir`, output longer than `spill_after` bytes is saved there whole.
    """
    cancel = cancel if cancel is not None else threading.Event()
    if cancel.is_set():
        return CommandResult(output="", exit_code=None, interrupted=True)
    shell = _shell(env.get("PATH"))
    argv = [shell, "-c", command]
    try:
        launch = launcher(argv) if launcher is not None else Launch(tuple(argv))
    except OSError as exc:
        raise ToolError(f"The sandbox could not prepare the command: {exc}.") from None

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            launch.argv,
            cwd=cwd,
            env=merged_env(env, launch),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=launch.preexec,
        )

    try:
        proc: subprocess.Popen[bytes] = start() if launch.spawn is None else launch.spawn(start)
    except (OSError, subprocess.SubprocessError) as exc:
        if launch.cleanup is not None:
            launch.cleanup()
        raise ToolError(f"Could not start {launch.argv[0]}: {exc}.") from None
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    capture = Capture(overflow_dir, spill_after=spill_after)
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    exited_at: float | None = None
    eof = False
    reason = ""
    killed = False
    try:
        while True:
            eof = eof or _read_available(selector, fd, capture, _POLL)
            now = time.monotonic()
            if proc.poll() is not None:
                if eof:
                    break
                exited_at = exited_at if exited_at is not None else now
                if now - exited_at >= _LINGER:
                    reason = "linger"
                    break
            if cancel.is_set():
                reason = "cancel"
                break
            if now >= deadline:
                reason = "timeout"
                break
            if eof:  # output closed but the shell still runs: wait for it, not a fixed tick
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=max(0.0, min(_POLL, deadline - now)))
        if reason:
            killed = _kill_group(proc)
            drain_until = time.monotonic() + _DRAIN
            while not eof and time.monotonic() < drain_until:
                eof = _read_available(selector, fd, capture, _POLL)
    except BaseException:  # e.g. KeyboardInterrupt in the main thread: leave no orphans
        _kill_group(proc)
        raise
    finally:
        selector.close()
        proc.stdout.close()
        capture.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        if launch.cleanup is not None:
            launch.cleanup()
    exit_code = proc.returncode if reason in ("", "linger") else None
    return CommandResult(
        output=capture.text(),
        exit_code=exit_code,
        timed_out=reason == "timeout",
        interrupted=reason == "cancel",
        killed_background=reason == "linger" and killed,
        dropped_bytes=capture.dropped_total,
        output_left_open=not eof,
        spilled=capture.spilled(),
    )


@functools.lru_cache(maxsize=8)
def _shell(path: str | None) -> str:
    """bash on this PATH (else ours, else sh); remembered per PATH, as a shell stays put."""
    return shutil.which("bash", path=path) or shutil.which("bash") or "/bin/sh"


def _read_available(
    selector: selectors.BaseSelector, fd: int, capture: Capture, wait: float
) -> bool:
    """Read what the pipe holds (waiting up to `wait`); True once it reached EOF."""
    if not selector.select(timeout=wait):
        return False
    for _ in range(256):  # bounded, so a firehose cannot starve the timeout check
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        if not chunk:
            return True
        capture.add(chunk)
    return False


def _kill_group(proc: subprocess.Popen[bytes]) -> bool:
    """SIGTERM the command's process group, then SIGKILL whatever is left.

    True when a live process was in the group to be killed.
    """
    pgid = proc.pid  # start_new_session made the shell the group leader
    proc.poll()  # reap an exited shell so it does not count as a member
    alive = _group_alive(pgid)
    _signal_group(pgid, signal.SIGTERM)
    if _wait_group_gone(proc, pgid, _TERM_GRACE):
        return alive
    _signal_group(pgid, signal.SIGKILL)
    _wait_group_gone(proc, pgid, _TERM_GRACE)
    return True


def _wait_group_gone(proc: subprocess.Popen[bytes], pgid: int, seconds: float) -> bool:
    give_up = time.monotonic() + seconds
    while True:
        proc.poll()  # reap the shell so it stops counting as a member
        if not _group_alive(pgid):
            return True
        if time.monotonic() >= give_up:
            return False
        time.sleep(0.02)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    """Whether a live (non-zombie) process is left in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _live_member_in_proc(pgid)


def _live_member_in_proc(pgid: int) -> bool:
    """Look past zombies an init that reaps slowly leaves behind (Linux /proc only)."""
    try:
        entries = [e for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return True  # no /proc: trust killpg
    for entry in entries:
        try:
            fields = Path(entry.path, "stat").read_bytes().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False

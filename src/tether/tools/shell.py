"""`bash`: run a shell command in the workspace and report what it printed.

The command gets its own process group, so a timeout or Ctrl-C kills everything it
started (SIGTERM, a short grace, then SIGKILL), not just the shell. Output is read
with `select` in the calling thread into a buffer that keeps only the first and
last MiB, so a runaway command can neither fill memory nor, by leaving a child
holding the pipe, keep the tool waiting forever.
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

from tether.errors import ToolError
from tether.sandbox.base import Launch, merged_env
from tether.sandbox.gitguard import GitGuard
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import check_text

__all__ = ["CommandResult", "bash", "run_command"]

_POLL = 0.05  # seconds between checks of the clock and the cancel flag
_TERM_GRACE = 1.0  # SIGTERM -> SIGKILL
_LINGER = 0.5  # after the shell exits, how long background jobs may hold the output open
_DRAIN = 0.5  # after a kill, how long to keep reading what is left in the pipe
_KEEP_BYTES = 1 << 20  # of output kept at each end


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a command ended. `exit_code` is negative for a signal, None if killed by us.

    `killed_background`: the shell exited while something still held its output
    open, and live processes were left in its process group; they were killed.
    `output_left_open`: when we stopped reading, the output was still held open,
    necessarily by a process outside the group (setsid, a daemon) that we did not
    kill and that may still run.
    """

    output: str
    exit_code: int | None
    timed_out: bool = False
    interrupted: bool = False
    killed_background: bool = False
    dropped_bytes: int = 0
    output_left_open: bool = False


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
    keeps its first and last MiB. For files prefer read_file, list_files,
    search_files and str_replace.

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
        )
    finally:
        restored = guard.restore(before) if guard is not None else []
    lines = [result.output.removesuffix("\n") if result.output else "(no output)"]
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
    return "\n".join(lines)


def _status_line(result: CommandResult, limit: float) -> str:
    if result.timed_out:
        return f"[timed out after {limit:g} s; process group killed]"
    if result.interrupted:
        return "[interrupted; process group killed]"
    code = result.exit_code
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"[exit code: {code} (killed by {name})]"
    return f"[exit code: {code}]"


def run_command(
    command: str,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    cancel: threading.Event | None = None,
    launcher: Callable[[Sequence[str]], Launch] | None = None,
) -> CommandResult:
    """Run `command` in a shell in its own process group, bounded in time and memory.

    `launcher` (the sandbox) turns the shell's argv into what actually runs.
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
    capture = _Capture()
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
    )


@functools.lru_cache(maxsize=8)
def _shell(path: str | None) -> str:
    """bash on this PATH (else ours, else sh); remembered per PATH, as a shell stays put."""
    return shutil.which("bash", path=path) or shutil.which("bash") or "/bin/sh"


def _read_available(
    selector: selectors.BaseSelector, fd: int, capture: _Capture, wait: float
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


class _Capture:
    """The first and last `_KEEP_BYTES` of a stream, and how many bytes fell between."""

    __slots__ = ("dropped", "head", "tail")

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = _KEEP_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - _KEEP_BYTES
        if excess > _KEEP_BYTES:  # trim in big steps: amortised O(1) per byte
            del self.tail[:excess]
            self.dropped += excess

    @property
    def dropped_total(self) -> int:
        return self.dropped + max(len(self.tail) - _KEEP_BYTES, 0)

    def text(self) -> str:
        """The kept bytes as text; undecodable bytes become U+FFFD."""
        dropped = self.dropped_total
        if not dropped:
            return bytes(self.head + self.tail).decode("utf-8", "replace")
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail[len(self.tail) - _KEEP_BYTES :]).decode("utf-8", "replace")
        marker = f"\n[... {dropped:,} bytes of output dropped from the middle ...]\n"
        return head + marker + tail

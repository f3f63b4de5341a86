from __future__ import annotations

import dataclasses
import json
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
from tether.tools.shell import bash

if TYPE_CHECKING:
    from conftest import Harness


def live_processes(marker: str) -> list[int]:
    """PIDs of non-zombie processes whose command line contains `marker`."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, UnicodeDecodeError, IndexError):
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique `sleep` duration to find our processes by; strays are killed after."""
    value = f"{secrets.randbelow(9000) + 1000}.{secrets.randbelow(900) + 100}"
    yield value
    for pid in live_processes(f"sleep {value}"):
        os.kill(pid, signal.SIGKILL)


def timed(ws: Harness, **args: object) -> tuple[str, float]:
    started = time.monotonic()
    out = ws.call(bash, **args)
    return out, time.monotonic() - started


def test_combined_output_and_exit_code(ws: Harness) -> None:
    out = ws.call(bash, command="echo out; echo err >&2; echo out2; exit 3")
    assert out == "out\nerr\nout2\n[exit code: 3]"


def test_no_output(ws: Harness) -> None:
    assert ws.call(bash, command="true") == "(no output)\n[exit code: 0]"


def test_stdin_is_closed(ws: Harness) -> None:
    out, elapsed = timed(ws, command="cat; read line; echo rc=$?")
    assert out == "rc=1\n[exit code: 0]"
    assert elapsed < 2


def test_cwd_is_workspace_and_env_is_ctx_env(ws: Harness) -> None:
    ctx = dataclasses.replace(ws.ctx, env={"PATH": os.environ["PATH"], "MARK": "xyz"})
    out = bash.fn(ctx, command='pwd; echo "$MARK"; echo "${HOME:-unset}"')
    assert out == f"{ws.root}\nxyz\nunset\n[exit code: 0]"


def test_killed_by_signal_is_reported(ws: Harness) -> None:
    assert ws.call(bash, command="kill -TERM $$") == (
        "(no output)\n[exit code: -15 (killed by SIGTERM)]"
    )


def test_undecodable_bytes_become_replacement_chars(ws: Harness) -> None:
    out = ws.call(bash, command=r"printf 'ok \377\376 end\n'")
    assert out == "ok \ufffd\ufffd end\n[exit code: 0]"


def test_timeout_kills_the_whole_group(ws: Harness, marker: str) -> None:
    out, elapsed = timed(
        ws, command=f"echo started; sleep {marker} & sleep {marker}; echo never", timeout=0.5
    )
    assert out == "started\n[timed out after 0.5 s; process group killed]"
    assert elapsed < 3
    assert live_processes(f"sleep {marker}") == []


def test_timeout_kills_processes_that_ignore_sigterm(ws: Harness, marker: str) -> None:
    out, elapsed = timed(ws, command=f"trap '' TERM; sleep {marker} & sleep {marker}", timeout=0.3)
    assert out.endswith("[timed out after 0.3 s; process group killed]")
    assert elapsed < 4
    assert live_processes(f"sleep {marker}") == []


def test_default_timeout_comes_from_context(ws: Harness) -> None:
    ctx = dataclasses.replace(ws.ctx, bash_timeout=0.3)
    assert bash.fn(ctx, command="sleep 5").endswith("[timed out after 0.3 s; process group killed]")


def test_model_timeout_is_capped(ws: Harness) -> None:
    ctx = dataclasses.replace(ws.ctx, max_timeout=0.4)
    out = bash.fn(ctx, **bash.bind({"command": "sleep 5", "timeout": 100}))
    assert out == (
        "(no output)\n[timeout capped at 0.4 s]\n[timed out after 0.4 s; process group killed]"
    )


def test_cancel_interrupts_and_kills_the_group(ws: Harness, marker: str) -> None:
    timer = threading.Timer(0.3, ws.ctx.cancel.set)
    timer.start()
    try:
        out, elapsed = timed(ws, command=f"sleep {marker} & sleep {marker}", timeout=30)
    finally:
        timer.cancel()
    assert out == "(no output)\n[interrupted; process group killed]"
    assert elapsed < 3
    assert live_processes(f"sleep {marker}") == []


def test_cancel_already_set_runs_nothing(ws: Harness) -> None:
    ws.ctx.cancel.set()
    out = ws.call(bash, command="touch ran")
    assert out == "(no output)\n[interrupted; process group killed]"
    assert not (ws.root / "ran").exists()


def test_huge_output_is_bounded(ws: Harness) -> None:
    command = "head -c 20000000 /dev/zero | tr '\\0' a; echo; echo END"
    out, elapsed = timed(ws, command=command)
    dropped = 20_000_005 - 2 * (1 << 20)
    assert out.startswith("a" * 1000)
    assert f"[... {dropped:,} bytes of output dropped from the middle ...]" in out
    assert out.endswith("a\nEND\n[exit code: 0]")
    assert len(out) < 2_200_000
    assert elapsed < 10


def test_background_job_holding_the_output_is_killed(ws: Harness, marker: str) -> None:
    out, elapsed = timed(ws, command=f"sleep {marker} & echo started")
    assert out == (
        "started\n[exit code: 0]\n[the output was still held open after the shell exited, "
        "so the background processes left in the command's process group were killed; "
        "run them as `nohup cmd > file.log 2>&1 &` to keep them running]"
    )
    assert elapsed < 3
    assert live_processes(f"sleep {marker}") == []


def test_detached_background_job_survives(ws: Harness, marker: str) -> None:
    out, elapsed = timed(ws, command=f"nohup sleep {marker} > /dev/null 2>&1 &")
    assert out == "(no output)\n[exit code: 0]"
    assert elapsed < 1
    assert len(live_processes(f"sleep {marker}")) == 1  # the fixture kills it afterwards


def test_escaped_grandchild_holding_the_pipe_does_not_hang(ws: Harness, marker: str) -> None:
    out, elapsed = timed(ws, command=f"setsid sleep {marker} & echo started", timeout=30)
    assert out.startswith("started\n[exit code: 0]")
    assert elapsed < 3


def test_setsid_process_is_not_claimed_killed(ws: Harness, marker: str) -> None:
    out = ws.call(bash, command=f"setsid sleep {marker} & echo started", timeout=30)
    assert "killed" not in out.replace("not killed", "")
    assert out.endswith(
        "[a process outside the command's process group (e.g. started with setsid) still "
        "holds the output open; it was not killed and may still be running; what it "
        "prints from now on is not shown]"
    )
    assert len(live_processes(f"sleep {marker}")) == 1  # true: it still runs


def test_group_killed_but_setsid_process_survives_and_both_are_said(
    ws: Harness, marker: str
) -> None:
    out = ws.call(bash, command=f"sleep {marker} & setsid sleep {marker} & echo started")
    lines = out.splitlines()
    assert lines[:2] == ["started", "[exit code: 0]"]
    assert "background processes left in the command's process group were killed" in lines[2]
    assert lines[3].startswith("[a process outside the command's process group")
    assert len(live_processes(f"sleep {marker}")) == 1  # the setsid one


def test_misuse_is_a_tool_error(ws: Harness) -> None:
    with pytest.raises(ToolError, match="empty"):
        ws.call(bash, command="   ")
    with pytest.raises(ToolError, match="positive"):
        ws.call(bash, command="true", timeout=0)


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_timeout_is_refused(ws: Harness, timeout: float) -> None:
    # Called directly: the tool must not rely on argument binding to catch this.
    with pytest.raises(ToolError, match=r"timeout=.* is invalid; give a finite positive"):
        bash.fn(ws.ctx, command="touch ran", timeout=timeout)
    assert not (ws.root / "ran").exists()


@pytest.mark.parametrize(
    "raw",
    ['{"command": "touch ran", "timeout": NaN}', '{"command": "touch ran", "timeout": "inf"}'],
)
def test_non_finite_timeout_from_json_is_refused(ws: Harness, raw: str) -> None:
    arguments = json.loads(raw)  # Python's json accepts NaN and Infinity
    with pytest.raises(ToolError, match="finite"):
        bash.fn(ws.ctx, **bash.bind(arguments))
    assert not (ws.root / "ran").exists()


def test_nul_byte_in_command_is_the_callers_fault(ws: Harness) -> None:
    with pytest.raises(ToolError, match="The command contains a NUL byte"):
        ws.call(bash, command="echo a\x00b")


def test_lone_surrogate_in_command_is_the_callers_fault(ws: Harness) -> None:
    with pytest.raises(ToolError, match=r"not valid Unicode \(a lone surrogate, U\+D83D"):
        ws.call(bash, command="echo \ud83d")

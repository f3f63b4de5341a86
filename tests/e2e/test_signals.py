"""Signals: Ctrl-C stops a step, SIGTERM stops the program; no process is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def _processes() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout


def _wait_for(text: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while text not in _processes():
        assert time.monotonic() < deadline, f"{text!r} never started"
        time.sleep(0.05)


def _nap(offset: int) -> str:
    """A sleep length unique to this test, so `ps` finds exactly our processes."""
    return f"{400 + offset + os.getpid() % 1000}.5"


def test_sigterm_stops_the_run_and_kills_the_command(cli_env, buggy_repo: Path, transcript) -> None:
    nap = _nap(1)
    script = [Turn(tool_calls=(ScriptedCall("bash", {"command": f"sleep {nap}; echo x"}),))]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether", "-p", "go", "--output-format", "json"],
            cwd=buggy_repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_for(f"sleep {nap}")
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["stop_reason"] == "interrupted"
    assert nap not in _processes()
    entries = transcript()
    assert entries[-2]["message"]["role"] == "tool"
    assert entries[-1]["stop_reason"] == "interrupted"


def test_interactive_ctrl_c_stops_the_step_and_prompts_again(cli_env, tmp_path: Path) -> None:
    nap = _nap(2)
    script = [
        Turn(tool_calls=(ScriptedCall("bash", {"command": f"sleep {nap}; echo x"}),)),
        Turn(text="Second answer."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None
        proc.stdin.write("run the long thing\n")
        proc.stdin.flush()
        _wait_for(f"sleep {nap}")
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        stdout, stderr = proc.communicate("are you there?\n", timeout=20)
        second = endpoint.requests[-1].body["messages"]
    assert proc.returncode == 0, stderr
    assert nap not in _processes()
    assert "Second answer." in stdout
    # The interrupted call was closed before the next request went out.
    roles = [m["role"] for m in second]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert "nterrupted" in second[3]["content"]


def test_interactive_sigterm_at_the_prompt_ends_the_program(cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="hi")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = subprocess.Popen(
            [sys.executable, "-m", "tether"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 20
        while not list((tmp_path / "state" / "sessions").glob("*.jsonl")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr

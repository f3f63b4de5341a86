"""Signals: Ctrl-C stops a step, SIGTERM stops the program; no process is left behind,
and every tool call keeps exactly one result."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def bash(command: str, call_id: str | None = None) -> ScriptedCall:
    return ScriptedCall("bash", {"command": command}, id=call_id)


def test_ctrl_c_during_a_tool_closes_the_call(
    spawn_cli, processes, cli_env, buggy_repo: Path, transcript
) -> None:
    nap = processes.nap()
    with ScriptedEndpoint([Turn(tool_calls=(bash(f"sleep {nap}; echo never"),))]) as endpoint:
        proc = spawn_cli(
            ["-p", "go", "--output-format", "json", "--permission-mode", "auto"],
            cwd=buggy_repo,
            env={**cli_env, "TETHER_BASE_URL": endpoint.url},
        )
        processes.wait_for(f"sleep {nap}")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["stop_reason"] == "interrupted"
    assert nap not in processes.text()  # neither bash nor its sleep is left behind
    entries = transcript()
    tool = [e["message"] for e in entries if e["type"] == "message"][-1]
    assert tool["role"] == "tool" and "nterrupted" in tool["content"]
    assert entries[-1]["stop_reason"] == "interrupted"


def test_sigterm_stops_the_run_and_kills_the_command(
    spawn_cli, processes, cli_env, buggy_repo: Path, transcript
) -> None:
    nap = processes.nap()
    with ScriptedEndpoint([Turn(tool_calls=(bash(f"sleep {nap}; echo x"),))]) as endpoint:
        proc = spawn_cli(
            ["-p", "go", "--output-format", "json", "--permission-mode", "auto"],
            cwd=buggy_repo,
            env={**cli_env, "TETHER_BASE_URL": endpoint.url},
        )
        processes.wait_for(f"sleep {nap}")
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr
    assert json.loads(stdout)["stop_reason"] == "interrupted"
    assert nap not in processes.text()
    entries = transcript()
    assert entries[-2]["message"]["role"] == "tool"
    assert entries[-1]["stop_reason"] == "interrupted"


def test_a_second_ctrl_c_does_not_orphan_a_stubborn_command(
    spawn_cli, processes, cli_env, tmp_path: Path
) -> None:
    nap = processes.nap()
    command = f"trap '' TERM INT; sleep {nap}; echo x"
    with ScriptedEndpoint([Turn(tool_calls=(bash(command),))]) as endpoint:
        proc = spawn_cli(
            ["-p", "go", "--permission-mode", "auto"],
            cwd=tmp_path,
            env={**cli_env, "TETHER_BASE_URL": endpoint.url},
        )
        processes.wait_for(f"sleep {nap}")
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert proc.returncode == 130
    time.sleep(0.2)
    assert nap not in processes.text()


def test_reused_call_ids_still_get_one_result_each_on_ctrl_c(
    spawn_cli, processes, cli_env, tmp_path: Path, transcript
) -> None:
    nap = processes.nap()
    first = (
        ScriptedCall("list_files", {}, id="call_0"),
        ScriptedCall("list_files", {}, id="call_1"),
    )
    second = (bash(f"sleep {nap}; echo x", "call_0"), ScriptedCall("list_files", {}, id="call_1"))
    with ScriptedEndpoint([Turn(tool_calls=first), Turn(tool_calls=second)]) as endpoint:
        proc = spawn_cli(
            ["-p", "go", "--permission-mode", "auto"],
            cwd=tmp_path,
            env={**cli_env, "TETHER_BASE_URL": endpoint.url},
        )
        processes.wait_for(f"sleep {nap}")
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert proc.returncode == 130
    messages = [e["message"] for e in transcript() if e["type"] == "message"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "tool"]
    assert "nterrupted" in messages[-2]["content"] and "Not run" in messages[-1]["content"]


def test_interactive_ctrl_c_stops_the_step_and_prompts_again(
    spawn_cli, processes, cli_env, tmp_path: Path
) -> None:
    nap = processes.nap()
    script = [Turn(tool_calls=(bash(f"sleep {nap}; echo x"),)), Turn(text="Second answer.")]
    with ScriptedEndpoint(script) as endpoint:
        proc = spawn_cli(
            ["--permission-mode", "auto"],
            cwd=tmp_path,
            env={**cli_env, "TETHER_BASE_URL": endpoint.url},
            stdin=True,
        )
        assert proc.stdin is not None
        proc.stdin.write("run the long thing\n")
        proc.stdin.flush()
        processes.wait_for(f"sleep {nap}")
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        stdout, stderr = proc.communicate("are you there?\n", timeout=20)
        second = endpoint.requests[-1].body["messages"]
    assert proc.returncode == 0, stderr
    assert nap not in processes.text()
    assert "Second answer." in stdout
    # The interrupted call was closed before the next request went out.
    roles = [m["role"] for m in second]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert "nterrupted" in second[3]["content"]


def test_interactive_sigterm_at_the_prompt_ends_the_program(
    spawn_cli, cli_env, tmp_path: Path
) -> None:
    with ScriptedEndpoint([Turn(text="hi")]) as endpoint:
        proc = spawn_cli(
            ["--permission-mode", "auto"],
            cwd=tmp_path,
            env={**cli_env, "TETHER_BASE_URL": endpoint.url},
            stdin=True,
        )
        deadline = time.monotonic() + 20
        while not list((tmp_path / "state" / "sessions").glob("*.jsonl")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.3)
        proc.terminate()
        _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stderr

"""A subagent's approval questions are asked on the main thread, interactively."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

MARKER = "one task ("


def model(work: Path) -> Any:
    def step(body: dict[str, Any]) -> Turn:
        messages = body["messages"]
        results = [m for m in messages if m["role"] == "tool"]
        if MARKER in messages[0]["content"]:  # the child
            if results:
                return Turn(text="Child: " + results[-1]["content"][:60])
            command = f"touch {work}/made-by-child"
            return Turn(text="Touching.", tool_calls=(ScriptedCall("bash", {"command": command}),))
        if messages[-1]["role"] == "user" and messages[-1]["content"] != "delegate":
            return Turn(text=f"You said: {messages[-1]['content']}")
        if not results:
            one = {"description": "touch it", "prompt": "Touch the file.", "tools": ["bash"]}
            return Turn(text="Delegating.", tool_calls=(ScriptedCall("task", one),))
        return Turn(text="Parent: " + results[-1]["content"][:80])

    return step


def start(cli_env: dict[str, str], work: Path, url: str) -> subprocess.Popen[str]:
    env = {**cli_env, "TETHER_BASE_URL": url}
    return subprocess.Popen(
        [sys.executable, "-m", "tether"],
        cwd=work,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


class Reader:
    """Collects stdout on a thread, so a test can wait for a prompt."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.text = ""
        self._proc = proc
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        assert self._proc.stdout is not None
        while True:
            char = self._proc.stdout.read(1)
            if not char:
                return
            self.text += char

    def wait_for(self, needle: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text:
            assert time.monotonic() < deadline, f"{needle!r} never came: {self.text[-800:]}"
            time.sleep(0.02)


def asked(cli_env: dict[str, str], work: Path, url: str) -> tuple[subprocess.Popen[str], Reader]:
    """An interactive tether asked to delegate, once the child's question is shown."""
    proc = start(cli_env, work, url)
    out = Reader(proc)
    assert proc.stdin is not None
    proc.stdin.write("delegate\n")
    proc.stdin.flush()
    out.wait_for("Allow?")
    return proc, out


def test_the_user_approves_a_subagents_command(cli_env: dict[str, str], tmp_path: Path) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with ScriptedEndpoint([model(work)] * 10) as endpoint:
        proc, out = asked(cli_env, work, endpoint.url)
        assert proc.stdin is not None
        proc.stdin.write("y\n")
        proc.stdin.close()
        proc.wait(30)
        out.wait_for("Parent: Child:")
    assert proc.returncode == 0
    assert (work / "made-by-child").exists()
    assert "? bash wants to run: touch" in out.text


def test_ctrl_c_at_a_subagents_question_leaves_the_next_line_to_the_prompt(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    with ScriptedEndpoint([model(work)] * 10) as endpoint:
        proc, out = asked(cli_env, work, endpoint.url)
        assert proc.stdin is not None
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.stdin.write("hello there\n")
        proc.stdin.close()
        proc.wait(30)
        users = [
            m["content"]
            for r in endpoint.requests
            for m in r.body["messages"][-1:]
            if m["role"] == "user"
        ]
    assert "hello there" in users, json.dumps(users)
    assert "You said: hello there" in out.text
    assert not (work / "made-by-child").exists()

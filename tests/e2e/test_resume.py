"""Sessions that survive: kill -9 at any point, then `--continue` finishes the work.

The scripted model is a function of the conversation it is sent: it counts the lines
its earlier calls wrote (from the results it can see) and asks for the next one,
each call carrying a token no other call has. So a call tether ran twice would show
its token twice in `log.txt`, and a completed turn lost on resume would be missing
from the last request.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

WRITES = 3
WROTE = re.compile(r"wrote (\d+)-([0-9a-f]{8})")


class Model:
    """The scripted model of one trial; `calling` is set while it "thinks"."""

    def __init__(self, think_s: float) -> None:
        self.think_s = think_s
        self.calling = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Turn:
        self.calling.set()
        time.sleep(self.think_s)
        results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        done = {int(k) for k, _ in WROTE.findall(json.dumps(results))}
        step = len(done) + 1
        if step > WRITES:
            return Turn(text="All lines are written.")
        token = f"{step}-{uuid.uuid4().hex[:8]}"
        command = f"touch started-{token}; sleep 0.2; echo {token} >> log.txt; echo wrote {token}"
        return Turn(
            text=f"Writing line {step}.", tool_calls=(ScriptedCall("bash", {"command": command}),)
        )


def tether(env: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tether", *args, "--permission-mode", "auto"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def trial(cli_env: dict[str, str], root: Path, how: str, seed: int) -> dict[str, Any]:
    """One killed run and its resumption; what happened, for the assertions."""
    rng = random.Random(seed)
    work, state = root / "work", root / "state"
    work.mkdir(parents=True)
    model = Model(think_s=0.08)
    with ScriptedEndpoint([model] * 40) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_HOME": str(state)}
        proc = tether(env, work, "-p", f"Write {WRITES} lines to log.txt, one per step.")
        if how == "model":  # during a model call (the request is in, the answer not yet)
            for _ in range(rng.randint(1, WRITES)):
                model.calling.clear()
                assert model.calling.wait(20), "the model was never called"
            time.sleep(rng.uniform(0.0, 0.1))
        elif how == "tool":  # while a command runs
            deadline = time.monotonic() + 20
            wanted = rng.randint(1, WRITES)
            while len(list(work.glob("started-*"))) < wanted:
                assert time.monotonic() < deadline and proc.poll() is None, "no command started"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.15))
        else:  # anywhere, writes included
            time.sleep(rng.uniform(0.05, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        before = (state / "sessions").glob("*.jsonl")
        recorded = [
            token
            for path in before
            for line in path.read_text(errors="replace").splitlines()
            for token in (f"{k}-{h}" for k, h in WROTE.findall(line))
            if '"role":"tool"' in line
        ]
        resumed, continued = 0, False
        while True:
            resumed += 1
            assert resumed <= 3, "--continue did not finish the task"
            # Killed before its transcript existed: there is nothing to continue yet.
            again = ["--continue"] if list((state / "sessions").glob("*.jsonl")) else []
            continued = continued or bool(again)
            done = tether(env, work, *again, "-p", "Continue.", "--output-format", "json")
            out, err = done.communicate(timeout=60)
            assert done.returncode == 0, err
            if json.loads(out)["result"] == "All lines are written.":
                break
        last = json.dumps(endpoint.requests[-1].body["messages"])
    lines = (work / "log.txt").read_text().split() if (work / "log.txt").exists() else []
    return {
        "recorded": recorded,
        "lines": lines,
        "last": last,
        "state": state,
        "continued": continued,
    }


@pytest.mark.parametrize(
    ("how", "seed"), [(h, s) for h in ("model", "tool", "random") for s in range(8)]
)
def test_kill_9_then_continue_loses_no_turn_and_runs_nothing_twice(
    cli_env: dict[str, str], tmp_path: Path, how: str, seed: int
) -> None:
    got = trial(cli_env, tmp_path, how, seed)
    lines = got["lines"]
    # Nothing ran twice: every token is one call's.
    assert len(lines) == len(set(lines)), lines
    # Every step that finished before the kill is in the context the model last saw...
    for token in got["recorded"]:
        assert f"wrote {token}" in got["last"], token
    # ...and the work is done: each line number once (a call cut by the kill may or may
    # not have written its line; the model then wrote it again under a new token).
    numbers = sorted(int(t.split("-")[0]) for t in lines)
    assert set(numbers) == set(range(1, WRITES + 1)), numbers
    # Every call in the last request has exactly one result.
    messages = json.loads(got["last"])
    calls = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(results) and len(set(results)) == len(results)
    # One session, resumed in place; its transcript reads back whole.
    files = list((got["state"] / "sessions").glob("*.jsonl"))
    assert len(files) == 1
    entries = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert entries[0]["type"] == "header"
    # (A kill before the transcript existed leaves nothing to continue: a fresh start.)
    assert any(e["type"] == "resume" for e in entries) == got["continued"]


def test_a_torn_last_line_is_cut_and_an_interrupted_call_closed(
    cli_env: dict[str, str], tmp_path: Path
) -> None:
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    first = Turn(text="Listing.", tool_calls=(ScriptedCall("bash", {"command": "ls"}),))
    with ScriptedEndpoint([first, Turn(text="Listed."), Turn(text="Resumed fine.")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_HOME": str(state)}
        proc = tether(env, work, "-p", "List the files.")
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""
        path = next((state / "sessions").glob("*.jsonl"))
        lines = path.read_text().splitlines(keepends=True)
        # As if killed while writing: the last result gone, half an entry instead.
        cut = [i for i, line in enumerate(lines) if '"role":"tool"' in line][-1]
        path.write_text("".join(lines[:cut]) + '{"type":"message","message":{"role":"to')
        done = tether(env, work, "--continue", "-p", "Go on.", "--output-format", "json")
        out, err = done.communicate(timeout=60)
        last = endpoint.requests[-1].body["messages"]
    assert done.returncode == 0, err
    assert json.loads(out)["result"] == "Resumed fine."
    interrupted = [m for m in last if m["role"] == "tool"]
    assert len(interrupted) == 1 and interrupted[0]["content"].startswith("Interrupted:")
    entries = [json.loads(line) for line in path.read_text().splitlines()]  # all whole again
    resume = next(e for e in entries if e["type"] == "resume")
    assert resume["torn_bytes"] > 0 and resume["closed"] == [interrupted[0]["tool_call_id"]]


def test_two_processes_cannot_append_to_one_session(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    model = Model(think_s=30)
    with ScriptedEndpoint([model]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_HOME": str(state)}
        busy = tether(env, work, "-p", "Think for a long time.")
        try:
            assert model.calling.wait(20)
            listed = run_cli(["sessions", "--json"], cwd=work, env=env)
            (session,) = json.loads(listed.stdout)
            assert session["status"] == "running"
            second = tether(env, work, "--resume", session["session_id"], "-p", "Me too.")
            _, err = second.communicate(timeout=60)
            assert second.returncode == 3
            assert "in use by another tether process" in err
        finally:
            busy.send_signal(signal.SIGKILL)
            busy.wait(10)
    listed = run_cli(["sessions"], cwd=work, env=env)
    assert "interrupted" in listed.stdout and "Think for a long time." in listed.stdout


def test_continue_without_a_session_and_resume_of_another_workspace_fail_clearly(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1"}
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    proc = run_cli(["--continue", "-p", "x"], cwd=a, env=env)
    assert proc.returncode == 2 and "no earlier session" in proc.stderr
    with ScriptedEndpoint([Turn(text="hi")]) as endpoint:
        env["TETHER_BASE_URL"] = endpoint.url
        assert run_cli(["-p", "x"], cwd=a, env=env).returncode == 0
    session = next((Path(env["TETHER_HOME"]) / "sessions").glob("*.jsonl")).stem
    proc = run_cli(["--resume", session, "-p", "y"], cwd=b, env=env)
    assert proc.returncode == 3 and f"ran in {a}" in proc.stderr
    proc = run_cli(["--resume", "nope", "-p", "y"], cwd=b, env=env)
    assert proc.returncode == 3 and "No session nope" in proc.stderr
    assert os.listdir(b) == []


def test_resume_refuses_paths_and_subagent_sessions_and_continue_skips_empty_ones(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    with ScriptedEndpoint([Turn(text="The word is PAPAYA."), Turn(text="It was PAPAYA.")]) as ep:
        env = {**cli_env, "TETHER_BASE_URL": ep.url, "TETHER_HOME": str(state)}

        def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
            return run_cli(list(args), cwd=work, env=env, input=stdin)

        assert run("-p", "remember a word").returncode == 0
        assert run(stdin="").returncode == 0  # opened and left at once: an empty session
        answer = run("--continue", "-p", "what was the word?", "--output-format", "json")
        sent = [m["content"] for m in ep.requests[-1].body["messages"] if m["role"] == "user"]
    assert answer.returncode == 0, answer.stderr
    assert sent == ["remember a word", "what was the word?"]  # not the empty one
    for bad in ("../../etc/passwd", "/tmp/x", "a/b"):
        proc = run("--resume", bad, "-p", "x")
        assert proc.returncode == 3 and "is not a session id" in proc.stderr, proc.stderr
    sessions = state / "sessions"
    child = sessions / "20990101-000000-abcdef.task1.jsonl"
    child.write_text(
        json.dumps({"type": "header", "parent_session": "p1", "workspace": str(work)}) + "\n"
    )
    proc = run("--resume", child.stem, "-p", "x")
    assert proc.returncode == 3 and "is a subagent's" in proc.stderr

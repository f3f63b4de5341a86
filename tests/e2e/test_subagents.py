"""Subagents through the real CLI: two at once, only their answers come back, all on record."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

SUBAGENT = re.compile(r"one task \(([^)]*)\)")


def model(body: dict[str, Any]) -> Turn:
    """Parent and children share the endpoint; each is told apart by its system prompt."""
    messages = body["messages"]
    system = messages[0]["content"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    child = SUBAGENT.search(system)
    if child is not None:
        name = child[1]  # "look at a.txt"
        path = name.split()[-1]
        if not results:
            time.sleep(0.4)  # long enough that two children overlap only if run together
            return Turn(text="Reading.", tool_calls=(ScriptedCall("read_file", {"path": path}),))
        lines = results[0].count("\n")
        return Turn(text=f"{path} has {lines} lines; it mentions a secret marker.")
    if not results:
        calls = tuple(
            ScriptedCall(
                "task",
                {"description": f"look at {p}", "prompt": f"How long is {p}? Answer briefly."},
            )
            for p in ("a.txt", "b.txt")
        )
        return Turn(text="Delegating.", tool_calls=calls)
    return Turn(text="Summary: " + " | ".join(results))


def test_two_subagents_run_together_and_the_parent_sees_only_their_answers(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("MARKER_ALPHA\n" * 3)
    (work / "b.txt").write_text("MARKER_BETA\n" * 5)
    with ScriptedEndpoint([model] * 10) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(
            ["-p", "How long are a.txt and b.txt?", "--output-format", "json"], cwd=work, env=env
        )
        requests = endpoint.requests
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (
        out["result"].startswith("Summary: a.txt has 3 lines")
        and "b.txt has 5 lines" in out["result"]
    )
    parent = [r for r in requests if not SUBAGENT.search(r.body["messages"][0]["content"])]
    children = [r for r in requests if SUBAGENT.search(r.body["messages"][0]["content"])]
    assert len(parent) == 2 and len(children) == 4
    # Only the answers reached the parent: not a byte of what the children read.
    assert all("MARKER" not in json.dumps(r.body) for r in parent)
    assert any("MARKER_ALPHA" in json.dumps(r.body) for r in children)
    # Together: each child's first request came before either child's second.
    firsts = sorted(r.received_at for r in children)[:2]
    seconds = sorted(r.received_at for r in children)[2:]
    assert max(firsts) < min(seconds)
    # Children have read-only tools, and no task tool (no recursion).
    child_tools = {t["function"]["name"] for t in children[0].body["tools"]}
    assert child_tools == {"read_file", "list_files", "search_files"}
    # On record: one transcript each, linked from the parent's; usage rolled up.
    sessions = tmp_path / "state" / "sessions"
    parent_file = next(p for p in sessions.glob("*.jsonl") if ".task" not in p.name)
    entries = [json.loads(line) for line in parent_file.read_text().splitlines()]
    links = [e for e in entries if e["type"] == "subagent"]
    assert sorted(e["description"] for e in links) == ["look at a.txt", "look at b.txt"]
    child_input = 0
    for link in links:
        child = [json.loads(line) for line in Path(link["transcript"]).read_text().splitlines()]
        assert child[0]["parent_session"] == out["session_id"]
        assert any("MARKER" in json.dumps(e) for e in child)
        assert link["stop_reason"] == "completed"
        child_input += link["usage"]["input_tokens"]
    own = sum(
        e["usage"]["input_tokens"] for e in entries if e.get("type") == "message" and "usage" in e
    )
    assert child_input > 0 and out["usage"]["input_tokens"] == own + child_input
    listed = run_cli(["sessions", "--json"], cwd=work, env=env)
    assert [s["session_id"] for s in json.loads(listed.stdout)] == [out["session_id"]]


def test_a_subagent_asking_for_tools_it_cannot_have_is_refused(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    script = [
        Turn(
            text="Delegating.",
            tool_calls=(
                ScriptedCall(
                    "task", {"description": "x", "prompt": "y", "tools": ["task", "nope"]}
                ),
            ),
        ),
        Turn(text="ok"),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "go"], cwd=work, env=env)
        (result,) = [m for m in endpoint.requests[-1].body["messages"] if m["role"] == "tool"]
    assert proc.returncode == 0, proc.stderr
    assert "cannot have 'task', 'nope'" in result["content"] and "read_file" in result["content"]


def test_a_subagent_at_its_turn_limit_is_asked_once_for_a_summary(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    (work / ".tether").mkdir(parents=True)
    (work / ".tether/config.toml").write_text("[subagents]\nmax_turns = 1\n")
    (work / "a.txt").write_text("MARKER_ALPHA\n")

    def limited(body: dict[str, Any]) -> Turn:
        if body.get("tool_choice") == "none":
            return Turn(text="Partial: I read a.txt only.")
        return model(body)

    with ScriptedEndpoint([limited] * 10) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "go", "--output-format", "json"], cwd=work, env=env)
        summary_requests = [r for r in endpoint.requests if r.body.get("tool_choice") == "none"]
    assert proc.returncode == 0, proc.stderr
    assert len(summary_requests) == 2  # one per child (the parent sends two tasks), once each
    result = json.loads(proc.stdout)["result"]
    assert "[the subagent stopped at a limit: max_turns]" in result
    assert "Partial: I read a.txt only." in result


def sleepy(marker_dir: Path, names: tuple[str, ...] = ("one", "two")) -> Any:
    """Parent: tasks allowed bash; each child runs a long command, then answers."""

    def step(body: dict[str, Any]) -> Turn:
        messages = body["messages"]
        child = SUBAGENT.search(messages[0]["content"])
        results = [m for m in messages if m["role"] == "tool"]
        if body.get("tool_choice") == "none":
            return Turn(text="Summary.")
        if child is not None:
            if results:
                return Turn(text="Child done.")
            name = child[1].split()[-1]
            command = f"touch {marker_dir}/started-{name}; sleep 30; touch {marker_dir}/ran-{name}"
            return Turn(text="Working.", tool_calls=(ScriptedCall("bash", {"command": command}),))
        if results:
            return Turn(text="Parent done.")
        calls = tuple(
            ScriptedCall("task", {"description": f"work {n}", "prompt": "Work.", "tools": ["bash"]})
            for n in names
        )
        return Turn(text="Delegating.", tool_calls=calls)

    return step


def test_ctrl_c_stops_subagents_running_at_once_and_every_call_gets_a_result(
    spawn_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    import signal

    work = tmp_path / "w"
    work.mkdir()
    with ScriptedEndpoint([sleepy(work)] * 12) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = spawn_cli(["-p", "go", "--permission-mode", "auto"], cwd=work, env=env)
        deadline = time.monotonic() + 30
        while len(list(work.glob("started-*"))) < 2:
            if proc.poll() is not None or time.monotonic() > deadline:
                out, err = proc.communicate(timeout=30)
                raise AssertionError(f"children never started: {proc.returncode} {out} {err}")
            time.sleep(0.05)
        began = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        took = time.monotonic() - began
    assert proc.returncode == 130
    assert took < 10, took  # not the children's 30 s
    time.sleep(0.5)
    assert not list(work.glob("ran-*"))  # their commands were stopped, not orphaned
    parent = next(
        p for p in (tmp_path / "state" / "sessions").glob("*.jsonl") if ".task" not in p.name
    )
    entries = [json.loads(line) for line in parent.read_text().splitlines()]
    calls = [
        c["id"]
        for e in entries
        if e["type"] == "message"
        for c in e["message"].get("tool_calls", [])
    ]
    results = [
        e["message"]["tool_call_id"]
        for e in entries
        if e["type"] == "message" and e["message"]["role"] == "tool"
    ]
    assert sorted(calls) == sorted(results) and len(calls) == 2


def test_a_subagent_spends_from_the_parents_token_budget(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()

    def busy(body: dict[str, Any]) -> Turn:
        messages = body["messages"]
        if body.get("tool_choice") == "none":
            return Turn(text="Stopped early.")
        if SUBAGENT.search(messages[0]["content"]):
            return Turn(text="More.", tool_calls=(ScriptedCall("list_files", {}),))
        if any(m["role"] == "tool" for m in messages):
            return Turn(text="Parent done.")
        one = {"description": "look around", "prompt": "Keep looking."}
        return Turn(text="Delegating.", tool_calls=(ScriptedCall("task", one),))

    with ScriptedEndpoint([busy] * 60) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "go", "--max-tokens", "20000", "--output-format", "json"]
        proc = run_cli(args, cwd=work, env=env)
        child_requests = [
            r for r in endpoint.requests if SUBAGENT.search(r.body["messages"][0]["content"])
        ]
    out = json.loads(proc.stdout)
    assert proc.returncode == 5 and out["stop_reason"] == "max_tokens", proc.stderr
    assert len(child_requests) < 20  # the child stopped at what was left, not at 30 turns


def test_subagents_work_again_in_a_resumed_session(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("MARKER_ALPHA\n")
    one = {"description": "look at a.txt", "prompt": "How long is a.txt?"}

    def step(body: dict[str, Any]) -> Turn:
        messages = body["messages"]
        if SUBAGENT.search(messages[0]["content"]):
            return model(body)
        if messages[-1]["role"] == "user":
            return Turn(text="Delegating.", tool_calls=(ScriptedCall("task", one),))
        return Turn(text="Answered: " + messages[-1]["content"])

    with ScriptedEndpoint([step] * 20) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        first = run_cli(["-p", "first", "--output-format", "json"], cwd=work, env=env)
        second = run_cli(
            ["--continue", "-p", "again", "--output-format", "json"], cwd=work, env=env
        )
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["result"].startswith("Answered: a.txt has 1 lines")
    names = sorted(p.name for p in (tmp_path / "state" / "sessions").glob("*.task*.jsonl"))
    assert len(names) == 2 and names[0] != names[1]


def test_the_user_sees_what_subagents_do(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    (work / "a.txt").write_text("x\n")
    (work / "b.txt").write_text("y\n")
    with ScriptedEndpoint([model] * 10) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        streamed = run_cli(["-p", "go", "--output-format", "stream-json"], cwd=work, env=env)
        shown = run_cli(["-p", "go", "-v"], cwd=work, env=env)
    events = [json.loads(line) for line in streamed.stdout.splitlines()]
    steps = [e for e in events if e["type"] == "subagent_step"]
    assert sorted(e["description"] for e in steps) == ["look at a.txt", "look at b.txt"]
    assert all(e["call"]["name"] == "read_file" for e in steps)
    assert "↳ [look at a.txt] read_file: a.txt" in shown.stderr


def test_tasks_still_queued_at_ctrl_c_never_start(
    spawn_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    import signal

    work = tmp_path / "w"
    (work / ".tether").mkdir(parents=True)
    (work / ".tether/config.toml").write_text("[subagents]\nconcurrency = 1\n")
    with ScriptedEndpoint([sleepy(work, ("one", "two", "three"))] * 12) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = spawn_cli(["-p", "go", "--permission-mode", "auto"], cwd=work, env=env)
        deadline = time.monotonic() + 30
        while not list(work.glob("started-*")):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        children = [
            r for r in endpoint.requests if SUBAGENT.search(r.body["messages"][0]["content"])
        ]
    assert proc.returncode == 130
    time.sleep(0.5)
    assert len(list(work.glob("started-*"))) == 1 and len(children) == 1

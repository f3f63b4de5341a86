"""Limits end a run with a tool-less summary call; the loop guard nudges repeats."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def forever(request: dict[str, Any]) -> Turn:
    """A model that always wants one more listing, unless tools are switched off."""
    if request.get("tool_choice") == "none":
        return Turn(text="Summary: I listed files; nothing else was done.")
    n = len(request["messages"])
    return Turn(text="More.", tool_calls=(ScriptedCall("list_files", {"pattern": f"*{n}*"}),))


def test_max_turns_stops_with_a_summary(run_cli, cli_env, buggy_repo: Path, transcript) -> None:
    with ScriptedEndpoint([forever] * 10) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(
            ["-p", "go", "--max-turns", "3", "--output-format", "json"], cwd=buggy_repo, env=env
        )
        bodies = [r.body for r in endpoint.requests]
    assert proc.returncode == 5, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "max_turns"
    assert out["turns"] == 3
    assert out["result"] == "Summary: I listed files; nothing else was done."
    assert len(bodies) == 4
    final = bodies[-1]
    assert final["tool_choice"] == "none"
    # The tool list is unchanged for the summary call (stable, cacheable prefix).
    assert final["tools"] == bodies[0]["tools"]
    assert "turn limit (3)" in final["messages"][-1]["content"]
    assert "stopped (max_turns)" in proc.stderr
    assert transcript()[-1]["stop_reason"] == "max_turns"


def test_max_tokens_stops(run_cli, cli_env, buggy_repo: Path) -> None:
    with ScriptedEndpoint([forever] * 10) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(
            ["-p", "go", "--max-tokens", "1", "--output-format", "json"], cwd=buggy_repo, env=env
        )
    assert proc.returncode == 5
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "max_tokens" and out["turns"] == 1


def test_timeout_cuts_a_long_command(run_cli, cli_env, buggy_repo: Path) -> None:
    script = [
        Turn(tool_calls=(ScriptedCall("bash", {"command": "sleep 30"}),)),
        forever,
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        started = time.monotonic()
        proc = run_cli(
            ["-p", "go", "--timeout", "2", "--output-format", "json", "--allow", "Bash(sleep:*)"],
            cwd=buggy_repo,
            env=env,
        )
        elapsed = time.monotonic() - started
        bodies = [r.body for r in endpoint.requests]
    assert proc.returncode == 5, proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "timeout"
    assert elapsed < 15
    tool_results = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert "timed out" in tool_results[0]["content"]


def test_loop_guard_notes_the_third_identical_call(run_cli, cli_env, buggy_repo: Path) -> None:
    same = Turn(tool_calls=(ScriptedCall("read_file", {"path": "shop.py"}),))
    script = [same, same, same, Turn(text="ok")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "go"], cwd=buggy_repo, env=env)
        last = endpoint.requests[-1].body["messages"]
    assert proc.returncode == 0, proc.stderr
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert "3 times in a row" not in results[1]
    assert "3 times in a row" in results[2]


def test_timeout_reaches_into_a_hanging_model_call(run_cli, cli_env, buggy_repo: Path) -> None:
    from tether.models.scripted import Fault

    script = [Turn(text="Summary: the endpoint hung; nothing was done.")]
    with ScriptedEndpoint(script, faults={0: Fault("hang", hang_s=30)}) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        started = time.monotonic()
        proc = run_cli(
            ["-p", "go", "--timeout", "2", "--output-format", "json"], cwd=buggy_repo, env=env
        )
        elapsed = time.monotonic() - started
        bodies = [r.body for r in endpoint.requests]
    assert proc.returncode == 5, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "timeout"
    assert out["result"] == "Summary: the endpoint hung; nothing was done."
    assert elapsed < 12
    assert bodies[-1]["tool_choice"] == "none"

"""A whole run through the real CLI: read, run the test, edit, rerun, finish."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

TEST_CMD = f"{sys.executable} -m unittest -q"


def fix_script() -> list[Turn]:
    return [
        Turn(
            text="Reading the code.",
            tool_calls=(
                ScriptedCall("read_file", {"path": "shop.py"}),
                ScriptedCall("read_file", {"path": "test_shop.py"}),
            ),
        ),
        Turn(text="Running the tests.", tool_calls=(ScriptedCall("bash", {"command": TEST_CMD}),)),
        Turn(
            text="The discount is added instead of subtracted.",
            tool_calls=(
                ScriptedCall(
                    "str_replace",
                    {
                        "path": "shop.py",
                        "old_str": "* (1 + discount)",
                        "new_str": "* (1 - discount)",
                    },
                ),
            ),
        ),
        Turn(text="Rerunning.", tool_calls=(ScriptedCall("bash", {"command": TEST_CMD}),)),
        Turn(text="Fixed: the discount is now subtracted; both tests pass."),
    ]


def test_headless_run_fixes_the_bug(
    run_cli, cli_env, buggy_repo: Path, transcript, tmp_path: Path
) -> None:
    with ScriptedEndpoint(fix_script(), api_key="sk-test-secret-0123456789") as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        env["TETHER_API_KEY"] = "sk-test-secret-0123456789"
        # As a user would: edits allowed, and the test command.
        args = ["-p", "Fix the failing test", "--output-format", "json"]
        args += ["--permission-mode", "accept-edits", "--allow", f"Bash({TEST_CMD}:*)"]
        proc = run_cli(args, cwd=buggy_repo, env=env)
        requests = [r.body for r in endpoint.requests]

    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["result"] == "Fixed: the discount is now subtracted; both tests pass."
    assert out["stop_reason"] == "completed"
    assert out["turns"] == 5
    assert out["usage"]["input_tokens"] > 0 and out["usage"]["output_tokens"] > 0
    assert "cached_tokens" in out["usage"]
    assert out["duration_s"] > 0
    assert "* (1 - discount)" in (buggy_repo / "shop.py").read_text()

    # Every tool result reached the endpoint: the last request carries them all.
    assert len(requests) == 5
    last = requests[-1]["messages"]
    calls = [c for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    results = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert len(calls) == 5 and set(results) == {c["id"] for c in calls}
    assert "FAILED" in results[calls[2]["id"]] and "[exit code: 1]" in results[calls[2]["id"]]
    assert "[exit code: 0]" in results[calls[4]["id"]]
    assert "return sum(prices)" in results[calls[0]["id"]]

    # The transcript is complete, and holds no secret.
    entries = transcript()
    assert entries[0]["type"] == "header"
    assert entries[0]["session_id"] == out["session_id"]
    assert entries[0]["model"] == "scripted"
    assert entries[0]["workspace"] == str(buggy_repo.resolve())
    messages = [e["message"] for e in entries if e["type"] == "message"]
    assert [m["role"] for m in messages] == ["user"] + ["assistant", "tool", "tool"] + [
        "assistant",
        "tool",
    ] * 3 + ["assistant"]
    assert entries[-1]["type"] == "run_end" and entries[-1]["stop_reason"] == "completed"
    state = b"".join(p.read_bytes() for p in (tmp_path / "state").rglob("*") if p.is_file())
    assert b"sk-test-secret-0123456789" not in state
    # Checkpoint objects are compressed: read their messages (the commands) through git.
    repos = list((tmp_path / "state" / "checkpoints").glob("*.git"))
    assert len(repos) == 1
    for repo in repos:
        log = subprocess.run(
            ["git", "--git-dir", str(repo), "log", "--format=%B", "refs/tether/latest"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "tether bash" in log or "tether str_replace" in log
        assert "sk-test-secret-0123456789" not in log
    assert "sk-test-secret-0123456789" not in proc.stdout + proc.stderr


def test_text_output_prints_only_the_answer(run_cli, cli_env, buggy_repo: Path) -> None:
    with ScriptedEndpoint([Turn(text="Nothing to do.")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "hello"], cwd=buggy_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Nothing to do.\n"


def test_stream_json_emits_events_as_lines(run_cli, cli_env, buggy_repo: Path) -> None:
    script = [
        Turn(text="Looking.", tool_calls=(ScriptedCall("list_files", {}),)),
        Turn(text="Done looking."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "look", "--output-format", "stream-json"], cwd=buggy_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session_started"
    assert "text_delta" in types and "tool_started" in types and "tool_finished" in types
    assert types[-2:] == ["run_finished", "result"]
    finished = next(e for e in events if e["type"] == "tool_finished")
    assert "shop.py" in finished["result"]["content"]
    assert events[-1]["result"] == "Done looking."

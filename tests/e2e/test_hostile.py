"""Hostile model output and hostile workspaces: the run goes on, nothing leaks."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tether.models.scripted import Fault, ScriptedCall, ScriptedEndpoint, Turn

KEY = "sk-hostile-test-key-0123456789"


def test_undecodable_names_and_lone_surrogates_do_not_break_the_run(
    run_cli, cli_env, tmp_path: Path, transcript
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    script = [
        Turn(
            text="Looking.",
            tool_calls=(
                ScriptedCall("list_files", {}),
                ScriptedCall("read_file", '{"path": "x\\ud83d.txt"}'),
                ScriptedCall("bad\\ud800name", "{}"),
            ),
        ),
        Turn(text="Done."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "look", "--output-format", "json"], cwd=ws, env=env)
        last = endpoint.requests[-1].body["messages"]
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == "Done."
    results = [m["content"] for m in last if m["role"] == "tool"]
    assert len(results) == 3
    assert "caf" in results[0]
    raw = next((tmp_path / "state" / "sessions").glob("*.jsonl")).read_bytes()
    raw.decode("utf-8")  # the transcript is valid UTF-8 throughout
    assert transcript()[-1]["stop_reason"] == "completed"


def test_absurd_arguments_get_a_result(run_cli, cli_env, tmp_path: Path) -> None:
    deep = "[" * 50_000 + "]" * 50_000
    script = [
        Turn(
            tool_calls=(
                ScriptedCall("read_file", '{"path": ' + "9" * 5000 + "}"),
                ScriptedCall("read_file", '{"path": ' + deep + "}"),
                ScriptedCall("bash", '{"command": "true", "timeout": NaN}'),
            )
        ),
        Turn(text="Survived."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "x", "-v"], cwd=tmp_path, env=env)
        last = endpoint.requests[-1].body["messages"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Survived.\n"
    errors = [m["content"] for m in last if m["role"] == "tool"]
    assert len(errors) == 3 and all(e.startswith("Error: ") for e in errors)
    assert "finite" in errors[2]
    assert "Traceback" not in proc.stderr


def test_a_key_split_across_streamed_pieces_is_still_redacted(
    run_cli, cli_env, tmp_path: Path
) -> None:
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
    script = [
        Turn(tool_calls=(ScriptedCall("read_file", {"path": ".env"}),)),
        Turn(text=f"The file holds the key {KEY} which you should rotate.", reasoning=KEY * 2),
    ]
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text("[model]\nretry_base_delay = 0.01\n")
    for fmt in ("stream-json", "json", "text"):
        # The second request fails once, so text is streamed twice (before and after).
        with ScriptedEndpoint(script, faults={1: Fault("truncated")}) as endpoint:
            env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_API_KEY": KEY}
            proc = run_cli(["-p", "x", "-v", "--output-format", fmt], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        assert KEY not in proc.stdout + proc.stderr
        assert KEY[:-4] not in proc.stdout + proc.stderr
        assert "[REDACTED]" in proc.stdout
    for transcript in (tmp_path / "state" / "sessions").glob("*.jsonl"):
        assert KEY not in transcript.read_text()


def test_piped_interactive_session_reports_failure_in_its_exit_code(
    run_cli, cli_env, tmp_path: Path
) -> None:
    with ScriptedEndpoint([Turn(text="hi")], faults={0: Fault("status", status=401)}) as ep:
        env = {**cli_env, "TETHER_BASE_URL": ep.url}
        proc = run_cli([], cwd=tmp_path, env=env, input="hello\n")
    assert proc.returncode == 4
    assert "›" not in proc.stdout  # no prompt noise without a terminal

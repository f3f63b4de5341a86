"""The sandbox through the real CLI: what slips past the policy still cannot do harm."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def bash(command: str) -> Turn:
    return Turn(tool_calls=(ScriptedCall("bash", {"command": command}),))


@pytest.mark.parametrize("backend", ["auto", "bwrap", "landlock"])
def test_auto_mode_commands_cannot_write_outside_or_see_keys(
    run_cli, cli_env, tmp_path: Path, transcript, backend: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = f"/etc/tether-e2e-{os.getpid()}"
    script = [
        bash(
            f"touch {marker}; echo x > ../outside.txt; echo inside > in.txt; "
            "echo key=$OPENAI_API_KEY"
        ),
        Turn(text="done"),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "OPENAI_API_KEY": "sk-e2e-key-123456"}
        args = ["-p", "go", "--permission-mode", "auto", "--sandbox", backend]
        proc = run_cli(args, cwd=ws, env=env)
        result = next(m for m in endpoint.requests[-1].body["messages"] if m["role"] == "tool")
    assert proc.returncode == 0, proc.stderr
    assert not Path(marker).exists()
    assert not (tmp_path / "outside.txt").exists()
    assert (ws / "in.txt").read_text() == "inside\n"
    assert "key=\n" in result["content"]  # the variable did not reach the command
    assert "sk-e2e-key" not in result["content"]
    assert transcript()[0]["sandbox"] == ("bwrap" if backend == "auto" else backend)
    # the session removed the cgroups its commands ran in
    left = [g for g in Path("/sys/fs/cgroup/pids").glob("tether-*") if not _alive(g.name)]
    assert left == []


def _alive(cgroup_name: str) -> bool:
    pid = cgroup_name.split("-")[1]
    return Path(f"/proc/{pid}").exists()


def test_auto_mode_refuses_to_start_without_a_sandbox(run_cli, cli_env, tmp_path: Path) -> None:
    env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1", "PATH": str(tmp_path)}
    proc = run_cli(
        ["-p", "go", "--permission-mode", "auto", "--sandbox", "bwrap"], cwd=tmp_path, env=env
    )
    assert proc.returncode == 3
    assert "needs a sandbox" in proc.stderr and "bubblewrap" in proc.stderr
    assert not (tmp_path / "state" / "sessions").exists()  # nothing started


def test_skipping_the_sandbox_is_said_loudly(run_cli, cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="ok")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "go", "--permission-mode", "auto", "--dangerously-skip-sandbox"]
        proc = run_cli([*args, "--output-format", "stream-json"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    notices = [json.loads(line) for line in proc.stdout.splitlines()]
    assert any(n["type"] == "notice" and "SANDBOX OFF" in n["text"] for n in notices)


def test_doctor_reports_backends_endpoint_and_paths(run_cli, cli_env, tmp_path: Path) -> None:
    env = {**cli_env, "TETHER_API_KEY": "sk-doctor-secret-1234"}
    proc = run_cli(["doctor"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "bwrap     works" in proc.stdout and "landlock  works" in proc.stdout
    assert "chosen    bwrap" in proc.stdout
    assert "api key   set" in proc.stdout and "sk-doctor" not in proc.stdout
    assert str(tmp_path / "state") in proc.stdout
    assert "protocol  openai" in proc.stdout and "tools     auto protocol" in proc.stdout
    assert "window    128,000 tokens; $0 in / $0 out per million tokens (catalogue)" in proc.stdout
    env = {**cli_env, "ANTHROPIC_API_KEY": "sk-ant-doctor-1234", "TETHER_MODEL": "my-local"}
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text('[model]\ntool_protocol = "text"\n')
    proc = run_cli(["doctor"], cwd=tmp_path, env=env)
    assert "protocol  anthropic" in proc.stdout and "https://api.anthropic.com" in proc.stdout
    assert "prices unknown (not in the catalogue: defaults)" in proc.stdout
    assert "tools     text protocol" in proc.stdout and "sk-ant-doctor" not in proc.stdout


def test_sandbox_exec_runs_like_the_bash_tool(run_cli, tmp_path: Path) -> None:
    ok = run_cli(["sandbox", "exec", "--", "sh", "-c", "echo hi > a.txt; exit 3"], cwd=tmp_path)
    assert ok.returncode == 3 and (tmp_path / "a.txt").read_text() == "hi\n"
    denied = run_cli(
        ["sandbox", "exec", "--", f"touch /etc/tether-exec-{os.getpid()}"], cwd=tmp_path
    )
    assert denied.returncode != 0 and "Read-only" in denied.stdout
    extra = tmp_path.parent / f"extra-{os.getpid()}"
    extra.mkdir(exist_ok=True)
    allowed = run_cli(
        ["sandbox", "exec", "--allow-write", str(extra), "--", f"touch {extra}/f"], cwd=tmp_path
    )
    assert allowed.returncode == 0 and (extra / "f").exists()
    slow = run_cli(["sandbox", "exec", "--timeout", "1", "--", "sleep 30"], cwd=tmp_path)
    assert slow.returncode == 124

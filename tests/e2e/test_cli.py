"""The command line itself: configuration errors, usage errors, interactive, demo."""

from __future__ import annotations

from pathlib import Path

from tether import __version__
from tether.models.scripted import ScriptedEndpoint, Turn


def test_version(run_cli, tmp_path: Path) -> None:
    proc = run_cli(["--version"], cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"tether {__version__}"


def test_missing_model_says_what_to_set(run_cli, cli_env, tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env.items() if k != "TETHER_MODEL"}
    proc = run_cli(["-p", "hi"], cwd=tmp_path, env=env)
    assert proc.returncode == 3
    assert "TETHER_MODEL" in proc.stderr and "~/.agents/env" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_key_says_what_to_set(run_cli, cli_env, tmp_path: Path) -> None:
    proc = run_cli(["-p", "hi", "--base-url", "https://models.example.com/v1"], cwd=tmp_path)
    assert proc.returncode == 3
    assert "TETHER_API_KEY" in proc.stderr and "models.example.com" in proc.stderr


def test_agents_env_file_supplies_the_endpoint(run_cli, cli_env, tmp_path: Path) -> None:
    env = {k: v for k, v in cli_env.items() if k != "TETHER_MODEL"}
    with ScriptedEndpoint([Turn(text="from the env file")], api_key="sk-file-key-1234") as ep:
        agents = Path(env["HOME"]) / ".agents"
        agents.mkdir()
        (agents / "env").write_text(
            f"# shared with other tools\nBASE_URL={ep.url}\nexport API_KEY='sk-file-key-1234'\n"
            "MODEL=scripted\n"
        )
        proc = run_cli(["-p", "hi"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from the env file\n"


def test_flags_override_the_environment(run_cli, cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="flagged")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1"}
        proc = run_cli(
            ["-p", "hi", "--base-url", endpoint.url, "--model", "m2"], cwd=tmp_path, env=env
        )
        body = endpoint.requests[0].body
    assert proc.returncode == 0, proc.stderr
    assert body["model"] == "m2"


def test_bad_config_file_names_file_and_key(run_cli, tmp_path: Path) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text("[limits]\nmax_turn = 5\n")
    proc = run_cli(["-p", "hi", "--base-url", "http://127.0.0.1:9/v1"], cwd=tmp_path)
    assert proc.returncode == 3
    assert "config.toml" in proc.stderr and "max_turn" in proc.stderr


def test_usage_errors_exit_2(run_cli, tmp_path: Path) -> None:
    assert run_cli(["--max-turns", "0", "-p", "x"], cwd=tmp_path).returncode == 2
    assert run_cli(["--output-format", "yaml"], cwd=tmp_path).returncode == 2
    unknown = run_cli(["fix the bug"], cwd=tmp_path)
    assert unknown.returncode == 2 and "tether -p" in unknown.stderr
    assert run_cli(["--permission-mode", "yolo"], cwd=tmp_path).returncode == 2


def test_permission_mode_is_accepted(run_cli, cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="ok")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        for mode in ("default", "accept-edits", "plan", "auto"):
            proc = run_cli(["-p", "hi", "--permission-mode", mode], cwd=tmp_path, env=env)
            assert proc.returncode == 0, proc.stderr


def test_task_from_stdin(run_cli, cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="read it")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "-"], cwd=tmp_path, env=env, input="task from a pipe\n")
        body = endpoint.requests[0].body
    assert proc.returncode == 0, proc.stderr
    assert body["messages"][-1]["content"] == "task from a pipe\n"


def test_interactive_session_keeps_context(run_cli, cli_env, tmp_path: Path) -> None:
    script = [Turn(text="First answer."), Turn(text="Second answer.")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli([], cwd=tmp_path, env=env, input="first question\n\nsecond question\n")
        second = endpoint.requests[1].body["messages"]
    assert proc.returncode == 0, proc.stderr
    assert "First answer." in proc.stdout and "Second answer." in proc.stdout
    contents = [m.get("content") for m in second]
    assert contents[1:] == ["first question", "First answer.", "second question"]


def test_demo_runs_and_says_it_is_scripted(run_cli, tmp_path: Path) -> None:
    proc = run_cli(["demo", "--pause", "0"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "SCRIPTED" in proc.stdout
    assert "all five tests pass" in proc.stdout
    assert "FAILED (failures=" in proc.stdout  # the first test run really failed


def test_an_answer_cut_off_at_the_output_limit_is_flagged(run_cli, cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="Half an ans", finish_reason="length")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "hi", "-v"], cwd=tmp_path, env=env)
    assert proc.returncode == 0
    assert proc.stdout == "Half an ans\n"
    assert "cut off at the model's output limit" in proc.stderr

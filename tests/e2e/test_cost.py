"""Cost at the catalogue's prices through the real CLI: reported, and a limit like the others."""

from __future__ import annotations

import json
from pathlib import Path

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def priced_home(cli_env: dict[str, str], tmp_path: Path, price: str) -> dict[str, str]:
    config = tmp_path / "home" / ".config" / "tether" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[models."scripted"]\ninput = {price}\noutput = {price}\n')
    return cli_env


def looping(count: int) -> list[object]:
    """Tool calls until asked for a tool-less summary (the closing one at a limit)."""

    def step(body: dict[str, object]) -> Turn:
        if body.get("tool_choice") == "none":
            return Turn(text="Stopped as asked.")
        return Turn(text="step", tool_calls=(ScriptedCall("bash", {"command": "echo step"}),))

    return [step] * count


def test_cost_is_reported_and_max_cost_stops_the_run(
    run_cli, cli_env, tmp_path: Path, transcript
) -> None:
    env = priced_home(cli_env, tmp_path, "1000.0")  # USD per million tokens: expensive
    project = tmp_path / "p"
    project.mkdir()
    with ScriptedEndpoint(looping(30)) as endpoint:
        env = {**env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "loop", "--permission-mode", "auto", "--output-format", "json"]
        proc = run_cli([*args, "--max-cost", "5"], cwd=project, env=env)
    assert proc.returncode == 5, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "max_cost" and out["result"] == "Stopped as asked."
    u = out["usage"]
    expected = (u["input_tokens"] + u["output_tokens"]) * 1000.0 / 1_000_000
    assert out["cost_usd"] == round(expected, 6) and out["cost_usd"] >= 5
    assert out["turns"] < 30
    assert transcript()[-1]["cost_usd"] == expected


def test_max_cost_needs_known_prices(run_cli, cli_env, tmp_path: Path) -> None:
    env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1", "TETHER_MODEL": "my-local"}
    proc = run_cli(["-p", "x", "--max-cost", "1"], cwd=tmp_path, env=env)
    assert proc.returncode == 3 and "needs the prices of 'my-local'" in proc.stderr


def test_unpriced_runs_report_no_cost(run_cli, cli_env, tmp_path: Path) -> None:
    with ScriptedEndpoint([Turn(text="hi")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_MODEL": "my-local"}
        proc = run_cli(["-p", "x", "--output-format", "json"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cost_usd"] is None

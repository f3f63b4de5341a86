"""run_tests through the real CLI on a real pytest project."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\naddopts = '-p no:cacheprovider'\n"
    )
    (root / "test_math.py").write_text(
        "def test_adds():\n    assert 1 + 1 == 2\n\n\n"
        "def test_breaks():\n    print('\\n'.join(f'line {i}' for i in range(400)))\n"
        "    assert 2 * 2 == 5\n"
    )
    return root


def tool_results(requests: list[Any]) -> list[str]:
    return [m["content"] for m in requests[-1].body["messages"] if m["role"] == "tool"]


def test_the_configured_command_runs_unasked_and_reports_counts_and_a_tail(
    run_cli: Any, cli_env: dict[str, str], project: Path
) -> None:
    command = f"{sys.executable} -m pytest -q"
    (project / ".tether").mkdir()
    (project / ".tether/config.toml").write_text(f"[tests]\ncommand = {json.dumps(command)}\n")
    script = [
        Turn(text="Running the tests.", tool_calls=(ScriptedCall("run_tests", {}),)),
        Turn(text="One test fails.", tool_calls=(ScriptedCall("run_tests", {"args": "-k adds"}),)),
        Turn(text="Done."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        # Default mode, headless: anything that needs approval is refused.
        proc = run_cli(["-p", "run the tests", "--output-format", "json"], cwd=project, env=env)
        results = tool_results(endpoint.requests)
    assert proc.returncode == 0, proc.stderr
    whole, narrowed = results
    assert whole.startswith("tests: FAILED (exit code 1) — 1 failed, 1 passed"), whole
    assert f"command: {command}" in whole
    assert "FAILED test_math.py::test_breaks" in whole  # the tail holds the failure...
    assert "line 5\n" not in whole  # ...not the whole log,
    saved = Path(re.search(r"saved in (/\S+?\.txt)", whole)[1])  # type: ignore[index]
    assert "line 5\n" in saved.read_text()  # which is kept in full.
    # With args it is no longer exactly the configured command: it needs approval.
    assert "needs the user's approval" in narrowed, narrowed
    assert "1 passed" not in narrowed


def test_a_detected_command_is_judged_like_bash(
    run_cli: Any, cli_env: dict[str, str], project: Path
) -> None:
    script = [
        Turn(text="Testing.", tool_calls=(ScriptedCall("run_tests", {"args": "-k adds"}),)),
        Turn(text="Done."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "test", "--allow", "Bash(python -m pytest:*)"]
        proc = run_cli(args, cwd=project, env=env)
        (result,) = tool_results(endpoint.requests)
    assert proc.returncode == 0, proc.stderr
    assert result.startswith("tests: passed (exit code 0) — 1 passed, 1 deselected"), result
    assert "command: python -m pytest -k adds" in result


def test_plan_mode_does_not_run_even_the_configured_command(
    run_cli: Any, cli_env: dict[str, str], project: Path
) -> None:
    (project / ".tether").mkdir()
    (project / ".tether/config.toml").write_text(
        '[tests]\ncommand = "echo planned > WROTE.txt; python -m pytest"\n'
    )
    script = [Turn(text="Testing.", tool_calls=(ScriptedCall("run_tests", {}),)), Turn(text="ok")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "plan", "--permission-mode", "plan"], cwd=project, env=env)
        (result,) = tool_results(endpoint.requests)
    assert proc.returncode == 0, proc.stderr
    assert not (project / "WROTE.txt").exists()
    assert result.startswith("Error: Not allowed: plan mode"), result


def test_the_tail_keeps_the_last_lines_when_the_output_ends_blank() -> None:
    from tether.tools.test_run import _tail

    cargo = "running 1 test\ntest t ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed\n\n"
    tail, shown = _tail(cargo, 60, 1000)
    assert "test result: FAILED" in tail and shown == 5
    assert _tail("a\nb\nc\n", 2, 100) == ("b\nc", 2)

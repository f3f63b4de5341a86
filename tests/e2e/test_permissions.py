"""Permissions through the real CLI: refusals the model can read, rules, modes, approvals."""

from __future__ import annotations

import json
from pathlib import Path

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def bash(command: str) -> Turn:
    return Turn(tool_calls=(ScriptedCall("bash", {"command": command}),))


def tool_results(endpoint: ScriptedEndpoint) -> list[str]:
    return [m["content"] for m in endpoint.requests[-1].body["messages"] if m["role"] == "tool"]


def test_headless_refuses_an_ask_and_the_model_carries_on(
    run_cli, cli_env, buggy_repo: Path
) -> None:
    (buggy_repo / "build").mkdir()
    script = [bash("rm -rf build"), Turn(text="I could not delete build; it needs approval.")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "clean up", "--output-format", "json"], cwd=buggy_repo, env=env)
        results = tool_results(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"].startswith("I could not delete build")
    assert (buggy_repo / "build").is_dir()
    assert "headless" in results[0] and "--allow 'Bash(rm:*)'" in results[0]


def test_deny_rule_and_builtin_deny(run_cli, cli_env, buggy_repo: Path) -> None:
    script = [bash("git push origin main"), bash("timeout 5 sudo ls"), Turn(text="ok")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "ship it", "--deny", "Bash(git push:*)", "--allow", "Bash(git:*)"]
        proc = run_cli(args, cwd=buggy_repo, env=env)
        results = tool_results(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert "Not allowed" in results[0] and "Bash(git push:*)" in results[0]
    assert "Not allowed" in results[1] and "Bash(sudo:*)" in results[1]


def test_allow_rule_lets_a_command_run(run_cli, cli_env, buggy_repo: Path) -> None:
    (buggy_repo / "build").mkdir()
    with ScriptedEndpoint([bash("rm -rf build"), Turn(text="done")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "clean", "--allow", "Bash(rm:*)"], cwd=buggy_repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert not (buggy_repo / "build").exists()


def test_plan_mode_reads_but_does_not_write(run_cli, cli_env, buggy_repo: Path) -> None:
    script = [
        Turn(
            tool_calls=(
                ScriptedCall("read_file", {"path": "shop.py"}),
                ScriptedCall("write_file", {"path": "new.txt", "content": "x\n"}),
                ScriptedCall("bash", {"command": "git status && touch y"}),
            )
        ),
        Turn(text="Plan: change one line."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "plan", "--permission-mode", "plan"], cwd=buggy_repo, env=env)
        results = tool_results(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert "def total" in results[0]
    assert "plan mode" in results[1] and "plan mode" in results[2]
    assert not (buggy_repo / "new.txt").exists() and not (buggy_repo / "y").exists()


def test_accept_edits_allows_edits_but_not_commands(run_cli, cli_env, buggy_repo: Path) -> None:
    script = [
        Turn(
            tool_calls=(
                ScriptedCall("write_file", {"path": "notes/plan.md", "content": "hi\n"}),
                ScriptedCall("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}),
                ScriptedCall("bash", {"command": "rm shop.py"}),
            )
        ),
        Turn(text="ok"),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "go", "--permission-mode", "accept-edits"]
        proc = run_cli(args, cwd=buggy_repo, env=env)
        results = tool_results(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert (buggy_repo / "notes/plan.md").read_text() == "hi\n"
    assert ".git and .tether are protected" in results[1]
    assert not (buggy_repo / ".git/hooks/pre-commit").exists()
    assert (buggy_repo / "shop.py").exists()


def test_interactive_yes_no_and_always_for_the_project(run_cli, cli_env, buggy_repo: Path) -> None:
    (buggy_repo / "a").mkdir()
    (buggy_repo / "b").mkdir()
    (buggy_repo / "c").mkdir()
    script = [
        bash("rm -rf a"),
        Turn(text="first done"),
        bash("rm -rf b"),
        Turn(text="second done"),
        bash("rmdir c"),
        bash("rm -f nothing"),
        Turn(text="third done"),
    ]
    answers = "delete a\ny\ndelete b\nn\ndelete c\na\np\n"
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli([], cwd=buggy_repo, env=env, input=answers)
    assert proc.returncode == 0, proc.stderr
    assert not (buggy_repo / "a").exists()
    assert (buggy_repo / "b").exists()
    assert not (buggy_repo / "c").exists()
    assert "Always allow: Bash(rmdir:*)" in proc.stdout
    saved = (buggy_repo / ".tether/config.toml").read_text()
    assert 'rule = "Bash(rmdir:*)"' in saved
    # `rm -f nothing` still asked (the saved rule is for rmdir); input ended: declined.
    assert proc.stdout.count("Allow?") == 4


def test_permissions_check_by_hand(run_cli, tmp_path: Path) -> None:
    text = run_cli(["permissions", "check", "--", "ls | grep x && rm -rf build"], cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("ask ")
    assert "rm -rf build" in text.stdout and "allow" in text.stdout
    as_json = run_cli(
        ["permissions", "check", "--json", "--deny", "Bash(rm:*)", "--", "rm x"], cwd=tmp_path
    )
    decision = json.loads(as_json.stdout)
    assert decision["verdict"] == "deny"
    assert decision["matched_rules"] == ["deny Bash(rm:*) (--deny)"]
    lines = '{"command": "cat README.md"}\n{"tool": "write_file", "path": "x.py"}\nnot json\n'
    jsonl = run_cli(
        ["permissions", "check", "--jsonl", "--mode", "accept-edits"], cwd=tmp_path, input=lines
    )
    out = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [o.get("verdict") for o in out] == ["allow", "allow", None]
    assert out[0]["command"] == "cat README.md" and "error" in out[2]


def test_a_bad_rule_names_its_file_and_line(run_cli, tmp_path: Path) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text(
        '[permissions]\nallow = [\n  "Bash(ls:*)",\n  "Bash(git diff",\n]\n'
    )
    proc = run_cli(["permissions", "check", "--", "ls"], cwd=tmp_path)
    assert proc.returncode == 3
    assert "config.toml:4" in proc.stderr and "Bash(git diff" in proc.stderr


def test_a_rule_that_fails_its_own_example_is_a_load_error(run_cli, tmp_path: Path) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether/config.toml").write_text(
        "[[permissions.rules]]\n"
        'rule = "Bash(git push:*)"\n'
        'verdict = "deny"\n'
        'examples = ["git push origin main", "git -C . push"]\n'
        'counterexamples = ["git pull"]\n'
    )
    proc = run_cli(["permissions", "check", "--", "ls"], cwd=tmp_path)
    assert proc.returncode == 3
    assert "git -C . push" in proc.stderr and "config.toml:2" in proc.stderr

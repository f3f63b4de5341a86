"""Todos: shown to the user, restated at the tail of the context, never in the system prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

PLAN = [
    {"content": "Read the failing test", "status": "done"},
    {"content": "Fix total()", "status": "in_progress"},
    {"content": "Run the tests again", "status": "pending"},
]
LOOK = Turn(text="Looking.", tool_calls=(ScriptedCall("list_files", {}),))
REMINDER = "[tether] Your todo list"


def test_the_list_is_shown_restated_at_the_tail_and_kept_across_resume(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    plan = Turn(text="Planning.", tool_calls=(ScriptedCall("write_todos", {"todos": PLAN}),))
    script = [plan, *[LOOK] * 6, Turn(text="Done for now."), *[LOOK] * 6, Turn(text="Again.")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        first = run_cli(
            ["-p", "fix it", "--output-format", "stream-json", "--permission-mode", "auto"],
            cwd=work,
            env=env,
        )
        second = run_cli(
            ["--continue", "-p", "go on", "--permission-mode", "auto"], cwd=work, env=env
        )
        bodies = [r.body for r in endpoint.requests]
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    events = [json.loads(line) for line in first.stdout.splitlines()]
    (shown,) = [e for e in events if e["type"] == "todos_updated"]
    assert shown["todos"] == PLAN
    # The tool's result states the list; the system prompt never does.
    system = {b["messages"][0]["content"] for b in bodies}
    assert len(system) == 1 and "Fix total()" not in system.pop()
    assert "[~] Fix total()" in bodies[1]["messages"][-1]["content"]
    # Five turns later, unfinished: a reminder as the last message of the request.
    reminders = [
        (n, b["messages"][-1]["content"])
        for n, b in enumerate(bodies)
        if b["messages"][-1]["role"] == "user" and b["messages"][-1]["content"].startswith(REMINDER)
    ]
    assert [n for n, _ in reminders][:1] == [6], reminders
    assert "[ ] Run the tests again" in reminders[0][1]
    assert bodies[6]["messages"][-2]["role"] == "tool"  # after the turn's results
    # Kept in later requests (history is not rewritten) and restated after --continue.
    assert any(
        m["content"].startswith(REMINDER) for m in bodies[-1]["messages"] if m["role"] == "user"
    )
    assert len(reminders) >= 2 and reminders[-1][0] > 8
    transcript = next((tmp_path / "state" / "sessions").glob("*.jsonl")).read_text()
    assert '"type":"todos"' in transcript


def test_a_bad_list_is_an_error_the_model_can_read(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "w"
    work.mkdir()
    bad = [{"content": "x", "status": "started"}, {"content": "  ", "status": "done"}]
    script = [
        Turn(text="Plan.", tool_calls=(ScriptedCall("write_todos", {"todos": bad}),)),
        Turn(text="Plan.", tool_calls=(ScriptedCall("write_todos", {"todos": [bad[1]]}),)),
        Turn(text="ok"),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "plan"], cwd=work, env=env)
        last = endpoint.requests[-1].body["messages"]
    assert proc.returncode == 0, proc.stderr
    first, second = [m["content"] for m in last if m["role"] == "tool"]
    assert "expected one of" in first and '"in_progress"' in first
    assert "item 1 has no content" in second

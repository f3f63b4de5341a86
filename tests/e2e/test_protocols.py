"""The skeleton's bug fix, end to end through the real CLI, over every way of calling tools:
OpenAI native tools, Anthropic native tools, and the text protocol on either wire."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_fix_bug import TEST_CMD, fix_script

from tether.models.scripted import Fault, ScriptedEndpoint, Turn

KEY = "sk-test-protocols-0123456789"


def as_text(turns: list[Turn]) -> list[Turn]:
    """The same script, written as a model without native tools would write it."""
    out = []
    for turn in turns:
        blocks = [
            "<tool_call>\n"
            + json.dumps({"name": c.name, "arguments": c.arguments})
            + "\n</tool_call>"
            for c in turn.tool_calls
        ]
        out.append(Turn(text="\n".join([turn.text, *blocks])))
    return out


def run_fix(
    run_cli: Any, cli_env: dict[str, str], repo: Path, provider: str, protocol: str
) -> tuple[Any, list[dict[str, Any]]]:
    script = fix_script() if protocol == "native" else as_text(fix_script())
    with ScriptedEndpoint(script, api_key=KEY) as endpoint:
        env = {**cli_env, "TETHER_PROVIDER": provider, "TETHER_API_KEY": KEY}
        env["TETHER_BASE_URL"] = endpoint.root if provider == "anthropic" else endpoint.url
        args = ["-p", "Fix the failing test", "--output-format", "json"]
        args += ["--permission-mode", "accept-edits", "--allow", f"Bash({TEST_CMD}:*)"]
        args += ["--tool-protocol", protocol]
        proc = run_cli(args, cwd=repo, env=env)
        bodies = [r.body for r in endpoint.requests]
    return proc, bodies


def breakpoints(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    spots = []
    for part in ("system", "tools"):
        spots += [(part, 0, i) for i, b in enumerate(body.get(part) or []) if "cache_control" in b]
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        for b, block in enumerate(content if isinstance(content, list) else []):
            if "cache_control" in block:
                spots.append(("messages", m, b))
    return spots


def calls_and_results(provider: str, body: dict[str, Any]) -> list[tuple[list[str], list[str]]]:
    """For each assistant message with calls: its call ids, and the result ids that follow."""
    messages = body["messages"]
    pairs = []
    for i, message in enumerate(messages):
        if provider == "anthropic":
            content = message["content"] if isinstance(message["content"], list) else []
            ids = [b["id"] for b in content if b["type"] == "tool_use"]
            after = messages[i + 1]["content"] if i + 1 < len(messages) else []
            results = [b["tool_use_id"] for b in after if b.get("type") == "tool_result"]
        else:
            ids = [c["id"] for c in message.get("tool_calls") or []]
            results = []
            for later in messages[i + 1 :]:
                if later["role"] != "tool":
                    break
                results.append(later["tool_call_id"])
        if ids:
            pairs.append((ids, results))
    return pairs


@pytest.mark.parametrize(
    ("provider", "protocol"),
    [("openai", "native"), ("anthropic", "native"), ("openai", "text"), ("anthropic", "text")],
)
def test_the_bug_is_fixed_over_each_protocol(
    run_cli: Any, cli_env: dict[str, str], buggy_repo: Path, provider: str, protocol: str
) -> None:
    proc, bodies = run_fix(run_cli, cli_env, buggy_repo, provider, protocol)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "completed" and out["turns"] == 5
    assert out["result"].startswith("Fixed: the discount is now subtracted")
    assert "* (1 - discount)" in (buggy_repo / "shop.py").read_text()
    assert len(bodies) == 5
    if protocol == "text":
        # No tools parameter; the tools are in the system prompt, the calls in the text.
        for body in bodies:
            assert "tools" not in body and "tool_choice" not in body
        if provider == "openai":
            system = bodies[0]["messages"][0]["content"]
        else:
            system = bodies[0]["system"][0]["text"]
        assert "<tool_call>" in system and "str_replace" in system
        assert "FAILED" in json.dumps(bodies[-1]) and "[exit code: 0]" in json.dumps(bodies[-1])
        return
    for body in bodies:
        # Never a dangling call: every call is answered, in order, right after it.
        for ids, results in calls_and_results(provider, body):
            assert results[: len(ids)] == ids
    if provider == "anthropic":
        for body in bodies:
            spots = breakpoints(body)
            assert len(spots) <= 4
            assert ("system", 0, 0) in spots
            last = len(body["messages"]) - 1
            assert ("messages", last, len(body["messages"][last]["content"]) - 1) in spots
        usage = out["usage"]
        share = usage["cached_tokens"] / usage["input_tokens"]
        assert share > 0.5, usage  # the breakpoints move forward, so each turn reads the last


def test_auto_falls_back_to_text_when_the_endpoint_refuses_tools(
    run_cli: Any, cli_env: dict[str, str], buggy_repo: Path, transcript: Any
) -> None:
    refusal = Fault("status", status=400, message="registry/library/tiny does not support tools")
    with ScriptedEndpoint(as_text(fix_script()), faults={0: refusal}) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "Fix the failing test", "--output-format", "json"]
        args += ["--permission-mode", "accept-edits", "--allow", f"Bash({TEST_CMD}:*)"]
        proc = run_cli(args, cwd=buggy_repo, env=env)
        bodies = [r.body for r in endpoint.requests]
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["stop_reason"] == "completed"
    assert "tools" in bodies[0] and all("tools" not in b for b in bodies[1:])
    assert "text protocol" in proc.stderr  # said once, also without -v
    notices = [e for e in transcript() if e["type"] == "notice"]
    assert any("text protocol" in n["text"] for n in notices)


def test_a_model_that_never_writes_a_readable_call_stops_with_tool_format(
    run_cli: Any, cli_env: dict[str, str], buggy_repo: Path
) -> None:
    broken = Turn(text='<tool_call>\n{"name": "bash", "arguments": {"command": "ls"\n</tool_call>')
    with ScriptedEndpoint([broken] * 10) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "list", "--output-format", "json", "--tool-protocol", "text"]
        proc = run_cli(args, cwd=buggy_repo, env=env)
        served = endpoint.turns_served
    assert proc.returncode == 4, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "tool_format"
    assert "restate" in out["error"] and served == 4  # one reply and three restates

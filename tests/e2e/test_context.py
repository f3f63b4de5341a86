"""Long sessions through the real CLI with a tiny window: stubs, compaction, the prefix."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

from tether.context.compact import COMPACTED_PREFIX, SUMMARY_REQUEST
from tether.context.manager import rebuild
from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

TASK = "Survey the files.\n  Keep every NOTE line exactly as it is!  "
SUMMARY = "## Goal\nsurvey\n## Next steps\nread the rest"


def is_summary_request(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]
    return last["role"] == "user" and SUMMARY_REQUEST[:60] in str(last.get("content"))


def responder(turns: list[Turn]) -> list[Callable[[dict[str, Any]], Turn]]:
    """Script steps that answer a summary request with SUMMARY, else the next turn."""
    queue: Iterator[Turn] = iter(turns)

    def step(body: dict[str, Any]) -> Turn:
        if is_summary_request(body):
            return Turn(text=SUMMARY)
        return next(queue, Turn(text="Done."))

    return [step] * (len(turns) * 2 + 10)


def reading_turns(project: Path, count: int, size: int) -> list[Turn]:
    for n in range(count):
        (project / f"f{n:03d}.txt").write_text(
            f"NOTE {n}\n" + (f"line {n} " * 12 + "\n") * (size // 80)
        )
    return [
        Turn(
            text=f"Reading {n}.",
            tool_calls=(ScriptedCall("bash", {"command": f"cat f{n:03d}.txt"}),),
        )
        for n in range(count)
    ] + [Turn(text="Surveyed everything.")]


def bodies(endpoint: ScriptedEndpoint) -> list[dict[str, Any]]:
    return [r.body for r in endpoint.requests]


def test_without_shrinking_each_request_extends_the_last_byte_for_byte(
    run_cli, cli_env, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with ScriptedEndpoint(responder(reading_turns(project, 8, 600))) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", TASK, "--permission-mode", "auto"], cwd=project, env=env)
        sent = bodies(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert len(sent) == 9
    for before, after in pairwise(sent):
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
        old, new = before["messages"], after["messages"]
        assert json.dumps(new[: len(old)]) == json.dumps(old)  # the system prompt included


def test_a_small_window_stubs_then_compacts_and_keeps_the_users_words(
    run_cli, cli_env, tmp_path: Path, transcript
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    window = 16000
    with ScriptedEndpoint(responder(reading_turns(project, 40, 1500))) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", TASK, "--permission-mode", "auto", "--output-format", "json"]
        args += ["--context-window", str(window)]
        proc = run_cli(args, cwd=project, env=env, timeout=120)
        sent = bodies(endpoint)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["result"] == "Surveyed everything."
    summaries = [b for b in sent if is_summary_request(b)]
    work = [b for b in sent if not is_summary_request(b)]
    assert summaries, "no compaction happened"
    assert all(b.get("tool_choice") == "none" for b in summaries)
    system = work[0]["messages"][0]
    entries = transcript()
    kinds = [e.get("action", e["type"]) for e in entries if e["type"] in ("context", "compaction")]
    assert "stub" in kinds and "compaction" in kinds
    for body in work:
        messages = body["messages"]
        assert messages[0] == system  # instructions never change or go
        text = json.dumps(messages, ensure_ascii=False)
        assert json.dumps(TASK, ensure_ascii=False)[1:-1] in text  # verbatim, every time
        assert len(text) / 4 < window * 1.3  # under the window (a rough count)
        calls: list[str] = []
        for message in messages[1:]:  # no tool call without its result, in order
            if message["role"] == "assistant":
                assert not calls
                calls = [c["id"] for c in message.get("tool_calls") or []]
            elif message["role"] == "tool":
                assert calls and calls.pop(0) == message["tool_call_id"]
        assert not calls
    after = [b for b in work if COMPACTED_PREFIX in json.dumps(b["messages"][1])]
    assert after and SUMMARY in after[0]["messages"][1]["content"]
    # The transcript is the whole history, and replaying it gives what was last sent.
    assert (
        sum(1 for e in entries if e["type"] == "message" and e["message"]["role"] == "tool") == 40
    )
    view = rebuild(entries)
    last = work[-1]["messages"][1:]
    assert [m.to_dict()["content"] for m in view[: len(last)]] == [m["content"] for m in last]
    assert view[0].role == "user" and view[0].content.startswith(COMPACTED_PREFIX)


def test_compact_at_and_the_status_numbers_in_json(run_cli, cli_env, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with ScriptedEndpoint(responder(reading_turns(project, 6, 1600))) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", TASK, "--permission-mode", "auto", "--output-format", "json"]
        args += ["--compact-at", "5500"]  # above the system prompt and tools (~3,000)
        proc = run_cli(args, cwd=project, env=env)
        sent = bodies(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert any(is_summary_request(b) for b in sent)
    usage = json.loads(proc.stdout)["usage"]
    assert usage["input_tokens"] > 0 and usage["cached_tokens"] > 0
    assert "cache_write_tokens" in usage


def test_thresholds_below_the_fixed_prompt_are_refused(run_cli, cli_env, tmp_path: Path) -> None:
    env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(["-p", "x", "--compact-at", "500"], cwd=tmp_path, env=env)
    assert proc.returncode == 3 and "leave no room" in proc.stderr
    assert not list((tmp_path / "state" / "sessions").glob("*.jsonl"))


def test_a_failed_compaction_drops_stale_output_and_says_so(
    run_cli, cli_env, tmp_path: Path, transcript
) -> None:
    project = tmp_path / "p"
    (project / ".tether").mkdir(parents=True)
    (project / ".tether" / "config.toml").write_text("[model]\nmax_attempts = 1\n")
    turns = iter(reading_turns(project, 12, 1500))

    def step(body: dict[str, Any]) -> Turn:
        if is_summary_request(body):
            raise RuntimeError("the summary call fails")
        return next(turns, Turn(text="Done."))

    with ScriptedEndpoint([step] * 40) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", TASK, "--permission-mode", "auto", "--compact-at", "5200"]
        proc = run_cli(args, cwd=project, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Compaction failed" in proc.stderr and "dropped old tool output" in proc.stderr
    failed = [e for e in transcript() if e["type"] == "context" and e.get("error")]
    assert failed and failed[0]["stubs"]


def test_compact_by_hand_in_an_interactive_session(run_cli, cli_env, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    turns = [*reading_turns(project, 2, 400)[:2], Turn(text="Read both."), Turn(text="Yes.")]
    with ScriptedEndpoint(responder(turns)) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        lines = f"{json.dumps(TASK)[1:-1]}\n/compact\nand now?\n"
        proc = run_cli(["--permission-mode", "auto"], cwd=project, env=env, input=lines)
        sent = bodies(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert "compacted" in proc.stdout.lower()
    assert sum(is_summary_request(b) for b in sent) == 1
    last = sent[-1]["messages"]
    assert COMPACTED_PREFIX in last[1]["content"] and last[-1]["content"] == "and now?"

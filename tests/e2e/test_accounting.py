"""Token accounting through the real CLI: per turn in the transcript, per run in json,
per response in the interactive status line; the estimate checked against the report."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tether.context.compact import SUMMARY_REQUEST
from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

STATUS = re.compile(
    r"^tokens: in ([\d,]+) \(cached ([\d,]+), written ([\d,]+)\) · out ([\d,]+)"
    r" · context ~([\d,]+) / ([\d,]+) \((\d+)%\)"
    r" · \$([\d.]+) \(session \$([\d.]+)\)$",  # the scripted model's prices are zero
    re.MULTILINE,
)


def reading(project: Path, count: int, size: int) -> list[Turn]:
    """Files of source-like text, and turns that read them one by one."""
    for n in range(count):
        body = "".join(f"def f{n}_{i}(x):\n    return x * {i} + {n}\n\n" for i in range(size // 40))
        (project / f"m{n:02d}.py").write_text(body)
    calls = [ScriptedCall("bash", {"command": f"cat m{n:02d}.py"}) for n in range(count)]
    return [Turn(text=f"Reading {n}.", tool_calls=(c,)) for n, c in enumerate(calls)]


def summarizing(turns: list[Turn]) -> list[Callable[[dict[str, Any]], Turn]]:
    """Script steps that answer a handoff-summary request with a summary, else go on."""
    queue = iter(turns)

    def step(body: dict[str, Any]) -> Turn:
        if SUMMARY_REQUEST[:60] in str(body["messages"][-1].get("content")):
            return Turn(text="## Goal\nread\n## Next steps\nread on")
        return next(queue, Turn(text="Read them all."))

    return [step] * (len(turns) * 2 + 10)


def assistant_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"]


def test_estimate_and_report_per_turn_and_the_context_object_in_json(
    run_cli, cli_env, tmp_path: Path, transcript
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with ScriptedEndpoint([*reading(project, 4, 3000), Turn(text="Read.")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "Read the modules", "--permission-mode", "auto", "--output-format", "json"]
        proc = run_cli(args, cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    replies = assistant_entries(transcript())
    assert len(replies) == 5
    for entry in replies:
        reported, estimated = entry["usage"]["input_tokens"], entry["estimated_input_tokens"]
        assert reported > 0 and reported / 2 <= estimated <= reported * 2, entry
        assert list(entry)[-3:] == ["estimated_input_tokens", "cost_usd", "finish_reason"]
        assert entry["cost_usd"] == 0.0  # the scripted model's catalogue prices are zero
    assert replies[-1]["usage"]["cached_tokens"] > 0
    # The run's sums, unchanged in shape, and the context object beside them.
    assert set(out["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "cache_write_tokens",
    }
    assert out["usage"]["input_tokens"] == sum(e["usage"]["input_tokens"] for e in replies)
    assert out["usage"]["cached_tokens"] == sum(e["usage"]["cached_tokens"] for e in replies)
    assert out["context"] == {
        "window": 128000,
        "last_request_tokens": replies[-1]["usage"]["input_tokens"],
        "compactions": 0,
        "stubbed": 0,
    }
    run_end = transcript()[-1]
    assert run_end["type"] == "run_end" and run_end["context"] == out["context"]


def test_stubs_and_compactions_are_counted_in_json(
    run_cli, cli_env, tmp_path: Path, transcript
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with ScriptedEndpoint(summarizing(reading(project, 30, 1500))) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "Read the modules", "--permission-mode", "auto", "--output-format", "json"]
        args += ["--context-window", "16000"]
        proc = run_cli(args, cwd=project, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["context"]
    entries = transcript()
    stubs = sum(1 for e in entries if e["type"] == "context" and e.get("action") == "stub")
    compactions = sum(1 for e in entries if e["type"] == "compaction")
    assert compactions >= 1 and stubs >= 1
    assert context["window"] == 16000
    assert (context["compactions"], context["stubbed"]) == (compactions, stubs)
    assert 0 < context["last_request_tokens"] < 16000


def test_stream_json_carries_a_turn_usage_event_per_response(
    run_cli, cli_env, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    with ScriptedEndpoint([*reading(project, 2, 800), Turn(text="Read.")]) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "Read", "--permission-mode", "auto", "--output-format", "stream-json"]
        proc = run_cli(args, cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types.count("assistant_message") == types.count("turn_usage") == 3
    usages = [e for e in events if e["type"] == "turn_usage"]
    assert [u["call"] for u in usages] == [1, 2, 3]
    assert all(u["window"] == 128000 and u["estimated_input_tokens"] > 0 for u in usages)
    assert usages[-1]["total"] == events[-1]["usage"]  # one run: the session is the run
    finished = next(e for e in events if e["type"] == "run_finished")
    assert finished["session_usage"] == finished["usage"] == events[-1]["usage"]


def test_interactive_prints_a_status_line_per_response_and_the_session_total(
    run_cli, cli_env, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    script = [*reading(project, 2, 2000), Turn(text="First answer."), Turn(text="Second answer.")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(
            ["--permission-mode", "auto"], cwd=project, env=env, input="read\nand again\n"
        )
    assert proc.returncode == 0, proc.stderr
    lines = STATUS.findall(proc.stdout)
    assert len(lines) == 4, proc.stdout
    cached = [int(c.replace(",", "")) for _, c, *_ in lines]
    assert cached[0] == 0 and all(c > 0 for c in cached[1:])  # the prefix hits the cache
    assert all(window == "128,000" for *_, window, _, _, _ in lines)
    assert all(cost == total == "0.0000" for *_, cost, total in lines)
    assert "\x1b[" not in proc.stdout  # NO_COLOR, and not a terminal
    tail = proc.stdout[proc.stdout.index("Second answer.") :].splitlines()
    assert STATUS.match(tail[1]) and tail[2].startswith("[completed · 1 turns · ")
    inputs = sum(int(i.replace(",", "")) for i, *_ in lines)
    assert re.match(rf"session total: in {inputs:,} \(cached {sum(cached):,}, written 0\)", tail[3])

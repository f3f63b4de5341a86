"""Injected endpoint faults: a run survives each, or stops with a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.models.scripted import Fault, ScriptedCall, ScriptedEndpoint, Turn

SCRIPT = [
    Turn(text="Listing.", tool_calls=(ScriptedCall("list_files", {}),)),
    Turn(text="All good."),
]


@pytest.fixture
def fast_retries(buggy_repo: Path) -> Path:
    (buggy_repo / ".tether").mkdir()
    (buggy_repo / ".tether/config.toml").write_text(
        "[model]\nretry_base_delay = 0.01\nrequest_timeout = 1.5\nmax_attempts = 3\n"
    )
    return buggy_repo


@pytest.mark.parametrize(
    "fault",
    [
        Fault("status", status=429, retry_after=0.2),
        Fault("status", status=500),
        Fault("status", status=529),
        Fault("reset"),
        Fault("hang", hang_s=5),
        Fault("malformed"),
        Fault("truncated"),
    ],
    ids=["429", "500", "529", "reset", "hang", "malformed", "truncated"],
)
@pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
def test_run_survives_a_transient_fault(
    run_cli, cli_env, fast_retries: Path, transcript, fault: Fault, stream: bool
) -> None:
    # The second request (after the tool ran) fails once, then the retry succeeds.
    with ScriptedEndpoint(SCRIPT, faults={1: fault}) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "go", "--output-format", "stream-json"]
        proc = run_cli([*args] if stream else [*args, "--no-stream"], cwd=fast_retries, env=env)
        seen = len(endpoint.requests)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["result"] == "All good."
    retries = [e for e in events if e["type"] == "retry_scheduled"]
    assert len(retries) == 1, events
    assert seen == 3
    if fault.retry_after:
        assert retries[0]["delay"] >= fault.retry_after
    assert transcript()[-1]["stop_reason"] == "completed"


def test_persistent_failure_stops_with_clear_error(
    run_cli, cli_env, fast_retries: Path, transcript
) -> None:
    faults = {i: Fault("status", status=503) for i in range(1, 10)}
    with ScriptedEndpoint(SCRIPT, faults=faults) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "go", "--output-format", "json"], cwd=fast_retries, env=env)
        seen = len(endpoint.requests)
    assert proc.returncode == 4, proc.stderr
    out = json.loads(proc.stdout)
    assert out["stop_reason"] == "provider_error"
    assert "503" in out["error"] and "3 attempts" in out["error"]
    assert seen == 1 + 3
    entries = transcript()
    # The completed turn is intact: the tool call has its result.
    roles = [e["message"]["role"] for e in entries if e["type"] == "message"]
    assert roles == ["user", "assistant", "tool"]
    assert entries[-1]["type"] == "run_end" and entries[-1]["stop_reason"] == "provider_error"


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "API key"), (403, "API key"), (404, "scripted")],
)
def test_fatal_status_is_not_retried(
    run_cli, cli_env, fast_retries: Path, status: int, words: str
) -> None:
    with ScriptedEndpoint(SCRIPT, faults={0: Fault("status", status=status)}) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_API_KEY": "sk-live-abcdef123456"}
        proc = run_cli(["-p", "go"], cwd=fast_retries, env=env)
        seen = len(endpoint.requests)
    assert proc.returncode == 4
    assert seen == 1
    assert words in proc.stderr
    assert "sk-live-abcdef123456" not in proc.stderr + proc.stdout


def test_wrong_api_key_is_reported_without_the_key(run_cli, cli_env, fast_retries: Path) -> None:
    with ScriptedEndpoint(SCRIPT, api_key="sk-right-key-000000") as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url, "TETHER_API_KEY": "sk-wrong-key-999999"}
        proc = run_cli(["-p", "go"], cwd=fast_retries, env=env)
    assert proc.returncode == 4
    assert "401" in proc.stderr
    assert "sk-wrong-key-999999" not in proc.stderr + proc.stdout


def test_unreachable_endpoint_is_a_provider_error(run_cli, cli_env, fast_retries: Path) -> None:
    env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1"}
    proc = run_cli(["-p", "go"], cwd=fast_retries, env=env)
    assert proc.returncode == 4
    assert "127.0.0.1:9" in proc.stderr
    assert "Traceback" not in proc.stderr

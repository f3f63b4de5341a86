"""The scripted endpoint on its own, spoken to with plain HTTP: its wire format and faults."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tether.errors import ConfigError
from tether.models.scripted import Fault, ScriptedCall, ScriptedEndpoint, Turn
from tether.models.sse import iter_sse

TURN = Turn(
    text="Reading both files now.",
    reasoning="The user wants the files.",
    tool_calls=(
        ScriptedCall("read_file", {"path": "a.py"}, id="call_a"),
        ScriptedCall("read_file", '{"path": "b.py"'),  # broken JSON, sent verbatim
    ),
)


def chat(url: str, stream: bool = False, **extra: Any) -> httpx.Response:
    body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
    return httpx.post(url + "/chat/completions", json={**body, **extra}, timeout=5)


def chunks(response: httpx.Response) -> list[Any]:
    return [e.data if e.is_done else json.loads(e.data) for e in iter_sse([response.content])]


@pytest.fixture
def endpoint() -> Iterator[ScriptedEndpoint]:
    with ScriptedEndpoint([TURN, Turn(text="second")]) as ep:
        yield ep


def test_plain_answer(endpoint: ScriptedEndpoint) -> None:
    response = chat(endpoint.url)
    assert response.status_code == 200
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["content"] == TURN.text
    assert message["reasoning_content"] == TURN.reasoning
    assert [c["id"] for c in message["tool_calls"]] == ["call_a", "call_0_1"]
    assert message["tool_calls"][1]["function"]["arguments"] == '{"path": "b.py"'
    usage = response.json()["usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert chat(endpoint.url).json()["choices"][0]["message"]["content"] == "second"


def test_streamed_answer_chunk_by_chunk(endpoint: ScriptedEndpoint) -> None:
    response = chat(endpoint.url, stream=True, stream_options={"include_usage": True})
    assert response.headers["content-type"].startswith("text/event-stream")
    got = chunks(response)
    assert got[-1] == "[DONE]"
    deltas = [c["choices"][0]["delta"] for c in got[:-2]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    text = [d["content"] for d in deltas if d.get("content")]
    assert len(text) >= 2 and "".join(text) == TURN.text
    reasoning = [d["reasoning_content"] for d in deltas if "reasoning_content" in d]
    assert len(reasoning) >= 2 and "".join(reasoning) == TURN.reasoning
    fragments = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    first = [f for f in fragments if "id" in f]
    assert [(f["index"], f["id"], f["function"]["name"]) for f in first] == [
        (0, "call_a", "read_file"),
        (1, "call_0_1", "read_file"),
    ]
    for index, call in enumerate(TURN.tool_calls):
        pieces = [f["function"]["arguments"] for f in fragments if f["index"] == index]
        assert len(pieces) >= 3  # the first chunk, then the arguments in two or more
        expected = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        assert "".join(pieces) == expected
    assert got[-2]["choices"] == [] and got[-2]["usage"]["prompt_tokens"] > 0
    assert got[-3]["choices"][0]["finish_reason"] == "tool_calls"


def test_usage_chunk_only_when_asked(endpoint: ScriptedEndpoint) -> None:
    got = chunks(chat(endpoint.url, stream=True))
    assert not any("usage" in c for c in got[:-1])


def test_cached_tokens_model_a_shared_prefix(endpoint: ScriptedEndpoint) -> None:
    long = "x" * 6000  # 1500 tokens at four characters each
    messages = [{"role": "user", "content": long}]
    first = chat(endpoint.url, messages=messages).json()["usage"]
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    second = chat(endpoint.url, messages=[*messages, {"role": "user", "content": "more"}])
    cached = second.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert (
        cached >= 1024 and cached % 128 == 0 and cached <= second.json()["usage"]["prompt_tokens"]
    )


def test_short_prompts_are_never_cached(endpoint: ScriptedEndpoint) -> None:
    chat(endpoint.url)
    assert chat(endpoint.url).json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_script_end_answers_with_plain_text() -> None:
    with ScriptedEndpoint([]) as ep:
        message = chat(ep.url).json()["choices"][0]["message"]
    assert "script ended" in message["content"] and "tool_calls" not in message


def test_callable_steps_see_the_request() -> None:
    seen: list[dict[str, Any]] = []

    def echo(body: dict[str, Any]) -> Turn:
        seen.append(body)
        return Turn(text=f"{len(body['messages'])} messages")

    with ScriptedEndpoint([echo]) as ep:
        assert chat(ep.url).json()["choices"][0]["message"]["content"] == "1 messages"
    assert seen[0]["messages"][0]["content"] == "hi"


def test_a_step_that_raises_answers_500_with_the_reason_and_is_not_used_up() -> None:
    def broken(body: dict[str, Any]) -> Turn:
        raise KeyError("tools")

    with ScriptedEndpoint([broken]) as ep:
        for _ in range(2):
            response = chat(ep.url)
            assert response.status_code == 500
            assert "KeyError: 'tools'" in response.json()["error"]["message"]
        assert ep.turns_served == 0


def test_requests_are_recorded_with_faults_not_using_turns() -> None:
    with ScriptedEndpoint([Turn(text="one")], faults={0: Fault("status", status=503)}) as ep:
        assert chat(ep.url).status_code == 503
        assert chat(ep.url).json()["choices"][0]["message"]["content"] == "one"
        recorded = ep.requests
    assert [(r.method, r.path) for r in recorded] == [("POST", "/v1/chat/completions")] * 2
    assert recorded[0].body["messages"][0]["content"] == "hi"
    assert recorded[0].headers["content-type"] == "application/json"


def test_status_fault_has_an_openai_error_body_and_retry_after() -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("status", status=429, retry_after=2))
        response = chat(ep.url)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.json()["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_and_truncated_faults(stream: bool) -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("malformed"))
        response = chat(ep.url, stream=stream)
        assert response.status_code == 200
        payloads = [e.data for e in iter_sse([response.content])] if stream else [response.text]
        with pytest.raises(ValueError):
            [json.loads(p) for p in payloads]
        ep.add_fault(Fault("truncated"))
        if stream:
            got = chunks(chat(ep.url, stream=True))
            assert got and "[DONE]" not in got
            assert all(c["choices"][0]["finish_reason"] is None for c in got)
        else:
            with pytest.raises(httpx.RemoteProtocolError):
                chat(ep.url)


def test_reset_and_hang_faults() -> None:
    with ScriptedEndpoint([]) as ep:
        ep.add_fault(Fault("reset"))
        with pytest.raises(httpx.TransportError):
            chat(ep.url)
        ep.add_fault(Fault("hang", hang_s=5))
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(ep.url + "/chat/completions", json={}, timeout=0.2)
        assert len(ep.requests) == 2


def test_api_key_and_model_are_checked() -> None:
    with ScriptedEndpoint(
        [Turn(text="ok")], api_key="sk-right", model="m1", strict_model=True
    ) as ep:
        denied = chat(ep.url)
        assert denied.status_code == 401
        assert denied.json()["error"]["code"] == "invalid_api_key"
        headers = {"Authorization": "Bearer sk-right"}
        body = {"model": "other", "messages": []}
        unknown = httpx.post(ep.url + "/chat/completions", json=body, headers=headers)
        assert unknown.status_code == 404 and "other" in unknown.json()["error"]["message"]
        models = httpx.get(ep.url + "/models", headers=headers).json()
        assert [m["id"] for m in models["data"]] == ["m1"]
        body["model"] = "m1"
        ok = httpx.post(ep.url + "/chat/completions", json=body, headers=headers)
        assert ok.json()["choices"][0]["message"]["content"] == "ok"


def test_any_model_is_served_unless_strict(endpoint: ScriptedEndpoint) -> None:
    answer = chat(endpoint.url, model="whatever-you-like").json()
    assert answer["model"] == "whatever-you-like"


def test_url_needs_a_running_endpoint() -> None:
    endpoint = ScriptedEndpoint([])
    with pytest.raises(RuntimeError, match="start"):
        endpoint.url  # noqa: B018


def script_file(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(data))
    return path


def test_from_file_reads_turns_and_faults(tmp_path: Path) -> None:
    path = script_file(
        tmp_path,
        {
            "turns": [
                {"text": "look", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}]},
                {"text": "done"},
            ],
            "faults": {"0": {"kind": "status", "status": 500}},
        },
    )
    with ScriptedEndpoint.from_file(path) as ep:
        assert chat(ep.url).status_code == 500
        call = chat(ep.url).json()["choices"][0]["message"]["tool_calls"][0]
        assert call["function"] == {"name": "ls", "arguments": '{"path": "."}'}


@pytest.mark.parametrize(
    "data",
    [
        {"turns": "nope"},
        [{"tool_calls": [{"arguments": {}}]}],
        {"turns": [], "faults": {"0": {"kind": "boom"}}},
    ],
)
def test_bad_script_files_say_what_is_wrong(tmp_path: Path, data: Any) -> None:
    with pytest.raises(ConfigError, match=r"script\.json"):
        ScriptedEndpoint.from_file(script_file(tmp_path, data))


def test_serves_a_script_from_the_command_line(tmp_path: Path) -> None:
    path = script_file(tmp_path, [{"text": "by hand"}])
    command = [sys.executable, "-m", "tether.models.scripted", str(path)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().split(" at ")[-1].strip()
            assert url.endswith("/v1")
            assert chat(url).json()["choices"][0]["message"]["content"] == "by hand"
        finally:
            proc.terminate()


@pytest.mark.parametrize("stream", [False, True])
def test_half_a_surrogate_pair_goes_out_as_an_ascii_escape(stream: bool) -> None:
    with ScriptedEndpoint([Turn(text="half: \ud83d")]) as ep:
        response = chat(ep.url, stream=stream)
        assert ep.turns_served == 1
    assert response.content.isascii() and b"\\ud83d" in response.content
    if stream:
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks(response)[:-1])
    else:
        text = response.json()["choices"][0]["message"]["content"]
    assert text == "half: \ud83d"


def test_an_answer_the_client_hung_up_on_does_not_use_up_its_turn() -> None:
    big = Turn(text="x" * 30_000_000)  # far more than the socket buffers hold
    with ScriptedEndpoint([big]) as ep:
        host, port = ep.url.split("//")[1].split("/")[0].split(":")
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        request = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}"
        )
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(request.encode())
            start = b""
            while len(start) < 12:
                start += sock.recv(12 - len(start))
            assert start == b"HTTP/1.1 200"  # the answer has begun
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        until = time.monotonic() + 10
        while ep.requests[0].answered_at is None and time.monotonic() < until:
            time.sleep(0.01)
        assert ep.requests[0].answered_at is not None
        assert ep.turns_served == 0


@pytest.mark.parametrize("stream", [False, True])
def test_keepalive_fault_sends_only_keep_alives(stream: bool) -> None:
    with ScriptedEndpoint([Turn(text="never")]) as ep:
        ep.add_fault(Fault("keepalive", hang_s=0.3))
        body = {"model": "m", "messages": [], "stream": stream}
        seen = b""
        with (
            pytest.raises(httpx.RemoteProtocolError),  # it hangs up mid-body at the end
            httpx.stream("POST", ep.url + "/chat/completions", json=body) as response,
        ):
            assert response.status_code == 200
            for piece in response.iter_bytes():
                seen += piece
        assert seen.count(b": keep-alive\n\n" if stream else b"\n") >= 3
        assert seen.strip(b": keep-alive\n" if stream else b"\n") == b""
        assert ep.turns_served == 0

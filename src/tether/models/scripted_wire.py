"""What the scripted endpoint says: script values and their OpenAI wire form.

Pure functions from a `Turn` to a chat-completions body or to the payloads of an
SSE stream, plus the script-file reader. `scripted.py` serves them over HTTP.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from tether.errors import ConfigError

__all__ = [
    "END_OF_SCRIPT",
    "Fault",
    "FaultKind",
    "ScriptStep",
    "ScriptedCall",
    "Turn",
    "call_arguments",
    "completion_body",
    "error_body",
    "estimate_usage",
    "finish_reason",
    "load_script",
    "output_chars",
    "prompt_text",
    "split_text",
    "stream_payloads",
]

FaultKind = Literal[
    "status", "reset", "hang", "malformed", "truncated", "keepalive", "stream_error"
]


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call to send; `str` arguments go out verbatim (broken JSON included)."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted answer; `finish_reason` defaults to what the content implies.

    `chunk` streams the text in pieces of that many characters (default: four
    pieces), to test what a client makes of text split anywhere.
    """

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    reasoning: str = ""
    finish_reason: str | None = None
    chunk: int | None = None


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure injected instead of an answer; see `ScriptedEndpoint` for each kind.

    `message` overrides the error text of a `status` or `stream_error` fault (e.g. a
    context-length message on a 400). `hang_s` is how long `hang` and `keepalive` last.
    """

    kind: FaultKind
    status: int = 500
    retry_after: float | None = None
    hang_s: float = 30.0
    message: str = ""

    def __post_init__(self) -> None:
        if self.kind not in get_args(FaultKind):
            raise ValueError(f"unknown fault kind {self.kind!r}; one of {get_args(FaultKind)}")


ScriptStep = Turn | Callable[[dict[str, Any]], Turn]
"""A turn, or a function from the request body to a turn (for dynamic scripts)."""

END_OF_SCRIPT = Turn(text="The scripted endpoint has no more turns: the script ended.")


def call_arguments(call: ScriptedCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def prompt_text(body: Mapping[str, Any]) -> str:
    """The prompt as a provider would see it, serialised for counting and caching.

    Tools come first, as providers place them ahead of the messages in the prefix.
    """
    return json.dumps(
        {"tools": body.get("tools"), "messages": body.get("messages")},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def estimate_usage(prompt: str, previous: str | None, output_chars: int) -> dict[str, Any]:
    """Usage at ~4 characters a token, with a cheap model of prompt caching.

    The cached part is the prefix shared with the previous request, counted only
    from 1024 tokens on and in 128-token blocks, as OpenAI caches.
    """
    prompt_tokens = math.ceil(len(prompt) / 4)
    shared = 0 if previous is None else _common_prefix(prompt, previous)
    cached = shared // 4
    cached = min(prompt_tokens, cached // 128 * 128) if cached >= 1024 else 0
    completion_tokens = math.ceil(output_chars / 4)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _common_prefix(a: str, b: str) -> int:
    """Length of the shared prefix, compared in shrinking blocks (prompts get long)."""
    limit, shared, step = min(len(a), len(b)), 0, 4096
    while step:
        while shared + step <= limit and a[shared : shared + step] == b[shared : shared + step]:
            shared += step
        step //= 2
    return shared


def output_chars(turn: Turn) -> int:
    return (
        len(turn.text)
        + len(turn.reasoning)
        + sum(len(c.name) + len(call_arguments(c)) for c in turn.tool_calls)
    )


def finish_reason(turn: Turn) -> str:
    if turn.finish_reason is not None:
        return turn.finish_reason
    return "tool_calls" if turn.tool_calls else "stop"


def split_text(text: str, pieces: int) -> list[str]:
    """`text` cut into `pieces` parts (some may be empty), in order."""
    size = max(1, math.ceil(len(text) / pieces))
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    return parts + [""] * (pieces - len(parts))


def _wire_calls(turn: Turn, call_ids: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": call.name, "arguments": call_arguments(call)},
        }
        for call, call_id in zip(turn.tool_calls, call_ids, strict=True)
    ]


def completion_body(
    turn: Turn, *, model: str, response_id: str, call_ids: list[str], usage: dict[str, Any]
) -> dict[str, Any]:
    """A complete `chat.completion` object for a non-streaming request."""
    message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = _wire_calls(turn, call_ids)
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(turn)}],
        "usage": usage,
    }


def stream_payloads(
    turn: Turn,
    *,
    model: str,
    response_id: str,
    call_ids: list[str],
    usage: dict[str, Any] | None,
) -> list[str]:
    """The `data:` payloads of a streamed answer, `[DONE]` last.

    Role first, then reasoning and text in several pieces, then each tool call as
    one chunk with id and name followed by its arguments in at least two pieces,
    a finish chunk, and the usage chunk when the client asked for it. The JSON is
    ASCII (`\\ud83d` escapes, as many servers send), so any text can be sent, even
    half of a surrogate pair.
    """

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps(
            {
                "id": response_id,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    out = [chunk({"role": "assistant", "content": ""})]
    if turn.reasoning:
        out += [chunk({"reasoning_content": p}) for p in split_text(turn.reasoning, 3) if p]
    if turn.text:
        count = 4 if not turn.chunk else max(1, math.ceil(len(turn.text) / turn.chunk))
        out += [chunk({"content": p}) for p in split_text(turn.text, count) if p]
    for index, (call, call_id) in enumerate(zip(turn.tool_calls, call_ids, strict=True)):
        first = {"index": index, "id": call_id, "type": "function"}
        function = {"name": call.name, "arguments": ""}
        out.append(chunk({"tool_calls": [{**first, "function": function}]}))
        pieces = [p for p in split_text(call_arguments(call), 3) if p]
        for piece in pieces + [""] * (2 - len(pieces)):
            fragment = {"index": index, "function": {"arguments": piece}}
            out.append(chunk({"tool_calls": [fragment]}))
    out.append(chunk({}, finish_reason(turn)))
    if usage is not None:
        out.append(
            json.dumps(
                {
                    "id": response_id,
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    out.append("[DONE]")
    return out


def error_body(message: str, *, type_: str, code: str | None = None) -> dict[str, Any]:
    """An error object shaped like OpenAI's."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def _turn_from_json(data: Any, where: str) -> Turn:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a turn must be an object, not {data!r}")
    calls = []
    for i, raw in enumerate(data.get("tool_calls") or ()):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise ConfigError(f"{where}.tool_calls[{i}]: needs a string 'name', got {raw!r}")
        arguments = raw.get("arguments", {})
        if not isinstance(arguments, dict | str):
            raise ConfigError(f"{where}.tool_calls[{i}]: arguments must be an object or string")
        calls.append(ScriptedCall(raw["name"], arguments, raw.get("id")))
    return Turn(
        text=str(data.get("text", "")),
        tool_calls=tuple(calls),
        reasoning=str(data.get("reasoning", "")),
        finish_reason=data.get("finish_reason"),
    )


def load_script(path: Path) -> tuple[list[Turn], dict[int, Fault]]:
    """Turns and faults from a JSON file: a list of turns, or {"turns": [...], "faults": {...}}.

    Faults map a request index to {"kind": ..., "status": ..., "retry_after": ...}.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read script {path}: {exc}") from exc
    raw_faults: Any = {}
    if isinstance(data, dict):
        raw_faults = data.get("faults") or {}
        data = data.get("turns")
    if not isinstance(data, list) or not isinstance(raw_faults, dict):
        raise ConfigError(f"{path}: expected a list of turns or {{'turns': [...], 'faults': {{}}}}")
    turns = [_turn_from_json(item, f"{path}: turns[{i}]") for i, item in enumerate(data)]
    faults: dict[int, Fault] = {}
    for key, raw in raw_faults.items():
        try:
            faults[int(key)] = Fault(**raw)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: faults[{key!r}]: {exc}") from exc
    return turns, faults

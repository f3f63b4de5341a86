"""What the scripted endpoint says on `/v1/messages`: the Anthropic Messages wire form.

Pure functions from a `Turn` to a message body or to the events of an SSE stream,
Anthropic-shaped errors, thinking signatures, and the prompt-cache model that
gives `usage` its cache numbers. `scripted_server.py` serves them over HTTP;
`scripted_anthropic_check.py` says what the real API would reject in a request.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from tether.models.scripted_wire import ScriptedCall, Turn, call_arguments, split_text

__all__ = [
    "CACHE_LOOKBACK",
    "ERROR_TYPES",
    "MIN_CACHEABLE_TOKENS",
    "PromptBlock",
    "anthropic_error",
    "cache_usage",
    "error_type",
    "message_body",
    "prompt_blocks",
    "stop_reason",
    "stream_events",
    "thinking_signature",
    "tool_input",
]

ERROR_TYPES: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""The error `type` the real API sends with each status."""

CACHE_LOOKBACK = 20
"""How many blocks back from a breakpoint a cache hit is looked for, as the real API does."""

MIN_CACHEABLE_TOKENS = 1024
"""A shorter prefix is never written to the cache (the Sonnet and Opus minimum)."""

# A fixed secret, so a conversation recorded against one endpoint replays on another.
_SIGNING_SECRET = b"tether-scripted-endpoint"

# OpenAI finish reasons a script may name, in Anthropic's words.
_STOP_REASONS = {"length": "max_tokens", "stop": "end_turn", "tool_calls": "tool_use"}


def error_type(status: int) -> str:
    """The error type for `status`; statuses the API does not document fall back by class."""
    if status in ERROR_TYPES:
        return ERROR_TYPES[status]
    return "invalid_request_error" if 400 <= status < 500 else "api_error"


def anthropic_error(message: str, *, type_: str) -> dict[str, Any]:
    """An error object shaped like Anthropic's (as a body, or an SSE `error` event)."""
    return {"type": "error", "error": {"type": type_, "message": message}}


def thinking_signature(thinking: str) -> str:
    """The signature of a thinking block: the endpoint checks it when the block comes back."""
    data = _SIGNING_SECRET + thinking.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def stop_reason(turn: Turn) -> str:
    """`finish_reason` in Anthropic's words: None follows the content, OpenAI names map over,
    anything else (`refusal`, `pause_turn`, ...) passes through."""
    if turn.finish_reason is None:
        return "tool_use" if turn.tool_calls else "end_turn"
    return _STOP_REASONS.get(turn.finish_reason, turn.finish_reason)


def tool_input(call: ScriptedCall) -> dict[str, Any]:
    """A call's `input` for a whole (non-streamed) message.

    The API only ever sends an object here, so `str` arguments are parsed and,
    when they are not a JSON object (broken JSON), sent as `{}`. Streaming sends
    the string verbatim instead, so broken JSON is tested there.
    """
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        parsed = json.loads(call.arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _content(turn: Turn, call_ids: Sequence[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if turn.reasoning:
        signature = thinking_signature(turn.reasoning)
        blocks.append({"type": "thinking", "thinking": turn.reasoning, "signature": signature})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call, call_id in zip(turn.tool_calls, call_ids, strict=True):
        blocks.append(
            {"type": "tool_use", "id": call_id, "name": call.name, "input": tool_input(call)}
        )
    return blocks


def _message(
    model: str, message_id: str, content: list[dict[str, Any]], usage: Mapping[str, int]
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": dict(usage),
    }


def message_body(
    turn: Turn,
    *,
    model: str,
    message_id: str,
    call_ids: Sequence[str],
    usage: Mapping[str, int],
) -> dict[str, Any]:
    """A complete `message` object for a non-streaming request."""
    body = _message(model, message_id, _content(turn, call_ids), usage)
    body["stop_reason"] = stop_reason(turn)
    return body


def stream_events(
    turn: Turn,
    *,
    model: str,
    message_id: str,
    call_ids: Sequence[str],
    usage: Mapping[str, int],
) -> list[tuple[str, str]]:
    """The `(event, data)` pairs of a streamed answer, `message_stop` last.

    `message_start` carries the input and cache numbers (output 1), then a `ping`,
    then each block: thinking in pieces and its `signature_delta`, text in pieces,
    each tool call's `input_json_delta` starting with an empty piece and then its
    arguments (verbatim, broken JSON too) in one or more; `message_delta` has the
    stop reason and output tokens. The JSON is ASCII, as on the OpenAI side.
    """
    out: list[tuple[str, str]] = []

    def emit(event: str, data: dict[str, Any]) -> None:
        out.append((event, json.dumps({"type": event, **data})))

    start_usage = {**usage, "output_tokens": 1}
    emit("message_start", {"message": _message(model, message_id, [], start_usage)})
    emit("ping", {})
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        emit("content_block_start", {"index": index, "content_block": start})
        for delta in deltas:
            emit("content_block_delta", {"index": index, "delta": delta})
        emit("content_block_stop", {"index": index})
        index += 1

    if turn.reasoning:
        pieces = [p for p in split_text(turn.reasoning, 3) if p]
        deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        deltas.append({"type": "signature_delta", "signature": thinking_signature(turn.reasoning)})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if turn.text:
        pieces = [p for p in split_text(turn.text, 4) if p]
        block({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces])
    for call, call_id in zip(turn.tool_calls, call_ids, strict=True):
        pieces = ["", *(p for p in split_text(call_arguments(call), 3) if p)]
        pieces += [""] * (2 - len(pieces))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        block({"type": "tool_use", "id": call_id, "name": call.name, "input": {}}, deltas)
    end = {"stop_reason": stop_reason(turn), "stop_sequence": None}
    emit("message_delta", {"delta": end, "usage": {"output_tokens": usage["output_tokens"]}})
    emit("message_stop", {})
    return out


# -- the prompt-cache model -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PromptBlock:
    """One block of the prompt: `key` says where it sits and what it holds (for the
    prefix hash), `tokens` estimates its size, `breakpoint` marks `cache_control`."""

    key: str
    tokens: int
    breakpoint: bool


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _marked(block: Any) -> bool:
    """Whether the block, or a block inside a tool result's content, has `cache_control`."""
    if not isinstance(block, dict):
        return False
    inner = block.get("content")
    nested = isinstance(inner, list) and any(_marked(b) for b in inner)
    return bool(block.get("cache_control")) or nested


def prompt_blocks(body: Mapping[str, Any]) -> list[PromptBlock]:
    """The prompt as the cache sees it, in order: tool definitions, system blocks, then
    every content block of every message (a string system prompt or string content
    is one text block). Expects a body that passed `validate_request`."""
    out: list[PromptBlock] = []

    def add(where: str, block: Any) -> None:
        text = json.dumps(
            _without_cache_control(block),
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=True,
        )
        out.append(PromptBlock(f"{where}\n{text}", math.ceil(len(text) / 4), _marked(block)))

    for tool in body.get("tools") or ():
        add("tool", tool)
    system = body.get("system") or ()
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        add("system", block)
    for i, message in enumerate(body.get("messages") or ()):
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            add(f"messages.{i}.{message['role']}", block)
    return out


def cache_usage(
    blocks: Sequence[PromptBlock], written: Set[str], *, model: str
) -> tuple[dict[str, int], set[str]]:
    """Input usage for a prompt, and the prefixes it writes to the cache.

    A prefix (blocks 0..i, for one model) is known by a chained hash. For each
    breakpoint the nearest written prefix at most `CACHE_LOOKBACK` blocks back
    (the breakpoint itself included) is a hit; the furthest hit over all
    breakpoints is the read point, and everything up to it is
    `cache_read_input_tokens`. Every breakpoint whose prefix has at least
    `MIN_CACHEABLE_TOKENS` is written; the tokens after the read point up to the
    last breakpoint are `cache_creation_input_tokens` (0 when that prefix is too
    short to be written). `input_tokens` is the rest, as the API counts it:
    neither read nor written. No expiry, and no cache invalidation by `tool_choice`
    or `thinking` settings.
    """
    prefixes: list[str] = []
    chain = hashlib.sha256(model.encode("utf-8", "surrogatepass")).hexdigest()
    for block in blocks:
        chain = hashlib.sha256(f"{chain}\n{block.key}".encode("utf-8", "surrogatepass")).hexdigest()
        prefixes.append(chain)
    upto = list(itertools.accumulate(b.tokens for b in blocks))
    marks = [i for i, b in enumerate(blocks) if b.breakpoint]
    read = -1
    for mark in marks:
        for i in range(mark, max(mark - CACHE_LOOKBACK, -1), -1):
            if prefixes[i] in written:
                read = max(read, i)
                break
    cache_read = upto[read] if read >= 0 else 0
    last = marks[-1] if marks else -1
    writes = {prefixes[m] for m in marks if upto[m] >= MIN_CACHEABLE_TOKENS}
    created = upto[last] - cache_read if last > read and upto[last] >= MIN_CACHEABLE_TOKENS else 0
    total = upto[-1] if upto else 0
    usage = {
        "input_tokens": total - cache_read - created,
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": cache_read,
    }
    return usage, writes

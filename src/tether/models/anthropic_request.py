"""Requests in the Anthropic Messages wire format, encoded at the edge. Pure; no I/O.

Three things matter beyond a plain conversion:

- **Shape.** Anthropic wants strict user/assistant alternation, every `tool_use`
  answered by a `tool_result` at the start of the next user message, and no empty
  text. Our history is a flat list of messages, so runs of user and tool messages
  merge into one user message (results first), a call left without a result (a run
  cut short) gets an "interrupted" error result, and a result whose call is not in
  the previous assistant message becomes plain text. A request is never refused
  for the shape of tether's own history.
- **Thinking.** Thinking blocks go back exactly as received, signatures included,
  ahead of the text and calls of their message.
- **Caching.** Anthropic caches only up to `cache_control` breakpoints, and a
  breakpoint finds an earlier cached prefix only within the 20 blocks before it.
  Breakpoints: the end of the system prompt (so tools and system are one cached
  prefix), the last block of the conversation (moving forward each turn), and,
  when the latest turn added more than `LOOKBACK_MARGIN` blocks, the end of the
  previous request's conversation too, so the last write is still found. At most
  three of the four allowed.
"""

from __future__ import annotations

import json
from typing import Any

from tether.messages import Message
from tether.models.base import ModelRequest
from tether.models.surrogates import mend_surrogates

__all__ = ["LOOKBACK_MARGIN", "MAX_BREAKPOINTS", "AnthropicEncoder", "request_body"]

MAX_BREAKPOINTS = 4
LOOKBACK_MARGIN = 15
"""A turn adding more blocks than this gets an extra breakpoint (the API looks back 20)."""

INTERRUPTED = "No result was recorded for this call: the run stopped before it finished."
_EPHEMERAL = {"type": "ephemeral"}

Block = dict[str, Any]


def _input(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object Anthropic wants; unparsable text is kept visible.

    A call whose arguments were broken (a reply cut off mid-call) already got an error
    result; sending its text back lets the model see what went wrong.
    """
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {"unparsed_arguments": arguments}
    return value if isinstance(value, dict) else {"unparsed_arguments": arguments}


def _assistant_blocks(message: Message) -> list[Block]:
    blocks: list[Block] = []
    for thinking in message.thinking:
        if thinking.redacted:
            blocks.append({"type": "redacted_thinking", "data": thinking.redacted})
        else:
            blocks.append(
                {"type": "thinking", "thinking": thinking.text, "signature": thinking.signature}
            )
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
        )
    return blocks or [{"type": "text", "text": "(no reply)"}]


def _result_block(message: Message) -> Block:
    block: Block = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
    if message.content:
        block["content"] = message.content
    if message.is_error:
        block["is_error"] = True
    return block


def _group(messages: tuple[Message, ...]) -> list[tuple[str, list[Message]]]:
    """Runs of messages that become one wire message: assistant alone, the rest as user."""
    groups: list[tuple[str, list[Message]]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        if groups and groups[-1][0] == role and role == "user":
            groups[-1][1].append(message)
        else:
            groups.append((role, [message]))
    return groups


def _user_blocks(group: list[Message], open_calls: list[str]) -> list[Block]:
    """One user message: results for the previous message's calls first, in call order."""
    results: dict[str, Block] = {}
    rest: list[Block] = []
    for message in group:
        if message.role == "tool" and message.tool_call_id in open_calls:
            results.setdefault(message.tool_call_id or "", _result_block(message))
        elif message.role == "tool":
            text = f"[result of call {message.tool_call_id} ({message.name})]\n{message.content}"
            rest.append({"type": "text", "text": text})
        elif message.content.strip():
            rest.append({"type": "text", "text": message.content})
    blocks = [
        results.get(call_id)
        or {"type": "tool_result", "tool_use_id": call_id, "content": INTERRUPTED, "is_error": True}
        for call_id in open_calls
    ]
    return blocks + rest or [{"type": "text", "text": "(empty message)"}]


def wire_messages(messages: tuple[Message, ...]) -> list[tuple[str, list[Block], int]]:
    """(role, blocks, index of the last source message) for each wire message.

    The first message is always a user message, as the API requires; an assistant
    message that ends the list (none does in tether's loop) is answered by nothing.
    """
    out: list[tuple[str, list[Block], int]] = []
    open_calls: list[str] = []
    position = -1
    for role, group in _group(messages):
        position += len(group)
        if role == "assistant":
            if not out:
                out.append(("user", [{"type": "text", "text": "(continued)"}], -1))
            elif out[-1][0] == "assistant":
                out.append(("user", _user_blocks([], open_calls), position - 1))
            message = group[0]
            out.append(("assistant", _assistant_blocks(message), position))
            open_calls = list(dict.fromkeys(c.id for c in message.tool_calls))
        else:
            out.append(("user", _user_blocks(group, open_calls), position))
            open_calls = []
    if open_calls:
        out.append(("user", _user_blocks([], open_calls), position))
    return out


def _markable(blocks: list[Block]) -> int | None:
    """The last block that may carry `cache_control` (thinking blocks may not)."""
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index].get("type") not in ("thinking", "redacted_thinking"):
            return index
    return None


def _breakpoints(wire: list[tuple[str, list[Block], int]]) -> set[tuple[int, int]]:
    """(message, block) positions to mark: the last block, and the previous request's
    last block when more than LOOKBACK_MARGIN blocks came after it."""
    marks: set[tuple[int, int]] = set()
    if not wire:
        return marks
    last = _markable(wire[-1][1])
    if last is not None:
        marks.add((len(wire) - 1, last))
    assistants = [i for i, (role, _, _) in enumerate(wire) if role == "assistant"]
    if assistants and assistants[-1] > 0:
        previous = assistants[-1] - 1  # the end of the conversation the last reply answered
        after = sum(len(blocks) for _, blocks, _ in wire[previous + 1 :])
        block = _markable(wire[previous][1])
        if after > LOOKBACK_MARGIN and block is not None:
            marks.add((previous, block))
    return marks


def request_body(
    request: ModelRequest,
    *,
    model: str,
    stream: bool,
    max_tokens: int,
    thinking_budget: int | None = None,
) -> dict[str, Any]:
    """The Messages body with cache breakpoints placed (see the module doc)."""
    body: dict[str, Any] = json.loads(
        AnthropicEncoder().encode(
            request,
            model=model,
            stream=stream,
            max_tokens=max_tokens,
            thinking_budget=thinking_budget,
        )
    )
    return body


def _answers(block: Block) -> Any:
    """What a block answers, part of the cache key (filled results depend on it)."""
    return block.get("tool_use_id")


class AnthropicEncoder:
    """Encodes bodies, reusing the JSON of wire messages whose source is unchanged.

    A wire message's JSON depends on its source messages (frozen, so the same
    objects give the same JSON), on the calls it answers, and on which of its blocks
    carry a breakpoint; those together are the cache key. Only the keys used by the
    latest request are kept, so memory does not grow with the session.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[tuple[Any, ...], tuple[tuple[Message, ...], str]] = {}

    def encode(
        self,
        request: ModelRequest,
        *,
        model: str,
        stream: bool,
        max_tokens: int,
        thinking_budget: int | None = None,
    ) -> bytes:
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        if request.system:
            body["system"] = [{"type": "text", "text": request.system, "cache_control": _EPHEMERAL}]
        if request.tools:
            tools: list[Block] = [
                {
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.schema(),
                }
                for spec in request.tools
            ]
            if not request.system:
                tools[-1]["cache_control"] = _EPHEMERAL
            body["tools"] = tools
            body["tool_choice"] = {"type": request.tool_choice}
        if thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
        if request.max_output_tokens is not None:
            # With thinking on, max_tokens counts the thinking too and must exceed the
            # budget: the answer's limit comes on top of the budget.
            body["max_tokens"] = request.max_output_tokens + (thinking_budget or 0)
        body["stream"] = stream
        body["messages"] = []
        shell = json.dumps(body, ensure_ascii=False)
        wire = wire_messages(request.messages)
        marks = _breakpoints(wire)
        fragments: list[str] = []
        cache: dict[tuple[Any, ...], tuple[tuple[Message, ...], str]] = {}
        start = 0
        for number, (role, blocks, end) in enumerate(wire):
            marked = tuple(sorted(b for m, b in marks if m == number))
            sources = request.messages[start : end + 1]
            # Ids are only unique among live objects: the cache keeps its sources alive.
            key = (role, tuple(map(id, sources)), marked, tuple(map(_answers, blocks)))
            start = end + 1
            hit = self._cache.get(key)
            if hit is not None:
                text = hit[1]
            else:
                for index in marked:
                    blocks[index] = {**blocks[index], "cache_control": _EPHEMERAL}
                text = json.dumps({"role": role, "content": blocks}, ensure_ascii=False)
            cache[key] = (sources, text)
            fragments.append(text)
        self._cache = cache
        joined = shell.replace('"messages": []', f'"messages": [{", ".join(fragments)}]', 1)
        try:
            return joined.encode()
        except UnicodeEncodeError:
            return mend_surrogates(joined).encode()

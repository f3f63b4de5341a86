"""Answers in the Anthropic Messages wire format, assembled at the edge. Pure; no I/O.

`AnthropicAssembler` builds one `ModelResponse` from stream events
(`message_start`, `content_block_*`, `message_delta`, `message_stop`) or from a whole
message, emitting `TextDelta`/`ReasoningDelta`/`ToolCallDelta` events as pieces
arrive. Thinking blocks are kept verbatim with their signatures, to be sent back.
Usage follows Anthropic's split: its `input_tokens` leaves out the cached and the
cache-written tokens, so tether's input count is the sum of all three.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.messages import FinishReason, Message, Thinking, ToolCall, Usage
from tether.models.base import ModelResponse, OnEvent
from tether.models.surrogates import mend_surrogates
from tether.observe.events import ReasoningDelta, TextDelta, ToolCallDelta

__all__ = ["AnthropicAssembler", "map_stop_reason", "parse_usage"]

_STOP = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "refusal": FinishReason.CONTENT_FILTER,
}


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def _field(data: Mapping[str, Any], name: str) -> int | None:
    """A usage count, or None when the field is missing or null."""
    value = data.get(name)
    return None if value is None else _count(value)


def parse_usage(data: Any, previous: Usage | None = None) -> Usage | None:
    """Usage from an Anthropic `usage` object; fields it lacks keep `previous` values.

    `message_delta` repeats only some fields (always the cumulative output count),
    so a later object refines the one from `message_start` instead of replacing it.
    """
    if not isinstance(data, Mapping):
        return previous
    base = previous or Usage()
    # A null field (some compatible servers send them in `message_delta`) is absent.
    read = _field(data, "cache_read_input_tokens")
    written = _field(data, "cache_creation_input_tokens")
    fresh = _field(data, "input_tokens")
    cached = base.cached_tokens if read is None else read
    write = base.cache_write_tokens if written is None else written
    if fresh is None and read is None and written is None:
        total = base.input_tokens
    else:
        old_fresh = base.input_tokens - base.cached_tokens - base.cache_write_tokens
        total = (old_fresh if fresh is None else fresh) + cached + write
    output = _field(data, "output_tokens")
    output = base.output_tokens if output is None else output
    return Usage(
        input_tokens=total, output_tokens=output, cached_tokens=cached, cache_write_tokens=write
    )


def map_stop_reason(raw: Any, *, has_tool_calls: bool) -> FinishReason:
    """Anthropic's stop reason as tether's; an unknown one (`pause_turn`) is OTHER."""
    if not isinstance(raw, str) or not raw:
        return FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP
    reason = _STOP.get(raw, FinishReason.OTHER)
    if reason is FinishReason.STOP and has_tool_calls:
        return FinishReason.TOOL_CALLS
    return reason


@dataclass(slots=True)
class _Block:
    kind: str
    text: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""
    call_id: str = ""
    name: str = ""
    start_input: Any = None
    slot: int = -1  # the call's position among this answer's tool calls


class AnthropicAssembler:
    """Collects one answer; `done` turns True at `message_stop` (or a whole message).

    `new_call_id` names a tool_use block that came without an id.
    """

    def __init__(self, on_event: OnEvent, new_call_id: Callable[[], str]) -> None:
        self._on_event = on_event
        self._new_call_id = new_call_id
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        self._ids: set[str] = set()
        self.stop_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.started = False
        self.done = False

    # -- streaming --------------------------------------------------------------------

    def add_event(self, kind: str, data: Mapping[str, Any]) -> None:
        """One stream event, by its type (`data["type"]`, or the SSE event name)."""
        if kind == "message_start":
            message = data.get("message")
            if isinstance(message, Mapping):
                self.started = True
                if isinstance(message.get("model"), str):
                    self.model = message["model"]
                self.usage = parse_usage(message.get("usage"), self.usage)
        elif kind == "content_block_start":
            block = data.get("content_block")
            if isinstance(block, Mapping):
                self._start(_index(data), block)
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if isinstance(delta, Mapping):
                self._delta(_index(data), delta)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            self.usage = parse_usage(data.get("usage"), self.usage)
        elif kind == "message_stop":
            self.done = True

    def _start(self, index: int, raw: Mapping[str, Any]) -> None:
        kind = str(raw.get("type", ""))
        block = _Block(kind=kind)
        self._blocks[index] = block
        if kind == "text":
            self._add_text(block, raw.get("text"))
        elif kind == "thinking":
            self._add_thinking(block, raw.get("thinking"))
            block.signature = _string(raw.get("signature"))
        elif kind == "redacted_thinking":
            block.data = _string(raw.get("data"))
        elif kind == "tool_use":
            call_id = _string(raw.get("id")).strip() or self._new_call_id()
            while call_id in self._ids:  # each call gets exactly one result, matched by id
                call_id = f"{call_id}_{self._calls + 1}"
            self._ids.add(call_id)
            block.call_id = call_id
            block.name = _string(raw.get("name"))
            block.start_input = raw.get("input")
            block.slot = self._calls
            self._calls += 1
            self._on_event(
                ToolCallDelta(index=block.slot, id=block.call_id, name=block.name, arguments="")
            )

    def _delta(self, index: int, delta: Mapping[str, Any]) -> None:
        block = self._blocks.get(index)
        if block is None:  # a delta for a block never started: start it as its kind says
            started = {"text_delta": "text", "input_json_delta": "tool_use"}.get(
                str(delta.get("type")), "thinking"
            )
            self._start(index, {"type": started})
            block = self._blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            self._add_text(block, delta.get("text"))
        elif kind == "thinking_delta":
            self._add_thinking(block, delta.get("thinking"))
        elif kind == "signature_delta":
            block.signature += _string(delta.get("signature"))
        elif kind == "input_json_delta" and block.kind == "tool_use":
            piece = _string(delta.get("partial_json"))
            if piece:
                block.text.append(piece)
                self._on_event(ToolCallDelta(index=block.slot, id=None, name=None, arguments=piece))

    def _add_text(self, block: _Block, value: Any) -> None:
        text = _string(value)
        if text:
            block.text.append(text)
            self._on_event(TextDelta(text=text))

    def _add_thinking(self, block: _Block, value: Any) -> None:
        text = _string(value)
        if text:
            block.text.append(text)
            self._on_event(ReasoningDelta(text=text))

    # -- a whole message --------------------------------------------------------------

    def add_message(self, message: Mapping[str, Any]) -> None:
        """A whole `message` object from a non-streaming answer."""
        self.add_event("message_start", {"message": {**message, "content": []}})
        content = message.get("content")
        for index, raw in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(raw, Mapping):
                continue
            self._start(index, raw)
            block = self._blocks[index]
            if block.kind == "tool_use" and isinstance(raw.get("input"), Mapping):
                arguments = json.dumps(raw["input"], ensure_ascii=False)
                block.start_input = None
                block.text.append(arguments)
                self._on_event(
                    ToolCallDelta(index=block.slot, id=None, name=None, arguments=arguments)
                )
        if message.get("stop_reason"):
            self.stop_reason = str(message["stop_reason"])
        self.done = True

    # -- the answer -------------------------------------------------------------------

    def response(self, *, model: str) -> ModelResponse:
        texts: list[str] = []
        thinking: list[Thinking] = []
        calls: list[ToolCall] = []
        for _, block in sorted(self._blocks.items()):
            joined = mend_surrogates("".join(block.text))
            if block.kind == "text":
                texts.append(joined)
            elif block.kind == "thinking":
                thinking.append(Thinking(text=joined, signature=block.signature))
            elif block.kind == "redacted_thinking":
                thinking.append(Thinking(redacted=block.data))
            elif block.kind == "tool_use":
                calls.append(ToolCall(block.call_id, block.name, _arguments(block, joined)))
        message = Message(
            role="assistant",
            content="".join(texts),
            tool_calls=tuple(calls),
            reasoning="\n\n".join(t.text for t in thinking if t.text) or None,
            thinking=tuple(thinking),
        )
        return ModelResponse(
            message=message,
            usage=self.usage or Usage(),
            finish_reason=map_stop_reason(self.stop_reason, has_tool_calls=bool(calls)),
            model=self.model or model,
        )


def _arguments(block: _Block, streamed: str) -> str:
    """The call's input as JSON text: what streamed, else the start block's input."""
    if streamed.strip():
        return streamed
    if isinstance(block.start_input, Mapping) and block.start_input:
        return json.dumps(block.start_input, ensure_ascii=False)
    return "{}"


def _index(data: Mapping[str, Any]) -> int:
    index = data.get("index")
    return index if isinstance(index, int) and not isinstance(index, bool) else 0


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""

"""Answers in the OpenAI chat-completions wire format, assembled at the edge. Pure; no I/O.

`ResponseAssembler` builds one `ModelResponse` from streamed deltas or a whole
message, emitting `TextDelta`/`ReasoningDelta`/`ToolCallDelta` events as it goes;
`parse_usage` and `map_finish_reason` read the usage and finish reason. It tolerates
the ways real servers (vLLM, Ollama, llama.cpp, OpenRouter) differ from OpenAI:
tool-call fragments without `index` or `id`, whole arguments in one chunk,
arguments sent as an object, several calls all numbered 0, the name repeated in
every fragment, ids that are empty or repeated, reasoning under
`reasoning_content` or `reasoning`, and cached-token counts in several places.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tether.messages import FinishReason, Message, ToolCall, Usage
from tether.models.base import ModelResponse, OnEvent
from tether.models.surrogates import mend_surrogates
from tether.observe.events import ReasoningDelta, TextDelta, ToolCallDelta

__all__ = ["ResponseAssembler", "map_finish_reason", "parse_usage"]

_FINISH = {
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "eos": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "tool_use": FinishReason.TOOL_CALLS,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def parse_usage(data: Any) -> Usage | None:
    """Usage from a `usage` object, or None when there is none.

    Cached tokens come from `prompt_tokens_details.cached_tokens` (OpenAI, vLLM),
    a top-level `cached_tokens` (some servers) or `prompt_cache_hit_tokens` (DeepSeek).
    """
    if not isinstance(data, Mapping):
        return None
    details = data.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    return Usage(
        input_tokens=_count(data.get("prompt_tokens", data.get("input_tokens"))),
        output_tokens=_count(data.get("completion_tokens", data.get("output_tokens"))),
        cached_tokens=_count(details.get("cached_tokens"))
        or _count(data.get("cached_tokens"))
        or _count(data.get("prompt_cache_hit_tokens")),
        cache_write_tokens=_count(details.get("cache_write_tokens")),
    )


def map_finish_reason(raw: Any, *, has_tool_calls: bool) -> FinishReason:
    """The provider's reason, normalised; "stop" with tool calls means tool calls."""
    if not isinstance(raw, str) or not raw:
        return FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP
    reason = _FINISH.get(raw.lower(), FinishReason.OTHER)
    if reason is FinishReason.STOP and has_tool_calls:
        return FinishReason.TOOL_CALLS
    return reason


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _text(value: Any) -> str:
    """Content as text: a string, or a list of parts with `text` (some servers)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            str(p.get("text", ""))
            for p in value
            if isinstance(p, Mapping) and p.get("type") in (None, "text")
        )
    return ""


def _arguments(call: _PartialCall) -> str:
    text = mend_surrogates("".join(call.arguments))
    return text if text.strip() else "{}"


_JSON_SYNTAX = re.compile(r'[\\"{}\[\]]')


@dataclass(slots=True)
class _PartialCall:
    """A tool call being assembled, with a scan of whether its arguments have closed.

    The scan follows brackets and strings only (no full parse), so it costs one
    pass over the arguments however many fragments they come in.
    """

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    depth: int = 0
    opened: bool = False
    in_string: bool = False
    escaped: bool = False

    @property
    def complete(self) -> bool:
        """Whether the arguments so far are a whole JSON object (or array)."""
        return self.opened and self.depth == 0

    def add(self, text: str) -> None:
        self.arguments.append(text)
        skip = 0  # matches before this position are escaped characters
        if self.escaped and text:
            self.escaped, skip = False, 1
        for match in _JSON_SYNTAX.finditer(text):
            if match.start() < skip:
                continue
            char = match.group()
            if self.in_string:
                if char == "\\":
                    skip = match.end() + 1
                    self.escaped = skip > len(text)
                elif char == '"':
                    self.in_string = False
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
                self.opened = True
            elif char in "}]" and self.depth:
                self.depth -= 1


class ResponseAssembler:
    """Collects one answer from deltas (streaming) or a message (plain JSON).

    Events go out as pieces arrive; a plain answer is reported as one delta of
    each kind, so subscribers see the same events either way. `new_call_id`
    names tool calls the server sent without an id (or with an empty one); an id
    the server gave two calls is made unique with a suffix (`call_0`, `call_0_2`),
    because each call gets exactly one result, matched by id.
    """

    def __init__(self, on_event: OnEvent, new_call_id: Callable[[], str]) -> None:
        self._on_event = on_event
        self._new_call_id = new_call_id
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, int] = {}
        self._by_id: dict[str, int] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def add_delta(self, delta: Mapping[str, Any]) -> None:
        """One streamed `delta` object."""
        reasoning = _text(delta.get("reasoning_content")) or _text(delta.get("reasoning"))
        if reasoning:
            self._reasoning.append(reasoning)
            self._on_event(ReasoningDelta(text=reasoning))
        text = _text(delta.get("content"))
        if text:
            self._text.append(text)
            self._on_event(TextDelta(text=text))
        calls = delta.get("tool_calls")
        for fragment in calls if isinstance(calls, list) else ():
            if isinstance(fragment, Mapping):
                self._add_call_fragment(fragment)

    def add_message(self, message: Mapping[str, Any]) -> None:
        """A whole `message` object from a non-streaming answer."""
        calls = message.get("tool_calls")
        numbered = [
            {**call, "index": position}
            for position, call in enumerate(calls if isinstance(calls, list) else ())
            if isinstance(call, Mapping)
        ]
        self.add_delta({**message, "tool_calls": numbered})

    def _slot(self, index: Any, call_id: str, name: str) -> int:
        """Which call a fragment belongs to: the one its index, its id or (with
        neither) its position points at, unless the fragment starts a new call."""
        indexed = isinstance(index, int) and not isinstance(index, bool)
        if indexed:
            slot = self._by_index.get(index)
        elif call_id in self._by_id:
            slot = self._by_id[call_id]
        else:
            slot = len(self._calls) - 1 if self._calls else None
        if slot is None or _starts_new_call(self._calls[slot], call_id, name):
            slot = self._open(call_id)
            if indexed:
                self._by_index[index] = slot
        return slot

    def _open(self, call_id: str) -> int:
        self._calls.append(_PartialCall(id=call_id))
        if call_id:
            self._by_id[call_id] = len(self._calls) - 1
        return len(self._calls) - 1

    def _add_call_fragment(self, fragment: Mapping[str, Any]) -> None:
        function = fragment.get("function")
        function = function if isinstance(function, Mapping) else {}
        call_id = _string(fragment.get("id"))
        call_id = call_id if call_id.strip() else ""  # an empty id is no id
        name = _string(function.get("name"))
        slot = self._slot(fragment.get("index"), call_id, name)
        call = self._calls[slot]
        if call_id and not call.id:
            call.id = call_id
            self._by_id[call_id] = slot
        if name and not call.name:
            call.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):
            arguments = json.dumps(arguments, ensure_ascii=False)
        arguments = arguments if isinstance(arguments, str) else ""
        call.add(arguments)
        self._on_event(
            ToolCallDelta(index=slot, id=call_id or None, name=name or None, arguments=arguments)
        )

    def _call_ids(self) -> list[str]:
        """One distinct id per call: the server's, suffixed when repeated, or a new one."""
        given = {c.id for c in self._calls if c.id}
        used: set[str] = set()
        ids = []
        for call in self._calls:
            if not call.id:
                call_id = self._new_call_id()
                while call_id in given or call_id in used:
                    call_id = self._new_call_id()
            elif call.id in used:
                number = 2
                while f"{call.id}_{number}" in given | used:
                    number += 1
                call_id = f"{call.id}_{number}"
            else:
                call_id = call.id
            used.add(call_id)
            ids.append(call_id)
        return ids

    def response(self, *, model: str) -> ModelResponse:
        """The finished answer: every call with its own id, empty arguments as `{}`."""
        calls = tuple(
            ToolCall(id=call_id, name=c.name, arguments=_arguments(c))
            for c, call_id in zip(self._calls, self._call_ids(), strict=True)
        )
        message = Message(
            role="assistant",
            content=mend_surrogates("".join(self._text)),
            tool_calls=calls,
            reasoning=mend_surrogates("".join(self._reasoning)) or None,
        )
        return ModelResponse(
            message=message,
            usage=self.usage or Usage(),
            finish_reason=map_finish_reason(self.finish_reason, has_tool_calls=bool(calls)),
            model=model,
        )


def _starts_new_call(call: _PartialCall, call_id: str, name: str) -> bool:
    """Whether a fragment that points at `call` really begins another call.

    Some servers number every call 0, or send neither index nor id, so a new call
    shows itself only by what it carries: an id other than the call's, or a name
    once the call is whole (named, arguments closed). A different name always
    starts a new call; the same name again (some servers repeat it in every
    fragment) does only once the call is whole.
    """
    whole = bool(call.name) and call.complete
    if call_id and call_id != call.id and (call.id or whole):
        return True
    return bool(name and call.name) and (name != call.name or call.complete)

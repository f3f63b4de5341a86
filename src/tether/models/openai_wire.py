"""The OpenAI chat-completions wire format, converted at the edge. Pure; no I/O.

`request_body` turns a `ModelRequest` into the JSON body; `ResponseAssembler`
builds one `ModelResponse` from streamed deltas or a whole message, emitting
`TextDelta`/`ReasoningDelta`/`ToolCallDelta` events as it goes. It tolerates the
ways real servers (vLLM, Ollama, llama.cpp, OpenRouter) differ from OpenAI:
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
from tether.models.base import ModelRequest, ModelResponse, OnEvent, ToolSpec
from tether.observe.events import ReasoningDelta, TextDelta, ToolCallDelta

__all__ = [
    "BodyEncoder",
    "ResponseAssembler",
    "is_context_length",
    "is_quota_exhausted",
    "map_finish_reason",
    "mend_surrogates",
    "parse_usage",
    "provider_message",
    "request_body",
    "wire_message",
]

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

# Lower-case fragments of the "prompt too long" errors of OpenAI, vLLM, llama.cpp,
# OpenRouter/Anthropic, Groq, Mistral, Gemini and friends.
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "maximum context",
    "exceeds the available context size",
    "exceed_context_size",
    "prompt is too long",
    "prompt too long",
    "input is too long",
    "too many input tokens",
    "input token count",
    "reduce the length of the messages",
)


def _plain(value: Any) -> Any:
    """JSON-ready copies of mappings and tuples (tool schemas may be read-only views)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def wire_message(message: Message) -> dict[str, Any]:
    """One message in OpenAI form; reasoning is never sent back."""
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def request_body(request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
    """The chat-completions body: system first, tools and tool_choice only with tools."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages += [wire_message(m) for m in request.messages]
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": spec.name,
                    "description": spec.description,
                    "parameters": _plain(spec.parameters),
                },
            }
            for spec in request.tools
        ]
        body["tool_choice"] = request.tool_choice
    if request.max_output_tokens is not None:
        body["max_tokens"] = request.max_output_tokens
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


class BodyEncoder:
    """Encodes request bodies, reusing the JSON of every message already encoded.

    Between turns a conversation only grows, so re-encoding all of it each turn is
    wasted work that grows with the session. Messages are frozen, so a message that
    is the same object as last time has the same JSON. The output is byte-for-byte
    `json.dumps(request_body(...))`, which also keeps the prefix stable for caches.
    """

    __slots__ = ("_fragments", "_messages", "_system", "_tail", "_tail_key", "_tools")

    _HOLE = '"messages": []'

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] = ()
        self._fragments: list[str] = []
        self._tail_key: tuple[Any, ...] | None = None
        self._tail = ""
        self._system: list[str] = []
        self._tools: tuple[ToolSpec, ...] = ()

    def encode(self, request: ModelRequest, *, model: str, stream: bool) -> bytes:
        same = 0
        for old, new in zip(self._messages, request.messages, strict=False):
            if old is not new:
                break
            same += 1
        fragments = self._fragments[:same]
        fragments += [_dumps(wire_message(m)) for m in request.messages[same:]]
        self._messages, self._fragments = request.messages, fragments
        key = (model, stream, request.system, request.tool_choice, request.max_output_tokens)
        if key != self._tail_key or request.tools is not self._tools:
            shell = ModelRequest(
                system=request.system,
                messages=(),
                tools=request.tools,
                tool_choice=request.tool_choice,
                max_output_tokens=request.max_output_tokens,
            )
            body = request_body(shell, model=model, stream=stream)
            system = body["messages"]
            body["messages"] = []
            self._tail = _dumps(body)
            self._tail_key, self._tools = key, request.tools
            self._system = [_dumps(m) for m in system]
        joined = ", ".join([*self._system, *fragments])
        return _utf8(self._tail.replace(self._HOLE, f'"messages": [{joined}]', 1))


def _utf8(text: str) -> bytes:
    """UTF-8 bytes; lone surrogates (which UTF-8 cannot carry) become U+FFFD."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return mend_surrogates(text).encode()


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def mend_surrogates(text: str) -> str:
    """`text` with surrogate pairs joined into their characters and lone ones as U+FFFD.

    A server may send half of a character as a `\\ud83d` escape, and the other half
    in the next chunk: valid JSON, but no valid text until the halves are joined.
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


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


def provider_message(
    body: Any, *, limit: int = 500, redact: Callable[[str], str] | None = None
) -> str:
    """The human-readable part of an error body (JSON in any common shape, or text).

    `redact` (which removes secrets) runs on the whole text before it is cut to
    `limit`: cutting first could leave the first part of a secret for it to miss.
    """
    text = _provider_text(body)
    if redact is not None:
        text = redact(text)
    return text[:limit]


def _provider_text(body: Any) -> str:
    data = body
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except ValueError:
            return " ".join(text.split()) or "(empty body)"
    if isinstance(data, Mapping):
        error = data.get("error", data)
        if isinstance(error, str):
            return error
        if isinstance(error, Mapping):
            message = error.get("message") or error.get("detail") or error.get("msg")
            if message:
                parts = [str(message)]
                code = error.get("code") or error.get("type")
                if isinstance(code, str) and code not in parts[0]:
                    parts.append(f"[{code}]")
                metadata = error.get("metadata")
                if isinstance(metadata, Mapping) and metadata.get("raw"):
                    parts.append(f"(upstream: {metadata['raw']})")  # OpenRouter
                return " ".join(parts)
    return json.dumps(data, ensure_ascii=False)


def is_context_length(text: str) -> bool:
    """Whether an error text says the prompt does not fit the context window."""
    lowered = text.lower()
    return any(marker in lowered for marker in _CONTEXT_MARKERS)


def is_quota_exhausted(text: str) -> bool:
    """Whether an error text says the account has no quota (credit) left.

    OpenAI sends this as a 429 with code/type `insufficient_quota`; unlike a rate
    limit, waiting does not help.
    """
    return "insufficient_quota" in text.lower()


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

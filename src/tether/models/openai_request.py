"""Requests in the OpenAI chat-completions wire format, encoded at the edge. Pure; no I/O.

`request_body` turns a `ModelRequest` into the JSON body; `BodyEncoder` gives the
same body as bytes, reusing the JSON of the messages it encoded before. Answers
are assembled by `openai_response.py`.
"""

from __future__ import annotations

import json
from typing import Any

from tether.messages import Message
from tether.models.base import ModelRequest, ToolSpec
from tether.models.surrogates import mend_surrogates

__all__ = ["BodyEncoder", "request_body", "wire_message"]


def wire_message(message: Message, *, echo_reasoning: bool = False) -> dict[str, Any]:
    """One message in OpenAI form; reasoning goes back only where the server wants it
    (`echo_reasoning`: DeepSeek's, Kimi's and MiniMax's thinking models during tool
    use), as `reasoning_content`; Kimi refuses a tool-call message without one, so
    such a message carries it even when empty."""
    if echo_reasoning and message.role == "assistant" and (message.reasoning or message.tool_calls):
        return {**wire_message(message), "reasoning_content": message.reasoning or ""}
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
                    "parameters": spec.schema(),
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

    __slots__ = ("_echo", "_fragments", "_messages", "_system", "_tail", "_tail_key", "_tools")

    _HOLE = '"messages": []'

    def __init__(self, *, echo_reasoning: bool = False) -> None:
        self._echo = echo_reasoning
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
        fragments += [
            _dumps(wire_message(m, echo_reasoning=self._echo)) for m in request.messages[same:]
        ]
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


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)

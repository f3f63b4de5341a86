"""Provider-neutral conversation types.

Adapters convert these to and from wire formats at the edge; everything else in
tether speaks only these. Values are frozen so a message, once in the transcript,
cannot change under anyone's feet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "FinishReason",
    "Message",
    "Role",
    "StopReason",
    "Thinking",
    "ToolCall",
    "ToolResult",
    "Usage",
    "scrub",
    "scrub_message",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """`text` with lone surrogates replaced, so it can always be written as UTF-8.

    They arrive from JSON escapes like "\\ud83d" in model output and from file names
    that are not valid UTF-8; one of them would make every later write fail.
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


Role = Literal["system", "user", "assistant", "tool"]


class FinishReason(StrEnum):
    """Why one model response ended."""

    STOP = "stop"
    TOOL_CALLS = "tool_calls"
    LENGTH = "length"
    CONTENT_FILTER = "content_filter"
    OTHER = "other"


class StopReason(StrEnum):
    """Why a whole run ended; maps onto the CLI's exit codes."""

    COMPLETED = "completed"
    MAX_TURNS = "max_turns"
    MAX_TOKENS = "max_tokens"
    TIMEOUT = "timeout"
    MAX_COST = "max_cost"
    INTERRUPTED = "interrupted"
    PROVIDER_ERROR = "provider_error"
    TOOL_FORMAT = "tool_format"  # the model kept writing tool calls tether could not read

    @property
    def is_limit(self) -> bool:
        return self in (
            StopReason.MAX_TURNS,
            StopReason.MAX_TOKENS,
            StopReason.TIMEOUT,
            StopReason.MAX_COST,
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the model sent it; `arguments` is raw, untrusted JSON text."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=str(data["arguments"]))


@dataclass(frozen=True, slots=True)
class Thinking:
    """One reasoning block exactly as the provider sent it, kept to be sent back.

    Anthropic checks the `signature` of each thinking block it gets back (and needs
    them back during tool use), so the block is stored verbatim; `redacted` holds a
    `redacted_thinking` block's opaque data, which has no readable text.
    """

    text: str = ""
    signature: str = ""
    redacted: str = ""

    def to_dict(self) -> dict[str, str]:
        if self.redacted:
            return {"redacted": self.redacted}
        return {"text": self.text, "signature": self.signature}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Thinking:
        return cls(
            text=str(data.get("text", "")),
            signature=str(data.get("signature", "")),
            redacted=str(data.get("redacted", "")),
        )


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one tool call produced, as the model will read it."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Message:
    """One entry of the conversation.

    `tool_call_id`, `name` and `is_error` are set only on role "tool";
    `tool_calls`, `reasoning` and `thinking` only on role "assistant". `reasoning`
    is readable text for people and transcripts; `thinking` holds the provider's
    signed blocks (whose text is also in `reasoning`), sent back verbatim.
    """

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    reasoning: str | None = None
    thinking: tuple[Thinking, ...] = ()

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        return cls(
            role="tool",
            content=result.content,
            tool_call_id=result.call_id,
            name=result.name,
            is_error=result.is_error,
        )

    def to_dict(self) -> dict[str, Any]:
        """A compact JSON-ready form: empty optional fields are left out."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            data["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            data["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            data["name"] = self.name
        if self.is_error:
            data["is_error"] = True
        if self.thinking:
            data["thinking"] = [t.to_dict() for t in self.thinking]
        if self.reasoning and self.reasoning != _thinking_text(self.thinking):
            data["reasoning"] = self.reasoning
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        role = data["role"]
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown message role {role!r}")
        thinking = tuple(Thinking.from_dict(t) for t in data.get("thinking") or ())
        return cls(
            role=role,
            content=str(data.get("content") or ""),
            tool_calls=tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or ()),
            tool_call_id=data.get("tool_call_id"),
            name=data.get("name"),
            is_error=bool(data.get("is_error", False)),
            reasoning=data.get("reasoning") or _thinking_text(thinking) or None,
            thinking=thinking,
        )


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts as the provider reported them.

    `input_tokens` includes the cached ones; `cached_tokens` is the part served from
    the provider's prompt cache, `cache_write_tokens` the part written to it.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


def _thinking_text(blocks: tuple[Thinking, ...]) -> str:
    """The readable text of thinking blocks, as `reasoning` holds it."""
    return "\n\n".join(t.text for t in blocks if t.text)


def scrub_message(message: Message) -> Message:
    """The message with every text field scrubbed; the same object when already clean.

    Thinking text is scrubbed too, though its signature covers the exact text: a
    provider sends valid UTF-8, so only a broken stream could make this matter, and
    then the provider's refusal of the block is clearer than a transcript that
    cannot be written.
    """
    calls = tuple(
        ToolCall(scrub(c.id), scrub(c.name), scrub(c.arguments)) for c in message.tool_calls
    )
    cleaned = replace(
        message,
        content=scrub(message.content),
        tool_calls=calls,
        tool_call_id=None if message.tool_call_id is None else scrub(message.tool_call_id),
        name=None if message.name is None else scrub(message.name),
        reasoning=None if message.reasoning is None else scrub(message.reasoning),
        thinking=tuple(replace(t, text=scrub(t.text)) for t in message.thinking),
    )
    return message if cleaned == message else cleaned

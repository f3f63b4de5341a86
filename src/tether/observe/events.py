"""The event vocabulary of a run, and the bus that carries it.

The core never prints: it emits these events. Terminal rendering, headless output,
logs and hooks are subscribers. Every event serialises to a flat JSON object with a
`type` field, which is what `--output-format stream-json` writes line by line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from tether.messages import FinishReason, Message, StopReason, ToolCall, ToolResult, Usage

__all__ = [
    "AssistantMessage",
    "Event",
    "EventBus",
    "LimitReached",
    "LoopWarning",
    "Notice",
    "PermissionChecked",
    "ReasoningDelta",
    "RetryScheduled",
    "RunFinished",
    "SessionStarted",
    "Subscriber",
    "TextDelta",
    "ToolCallDelta",
    "ToolFinished",
    "ToolStarted",
    "TurnStarted",
    "TurnUsage",
    "UserMessage",
]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Message | ToolCall | Usage):
        return value.to_dict()
    if isinstance(value, ToolResult):
        return {
            "call_id": value.call_id,
            "name": value.name,
            "content": value.content,
            "is_error": value.is_error,
        }
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class Event:
    """Base of all events; `type` names the event on the wire."""

    type: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        for f in fields(self):
            data[f.name] = _jsonable(getattr(self, f.name))
        return data


@dataclass(frozen=True, slots=True)
class SessionStarted(Event):
    """`resumed`: an earlier session continues (its transcript grows)."""

    type: ClassVar[str] = "session_started"
    session_id: str
    model: str
    workspace: str
    transcript: str
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class UserMessage(Event):
    type: ClassVar[str] = "user_message"
    text: str


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    turn: int


@dataclass(frozen=True, slots=True)
class TextDelta(Event):
    """A piece of the answer as it streams in."""

    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta(Event):
    """A piece of the model's reasoning, where the endpoint sends it."""

    type: ClassVar[str] = "reasoning_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta(Event):
    """A fragment of a tool call being streamed; `index` ties fragments together."""

    type: ClassVar[str] = "tool_call_delta"
    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class RetryScheduled(Event):
    """The model call failed transiently and will be tried again after `delay` s."""

    type: ClassVar[str] = "retry_scheduled"
    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True)
class AssistantMessage(Event):
    """One complete model response."""

    type: ClassVar[str] = "assistant_message"
    message: Message
    usage: Usage
    finish_reason: FinishReason


@dataclass(frozen=True, slots=True)
class TurnUsage(Event):
    """The tokens of one model response, emitted right after its `AssistantMessage`.

    `usage` is what the provider reported; `estimated_input_tokens` is tether's count
    of the same request made before sending (None without context management), so
    the two can be compared. `context_tokens` is what the next request starts from, of
    `window`. `total` is the session's usage so far, side calls included. `call` counts
    the run's model responses (the closing summary at a limit is one of them).
    `cost_usd` and `total_cost_usd` price `usage` and `total` at the catalogue's list
    prices (None when the model's prices are unknown).
    """

    type: ClassVar[str] = "turn_usage"
    call: int
    usage: Usage
    estimated_input_tokens: int | None
    context_tokens: int | None
    window: int | None
    total: Usage
    cost_usd: float | None = None
    total_cost_usd: float | None = None


@dataclass(frozen=True, slots=True)
class ToolStarted(Event):
    type: ClassVar[str] = "tool_started"
    call: ToolCall


@dataclass(frozen=True, slots=True)
class SubagentStep(Event):
    """A subagent (the `task` named `description`) started a tool call: shown so
    the user sees what it does; its results stay in its own transcript."""

    type: ClassVar[str] = "subagent_step"
    description: str
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolFinished(Event):
    type: ClassVar[str] = "tool_finished"
    call: ToolCall
    result: ToolResult
    duration_s: float


@dataclass(frozen=True, slots=True)
class LoopWarning(Event):
    """The model repeated the same call; a note was added to the result."""

    type: ClassVar[str] = "loop_warning"
    call: ToolCall
    repeats: int


@dataclass(frozen=True, slots=True)
class PermissionChecked(Event):
    """A call was judged by the permission policy; `ran` says whether it went ahead.

    `parts` are (text, verdict, reason) of each judged piece, for the curious.
    """

    type: ClassVar[str] = "permission"
    tool: str
    verdict: str
    reason: str
    ran: bool
    rules: tuple[str, ...] = ()
    parts: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class LimitReached(Event):
    type: ClassVar[str] = "limit_reached"
    reason: StopReason
    detail: str


@dataclass(frozen=True, slots=True)
class TodosUpdated(Event):
    """The model replaced its todo list (each item: content, status)."""

    type: ClassVar[str] = "todos_updated"
    todos: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Notice(Event):
    """Something the user should know that is not part of the conversation."""

    type: ClassVar[str] = "notice"
    level: str
    text: str


@dataclass(frozen=True, slots=True)
class RunFinished(Event):
    type: ClassVar[str] = "run_finished"
    session_id: str
    stop_reason: StopReason
    result: str
    turns: int
    usage: Usage
    duration_s: float
    error: str | None = None
    session_usage: Usage | None = None  # all runs of the session so far, side calls included


Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous fan-out: subscribers run in order, on the emitting thread.

    A subscriber that raises is turned off, and the others hear about it as a
    `Notice`: a broken renderer or a closed pipe must not end the run or leave a
    tool call without its result. Ctrl-C (not an `Exception`) still goes through.
    """

    __slots__ = ("_subscribers",)

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; the returned function removes it again."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, event: Event) -> None:
        failures: list[str] = []
        for subscriber in tuple(self._subscribers):
            try:
                subscriber(event)
            except Exception as exc:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)
                name = getattr(subscriber, "__qualname__", type(subscriber).__qualname__)
                failures.append(
                    f"{name} failed on a {event.type} event and was turned off: "
                    f"{type(exc).__name__}: {exc}"
                )
        for text in failures:  # after the event itself has reached everyone
            self.emit(Notice("error", text))

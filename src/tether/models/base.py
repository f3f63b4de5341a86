"""The model boundary: one request in, streamed events out, one response back.

Adapters (OpenAI-compatible, Anthropic, scripted) implement `Model`; nothing outside
`models/` knows a wire format. Failures surface as `ProviderError`s after the
adapter's own retries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from tether.messages import FinishReason, Message, Usage
from tether.observe.events import Event

__all__ = ["Model", "ModelRequest", "ModelResponse", "OnEvent", "ToolSpec"]

OnEvent = Callable[[Event], None]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it: a name, what it is for, a JSON schema."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def schema(self) -> dict[str, Any]:
        """The parameters as plain dicts and lists, ready for `json.dumps` (they may be
        read-only views)."""
        return {str(k): _plain(v) for k, v in self.parameters.items()}


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs; built by the loop, converted by the adapter.

    `tool_choice="none"` keeps the tool list (and so the cached prefix) unchanged
    while asking for a plain answer, as the final summary after a limit does.
    `deadline` is a `time.monotonic()` reading after which the call, retries
    included, gives up: the run's wall-clock limit reaches into the model call.
    """

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: Literal["auto", "none"] = "auto"
    max_output_tokens: int | None = None
    deadline: float | None = None


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One answer. `usage` is the request that produced it (its input is the context's
    size); `side_usage` is what attempts thrown away on the way cost (the text
    protocol's restates): paid for, counted in totals, but not the context's size."""

    message: Message
    usage: Usage
    finish_reason: FinishReason
    model: str = ""
    side_usage: Usage = field(default_factory=Usage)


class Model(Protocol):
    """Anything that can answer a `ModelRequest`."""

    @property
    def name(self) -> str: ...

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        """Run one call, reporting deltas and retries through `on_event`.

        Raises `ProviderError` when the call cannot be completed.
        """
        ...

    def close(self) -> None: ...


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value

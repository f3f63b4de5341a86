"""The `Model` a run uses: the provider's wire client, and how tools reach the model.

`--tool-protocol` (or `[model] tool_protocol`, or the model's catalogue entry) picks
`native` tool calls, the `text` format described in the prompt, or `auto`: native
first, and text for the rest of the session once the endpoint refuses the `tools`
parameter (a model Ollama cannot give tools, vLLM without a tool parser, llama.cpp
without --jinja). Wire clients are imported here, on first use, so startup pays for
only the one it needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.errors import ProviderError
from tether.models.base import Model, ModelRequest, ModelResponse, OnEvent
from tether.observe.events import Notice

if TYPE_CHECKING:
    from tether.config import Settings
    from tether.models.catalogue import ModelInfo

__all__ = ["AutoProtocolModel", "build_model", "tool_protocol"]

_MAX_OUTPUT = 32_000
"""Anthropic wants max_tokens on every request; the catalogue's value, up to this."""


def tool_protocol(settings: Settings, info: ModelInfo) -> str:
    """native, text or auto: the setting, else the model's entry, else auto."""
    if settings.tool_protocol:
        return settings.tool_protocol
    if info.tool_protocol:
        return info.tool_protocol
    return "auto" if info.tools else "text"


def build_model(settings: Settings, info: ModelInfo) -> Model:
    """The wire client for `settings.provider`, wrapped for the tool protocol."""
    from tether.models.retry import RetryPolicy

    retry = RetryPolicy(max_attempts=settings.max_attempts, base_delay=settings.retry_base_delay)
    native: Model
    if settings.provider == "anthropic":
        from tether.models.anthropic import AnthropicModel

        native = AnthropicModel(
            base_url=settings.base_url,
            api_key=settings.api_key,
            model=settings.model,
            max_tokens=min(info.max_output, _MAX_OUTPUT),
            thinking_budget=settings.thinking_budget,
            stream=settings.stream,
            request_timeout=settings.request_timeout,
            retry=retry,
        )
    else:
        from tether.models.openai_compat import OpenAICompatModel

        native = OpenAICompatModel(
            base_url=settings.base_url,
            api_key=settings.api_key,
            model=settings.model,
            stream=settings.stream,
            request_timeout=settings.request_timeout,
            retry=retry,
            echo_reasoning=info.echo_reasoning,
        )
    protocol = tool_protocol(settings, info)
    if protocol == "native":
        return native
    if protocol == "text":
        from tether.models.text_protocol import TextProtocolModel

        return TextProtocolModel(native)
    return AutoProtocolModel(native)


class AutoProtocolModel:
    """Native tool calls until the endpoint refuses them, then the text protocol."""

    def __init__(self, native: Model) -> None:
        self._native = native
        self._text: Model | None = None

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def protocol(self) -> str:
        return "text" if self._text is not None else "native"

    def complete(self, request: ModelRequest, on_event: OnEvent) -> ModelResponse:
        if self._text is not None:
            return self._text.complete(request, on_event)
        try:
            return self._native.complete(request, on_event)
        except ProviderError as exc:
            from tether.models.text_protocol import TextProtocolModel, rejects_tools

            if not request.tools or not rejects_tools(exc):
                raise
            on_event(
                Notice(
                    level="warning",
                    text=(
                        f"the endpoint refused native tool calls ({exc}); tether describes "
                        "the tools in the prompt instead (text protocol) for this session. "
                        "Pass --tool-protocol text to start that way."
                    ),
                )
            )
            self._text = TextProtocolModel(self._native)
            return self._text.complete(request, on_event)

    def close(self) -> None:
        self._native.close()

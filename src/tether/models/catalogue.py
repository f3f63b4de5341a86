"""What tether knows about a model: its window, its output limit, its prices, what it can do.

A data file (`catalogue.json`) ships the common models; users extend or override it in
config (`[models."name"]`). Names are matched exactly, then without a router's
`provider/` prefix (OpenRouter's `anthropic/claude-sonnet-4`), then ignoring case and
`.`/`_` versus `-` (`claude-sonnet-4.5`), then by the longest catalogue name the
model's name starts with (`claude-sonnet-4-20250514`). A model
found nowhere gets safe defaults, and `known` is False so the caller can say so once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import Any

from tether.messages import Usage

__all__ = ["DEFAULT_WINDOW", "MODEL_KEYS", "ModelInfo", "cost_usd", "lookup"]

DEFAULT_WINDOW = 128_000


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Prices are USD per million tokens; None where the provider does not say."""

    name: str
    context_window: int = DEFAULT_WINDOW
    max_output: int = 8192
    input: float | None = None
    output: float | None = None
    cached_input: float | None = None
    cache_write: float | None = None
    tools: bool = True
    reasoning: bool = False
    images: bool = False
    echo_reasoning: bool = False  # the server wants reasoning sent back with tool calls
    tool_protocol: str | None = None  # "native" or "text": how this model calls tools
    known: bool = False


MODEL_KEYS: Mapping[str, type] = {
    "context_window": int,
    "max_output": int,
    "input": float,
    "output": float,
    "cached_input": float,
    "cache_write": float,
    "tools": bool,
    "reasoning": bool,
    "images": bool,
    "echo_reasoning": bool,
    "tool_protocol": str,
}


@cache
def _shipped() -> dict[str, dict[str, Any]]:
    text = resources.files("tether.models").joinpath("catalogue.json").read_text("utf-8")
    models: dict[str, dict[str, Any]] = json.loads(text)["models"]
    return models


def lookup(model: str, extra: Mapping[str, Mapping[str, Any]] | None = None) -> ModelInfo:
    """The model's entry, the user's `extra` entries winning over the shipped ones."""
    table: dict[str, dict[str, Any]] = {k: dict(v) for k, v in _shipped().items()}
    for name, values in (extra or {}).items():
        table[name] = {**table.get(name, {}), **values}
    entry = _find(model, table)
    if entry is None:
        return ModelInfo(model)
    return replace(ModelInfo(model), known=True, **entry)


def _normal(name: str) -> str:
    """A name as routers and providers variously spell it: `anthropic/Claude-Sonnet-4.5`
    and `claude-sonnet-4-5` are the same model."""
    return name.rsplit("/", 1)[-1].lower().replace(".", "-").replace("_", "-")


def _find(model: str, table: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    for candidate in (model, model.rsplit("/", 1)[-1]):
        if candidate in table:
            return table[candidate]
    bare = _normal(model)
    normal = {_normal(name): name for name in table}
    if bare in normal:
        return table[normal[bare]]
    prefixes = [key for key in normal if bare.startswith(key + "-")]
    return table[normal[max(prefixes, key=len)]] if prefixes else None


def cost_usd(info: ModelInfo, usage: Usage) -> float | None:
    """What `usage` cost at the model's list prices; None when they are not known.

    Input tokens include the cached and cache-written ones; each part is priced at
    its own rate (a missing cached or cache-write price counts as the input price).
    """
    if info.input is None or info.output is None:
        return None
    cached_price = info.input if info.cached_input is None else info.cached_input
    write_price = info.input if info.cache_write is None else info.cache_write
    plain = max(usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens, 0)
    total = (
        plain * info.input
        + usage.cached_tokens * cached_price
        + usage.cache_write_tokens * write_price
        + usage.output_tokens * info.output
    )
    return total / 1_000_000

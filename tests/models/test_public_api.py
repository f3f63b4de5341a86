"""Every name a models module lists in `__all__` exists (the list is the public API)."""

from __future__ import annotations

import importlib

import pytest

MODULES = [
    "anthropic",
    "anthropic_request",
    "anthropic_response",
    "catalogue",
    "choose",
    "error_text",
    "http",
    "openai_compat",
    "openai_errors",
    "openai_request",
    "openai_response",
    "retry",
    "scripted",
    "scripted_anthropic",
    "scripted_anthropic_check",
    "scripted_server",
    "scripted_state",
    "scripted_wire",
    "sse",
    "surrogates",
    "text_protocol",
    "text_scan",
    "text_shapes",
    "text_tools",
    "transport",
    "wire",
]


@pytest.mark.parametrize("name", MODULES)
def test_public_names_exist(name: str) -> None:
    module = importlib.import_module(f"tether.models.{name}")
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []

"""Fixtures shared by the model-client tests."""

from __future__ import annotations

import pytest

from tether.observe.events import Event


@pytest.fixture
def events() -> list[Event]:
    """Collects what a model call emits; pass `events.append` as `on_event`."""
    return []

"""What the wire-client tests share: a fast retry policy, a tool, a request with it."""

from __future__ import annotations

import pytest

from tether.messages import Message
from tether.models.base import ModelRequest, ToolSpec
from tether.models.retry import RetryPolicy

FAST = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05)
STREAMS = pytest.mark.parametrize("stream", [True, False], ids=["sse", "plain"])
READ = ToolSpec(
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
REQUEST = ModelRequest(
    system="You are terse.", messages=(Message.user("Fix the bug."),), tools=(READ,)
)

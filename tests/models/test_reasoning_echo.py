"""Reasoning goes back to servers that require it during tool use, and only to them."""

from __future__ import annotations

from tether.messages import Message, ToolCall, ToolResult
from tether.models.base import ModelRequest
from tether.models.openai_compat import OpenAICompatModel
from tether.models.scripted import ScriptedEndpoint, Turn

CALL = ToolCall("call_1", "read_file", '{"path": "a.py"}')
HISTORY = (
    Message.user("go"),
    Message(role="assistant", content="", tool_calls=(CALL,), reasoning="I should read a.py."),
    Message.tool(ToolResult("call_1", "read_file", "x = 1")),
    Message(role="assistant", content="Done reading.", tool_calls=(CALL,)),
    Message.tool(ToolResult("call_1", "read_file", "x = 1")),
)


def sent_assistants(echo: bool) -> list[dict[str, object]]:
    with ScriptedEndpoint([Turn(text="ok")]) as ep:
        with OpenAICompatModel(
            base_url=ep.url, api_key=None, model="m", echo_reasoning=echo
        ) as model:
            model.complete(ModelRequest(system="s", messages=HISTORY), lambda e: None)
        body = ep.requests[0].body
    return [m for m in body["messages"] if m["role"] == "assistant"]


def test_echoed_as_reasoning_content_even_empty_on_a_tool_call() -> None:
    first, second = sent_assistants(echo=True)
    assert first["reasoning_content"] == "I should read a.py."
    assert second["reasoning_content"] == ""  # Kimi refuses a tool-call message without it


def test_not_sent_to_servers_that_do_not_ask_for_it() -> None:
    assert all("reasoning_content" not in m for m in sent_assistants(echo=False))

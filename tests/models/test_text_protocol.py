"""The text protocol wrapper over the real OpenAI-compatible client and scripted endpoint.

The scripted endpoint answers with plain text (`Turn(text=...)`), as a model
without native tools would; nothing of ours is mocked.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from tether.errors import ProviderError, ToolFormatError
from tether.messages import FinishReason, Message, ToolCall, ToolResult
from tether.models.base import ModelRequest, ModelResponse, ToolSpec
from tether.models.openai_compat import OpenAICompatModel
from tether.models.retry import RetryPolicy
from tether.models.scripted import Fault, ScriptedEndpoint, ScriptStep, Turn
from tether.models.scripted_wire import prompt_text
from tether.models.text_protocol import (
    TextProtocolModel,
    rejects_tools,
    render_call,
    render_messages,
    render_results,
    restate_request,
    tools_prompt,
)
from tether.observe.events import (
    Event,
    Notice,
    ReasoningDelta,
    RetryScheduled,
    TextDelta,
    ToolCallDelta,
)

FAST = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02)
TOOLS = (
    ToolSpec(
        "read_file",
        "Read a text file.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        "bash",
        "Run a shell command.",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    ),
)
SYSTEM = "You are tether, a coding agent."
READ = (
    'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
)
BROKEN = '<tool_call>\n{"name": "read_file", "arguments": {"path": a.py}}\n</tool_call>'


def request(*messages: Message, **changes: Any) -> ModelRequest:
    return ModelRequest(system=SYSTEM, messages=messages, tools=TOOLS, **changes)


@pytest.fixture
def serve() -> Iterator[Any]:
    """Starts an endpoint for a script and gives (endpoint, wrapped model)."""
    started: list[tuple[ScriptedEndpoint, TextProtocolModel]] = []

    def start(
        script: Sequence[ScriptStep], *, max_restates: int = 3, stream: bool = True
    ) -> tuple[ScriptedEndpoint, TextProtocolModel]:
        endpoint = ScriptedEndpoint(script).start()
        inner = OpenAICompatModel(
            base_url=endpoint.url, api_key=None, model="small", stream=stream, retry=FAST
        )
        model = TextProtocolModel(inner, max_restates=max_restates)
        started.append((endpoint, model))
        return endpoint, model

    yield start
    for endpoint, model in started:
        model.close()
        endpoint.stop()


def bodies(endpoint: ScriptedEndpoint) -> list[dict[str, Any]]:
    return [r.body for r in endpoint.requests]


def texts(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def input_tokens(endpoint: ScriptedEndpoint) -> int:
    """What the scripted endpoint charges for the prompts it received (~4 chars a token)."""
    return sum(math.ceil(len(prompt_text(body)) / 4) for body in bodies(endpoint))


# -- one call ----------------------------------------------------------------------


def test_tools_go_into_the_system_prompt_and_not_into_the_request(serve: Any) -> None:
    endpoint, model = serve([Turn(text=READ)])
    events: list[Event] = []
    response = model.complete(request(Message.user("What is in a.py?")), events.append)

    (body,) = bodies(endpoint)
    assert "tools" not in body
    assert "tool_choice" not in body
    assert body["messages"][0] == {
        "role": "system",
        "content": f"{SYSTEM}\n\n{tools_prompt(TOOLS)}",
    }
    assert body["messages"][1:] == [{"role": "user", "content": "What is in a.py?"}]

    assert model.name == "small"
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.message.role == "assistant"
    assert response.message.content == "Let me look."
    (call,) = response.message.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("read_file", {"path": "a.py"})
    assert response.usage.input_tokens == input_tokens(endpoint)


def test_text_deltas_hide_the_call_and_tool_call_deltas_show_it(serve: Any) -> None:
    _, model = serve([Turn(text=READ)])
    events: list[Event] = []
    response = model.complete(request(Message.user("go")), events.append)
    shown = texts(events)
    assert shown.strip() == "Let me look."
    assert "{" not in shown
    assert "tool_call" not in shown
    deltas = [e for e in events if isinstance(e, ToolCallDelta)]
    (call,) = response.message.tool_calls
    assert deltas == [ToolCallDelta(0, call.id, "read_file", call.arguments)]


@pytest.mark.parametrize("prose", range(0, 14))
def test_the_call_stays_hidden_wherever_the_stream_splits(serve: Any, prose: int) -> None:
    """The endpoint sends text in four pieces: each prose length moves the cuts."""
    note = "Reading it now."[:prose]
    reply = f'{note}<tool_call>{{"name": "bash", "arguments": {{"command": "ls"}}}}</tool_call>'
    _, model = serve([Turn(text=reply)])
    events: list[Event] = []
    response = model.complete(request(Message.user("go")), events.append)
    assert texts(events) == note
    assert response.message.content == note.strip()
    assert [e.name for e in events if isinstance(e, ToolCallDelta)] == ["bash"]


@pytest.mark.parametrize(
    "answer",
    [
        "All tests pass; the fix was an off-by-one in `parse()`.",
        "Use this:\n```python\nconfig = {'name': 'bash', 'debug': True}\n```\nThen rerun.",
        'The record is {"name": "Alice", "age": 3}.\nAction items: none.',
        "Done: the parser now also accepts `<tool_call>` tags written with spaces.",
        "Fixed.\n```python\nwrap = '<tool_call>' + body\n```\nSee `[TOOL_CALLS]` too.",
    ],
)
def test_a_final_answer_streams_whole_and_is_returned_unchanged(serve: Any, answer: str) -> None:
    _, model = serve([Turn(text=answer)])
    events: list[Event] = []
    response = model.complete(request(Message.user("done?")), events.append)
    assert texts(events) == answer
    assert response.message.content == answer
    assert response.message.tool_calls == ()
    assert response.finish_reason is FinishReason.STOP


def test_several_calls_and_reasoning(serve: Any) -> None:
    reply = (
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>\n'
        "```json\n"  # a second call, fenced: tolerant
        '{"name": "bash", "arguments": {"command": "ls"}}\n```'
    )
    _, model = serve([Turn(text=reply, reasoning="Two things to check.")])
    events: list[Event] = []
    response = model.complete(request(Message.user("go")), events.append)
    assert [c.name for c in response.message.tool_calls] == ["read_file", "bash"]
    assert len({c.id for c in response.message.tool_calls}) == 2
    assert response.message.reasoning == "Two things to check."
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == (
        "Two things to check."
    )
    assert [(e.index, e.name) for e in events if isinstance(e, ToolCallDelta)] == [
        (0, "read_file"),
        (1, "bash"),
    ]
    assert texts(events) == ""


def test_a_plain_json_answer_also_works_without_streaming(serve: Any) -> None:
    endpoint, model = serve([Turn(text=READ)], stream=False)
    response = model.complete(request(Message.user("go")), lambda event: None)
    assert [c.name for c in response.message.tool_calls] == ["read_file"]
    assert bodies(endpoint)[0]["stream"] is False


LEAKS = {  # a reply, and what of it should stream
    "tool_name key": ('Let me look.\n{"tool_name": "bash", "arguments": {"command": "ls"}}', ""),
    "arguments first": ('Let me look.\n{"arguments": {"command": "ls"}, "name": "bash"}', ""),
    "OpenAI shape": (
        'Let me look.\n{"type": "function", "function": {"name": "bash", "arguments": {}}}',
        "",
    ),
    "wrapper then prose": (
        'Let me look.\n{"tool_call": {"name": "bash", "arguments": {}}}\nThen I fix it.',
        "\nThen I fix it.",
    ),
    "list of calls": ('Let me look.\n[{"name": "bash", "arguments": {"command": "ls"}}]', ""),
    "function tag": ('Let me look.\n<function=bash>{"command": "ls"}</function>', ""),
    "stray close tag, then prose after the call": (
        "Let me look.\nNo </tool_call> yet.\n"
        '<tool_call>{"name": "bash", "arguments": {}}</tool_call>\nThen I fix it.',
        "No </tool_call> yet.\n\nThen I fix it.",
    ),
}


@pytest.mark.parametrize("size", [1, 2, 5, 7, 1000])
@pytest.mark.parametrize(("reply", "after"), LEAKS.values(), ids=LEAKS.keys())
def test_no_call_shows_in_the_stream_however_it_is_split(
    serve: Any, reply: str, after: str, size: int
) -> None:
    _, model = serve([Turn(text=reply, chunk=size)])
    events: list[Event] = []
    response = model.complete(request(Message.user("go")), events.append)
    assert [c.name for c in response.message.tool_calls] == ["bash"]
    assert texts(events) == "Let me look.\n" + after


@pytest.mark.parametrize("size", [1, 3, 1000])
def test_a_token_glued_to_the_prose_does_not_show_either(serve: Any, size: int) -> None:
    reply = 'Let me look.[TOOL_CALLS]bash[ARGS]{"command": "ls"}'
    events: list[Event] = []
    _, model = serve([Turn(text=reply, chunk=size)])
    model.complete(request(Message.user("go")), events.append)
    assert texts(events) == "Let me look."


def test_parameters_written_as_text_are_typed_by_the_tool_schema(serve: Any) -> None:
    spec = ToolSpec(
        "bash",
        "Run a command.",
        {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
        },
    )
    reply = (
        "<tool_call>\n<function=bash>\n<parameter=command>\nsleep 1\n</parameter>\n"
        "<parameter=timeout>\n30\n</parameter>\n</function>\n</tool_call>"
    )
    _, model = serve([Turn(text=reply)])
    plain = ModelRequest(system=SYSTEM, messages=(Message.user("go"),), tools=(spec,))
    (call,) = model.complete(plain, lambda event: None).message.tool_calls
    assert json.loads(call.arguments) == {"command": "sleep 1", "timeout": 30}


# -- history -----------------------------------------------------------------------


def run_tools(response: ModelResponse) -> list[Message]:
    """Stand-in tool execution: every call gets a result; bash fails."""
    return [
        Message.tool(
            ToolResult(call.id, call.name, f"output of {call.name}", is_error=call.name == "bash")
        )
        for call in response.message.tool_calls
    ]


def test_history_is_rendered_as_text_and_keeps_its_bytes_across_turns(serve: Any) -> None:
    two = (
        "Now both.\n"
        '<tool_call>\n{"name": "bash", "arguments": {"command": "pytest"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "b.py"}}\n</tool_call>'
    )
    endpoint, model = serve([Turn(text=READ), Turn(text=two), Turn(text="All good.")])
    history: list[Message] = [Message.user("Check a.py and run the tests.")]
    for _ in range(3):
        response = model.complete(request(*history), lambda event: None)
        history.append(response.message)
        history += run_tools(response)
    assert history[-1].content == "All good."

    sent = bodies(endpoint)
    assert len({json.dumps(b["messages"][0]) for b in sent}) == 1  # the system prompt
    for earlier, later in itertools.pairwise(sent):
        prefix = later["messages"][: len(earlier["messages"])]
        assert json.dumps(prefix) == json.dumps(earlier["messages"])  # byte-stable prefix

    last = sent[-1]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    first_call = history[1].tool_calls[0]
    assert last[2]["content"] == f"Let me look.\n\n{render_call(first_call)}"
    assert "tool_calls" not in last[2]
    both = history[3].tool_calls
    assert last[4]["content"] == f"Now both.\n\n{render_call(both[0])}\n{render_call(both[1])}"
    assert last[5]["content"] == render_results(history[4:6])  # two results, one message
    assert 'error="true"' in last[5]["content"]
    assert last[5]["content"].count("<tool_result ") == 2


# -- restating ---------------------------------------------------------------------


def test_an_unreadable_call_is_restated_and_the_exchange_is_not_kept(serve: Any) -> None:
    script = [Turn(text=BROKEN), Turn(text="<tool_call>oops"), Turn(text=READ), Turn(text="Done.")]
    endpoint, model = serve(script)
    events: list[Event] = []
    response = model.complete(request(Message.user("go")), events.append)

    assert [c.name for c in response.message.tool_calls] == ["read_file"]
    assert response.message.content == "Let me look."
    # The answer's usage is its own request (the context's size); the two replies
    # thrown away are side usage: paid for and counted, not the context.
    total = response.usage.input_tokens + response.side_usage.input_tokens
    assert total == input_tokens(endpoint)
    assert response.side_usage.input_tokens > 0
    sent = bodies(endpoint)
    assert len(sent) == 3
    second = sent[1]["messages"]
    assert second[:2] == sent[0]["messages"]
    assert second[2] == {"role": "assistant", "content": BROKEN}
    assert second[3]["role"] == "user"
    assert second[3]["content"].startswith(
        restate_request("the <tool_call> block: invalid JSON")[:60]
    )
    assert "invalid JSON" in second[3]["content"]
    assert sent[2]["messages"][:4] == second
    assert len(sent[2]["messages"]) == 6

    notices = [e for e in events if isinstance(e, Notice)]
    assert [n.level for n in notices] == ["warning", "warning"]
    assert "(1/3)" in notices[0].text
    assert "(2/3)" in notices[1].text
    assert "could not be read" in notices[0].text
    assert "a.py" not in texts(events)  # no attempt showed its call JSON

    # The next turn starts from the kept history only.
    history = [Message.user("go"), response.message, *run_tools(response)]
    assert model.complete(request(*history), lambda event: None).message.content == "Done."
    fourth = bodies(endpoint)[3]["messages"]
    assert [m["role"] for m in fourth] == ["system", "user", "assistant", "user"]
    assert BROKEN not in json.dumps(fourth)


def test_a_model_that_never_formats_raises_after_the_restates(serve: Any) -> None:
    endpoint, model = serve([Turn(text=BROKEN)] * 3, max_restates=2)
    events: list[Event] = []
    with pytest.raises(ToolFormatError) as caught:
        model.complete(request(Message.user("go")), events.append)
    assert len(endpoint.requests) == 3  # 1 + max_restates
    message = str(caught.value)
    assert "3 replies" in message
    assert "2 restate requests" in message
    assert "invalid JSON" in message
    assert isinstance(caught.value, ProviderError)
    assert sum(isinstance(e, Notice) for e in events) == 2


def test_no_restates_means_one_try(serve: Any) -> None:
    endpoint, model = serve([Turn(text=BROKEN)], max_restates=0)
    with pytest.raises(ToolFormatError, match="1 reply"):
        model.complete(request(Message.user("go")), lambda event: None)
    assert len(endpoint.requests) == 1


def test_a_reply_cut_off_mid_call_is_told_so(serve: Any) -> None:
    cut = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a'
    endpoint, model = serve([Turn(text=cut, finish_reason="length"), Turn(text=READ)])
    model.complete(request(Message.user("go")), lambda event: None)
    restate = bodies(endpoint)[1]["messages"][-1]["content"]
    assert "never closed" in restate
    assert "cut off at the output limit" in restate


# -- plain answers -----------------------------------------------------------------


def test_tool_choice_none_is_not_parsed_and_keeps_the_system_prompt(serve: Any) -> None:
    endpoint, model = serve([Turn(text=READ), Turn(text=READ)])
    model.complete(request(Message.user("go")), lambda event: None)
    events: list[Event] = []
    summary = model.complete(request(Message.user("go"), tool_choice="none"), events.append)
    assert summary.message.tool_calls == ()
    assert summary.message.content == READ
    assert summary.finish_reason is FinishReason.STOP
    assert texts(events) == READ
    first, second = bodies(endpoint)
    assert first["messages"][0] == second["messages"][0]
    assert "tools" not in second
    assert "tool_choice" not in second


def test_without_tools_the_request_passes_through(serve: Any) -> None:
    endpoint, model = serve([Turn(text=READ)])
    plain = ModelRequest(system=SYSTEM, messages=(Message.user("hi"),))
    response = model.complete(plain, lambda event: None)
    assert response.message.content == READ
    assert response.message.tool_calls == ()
    assert bodies(endpoint)[0]["messages"][0] == {"role": "system", "content": SYSTEM}


def test_an_endpoint_retry_starts_the_shown_text_over(serve: Any) -> None:
    endpoint, model = serve([Turn(text=READ)])
    endpoint.add_fault(Fault("truncated"))
    events: list[Event] = []
    response = model.complete(request(Message.user("go")), events.append)
    assert any(isinstance(e, RetryScheduled) for e in events)
    after = events[max(i for i, e in enumerate(events) if isinstance(e, RetryScheduled)) :]
    assert texts(after).strip() == "Let me look."
    assert [c.name for c in response.message.tool_calls] == ["read_file"]


def test_close_closes_the_inner_model() -> None:
    with ScriptedEndpoint([Turn(text="Done.")]) as endpoint:
        inner = OpenAICompatModel(base_url=endpoint.url, api_key=None, model="m", retry=FAST)
        model = TextProtocolModel(inner)
        model.complete(request(Message.user("go")), lambda event: None)
        assert inner._transport._client is not None  # the real client's HTTP connection
        model.close()
        assert inner._transport._client is None


# -- endpoints that refuse tools ---------------------------------------------------

REFUSALS = [
    (400, "registry.ollama.ai/library/gemma:2b does not support tools"),
    (
        400,
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    ),
    (500, "tools param requires --jinja flag"),
    (400, "tools param requires --jinja flag"),
    (400, "tools is not supported"),
    (400, "Unsupported parameter: tools"),
    (400, "Unrecognized request argument supplied: tools"),
    (400, "This model does not support function calling."),
    (400, "Tool use is not supported for this model."),
]
OTHER_FAILURES = [
    (429, "Rate limit reached for requests"),
    (400, "This model's maximum context length is 8192 tokens. However, you requested 9000."),
    (400, "Invalid value for 'temperature': must be at most 2."),
    (500, "internal server error"),
    (404, "The model `gemma:2b` does not exist."),
    (400, "parallel tool calls are not supported"),
    (400, "This model does not support tools with vision inputs"),
    (400, "tools is not supported in streaming mode"),
    (400, "Streaming tool calls are not supported for this model"),
    (500, "model does not support tools"),
    (503, "tools are not supported"),
]


def failure(status: int, message: str) -> ProviderError:
    """The error the real client raises for this status and message."""
    with ScriptedEndpoint([Turn(text="unused")]) as endpoint:
        endpoint.add_fault(Fault("status", status=status, message=message))
        endpoint.add_fault(Fault("status", status=status, message=message))
        model = OpenAICompatModel(
            base_url=endpoint.url,
            api_key=None,
            model="m",
            retry=RetryPolicy(max_attempts=2, base_delay=0.0),
        )
        try:
            model.complete(request(Message.user("hi")), lambda event: None)
        except ProviderError as exc:
            return exc
        finally:
            model.close()
    raise AssertionError("the fault did not fail the call")


@pytest.mark.parametrize(("status", "message"), REFUSALS)
def test_rejects_tools_recognises_refusals(status: int, message: str) -> None:
    assert rejects_tools(failure(status, message))


@pytest.mark.parametrize(("status", "message"), OTHER_FAILURES)
def test_rejects_tools_ignores_other_failures(status: int, message: str) -> None:
    assert not rejects_tools(failure(status, message))


def test_rejects_tools_ignores_credentials_and_unknown_models() -> None:
    with ScriptedEndpoint([Turn(text="x")], api_key="sk-right", strict_model=True) as endpoint:
        for key, name in (("sk-wrong", "scripted"), ("sk-right", "other")):
            model = OpenAICompatModel(base_url=endpoint.url, api_key=key, model=name, retry=FAST)
            with pytest.raises(ProviderError) as caught:
                model.complete(request(Message.user("hi")), lambda event: None)
            model.close()
            assert caught.value.status in (401, 404)
            assert not rejects_tools(caught.value)
    assert not rejects_tools(ProviderError("model does not support tools", status=401))


def test_a_user_note_after_results_joins_them_so_roles_alternate() -> None:
    call_message = Message(
        role="assistant", tool_calls=(ToolCall("c1", "read_file", '{"path": "a"}'),)
    )
    history = (
        Message.user("go"),
        call_message,
        Message.tool(ToolResult("c1", "read_file", "x = 1")),
        Message.user("[tether] The user undid the last step."),
    )
    rendered = render_messages(history)
    assert [m.role for m in rendered] == ["user", "assistant", "user"]
    assert rendered[2].content.endswith("\n\n[tether] The user undid the last step.")
    assert "x = 1" in rendered[2].content

"""Tools as text: the parser, and the prompt and rendering it must agree with.

The parser runs over a corpus of messy replies in `text_corpus/`: one file per
reply, a JSON line of expectations, a `=====` line, then the reply exactly as a
model might send it.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tether.messages import Message, ToolCall, ToolResult
from tether.models import text_tools
from tether.models.base import ToolSpec
from tether.models.text_protocol import (
    render_call,
    render_results,
    restate_request,
    tools_prompt,
)
from tether.models.text_tools import CALL_EXAMPLE, MAX_CALLS, ParsedReply, parse_reply

CORPUS = Path(__file__).parent / "text_corpus"
NAMES = frozenset({"read_file", "write_file", "edit_file", "bash", "grep", "list_files"})
TOOLS = (
    ToolSpec(
        "read_file",
        "Read a text file from the workspace.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        "bash",
        "Run a shell command.\nThe output is clamped.",
        {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
            "required": ["command"],
        },
    ),
)


def ids() -> Any:
    numbers = itertools.count(1)
    return lambda: f"call_{next(numbers)}"


def load(path: Path) -> tuple[dict[str, Any], str]:
    head, reply = path.read_text(encoding="utf-8").split("\n=====\n", 1)
    return json.loads(head), reply


CASES = sorted(CORPUS.glob("*.txt"))


def test_the_corpus_is_big_and_covers_every_outcome() -> None:
    expectations = [load(path)[0] for path in CASES]
    assert len(CASES) >= 40
    assert {e["tier"] for e in expectations} == {"none", "strict", "tolerant"}
    assert sum("problem" in e for e in expectations) >= 10
    assert sum(not e["calls"] and "problem" not in e for e in expectations) >= 8


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_corpus(path: Path) -> None:
    expected, reply = load(path)
    parsed = parse_reply(reply, NAMES, ids())
    got = [[c.name, json.loads(c.arguments)] for c in parsed.calls]
    assert got == expected["calls"], parsed.problem
    assert parsed.tier == expected["tier"]
    if "problem" in expected:
        assert parsed.problem is not None
        assert expected["problem"] in parsed.problem
    else:
        assert parsed.problem is None
    if "text" in expected:
        assert parsed.text == expected["text"]
    if not parsed.calls:
        assert parsed.text == reply  # an answer (or a failed attempt) is kept as sent
    else:
        assert [c.id for c in parsed.calls] == [f"call_{i + 1}" for i in range(len(got))]
        assert "<tool_call>" not in parsed.text.lower()


def test_arguments_are_json_objects_and_unicode_stays_readable() -> None:
    reply = (
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "naïve/日本.txt"}}\n</tool_call>'
    )
    (call,) = parse_reply(reply, NAMES, ids()).calls
    assert call.arguments == '{"path": "naïve/日本.txt"}'


def test_a_problem_names_the_tools_so_the_model_can_fix_it() -> None:
    reply = '<tool_call>{"name": "cat", "arguments": {"path": "a"}}</tool_call>'
    problem = parse_reply(reply, NAMES, ids()).problem
    assert problem is not None
    assert "'cat'" in problem
    assert "bash, edit_file, grep, list_files, read_file, write_file" in problem


def test_no_ids_are_taken_for_a_reply_without_calls() -> None:
    taken: list[str] = []

    def new_id() -> str:
        taken.append("x")
        return "x"

    parse_reply("All done; nothing to call.", NAMES, new_id)
    parse_reply('<tool_call>{"name": "nope", "arguments": {}}</tool_call>', NAMES, new_id)
    assert taken == []


def test_without_tools_nothing_is_a_call() -> None:
    reply = '<tool_call>{"name": "bash", "arguments": {}}</tool_call>'
    parsed = parse_reply(reply, (), ids())
    assert parsed.calls == ()
    assert parsed.problem is not None
    assert "no tools are available" in parsed.problem
    assert parse_reply('{"name": "bash", "arguments": {}}', (), ids()).calls == ()


def test_a_long_reply_with_many_braces_is_read_quickly() -> None:
    reply = "x = {" * 5000 + " and read_file " + "{'a': 1} " * 5000
    parsed = parse_reply(reply, NAMES, ids())
    assert parsed.calls == ()
    assert parsed.problem is None


DEEP = '{"k":' * 1000 + "1" + "}" * 1000


WRAPPED = '{"tool_calls": ' * 800 + '{"name": "bash", "arguments": {}}' + "}" * 800
NESTED = {
    "bare": (DEEP, False),
    "answer naming a tool": ("bash said:\n" + DEEP, False),
    "fenced": ("```json\n" + DEEP + "\n```", False),
    "wrappers": (WRAPPED, False),
    "tagged": (f"<tool_call>{DEEP}</tool_call>", True),
    "tagged wrappers": (f"<tool_call>{WRAPPED}</tool_call>", True),
    "arguments": (f'{{"name": "bash", "arguments": {DEEP}}}', True),
    "Action Input": (f"Action: bash\nAction Input: {DEEP}", True),
    "function tag": (f"<function=bash>{DEEP}</function>", True),
    "Mistral": (f"[TOOL_CALLS]bash[ARGS]{DEEP}", True),
}


@pytest.mark.parametrize(("reply", "attempted"), NESTED.values(), ids=NESTED.keys())
def test_deeply_nested_json_is_invalid_not_an_exception(reply: str, attempted: bool) -> None:
    parsed = parse_reply(reply, NAMES, ids())
    assert parsed.calls == ()
    assert (parsed.problem is not None) == attempted


def test_parse_reply_never_raises_even_if_a_reader_recurses_too_deep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def too_deep(*args: Any) -> Any:
        raise RecursionError

    monkeypatch.setattr(text_tools, "_parse", too_deep)
    call = '<tool_call>{"name": "bash", "arguments": {}}</tool_call>'
    failed = parse_reply(call, NAMES, ids())
    assert (failed.text, failed.calls, failed.problem) == (call, (), text_tools._TOO_DEEP)
    answer = "All done; `<tool_call>` tags are parsed now."
    assert parse_reply(answer, NAMES, ids()) == ParsedReply(text=answer)


def test_parameters_written_as_text_are_typed_by_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer"},
            "ratio": {"type": "number"},
            "force": {"type": "boolean"},
            "globs": {"type": "array"},
            "depth": {"type": ["integer", "null"]},
            "mode": {"type": "integer"},
        },
    }
    reply = (
        "<tool_call>\n<function=grep>\n"
        "<parameter=path>\n007\n</parameter>\n<parameter=limit>\n12\n</parameter>\n"
        "<parameter=ratio>0.5</parameter><parameter=force>True</parameter>\n"
        '<parameter=globs>["*.py"]</parameter><parameter=depth>3</parameter>\n'
        "<parameter=mode>fast</parameter><parameter=other>1</parameter>\n"
        "</function>\n</tool_call>"
    )
    expected = {
        "path": "007",
        "limit": 12,
        "ratio": 0.5,
        "force": True,
        "globs": ["*.py"],
        "depth": 3,
        "mode": "fast",  # does not fit the schema: kept as written
        "other": "1",  # not in the schema
    }
    (typed,) = parse_reply(reply, NAMES, ids(), {"grep": schema}).calls
    assert json.loads(typed.arguments) == expected
    (untyped,) = parse_reply(reply, NAMES, ids()).calls
    assert json.loads(untyped.arguments)["limit"] == "12"


def test_up_to_the_limit_of_calls_in_one_reply_are_read() -> None:
    block = '<tool_call>{{"name": "read_file", "arguments": {{"path": "f{}"}}}}</tool_call>\n'
    reply = "".join(block.format(i) for i in range(MAX_CALLS))
    assert len(parse_reply(reply, NAMES, ids()).calls) == MAX_CALLS
    react = "Action: list_files\n" * (MAX_CALLS + 1)
    assert "more than 64" in (parse_reply(react, NAMES, ids()).problem or "")


CALL = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
SIZE = 100_000
SLOW_BEFORE = {  # reply shape -> (calls read, the start of the problem or None); their
    # time (once quadratic and worse) is watched by bench/text_parse.py
    "unclosed thinking": ("<think>" * (SIZE // 7), 0, None),
    "thinking pairs": ("<think></think>" * (SIZE // 15) + CALL, 1, None),
    "fence marks without newlines": ("bash " + "```" * (SIZE // 3), 0, None),
    "many empty fences": ("bash\n" + "```x\n```\n" * (SIZE // 9), 0, None),
    "many valid blocks": (CALL * (SIZE // len(CALL)), 0, "more than 64 tool calls"),
    "unclosed named objects": (
        '{"name": "bash", "arguments": ' * (SIZE // 30),
        0,
        "a call to bash was found but could not be read",
    ),
    "spaces after a tag": (
        "<tool_call>" + " " * SIZE,
        0,
        "the <tool_call> block: it holds nothing",
    ),
    "pythonic candidates": (" " * SIZE + "bash", 0, None),
    "nested lists": ("bash " + "[" * (SIZE // 2) + "]" * (SIZE // 2), 0, None),
    "ReAct lines": ("Action: bash\n" * (SIZE // 13), 0, "more than 64 tool calls"),
}


@pytest.mark.parametrize(
    ("reply", "calls", "problem"), SLOW_BEFORE.values(), ids=SLOW_BEFORE.keys()
)
def test_pathological_replies_are_read_as_they_should(
    reply: str, calls: int, problem: str | None
) -> None:
    parsed = parse_reply(reply, NAMES, ids())
    assert len(parsed.calls) == calls
    if problem is None:
        assert parsed.problem is None
    else:
        assert (parsed.problem or "").startswith(problem), parsed.problem


# -- the prompt --------------------------------------------------------------------


def test_tools_prompt_states_the_format_rules_and_each_tool() -> None:
    prompt = tools_prompt(TOOLS)
    assert CALL_EXAMPLE in prompt
    for rule in ("One call per block", "wait", "plain text with no <tool_call> block"):
        assert rule in prompt
    assert "## read_file\nRead a text file from the workspace.\nParameters: " in prompt
    assert '{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}' in prompt
    assert "Run a shell command.\nThe output is clamped." in prompt
    assert prompt.index("## read_file") < prompt.index("## bash")


def test_tools_prompt_is_deterministic_for_equal_tools() -> None:
    again = tuple(
        ToolSpec(t.name, t.description, json.loads(json.dumps(t.parameters))) for t in TOOLS
    )
    assert tools_prompt(TOOLS).encode() == tools_prompt(again).encode()


def test_restate_request_quotes_the_problem_and_the_format() -> None:
    text = restate_request("invalid JSON: Expecting value: line 1 column 9 (char 8)")
    assert "invalid JSON: Expecting value: line 1 column 9 (char 8)" in text
    assert CALL_EXAMPLE in text


# -- rendering ---------------------------------------------------------------------


def test_render_call_is_the_agreed_format_and_parses_back_strictly() -> None:
    call = ToolCall("call_7", "read_file", '{"path":"src/app.py"}')
    text = render_call(call)
    assert (
        text
        == '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/app.py"}}\n</tool_call>'
    )
    parsed = parse_reply(text, NAMES, ids())
    assert parsed.tier == "strict"
    assert json.loads(parsed.calls[0].arguments) == {"path": "src/app.py"}


def test_render_call_keeps_broken_or_empty_arguments_readable() -> None:
    assert render_call(ToolCall("c", "bash", "")) == (
        '<tool_call>\n{"name": "bash", "arguments": {}}\n</tool_call>'
    )
    assert render_call(ToolCall("c", "bash", '{"command": ')) == (
        '<tool_call>\n{"name": "bash", "arguments": "{\\"command\\": "}\n</tool_call>'
    )


def test_render_results_merges_results_and_marks_errors() -> None:
    results = [
        Message.tool(ToolResult("call_1", "read_file", "print('hi')\n")),
        Message.tool(ToolResult("call_2", "bash", "exit status 1", is_error=True)),
    ]
    assert render_results(results) == (
        '<tool_result name="read_file" id="call_1">\nprint(\'hi\')\n\n</tool_result>\n\n'
        '<tool_result name="bash" id="call_2" error="true">\nexit status 1\n</tool_result>'
    )

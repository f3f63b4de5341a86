"""Tool calls read from plain text, for models without native tool calling.

Such a model is told (by `text_protocol.py`) to write each call as a
`<tool_call>{json}</tool_call>` block, the format Qwen and Hermes models are trained
on. Replies are read back into `ToolCall`s in three tiers: well-formed blocks
(strict); the shapes small models drift into, such as fenced JSON, ReAct lines and
Python literals (tolerant); and, when a reply evidently tried to call a tool but
nothing valid could be read, a `problem` worded for the model to fix. Pure: no I/O
and no state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal

from tether.messages import ToolCall

__all__ = ["CALL_EXAMPLE", "ParsedReply", "Tier", "parse_reply"]

Tier = Literal["none", "strict", "tolerant"]

# The agreed format, as the prompt shows it and problems quote it.
CALL_EXAMPLE = (
    '<tool_call>\n{"name": "TOOL_NAME", "arguments": {"PARAMETER": "VALUE"}}\n</tool_call>'
)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A reply read for tool calls: prose to keep, the calls, and how they were read.

    `problem` is set (and `calls` empty) when the reply tried to call a tool and no
    valid call could be read; it says what was wrong, for the model.
    """

    text: str
    calls: tuple[ToolCall, ...] = ()
    tier: Tier = "none"
    problem: str | None = None


_Call = tuple[str, dict[str, Any]]
_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_OPEN = re.compile(r"<\s*tool_call\s*>", re.I)
_CLOSE = re.compile(r"<\s*/\s*tool_call\s*>", re.I)
_TAG = re.compile(r"<\s*/?\s*tool_call\s*>", re.I)
_AFTER = re.compile(r"\s*(?:```[ \t]*)?\s*(<\s*/\s*tool_call\s*>)?", re.I)
_FENCE_OPEN = re.compile(r"```[\w+.-]*")
_FAKE_RESULT = re.compile(r"<\s*tool_(?:result|response)\b|^[ \t]*Observation[ \t]*:", re.I | re.M)
_FENCE = re.compile(r"```[ \t]*([\w+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_JSON_FENCES = frozenset({"", "json", "json5", "jsonc", "tool_call", "tool", "javascript", "js"})
_ACTION = re.compile(
    r"^[ \t]*\**Action\**[ \t]*:\**[ \t]*([`'\"*]*[\w.-]+[`'\"*]*)[ \t]*$", re.I | re.M
)
_ACTION_INPUT = re.compile(r"^[ \t]*\**Action[ \t]*Input\**[ \t]*:\**[ \t]*", re.I | re.M)
_NAMED = re.compile(r"""["']?(?:name|tool|tool_name|function)["']?\s*:\s*["']([\w.-]+)["']""")
_CALLISH = re.compile(r"""["'](?:arguments|parameters)["']\s*:""")
_START = re.compile(r"""\{\s*(?:["'}\w])|\[\s*\{""")
_WORD = re.compile(r"[\w.-]+")
_CLOSER = re.compile(r"\s*[}\]]")
_KEY_END = re.compile(r"\s*:")
_NOT_TOOLS = frozenset({"final_answer", "finish", "none", "answer"})
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "input", "args")
_CALL_KEYS = frozenset({*_NAME_KEYS, *_ARG_KEYS, "id", "type"})
_MAX_SCANS = 64
_MAX_UNCLOSED = 4


def parse_reply(text: str, tool_names: Collection[str], new_id: Callable[[], str]) -> ParsedReply:
    """Read the tool calls in a reply, strict blocks first, then tolerant shapes.

    A reply with no attempt at a call is a final answer: tier "none", text unchanged.
    Only objects naming a known tool count, so JSON in an answer stays prose.
    """
    names = frozenset(tool_names)
    thoughts = [m.span() for m in _THINK.finditer(text)]
    scan = _blank(text, thoughts)  # a call drafted while thinking is not made
    if _OPEN.search(scan):
        calls, spans, problem, strict = _tagged(scan, names)
        if problem is None:  # calls in another shape beside the blocks
            more, others, problem = _untagged(_blank(scan, spans), names)
            calls, spans, strict = calls + more, spans + others, strict and not more
    else:
        calls, spans, problem = _untagged(scan, names)
        strict = False
    if problem is not None:
        return ParsedReply(text=text, problem=problem)
    if not calls:
        return ParsedReply(text=text)
    made = tuple(
        ToolCall(id=new_id(), name=name, arguments=json.dumps(args, ensure_ascii=False))
        for name, args in calls
    )
    return ParsedReply(_prose(text, spans + thoughts), made, "strict" if strict else "tolerant")


def _prose(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` without the spans (and stray tags), the pieces joined by blank lines."""
    pieces, at = [], 0
    for start, end in sorted(spans):
        if start >= at:
            pieces.append(text[at:start])
        at = max(at, end)
    pieces.append(text[at:])
    kept = (_CLOSE.sub("", piece).strip() for piece in pieces)
    return "\n\n".join(piece for piece in kept if piece)


def _tagged(
    text: str, names: frozenset[str]
) -> tuple[list[_Call], list[tuple[int, int]], str | None, bool]:
    """Calls from `<tool_call>` blocks; every block must hold a valid call."""
    count = len(_OPEN.findall(text))
    calls: list[_Call] = []
    spans: list[tuple[int, int]] = []
    strict, at, index = True, 0, 0
    while (match := _OPEN.search(text, at)) is not None:
        index += 1
        found, at, problem, exact = _block(text, match.end(), names)
        if problem is not None:
            where = f"<tool_call> block {index}" if count > 1 else "the <tool_call> block"
            return [], [], f"{where}: {problem}", False
        calls += found
        strict = strict and exact and match.group(0) == "<tool_call>"
        spans.append((match.start(), at))
        fake = _FAKE_RESULT.search(text, at)  # results the model made up itself
        following = _OPEN.search(text, at)
        if fake and (following is None or fake.start() < following.start()):
            spans.append((fake.start(), len(text)))
            break
    return calls, spans, None, strict


def _block(text: str, pos: int, names: frozenset[str]) -> tuple[list[_Call], int, str | None, bool]:
    """The calls of the block whose body starts at `pos`, where it ends, a problem, and
    whether it was exactly in the agreed format."""
    tag = _TAG.search(text, pos)
    stop = tag.start() if tag else len(text)
    start = _START.search(text, pos, stop)
    if start is None:
        what = "nothing" if not text[pos:stop].strip() else "no JSON object"
        return [], pos, f"it holds {what}; write {CALL_EXAMPLE}", False
    end = _balanced(text, start.start())  # strings may hold tags: they end no block
    if end is None:
        return [], pos, "the JSON object is never closed (a brace or bracket is missing)", False
    raw = text[start.start() : end]
    try:
        value = _loads(raw)
    except ValueError as exc:
        return [], pos, f"invalid JSON: {exc}", False
    after = _AFTER.match(text, end)
    close = after.group(1) if after else None
    block_end = after.end() if after and (close or "```" in after.group(0)) else end
    head = text[pos : start.start()]
    exact = close == "</tool_call>" and not head.strip() and _exact(raw, value, names)
    calls, problem = _calls_in(value, names)
    if calls or problem:
        return calls, block_end, problem, exact
    head = _FENCE_OPEN.sub("", head).strip().strip("`'\"*:")
    if isinstance(value, dict) and _WORD.fullmatch(head):  # `name {arguments}`
        name = _known(head, names)
        if name is None:
            return [], pos, f"unknown tool {head!r}; {_tool_list(names)}", False
        return [(name, value)], block_end, None, False
    return [], pos, 'the JSON object needs "name" (a tool) and "arguments" (an object)', False


def _exact(raw: str, value: Any, names: frozenset[str]) -> bool:
    """Whether a block's JSON is the agreed format to the letter (the strict tier)."""
    try:
        json.loads(raw)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and set(value) == {"name", "arguments"}
        and value["name"] in names
        and isinstance(value["arguments"], dict)
    )


def _untagged(
    text: str, names: frozenset[str]
) -> tuple[list[_Call], list[tuple[int, int]], str | None]:
    """Calls written without tags: fenced or bare JSON, a list of calls, ReAct lines."""
    masked, fences = _mask_fences(text)
    calls, spans, problem = _react(masked, names)
    if calls or problem:
        return calls, spans, problem
    if not any(name in masked for name in names) and not _CALLISH.search(masked):
        return [], [], None
    failures: list[tuple[int, int, str]] = []
    scans, at = 0, 0
    while scans < _MAX_SCANS and (start := _START.search(masked, at)) is not None:
        scans += 1
        end = _balanced(masked, start.start())
        if end is None:
            failures.append((start.start(), len(masked), "the JSON object is never closed"))
            if len(failures) >= _MAX_UNCLOSED:  # each costs a scan to the end
                break
            at = start.start() + 1
            continue
        at = end
        try:
            value = _loads(masked[start.start() : end])
        except ValueError as exc:
            failures.append((start.start(), end, f"invalid JSON: {exc}"))
            continue
        found, problem = _calls_in(value, names)
        if problem is not None:
            return [], [], problem
        if found:
            calls += found
            fence = next((f for f in fences if f[0] <= start.start() < f[1]), None)
            spans.append(fence or (start.start(), end))
    if calls:
        return calls, spans, None
    for match in _NAMED.finditer(masked):
        name = _known(match.group(1), names)
        failure = next((f for f in failures if f[0] <= match.start() < f[1]), None)
        if name is not None and failure is not None:
            return [], [], f"a call to {name} was found but could not be read: {failure[2]}"
    return [], [], None


def _mask_fences(text: str) -> tuple[str, list[tuple[int, int]]]:
    """`text` with non-JSON code fences blanked (code is not a call), and the JSON fences."""
    fences, code = [], []
    for match in _FENCE.finditer(text):
        if match.group(1).lower() in _JSON_FENCES or _START.match(match.group(2).lstrip()):
            fences.append(match.span())
        else:
            code.append(match.span())
    return _blank(text, code), fences


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with the spans replaced by spaces, so positions stay the same."""
    for start, end in spans:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def _react(
    text: str, names: frozenset[str]
) -> tuple[list[_Call], list[tuple[int, int]], str | None]:
    """`Action: name` lines, each with an optional `Action Input:` object."""
    calls: list[_Call] = []
    spans: list[tuple[int, int]] = []
    actions = list(_ACTION.finditer(text))
    for index, action in enumerate(actions):
        raw = action.group(1).strip("`'\"*")
        following = actions[index + 1].start() if index + 1 < len(actions) else len(text)
        given = _ACTION_INPUT.search(text, action.end(), following)
        name = _known(raw, names)
        if name is None:
            if given is None or raw.lower() in _NOT_TOOLS:
                continue
            return [], [], f"Action names unknown tool {raw!r}; {_tool_list(names)}"
        end, arguments = action.end(), {}
        if given is not None:
            start = _START.search(text, given.end(), following)
            close = _balanced(text, start.start()) if start else None
            if start is None or close is None:
                return [], [], f"the Action Input of {name} is not a JSON object of arguments"
            try:
                value = _loads(text[start.start() : close])
            except ValueError as exc:
                return [], [], f"the Action Input of {name} is invalid JSON: {exc}"
            if not isinstance(value, dict):
                return [], [], f"the Action Input of {name} must be a JSON object"
            end, arguments = close, value
        calls.append((name, arguments))
        spans.append((action.start(), end))
    if calls and (fake := _FAKE_RESULT.search(text, spans[-1][1])):
        spans.append((fake.start(), len(text)))
    return calls, spans, None


def _calls_in(value: Any, names: frozenset[str]) -> tuple[list[_Call], str | None]:
    """The calls a parsed JSON value holds: one call object, a list of them, or a wrapper."""
    if isinstance(value, list):
        found: list[_Call] = []
        for item in value:
            calls, problem = _calls_in(item, names)
            if problem is not None or not calls:
                return [], problem
            found += calls
        return found, None
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in ("tool_call", "tool_calls", "function_call") and isinstance(inner, dict | list):
            return _calls_in(inner, names)
    call = _call_of(value, names)
    if isinstance(call, str):
        return [], call
    return ([call] if call else []), None


def _call_of(value: Any, names: frozenset[str]) -> _Call | str | None:
    """One call object read in any common shape; None if it is not one, str if broken."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and set(value) <= {"function", "type", "id"}:
        value = value["function"]
    given = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if given is None or not set(value) <= _CALL_KEYS:
        return None
    keys = [k for k in _ARG_KEYS if k in value]
    name = _known(given, names)
    if name is None:
        return f"unknown tool {given!r}; {_tool_list(names)}" if keys else None
    arguments = value[keys[0]] if keys else {}
    if isinstance(arguments, str):
        try:
            arguments = _loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return f"the arguments of {name} are a string that is not a JSON object ({exc})"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        return f'"arguments" of {name} must be a JSON object, not {kind}'
    return name, arguments


def _known(given: str, names: frozenset[str]) -> str | None:
    """The tool `given` names (`functions.read_file` counts as `read_file`), or None."""
    if given in names:
        return given
    tail = given.rsplit(".", 1)[-1]
    return tail if tail in names else None


def _tool_list(names: frozenset[str]) -> str:
    return "the tools are: " + ", ".join(sorted(names)) if names else "no tools are available"


def _balanced(text: str, start: int) -> int | None:
    """The end of the bracketed value at `start` (strings respected), None if unclosed."""
    depth, quote, i = 0, "", start
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _loads(text: str) -> Any:
    """JSON, or failing that the near-JSON models write; raises the first JSON error."""
    try:
        return json.loads(text, strict=False)
    except ValueError as first:
        try:
            return json.loads(_jsonish(text), strict=False)
        except ValueError:
            raise first from None


_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _jsonish(text: str) -> str:
    """Near-JSON made JSON: single quotes, Python literals, bare keys, trailing commas."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            j, body = i + 1, []
            while j < n and text[j] != char:
                if text[j] == "\\" and j + 1 < n:
                    body.append("'" if text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                    continue
                body.append('\\"' if text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(body) + '"')
            i = j + 1
        elif char == ",":
            if not _CLOSER.match(text, i + 1):
                out.append(char)
            i += 1
        elif char.isalpha() or char == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if _KEY_END.match(text, j) and word not in _LITERALS.values():
                out.append(f'"{word}"')
            else:
                out.append(_LITERALS.get(word, word))
            i = j
        else:
            out.append(char)
            i += 1
    return "".join(out)

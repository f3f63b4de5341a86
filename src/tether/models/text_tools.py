"""Tool calls read from plain text, for models without native tool calling.

Such a model is told (by `text_protocol.py`) to write each call as a
`<tool_call>{json}</tool_call>` block, the format Qwen and Hermes models are trained
on. Replies are read back into `ToolCall`s in three tiers: well-formed blocks
(strict); the shapes small models drift into, such as fenced JSON, ReAct lines,
Python literals and other vendors' formats (tolerant, with `text_shapes.py`); and,
when a reply evidently tried to call a tool but nothing valid could be read, a
`problem` worded for the model to fix. Thinking (`<think>`), inline code and code
fences that hold no call are not read for calls. Pure: no I/O and no state; time
linear in the reply (helpers in `text_scan.py`), and it never raises.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal

from tether.messages import ToolCall
from tether.models.text_scan import (
    Fence,
    Span,
    balanced,
    blank,
    fences,
    inline_code,
    inside,
    known,
    loads,
    merge,
    pieces,
    skip_space,
    strict_loads,
    think_spans,
    tool_list,
)
from tether.models.text_shapes import (
    Call,
    Schemas,
    calls_in,
    read_function,
    read_shapes,
    unread_attempt,
)

__all__ = ["CALL_EXAMPLE", "MAX_CALLS", "ParsedReply", "Tier", "parse_reply"]

Tier = Literal["none", "strict", "tolerant"]

# The agreed format, as the prompt shows it and problems quote it.
CALL_EXAMPLE = (
    '<tool_call>\n{"name": "TOOL_NAME", "arguments": {"PARAMETER": "VALUE"}}\n</tool_call>'
)
MAX_CALLS = 64  # in one reply; more is a problem (the model is asked for fewer)


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """A reply read for tool calls: prose to keep, the calls, and how they were read.

    `problem` is set (and `calls` empty) when the reply tried to call a tool and no
    valid call could be read; it says what was wrong, for the model. When calls were
    read, `text` is the prose around them: the reply's `pieces`, joined by blank lines.
    """

    text: str
    calls: tuple[ToolCall, ...] = ()
    tier: Tier = "none"
    problem: str | None = None
    pieces: tuple[Span, ...] = ()


_OPEN = re.compile(r"<\s*tool_call\s*>", re.I)
_CLOSE = re.compile(r"<\s*/\s*tool_call\s*>", re.I)
_TAG = re.compile(r"<\s*(?:/\s*)?tool_call\s*>", re.I)
_AFTER = re.compile(r"\s*(?:```[ \t]*)?\s*(<\s*/\s*tool_call\s*>)?", re.I)
_FENCE_OPEN = re.compile(r"```[\w+.-]*")
_FAKE_RESULT = re.compile(r"<\s*tool_(?:result|response)\b|^[ \t]*Observation[ \t]*:", re.I | re.M)
_TOKENS = re.compile(r"\[TOOL_CALLS\]|<\|python_tag\|>|<\|eo[mt]_id\|>|</function>", re.I)
_LEFT_CLOSE = re.compile(r"^(?:[ \t]*<\s*/\s*tool_call\s*>)+", re.I | re.M)
_CLOSES = re.compile(r"(?:\s*<\s*/\s*tool_call\s*>)+", re.I)
_CALL_BODY = re.compile(r"\s*(?:[{\[]|<\s*tool_call|<function=)", re.I)
_CALL_FENCES = frozenset(
    {"", "json", "json5", "jsonc", "tool_call", "tool", "tool_code", "javascript", "js", "xml"}
)
_TRIGGER = re.compile(r"<\s*tool_call|<function=|\[TOOL_CALLS\]|<[｜|]tool", re.I)
_SHAPE = re.compile(r"<function=[^>\s]+>|\[TOOL_CALLS\]")
_ACTION = re.compile(
    r"^[ \t]*\**Action\**[ \t]*:\**[ \t]*([`'\"*]*[\w.-]+[`'\"*]*)[ \t]*$", re.I | re.M
)
_ACTION_INPUT = re.compile(r"^[ \t]*\**Action[ \t]*Input\**[ \t]*:\**[ \t]*", re.I | re.M)
_NAMED = re.compile(r"""["']?(?:name|tool|tool_name|function)["']?\s*:\s*["']([\w.-]+)["']""")
_CALLISH = re.compile(r"""["'](?:arguments|parameters|input|args)["']\s*:""")
_START = re.compile(r"""\{\s*(?:["'}\w])|\[\s*\{""")
_WORD = re.compile(r"[\w.-]+")
_NOT_TOOLS = frozenset({"final_answer", "finish", "none", "answer"})
_MAX_SCANS = 4 * MAX_CALLS
_MAX_UNCLOSED = 4
_TOO_DEEP = "the call could not be read (its JSON is nested too deeply)"

_Found = tuple[list[Call], list[Span], str | None]


def parse_reply(
    text: str,
    tool_names: Collection[str],
    new_id: Callable[[], str],
    schemas: Schemas | None = None,
) -> ParsedReply:
    """Read the tool calls in a reply, strict blocks first, then tolerant shapes.

    A reply with no attempt at a call is a final answer: tier "none", text unchanged.
    Only objects naming a known tool count, so JSON in an answer stays prose.
    `schemas` (tool name to JSON schema) types parameters written as text.
    """
    names = frozenset(tool_names)
    try:
        return _parse(text, names, new_id, schemas or {})
    except RecursionError:  # a last resort: nothing here should recurse that deep
        scan = blank(text, think_spans(text))
        found = fences(scan)
        attempted = _openers(scan, names, found, _code(scan, found))
        return ParsedReply(text=text, problem=_TOO_DEEP if attempted else None)


def _parse(
    text: str, names: frozenset[str], new_id: Callable[[], str], schemas: Schemas
) -> ParsedReply:
    thoughts = think_spans(text)
    scan = blank(text, thoughts)  # a call drafted while thinking is not made
    found = fences(scan)
    code = _code(scan, found)  # quoted, not written: fences holding no call, inline code
    openers = _openers(scan, names, found, code)
    if openers:
        calls, spans, problem, strict = _tagged(scan, openers, names, schemas)
        if problem is None and len(calls) <= MAX_CALLS:  # calls in another shape too
            rest = blank(scan, spans)
            more, others, problem = _untagged(rest, _refenced(rest, found, spans), names, schemas)
            calls, spans, strict = calls + more, spans + others, strict and not more
    else:
        calls, spans, problem = _untagged(scan, found, names, schemas)
        strict = False
        if not calls and problem is None:
            problem = unread_attempt(blank(scan, code), names)
    if problem is None and len(calls) > MAX_CALLS:
        problem = f"more than {MAX_CALLS} tool calls in one reply; make at most {MAX_CALLS}"
    if problem is not None:
        return ParsedReply(text=text, problem=problem)
    if not calls:
        return ParsedReply(text=text)
    arguments = [json.dumps(args, ensure_ascii=False) for _, args in calls]
    made = tuple(
        ToolCall(id=new_id(), name=name, arguments=raw)
        for (name, _), raw in zip(calls, arguments, strict=True)
    )
    removed = spans + thoughts + [m.span() for m in _TOKENS.finditer(text)]
    blanked = blank(text, removed)  # close tags left after a call or alone on a line go too
    removed += [m.span() for m in _LEFT_CLOSE.finditer(blanked)]
    removed += [m.span() for _, end in spans if (m := _CLOSES.match(text, end))]
    removed += _emptied_fences(text, found, removed)
    kept = pieces(text, removed)
    prose = "\n\n".join(text[start:end] for start, end in kept)
    return ParsedReply(prose, made, "strict" if strict else "tolerant", pieces=tuple(kept))


def _emptied_fences(text: str, found: list[Fence], removed: list[Span]) -> list[Span]:
    """The fences that held calls and nothing else, to leave out of the prose too."""
    blanked = blank(text, removed)
    out = []
    for fence in found:
        rest = blanked[fence.body : fence.end].strip()
        if rest in ("", "```") and blanked[fence.body : fence.end] != text[fence.body : fence.end]:
            out.append((fence.start, fence.end))
    return out


def _refenced(text: str, found: list[Fence], spans: list[Span]) -> list[Fence]:
    """The fences of `text`, whose `spans` were blanked: as `found` unless a mark was."""
    merged = merge(spans)
    if any(inside(merged, at) for f in found for at in (f.start, f.body - 1, f.end - 1)):
        return fences(text)
    return found


def _code(text: str, found: list[Fence]) -> list[Span]:
    """Code that is not read for calls: fences that hold no call, then inline code (looked
    for only where it matters: around a tag or token that may start a call)."""
    code = [(f.start, f.end) for f in found if _is_code(text, f)]
    masked = blank(text, code)
    if not _TRIGGER.search(masked):
        return code
    return merge(code + inline_code(masked))


def _openers(
    text: str, names: frozenset[str], found: list[Fence], code: list[Span]
) -> list[re.Match[str]]:
    """The `<tool_call>` tags that open a call, not merely mention the tag: outside code,
    and first in the reply or followed by what a call starts with."""
    fence_starts = {f.start for f in found}
    first = skip_space(text, 0)
    out = []
    for match in _OPEN.finditer(text):
        if inside(code, match.start()):
            continue
        at = skip_space(text, match.end())
        word = _WORD.match(text, at)
        if (
            match.start() == first
            or at == len(text)
            or text[at] in "{["
            or at in fence_starts
            or text.startswith("<function=", at)
            or _CLOSE.match(text, at)
            or (word is not None and known(word.group(0), names) is not None)
        ):
            out.append(match)
    return out


def _tagged(
    text: str, openers: list[re.Match[str]], names: frozenset[str], schemas: Schemas
) -> tuple[list[Call], list[Span], str | None, bool]:
    """Calls from `<tool_call>` blocks; every block must hold a valid call."""
    fakes = [m.start() for m in _FAKE_RESULT.finditer(text)]  # results made up by the model
    starts = [m.start() for m in openers]
    calls: list[Call] = []
    spans: list[Span] = []
    strict, at, index = True, 0, 0
    for match in openers:
        if match.start() < at:  # in the previous block's JSON strings
            continue
        index += 1
        found, at, problem, exact = _block(text, match.end(), names, schemas)
        if problem is not None:
            where = f"<tool_call> block {index}" if len(openers) > 1 else "the <tool_call> block"
            return [], [], f"{where}: {problem}", False
        calls += found
        strict = strict and exact and match.group(0) == "<tool_call>"
        spans.append((match.start(), at))
        if len(calls) > MAX_CALLS:
            break
        following = bisect.bisect_left(starts, at)
        fake = bisect.bisect_left(fakes, at)
        if fake < len(fakes) and (following == len(starts) or fakes[fake] < starts[following]):
            spans.append((fakes[fake], len(text)))
            break
    return calls, spans, None, strict


def _block(
    text: str, pos: int, names: frozenset[str], schemas: Schemas
) -> tuple[list[Call], int, str | None, bool]:
    """The calls of the block whose body starts at `pos`, where it ends, a problem, and
    whether it was exactly in the agreed format."""
    tag = _TAG.search(text, pos)
    stop = tag.start() if tag else len(text)
    body = skip_space(text, pos)
    if text.startswith("<function=", body):  # Qwen3-Coder's XML parameters, or JSON
        call, stop, problem = read_function(text, body, names, schemas)
        after = _AFTER.match(text, stop)
        return ([call] if call else []), after.end() if after else stop, problem, False
    start = _START.search(text, pos, stop)
    if start is None:
        what = "nothing" if body >= stop else "no JSON object"
        return [], pos, f"it holds {what}; write {CALL_EXAMPLE}", False
    end = balanced(text, start.start())  # strings may hold tags: they end no block
    if end is None:
        return [], pos, "the JSON object is never closed (a brace or bracket is missing)", False
    raw = text[start.start() : end]
    try:
        value = loads(raw)
    except ValueError as exc:
        return [], pos, f"invalid JSON: {exc}", False
    after = _AFTER.match(text, end)
    close = after.group(1) if after else None
    block_end = after.end() if after and (close or "```" in after.group(0)) else end
    head = text[pos : start.start()]
    exact = close == "</tool_call>" and not head.strip() and _exact(raw, value, names)
    calls, problem = calls_in(value, names, tagged=True)
    if calls or problem:
        return calls, block_end, problem, exact
    head = _FENCE_OPEN.sub("", head).strip().strip("`'\"*:")
    if isinstance(value, dict) and _WORD.fullmatch(head):  # `name {arguments}`
        name = known(head, names)
        if name is None:
            return [], pos, f"unknown tool {head!r}; {tool_list(names)}", False
        return [(name, value)], block_end, None, False
    return [], pos, 'the JSON object needs "name" (a tool) and "arguments" (an object)', False


def _exact(raw: str, value: Any, names: frozenset[str]) -> bool:
    """Whether a block's JSON is the agreed format to the letter (the strict tier)."""
    try:
        strict_loads(raw)
    except ValueError:
        return False
    return (
        isinstance(value, dict)
        and set(value) == {"name", "arguments"}
        and value["name"] in names
        and isinstance(value["arguments"], dict)
    )


def _untagged(text: str, found: list[Fence], names: frozenset[str], schemas: Schemas) -> _Found:
    """Calls written without tags: ReAct lines, other vendors' shapes, fenced or bare
    JSON (a call object, a list of them, a wrapper). `found` are the fences of `text`."""
    masked = blank(text, [(f.start, f.end) for f in found if _is_code(text, f)])
    calls, spans, problem = _react(masked, names)
    if calls or problem:
        return calls, spans, problem
    inline = inline_code(masked)
    starts = [m.start() for m in _SHAPE.finditer(masked) if not inside(inline, m.start())]
    calls, spans, problem = read_shapes(masked, starts, names, schemas, MAX_CALLS)
    if problem is not None or len(calls) > MAX_CALLS:
        return calls, spans, problem
    masked = blank(masked, spans)
    if not any(name in masked for name in names) and not _CALLISH.search(masked):
        return calls, spans, None
    failures: list[tuple[int, int, str]] = []
    scans, unclosed, at = 0, 0, 0
    while scans < _MAX_SCANS and (start := _START.search(masked, at)) is not None:
        scans += 1
        end = balanced(masked, start.start())
        if end is None:
            failures.append((start.start(), len(masked), "the JSON object is never closed"))
            unclosed += 1
            if unclosed >= _MAX_UNCLOSED:  # each costs a scan to the end
                break
            at = start.start() + 1
            continue
        at = end
        try:
            value = loads(masked[start.start() : end])
        except ValueError as exc:
            failures.append((start.start(), end, f"invalid JSON: {exc}"))
            continue
        more, problem = calls_in(value, names, tagged=False)
        if problem is not None:
            return [], [], problem
        if more:
            calls += more
            spans.append((start.start(), end))
            if len(calls) > MAX_CALLS:
                break
    if calls:
        return calls, spans, None
    for first, last, why in failures:  # broken JSON that looks like a call
        if _CALLISH.search(masked, first, last):
            for match in _NAMED.finditer(masked, first, last):
                if (name := known(match.group(1), names)) is not None:
                    return [], [], f"a call to {name} was found but could not be read: {why}"
    return [], [], None


def _is_code(text: str, fence: Fence) -> bool:
    """Whether a fence holds code, not a call: neither its language nor its start fits."""
    return fence.lang not in _CALL_FENCES and not _CALL_BODY.match(text, fence.body)


def _react(text: str, names: frozenset[str]) -> _Found:
    """`Action: name` lines, each with an optional `Action Input:` object."""
    calls: list[Call] = []
    spans: list[Span] = []
    actions = list(_ACTION.finditer(text))
    for index, action in enumerate(actions):
        raw = action.group(1).strip("`'\"*")
        following = actions[index + 1].start() if index + 1 < len(actions) else len(text)
        given = _ACTION_INPUT.search(text, action.end(), following)
        name = known(raw, names)
        if name is None:
            if given is None or raw.lower() in _NOT_TOOLS:
                continue
            return [], [], f"Action names unknown tool {raw!r}; {tool_list(names)}"
        end, arguments = action.end(), {}
        if given is not None:
            start = _START.search(text, given.end(), following)
            close = balanced(text, start.start()) if start else None
            if start is None or close is None:
                return [], [], f"the Action Input of {name} is not a JSON object of arguments"
            try:
                value = loads(text[start.start() : close])
            except ValueError as exc:
                return [], [], f"the Action Input of {name} is invalid JSON: {exc}"
            if not isinstance(value, dict):
                return [], [], f"the Action Input of {name} must be a JSON object"
            end, arguments = close, value
        calls.append((name, arguments))
        spans.append((action.start(), end))
        if len(calls) > MAX_CALLS:
            return calls, spans, None
    if calls and (fake := _FAKE_RESULT.search(text, spans[-1][1])):
        spans.append((fake.start(), len(text)))
    return calls, spans, None

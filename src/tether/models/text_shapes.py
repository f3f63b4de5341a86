"""The shapes a tool call is written in, for `text_tools.py`.

A call as a JSON value: one call object (`name`/`tool`/`function` and
`arguments`/`parameters`/`input`/`args`, or OpenAI's `{"function": {...}}`), a list
of them, or a `{"tool_calls": ...}` wrapper. And the formats of other models' chat
templates, which a model trained on them often keeps writing whatever the prompt
says, read in the tolerant tier: `<function=NAME>{json}</function>` (Llama 3.1),
`[TOOL_CALLS]NAME[ARGS]{json}` (Mistral, Devstral), and Qwen3-Coder's
`<function=NAME><parameter=KEY>value</parameter></function>`, whose values are text,
typed by the tool's JSON schema where it says integer, number, boolean, array or
object. Shapes that are recognised but not read (pythonic `[bash(command="ls")]`,
DeepSeek's tool tokens) give a problem, so the model is asked to restate the call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from tether.models.text_scan import Span, balanced, known, loads, skip_space, tool_list

__all__ = ["Call", "Schemas", "calls_in", "read_function", "read_shapes", "unread_attempt"]

Call = tuple[str, dict[str, Any]]
Schemas = Mapping[str, Mapping[str, Any]]

_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "input", "args")
_CALL_KEYS = frozenset({*_NAME_KEYS, *_ARG_KEYS, "id", "type"})
_FUNCTION = re.compile(r"<function=([^>\s]+)>")
_FUNCTION_END = re.compile(r"\s*</function>")
_PARAMETER = re.compile(r"\s*<parameter=([^>\s]+)>")
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_CALL = re.compile(r"\s*([\w.-]+)\s*(?:\[CALL_ID\]\s*[\w-]+\s*)?\[ARGS\]\s*")
_TOKENS = re.compile(
    r"<[｜|]tool[▁_ ]?(?:calls?[▁_ ]?begin|sep)[｜|]>|\[TOOL_CALLS\]|<function=[^>\s]+>", re.I
)


def read_function(
    text: str, pos: int, names: frozenset[str], schemas: Schemas
) -> tuple[Call | None, int, str | None]:
    """The `<function=NAME>` call at `pos`: the call, where it ends, or a problem."""
    match = _FUNCTION.match(text, pos)
    if match is None:
        return None, pos, "write the tool's name as <function=NAME>"
    name = known(match.group(1), names)
    if name is None:
        return None, pos, f"unknown tool {match.group(1)!r}; {tool_list(names)}"
    at = match.end()
    body = skip_space(text, at)
    arguments: dict[str, Any] = {}
    if text.startswith("{", body):
        end = balanced(text, body)
        if end is None:
            return None, pos, f"the arguments of {name} are never closed"
        try:
            value = loads(text[body:end])
        except ValueError as exc:
            return None, pos, f"the arguments of {name} are invalid JSON: {exc}"
        if not isinstance(value, dict):
            return None, pos, f"the arguments of {name} must be a JSON object"
        arguments, at = value, end
    else:
        properties = schemas.get(name, {}).get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        stop = _stop(text, at)
        closing = following = 0  # the next of each, found again once passed (-1: none)
        while (param := _PARAMETER.match(text, at, stop)) is not None:
            if -1 < closing < param.end():
                closing = text.find("</parameter>", param.end(), stop)
            if -1 < following < param.end():
                following = text.find("<parameter=", param.end(), stop)
            if closing == -1 or -1 < following < closing:  # unclosed: up to the next one
                close = after = following if following != -1 else stop
            else:
                close, after = closing, closing + len("</parameter>")
            value = text[param.end() : close]
            value = value[1:] if value.startswith("\n") else value
            value = value[:-1] if value.endswith("\n") else value
            key = param.group(1).strip("\"'")
            arguments[key] = _typed(value, properties.get(key))
            at = after
        rest = skip_space(text, at)
        if rest < stop and not text.startswith("</function>", rest):
            return None, pos, f"write the arguments of {name} as a JSON object"
    tail = _FUNCTION_END.match(text, at)
    return (name, arguments), tail.end() if tail is not None else at, None


def _stop(text: str, at: int) -> int:
    """Where the parameters of a function starting at `at` must end."""
    found = (text.find(end, at) for end in ("</function>", "<function=", "</tool_call>"))
    ends = [i for i in found if i != -1]
    return min(ends) if ends else len(text)


def _typed(value: str, schema: Any) -> Any:
    """A parameter's text as the type its schema gives (kept as text if it does not fit)."""
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    raw = value.strip()
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            number = float(raw)
            if math.isfinite(number):
                return int(number) if number.is_integer() and "." not in raw else number
        if kind == "boolean" and raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        if kind in ("array", "object"):
            parsed = loads(raw)
            if isinstance(parsed, list if kind == "array" else dict):
                return parsed
    except ValueError:
        pass
    return value


def read_shapes(
    text: str,
    starts: list[int],
    names: frozenset[str],
    schemas: Schemas,
    limit: int,
) -> tuple[list[Call], list[Span], str | None]:
    """Calls in `<function=...>` and `[TOOL_CALLS]NAME[ARGS]` shapes starting at `starts`
    (at most `limit` + 1 are read)."""
    calls: list[Call] = []
    spans: list[Span] = []
    at = 0
    for start in starts:
        if start < at:
            continue
        if text.startswith("<", start):
            call, at, problem = read_function(text, start, names, schemas)
            if problem is not None:
                return [], [], f"the <function=...> call: {problem}"
            if call is not None:
                calls.append(call)
                spans.append((start, at))
        else:
            at = start + len(_MISTRAL)
            while (match := _MISTRAL_CALL.match(text, at)) is not None:
                name = known(match.group(1), names)
                if name is None:
                    return [], [], f"unknown tool {match.group(1)!r}; {tool_list(names)}"
                end = balanced(text, match.end()) if text.startswith("{", match.end()) else None
                try:
                    value = loads(text[match.end() : end]) if end is not None else None
                except ValueError as exc:
                    return [], [], f"the [ARGS] of {name} are invalid JSON: {exc}"
                if end is None or not isinstance(value, dict):
                    return [], [], f"the [ARGS] of {name} are not a JSON object of arguments"
                calls.append((name, value))
                at = end
            spans.append((start, at))
        if len(calls) > limit:
            break
    return calls, spans, None


def unread_attempt(text: str, names: frozenset[str]) -> str | None:
    """A problem if `text` (code masked) evidently calls a tool in a shape not read:
    a known tool name at the start of a line followed by `(` or `{`, or tool tokens."""
    if _TOKENS.search(text):
        return "tool-call tokens were written instead of a <tool_call> block"
    if not names:
        return None
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    pattern = (
        rf"^[ \t]*(?:\[[ \t]*)?(?:functions\.)?({alternatives})"
        r"(?:\([ \t]*\w+[ \t]*=|\([ \t]*\)(?:[ \t]*\])?[ \t]*$|[ \t]*\{\s*[\"'])"
    )
    match = re.search(pattern, text, re.M)
    if match is None:
        return None
    return f"the call to {match.group(1)} is not in the agreed format"


def calls_in(
    value: Any, names: frozenset[str], *, tagged: bool, depth: int = 0
) -> tuple[list[Call], str | None]:
    """The calls a parsed JSON value holds: one call object, a list of them, or a wrapper.

    Outside `<tool_call>` tags an object is a call only with an arguments-like key, so
    an answer's `{"id": 1, "name": "bash"}` stays data.
    """
    if depth > 2:
        return [], None
    if isinstance(value, list):
        found: list[Call] = []
        for item in value:
            calls, problem = calls_in(item, names, tagged=tagged, depth=depth + 1)
            if problem is not None or not calls:
                return [], problem
            found += calls
        return found, None
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in ("tool_call", "tool_calls", "function_call") and isinstance(inner, dict | list):
            return calls_in(inner, names, tagged=tagged, depth=depth + 1)
    call = _call_of(value, names, tagged=tagged)
    if isinstance(call, str):
        return [], call
    return ([call] if call else []), None


def _call_of(value: Any, names: frozenset[str], *, tagged: bool) -> Call | str | None:
    """One call object read in any common shape; None if it is not one, str if broken."""
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict) and set(value) <= {"function", "type", "id"}:
        value = value["function"]
    given = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if given is None or not set(value) <= _CALL_KEYS:
        return None
    keys = [k for k in _ARG_KEYS if k in value]
    if not keys and not tagged:
        return None
    name = known(given, names)
    if name is None:
        return f"unknown tool {given!r}; {tool_list(names)}" if keys else None
    arguments = value[keys[0]] if keys else {}
    if isinstance(arguments, str):
        try:
            arguments = loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            return f"the arguments of {name} are a string that is not a JSON object ({exc})"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        return f'"arguments" of {name} must be a JSON object, not {kind}'
    return name, arguments

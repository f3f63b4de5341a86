"""Low-level scanning for `text_tools.py`: spans, fences, thinking, near-JSON.

Every helper here runs in time linear in the text (a reply may be megabytes of
anything), and none raises on deep nesting: JSON that is too deep is invalid JSON.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Fence",
    "Span",
    "balanced",
    "blank",
    "fences",
    "inline_code",
    "inside",
    "known",
    "loads",
    "merge",
    "pieces",
    "skip_space",
    "strict_loads",
    "think_spans",
    "tool_list",
]

Span = tuple[int, int]

_THINK_TAG = re.compile(r"<\s*(/\s*)?think\s*>", re.I)
_INLINE = re.compile(r"`[^`\n]+`")
_FENCE_LANG = re.compile(r"[ \t]*([\w+.-]*)")
_SPACE = re.compile(r"\s*")
_CLOSER = re.compile(r"\s*[}\]]")
_KEY_END = re.compile(r"\s*:")
_FAR = 1 << 62
_LITERALS = {"True": "true", "False": "false", "None": "null"}


@dataclass(frozen=True, slots=True)
class Fence:
    """A fenced code block: its span, its language (lower case), where its body starts."""

    start: int
    end: int
    lang: str
    body: int


def known(given: str, names: frozenset[str]) -> str | None:
    """The tool `given` names (`functions.read_file` counts as `read_file`), or None."""
    if given in names:
        return given
    tail = given.rsplit(".", 1)[-1]
    return tail if tail in names else None


def tool_list(names: frozenset[str]) -> str:
    return "the tools are: " + ", ".join(sorted(names)) if names else "no tools are available"


def merge(spans: list[Span]) -> list[Span]:
    """The spans sorted, overlapping ones joined."""
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        elif end > start:
            out.append((start, end))
    return out


def blank(text: str, spans: list[Span]) -> str:
    """`text` with the spans replaced by spaces, so positions stay the same."""
    if not spans:
        return text
    parts, at = [], 0
    for start, end in merge(spans):
        parts += [text[at:start], " " * (end - start)]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def pieces(text: str, removed: list[Span]) -> list[Span]:
    """What is left of `text` once the spans are removed: the non-blank pieces, stripped."""
    out: list[Span] = []
    at = 0
    for start, end in [*merge(removed), (len(text), len(text))]:
        piece = text[at:start]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((at + lead, at + len(piece.rstrip())))
        at = max(at, end)
    return out


def think_spans(text: str) -> list[Span]:
    """The thinking in a reply: `<think>...</think>`; an unclosed `<think>` runs to the
    end (the reply was cut off); a `</think>` with no `<think>` before it closes thinking
    that began in the prompt (Qwen3 and R1 templates open it there), so all before it."""
    spans: list[Span] = []
    opened: int | None = None
    for match in _THINK_TAG.finditer(text):
        start, end = match.span()
        if text[start - 1 : start] == "`" and text[end : end + 1] == "`":
            continue  # `<think>` quoted in inline code
        if match.group(1) is None:
            opened = start if opened is None else opened
        elif opened is not None:
            spans.append((opened, end))
            opened = None
        else:
            spans = [(0, end)]
    if opened is not None:
        spans.append((opened, len(text)))
    return spans


def fences(text: str) -> list[Fence]:
    """The fenced code blocks; one left open runs to the end of the text."""
    out: list[Fence] = []
    at = 0
    while (start := text.find("```", at)) != -1:
        newline = text.find("\n", start + 3)
        if newline == -1:  # no body can follow, here or later
            break
        lang = _FENCE_LANG.match(text, start + 3)
        close = text.find("```", newline + 1)
        end = len(text) if close == -1 else close + 3
        out.append(Fence(start, end, lang.group(1).lower() if lang else "", newline + 1))
        at = end
    return out


def inline_code(text: str) -> list[Span]:
    """The `inline code` spans of one line each."""
    return [m.span() for m in _INLINE.finditer(text)]


def inside(spans: list[Span], pos: int) -> Span | None:
    """The span of sorted, disjoint `spans` that holds `pos`, if any."""
    index = bisect.bisect_right(spans, (pos, _FAR)) - 1
    if index >= 0 and spans[index][0] <= pos < spans[index][1]:
        return spans[index]
    return None


def skip_space(text: str, at: int) -> int:
    """The first position from `at` that is not whitespace (or the end)."""
    match = _SPACE.match(text, at)
    return match.end() if match else at


def balanced(text: str, start: int) -> int | None:
    """The end of the bracketed value at `start` (strings respected), None if unclosed."""
    depth, quote, i, n = 0, "", start, len(text)
    while i < n:
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


def strict_loads(text: str) -> Any:
    """`json.loads`, with nesting too deep for the parser as a `ValueError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def loads(text: str) -> Any:
    """JSON, or failing that the near-JSON models write; raises the first JSON error."""
    try:
        return json.loads(text, strict=False)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None
    except ValueError as first:
        try:
            return json.loads(_jsonish(text), strict=False)
        except (ValueError, RecursionError):
            raise first from None


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

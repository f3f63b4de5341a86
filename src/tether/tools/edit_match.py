"""Where `old_str` is in a file: exact first, then tolerant — but never ambiguous.

Models quote files imperfectly: trailing spaces dropped, indentation shifted by a
level, curly quotes typed straight. Matching goes in stages and stops at the first
stage that finds anything: exact; each line ignoring trailing whitespace; ignoring
indentation (the replacement is then re-indented to the file's); with Unicode
punctuation normalised too. More than one match at that stage is an error naming
the lines (unless the caller replaces all), so a looser stage can never pick a
place the model did not mean while a stricter reading would have been ambiguous.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

__all__ = [
    "STAGES",
    "Found",
    "Span",
    "find",
    "find_occurrences",
    "locate",
    "normalise_punctuation",
    "reindent",
]

STAGES = (
    "exact",
    "ignoring trailing whitespace",
    "ignoring indentation",
    "normalising punctuation",
)

_PUNCTUATION = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
        "\u2015": "-", "\u2212": "-",
        "\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u205f": " ", "\u3000": " ",
        **{chr(c): " " for c in range(0x2000, 0x200B)},
        "\u200b": "", "\ufeff": "",
        "\u2026": "...",
    }
)  # fmt: skip
_INDENT = re.compile(r"[ \t]*")


@dataclass(frozen=True, slots=True)
class Span:
    """Offsets in the original text (CRLF included) and the 1-based first line."""

    start: int
    end: int
    line: int
    indent: str  # the file's indentation of the first non-blank matched line


@dataclass(frozen=True, slots=True)
class Found:
    stage: int  # index into STAGES
    spans: tuple[Span, ...]


def normalise_punctuation(text: str) -> str:
    return text.translate(_PUNCTUATION)


def find(text: str, old: str) -> Found:
    """The first stage with any match, and its matches (none: stage -1)."""
    spans = locate(text, old)
    if spans:
        return Found(0, tuple(Span(s, e, text.count("\n", 0, s) + 1, "") for s, e in spans))
    want = old.replace("\r\n", "\n").split("\n")
    with_newline = len(want) > 1 and want[-1] == ""
    if with_newline:
        want.pop()
    if not any(line.strip() for line in want):
        return Found(-1, ())  # only whitespace: no tolerant reading is meaningful
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    bare = [line.removesuffix("\r") for line in lines]
    for stage, key in enumerate(_KEYS, start=1):
        keys = [key(line) for line in bare]
        wanted = [key(line) for line in want]
        found = _windows(keys, wanted, len(lines) - 1 if with_newline else len(lines))
        if found:
            matched: list[Span] = []
            for first in found:
                last = first + len(want) - 1
                end = starts[last + 1] if with_newline else starts[last] + len(bare[last])
                indent = _first_indent(bare[first : last + 1])
                matched.append(Span(starts[first], end, first + 1, indent))
            return Found(stage, tuple(matched))
    return Found(-1, ())


def locate(text: str, old_str: str) -> list[tuple[int, int]]:
    """(start, end) offsets in `text` of every occurrence of `old_str`, overlaps included.

    Line endings do not count (CRLF = LF on both sides): read_file does not show
    them, so the model cannot quote them, and a file may mix CRLF and LF lines.
    The offsets are those in the original `text`.
    """
    needle = old_str.replace("\r\n", "\n")
    if "\r\n" not in text:
        return [(start, start + len(needle)) for start in find_occurrences(text, needle)]
    # Where the LF-normalised text has a "\n" that was a CRLF (sorted).
    crlf_at: list[int] = []
    index = text.find("\r\n")
    while index != -1:
        crlf_at.append(index - len(crlf_at))
        index = text.find("\r\n", index + 2)

    def original_offset(offset: int) -> int:  # each CRLF before `offset` adds a "\r"
        return offset + bisect.bisect_left(crlf_at, offset)

    return [
        (original_offset(start), original_offset(start + len(needle)))
        for start in find_occurrences(text.replace("\r\n", "\n"), needle)
    ]


def find_occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of `needle` in `text`, overlapping ones included."""
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(index)
        index = text.find(needle, index + 1)
    return starts


def reindent(new: str, old: str, file_indent: str) -> str:
    """`new` shifted as the model's quote was shifted against the file.

    The indentation of old's first non-blank line maps to the file's; each line of
    new keeps its depth relative to that (in columns when both use spaces alone).
    """
    old_lines = old.replace("\r\n", "\n").split("\n")
    old_indent = _first_indent(old_lines)
    if old_indent == file_indent:
        return new
    step = _step(old_lines)
    tabs = "\t" in file_indent
    out = []
    for line in new.replace("\r\n", "\n").split("\n"):
        if not line.strip():
            out.append(line)
            continue
        indent = _INDENT.match(line).group()  # type: ignore[union-attr]
        body = line[len(indent) :]
        if indent.startswith(old_indent):
            extra = indent[len(old_indent) :]
            if tabs and extra and set(extra) == {" "}:  # the model's spaces, a tab file
                levels, rest = divmod(len(extra), step)
                extra = "\t" * levels + " " * rest
            elif not tabs and "\t" in extra:  # the model's tabs, a space file
                extra = extra.replace("\t", " " * step)
            out.append(file_indent + extra + body)
        elif " " not in old_indent + indent + file_indent or "\t" not in (
            old_indent + indent + file_indent
        ):
            width = len(file_indent) + len(indent) - len(old_indent)
            unit = "\t" if "\t" in file_indent else " "
            out.append(unit * max(width, 0) + body)
        else:
            out.append(file_indent + body)
    return "\n".join(out)


def _step(lines: list[str]) -> int:
    """The quote's indentation step in spaces (4 when it shows none)."""
    widths = sorted({_width(line) for line in lines if line.strip()})
    steps = [b - a for a, b in pairwise(widths) if b > a]
    return min(steps, default=4) or 4


def _width(line: str) -> int:
    return len(_INDENT.match(line).group())  # type: ignore[union-attr]


def _first_indent(lines: list[str]) -> str:
    for line in lines:
        if line.strip():
            return _INDENT.match(line).group()  # type: ignore[union-attr]
    return ""


def _windows(keys: list[str], wanted: list[str], limit: int) -> list[int]:
    """Start indexes where `wanted` occurs as consecutive lines of `keys[:limit]`."""
    n = len(wanted)
    first = wanted[0]
    return [
        i for i in range(0, max(limit - n + 1, 0)) if keys[i] == first and keys[i : i + n] == wanted
    ]


_KEYS: tuple[Callable[[str], str], ...] = (
    str.rstrip,
    str.strip,
    lambda line: normalise_punctuation(line).strip(),
)

"""Keep tool output within what the model should read at once, and lose none of it.

Head and tail survive (errors tend to be at the end, context at the start); the
marker says exactly how much was cut. With an overflow directory (`spill`), the
full text is saved first and the marker names the file and the line where the cut
starts, so the model can page straight to it with read_file or search it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tether.context import overflow

__all__ = ["Cut", "clamp", "cut", "spill"]

_PAGE = 2000  # lines read_file shows per call
_PLAIN = re.compile(r"[\w./+@:%,=-]+")  # a path the model can copy as it stands


def clamp(text: str, limit: int, *, note: str = "") -> str:
    """`text` itself if it fits in `limit` characters, else head + marker + tail
    (`note` goes into the marker)."""
    if limit <= 0 or len(text) <= limit:
        return text
    keep = max(limit - 120 - len(note), 2)
    head_len = keep * 2 // 5
    tail_len = keep - head_len
    head, tail = text[:head_len], text[len(text) - tail_len :]
    cut = text[head_len : len(text) - tail_len]
    lines = cut.count("\n")
    marker = (
        f"\n[... {len(cut):,} characters ({lines:,} lines) cut from the middle of "
        f"{len(text):,}; read a narrower range to see them{note} ...]\n"
    )
    return head + marker + tail


def spill(text: str, limit: int, directory: Path | None, tool: str) -> str:
    """`text` if it fits in `limit`; else the full text goes to an overflow file in
    `directory` and head + marker (naming the file) + tail comes back, within `limit`
    when the limit leaves room for the marker. Without a directory, or if the file
    cannot be written, this is `clamp` (the note says why nothing was saved)."""
    if limit <= 0 or len(text) <= limit:
        return text
    if directory is None:
        return clamp(text, limit)
    try:
        path = overflow.write_text(directory, tool, text)
    except OSError as exc:
        return clamp(text, limit, note=f"; the full output could not be saved: {exc}")
    newlines = text.count("\n")
    shape = Cut(path, len(text), "characters", newlines + (0 if text.endswith("\n") else 1))
    return cut(text[:limit], text[len(text) - limit :], limit, shape, newlines)


@dataclass(frozen=True, slots=True)
class Cut:
    """What the marker tells about the whole: its file, size (in `unit`) and lines."""

    path: Path
    size: int
    unit: str  # "characters" or "bytes"
    lines: int  # as read_file counts them: a last line without newline counts
    note: str = ""  # e.g. the file is incomplete


def cut(head_src: str, tail_src: str, budget: int, whole: Cut, newlines: int) -> str:
    """Head + marker + tail of a text of which `head_src` is a prefix and `tail_src` a
    suffix (the whole need not be in memory), within `budget` characters if the
    marker fits. `newlines` counts "\\n" in the whole text: it numbers the lines."""
    reserve = len(_marker(whole, whole.size, whole.size + 1, whole.size + 1)) + 8
    keep = max(budget - reserve, 0)
    head_len = keep * 2 // 5
    tail_len = keep - head_len
    head = head_src[:head_len]
    end = head.rfind("\n")
    if end >= head_len // 2:
        head = head[: end + 1]  # whole lines, when that costs at most half the head
    tail = tail_src[len(tail_src) - tail_len :] if tail_len else ""
    start = tail.find("\n")
    if 0 <= start < tail_len // 2 and start < len(tail) - 1:
        tail = tail[start + 1 :]
    first = head.count("\n") + 1  # the line the cut starts in
    last = newlines - tail.count("\n") + 1  # the line the tail starts in
    before_tail = len(tail_src) - len(tail) - 1
    if before_tail >= 0 and tail_src[before_tail] == "\n":
        last -= 1  # the tail starts a line: the cut ends with the line before it
    cut_size = whole.size - _size(head, whole.unit) - _size(tail, whole.unit)
    return head + _marker(whole, cut_size, first, max(last, first)) + tail


def _marker(whole: Cut, cut_size: int, first: int, last: int) -> str:
    where = f"line {first:,}" if first == last else f"lines {first:,}-{last:,}"
    path = _arg(str(whole.path))
    note = f" {whole.note}" if whole.note else ""
    return (
        f"\n[... {cut_size:,} {whole.unit} cut here ({where} of {whole.lines:,}). The full "
        f"output ({whole.size:,} {whole.unit}) is saved in {path}.{note} Read the cut part "
        f"with read_file path={path} offset={first} limit={_PAGE} (then larger offsets), "
        f"or find lines in it with search_files pattern=<regex> path={path} ...]\n"
    )


def _arg(value: str) -> str:
    return value if _PLAIN.fullmatch(value) else json.dumps(value)


def _size(text: str, unit: str) -> int:
    return len(text.encode("utf-8", "replace")) if unit == "bytes" else len(text)

"""`str_replace`: edit a file by replacing one exact, unique piece of text.

Exactness is the point: the model must quote the file as it is, so an edit never
lands somewhere unintended. When the quote does not match, the error shows the
closest region with line numbers and names the likely cause (indentation, line
numbers pasted from read_file), so the next attempt can succeed. Everything the
model does not mean to change is kept: BOM, encoding, CRLF, mode, final newline.
"""

from __future__ import annotations

import difflib
import re

from tether.errors import ToolError
from tether.tools.files import regular_file
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import (
    atomic_write,
    decode,
    looks_binary,
    printable,
    split_lines,
    to_newline,
)

__all__ = ["find_occurrences", "str_replace"]

_SNIPPET_CONTEXT = 3
_NEAR_CONTEXT = 2
_MAX_WINDOW_SCAN = 20_000
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


@tool
def str_replace(
    ctx: ToolContext, path: str, old_str: str, new_str: str, replace_all: bool = False
) -> str:
    """Edit a file by replacing an exact piece of text with new text.

    `old_str` must match the file exactly, whitespace and indentation included, and
    occur exactly once unless replace_all is true: include enough surrounding lines
    to make it unique. Copy the text from read_file output without the line-number
    prefix. Line endings are handled for you (send LF; CRLF files stay CRLF). To
    create a file or rewrite it entirely use write_file.

    Args:
        path: File path, relative to the workspace root.
        old_str: The exact text to replace (non-empty).
        new_str: The replacement text (may be empty to delete old_str).
        replace_all: Replace every occurrence instead of requiring a unique one.
    """
    if old_str == "":
        raise ToolError(
            "old_str is empty. Quote the exact text to replace; to insert, quote a "
            "neighbouring line and repeat it in new_str; to create a file use write_file."
        )
    target = regular_file(ctx, path, purpose="edit")
    rel = ctx.workspace.relative(target)
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {rel}: {exc.strerror or exc}.") from None
    if looks_binary(data):
        raise ToolError(f"{rel} is a binary file; str_replace edits text files only.")
    original = decode(data)
    text = original.text
    old = to_newline(old_str, original.newline)
    new = to_newline(new_str, original.newline)
    if old == new:
        raise ToolError("old_str and new_str are identical; there is nothing to change.")

    starts = find_occurrences(text, old)
    if not starts:
        message = _no_match_message(rel, printable(text), old_str)
        if original.lossy:
            message += (
                " Note: the file is not valid UTF-8; its undecodable bytes show as \ufffd "
                "and cannot be matched, so quote text that avoids them."
            )
        raise ToolError(message)
    if len(starts) > 1 and not replace_all:
        lines = [_line_of(text, s) for s in starts]
        raise ToolError(
            f"old_str occurs {len(starts)} times in {rel} (starting at lines "
            f"{_join_numbers(lines)}). Add surrounding lines to old_str so it matches "
            "exactly one place, or set replace_all=true to replace every occurrence."
        )

    if replace_all:
        count = text.count(old)
        updated = text.replace(old, new)
    else:
        count = 1
        updated = text[: starts[0]] + new + text[starts[0] + len(old) :]
    updated = _keep_final_newline(text, updated, original.newline)
    try:
        atomic_write(target, original.encode(updated))
    except OSError as exc:
        raise ToolError(f"Cannot write {rel}: {exc.strerror or exc}.") from None

    first = _line_of(updated, starts[0])
    changed_lines = max(new.count("\n") + (0 if new.endswith("\n") else 1), 1)
    what = "1 occurrence" if count == 1 else f"{count} occurrences"
    head = f"Replaced {what} in {rel}"
    if count > 1:
        head += f" (first at line {first})"
    snippet = _snippet(updated, first, first + changed_lines - 1)
    return f"{head}. Lines {snippet[0]}-{snippet[1]} now read:\n{snippet[2]}"


def find_occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of `needle` in `text`, overlapping ones included."""
    starts: list[int] = []
    index = text.find(needle)
    while index != -1:
        starts.append(index)
        index = text.find(needle, index + 1)
    return starts


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _join_numbers(numbers: list[int], limit: int = 20) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f", ... ({len(numbers) - limit} more)" if len(numbers) > limit else "")


def _keep_final_newline(before: str, after: str, newline: str) -> str:
    """An edit at the end of the file must not add or drop its final newline."""
    if not after or before.endswith("\n") == after.endswith("\n"):
        return after
    if before.endswith("\n"):
        return after + newline
    return after[: -len(newline)] if after.endswith(newline) else after[:-1]


def _snippet(text: str, first: int, last: int) -> tuple[int, int, str]:
    lines = split_lines(printable(text))
    lo = max(first - _SNIPPET_CONTEXT, 1)
    hi = min(last + _SNIPPET_CONTEXT, len(lines))
    body = "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(lo, hi + 1))
    return lo, hi, body


def _no_match_message(rel: str, text: str, old_str: str) -> str:
    """Why old_str was not found, and the file region that looks most like it."""
    file_lines = split_lines(text)
    want = split_lines(old_str) or [old_str]
    hints: list[str] = []
    if all(_LINE_NUMBER_PREFIX.match(line) for line in want):
        hints.append(
            "old_str seems to include read_file's line-number prefixes "
            "(number + tab); quote only the file text after the tab."
        )
    best_line, score = _closest_window(file_lines, want)
    if best_line:
        window = file_lines[best_line - 1 : best_line - 1 + len(want)]
        if [_squash(w) for w in window] == [_squash(w) for w in want]:
            hints.append(
                f"The text matches at line {best_line} except for whitespace or "
                "indentation (tabs vs spaces, trailing spaces); copy it exactly."
            )
    normal_text = text.replace("\r\n", "\n")
    normal_old = old_str.replace("\r\n", "\n")
    if not hints and normal_old in normal_text:
        hints.append("The text matches if line endings are ignored (the file mixes CRLF and LF).")
    message = f"old_str was not found in {rel}."
    if hints:
        message += " " + " ".join(hints)
    if best_line and score >= 0.3:
        lo = max(best_line - _NEAR_CONTEXT, 1)
        hi = min(best_line + len(want) - 1 + _NEAR_CONTEXT, len(file_lines))
        near = "\n".join(f"{n:6d}\t{file_lines[n - 1]}" for n in range(lo, hi + 1))
        message += f" The most similar lines ({lo}-{hi}) are:\n{near}\n"
    else:
        message += " Nothing in the file resembles it. "
    return message + "Read the file again (read_file) and quote it exactly."


def _closest_window(file_lines: list[str], want: list[str]) -> tuple[int, float]:
    """(1-based first line, similarity) of the window most like `want`; (0, 0) if none."""
    if not file_lines:
        return 0, 0.0
    size = min(len(want), len(file_lines))
    target = "\n".join(want)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(target)
    best, best_score = 0, 0.0
    last_start = min(len(file_lines) - size, _MAX_WINDOW_SCAN)
    for start in range(last_start + 1):
        matcher.set_seq1("\n".join(file_lines[start : start + size]))
        if matcher.real_quick_ratio() <= best_score or matcher.quick_ratio() <= best_score:
            continue
        score = matcher.ratio()
        if score > best_score:
            best, best_score = start + 1, score
    return best, best_score


def _squash(line: str) -> str:
    return " ".join(line.split())

"""`str_replace`: edit a file by replacing one exact, unique piece of text.

An edit must land exactly where the model meant. The quote is found exactly, or
else by the tolerant stages of `edit_match` (trailing whitespace, indentation,
punctuation), and more than one match at a stage is always an error. When nothing
matches, the error shows the closest region with line numbers and names the likely
cause (indentation, line numbers pasted from read_file), so the next attempt can
succeed. Everything the
model does not mean to change is kept: BOM, encoding, CRLF, mode, final newline.
The search for the closest region lives in `closest_match.py`.
"""

from __future__ import annotations

import re
import threading

from tether.errors import ToolError
from tether.tools.closest_match import closest_window, squash
from tether.tools.edit_match import STAGES, find, find_occurrences, locate, reindent
from tether.tools.files import regular_file, shown_path
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import (
    Newline,
    atomic_write,
    check_text,
    decode,
    looks_binary,
    printable,
    split_lines,
    to_newline,
)

__all__ = ["find_occurrences", "locate", "str_replace"]

_SNIPPET_CONTEXT = 3
_NEAR_CONTEXT = 2
_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


@tool
def str_replace(
    ctx: ToolContext, path: str, old_str: str, new_str: str, replace_all: bool = False
) -> str:
    """Edit a file by replacing an exact piece of text with new text.

    Quote `old_str` from the file exactly, and include enough surrounding lines that
    it occurs once (or set replace_all). If no exact match exists, whole lines are
    matched ignoring trailing whitespace, then indentation (new_str is re-indented to
    match), then curly quotes, dashes and special spaces; a match that is not unique
    is an error naming its lines, never a guess. Copy text from read_file output
    without the line-number prefix. Line endings are handled for you (send LF; each
    line keeps its CRLF or LF ending). To create or rewrite a file use write_file.

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
    check_text(old_str, "old_str", allow_nul=True)
    check_text(new_str, "new_str", allow_nul=True)
    target = regular_file(ctx, path, purpose="edit")
    rel = shown_path(ctx.workspace, target)
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise ToolError(f"Cannot read {rel}: {exc.strerror or exc}.") from None
    if looks_binary(data):
        raise ToolError(f"{rel} is a binary file; str_replace edits text files only.")
    original = decode(data)
    text = original.text
    if _lf(old_str) == _lf(new_str):
        raise ToolError("old_str and new_str are identical; there is nothing to change.")

    found = find(text, old_str)
    spans = [(span.start, span.end) for span in found.spans]
    if not spans:
        message = _no_match_message(rel, printable(text), old_str, ctx.cancel)
        if original.lossy:
            message += (
                " Note: the file is not valid UTF-8; its undecodable bytes show as \ufffd "
                "and cannot be matched, so quote text that avoids them."
            )
        raise ToolError(message)
    how = "" if found.stage == 0 else f" (matched {STAGES[found.stage]})"
    if len(spans) > 1 and not replace_all:
        lines = [span.line for span in found.spans]
        raise ToolError(
            f"old_str occurs {len(spans)} times in {rel} (starting at lines "
            f"{_join_numbers(lines)}){how}. Add surrounding lines to old_str so it matches "
            "exactly one place, or set replace_all=true to replace every occurrence."
        )

    indents = {(span.start, span.end): span.indent for span in found.spans}
    chosen = _non_overlapping(spans) if replace_all else spans[:1]
    pieces: list[str] = []
    done = 0
    for start, end in chosen:
        newline = _newline_around(text, start, end, original.newline)
        replacement = new_str
        if found.stage >= 2:  # indentation was ignored: shift new_str as old_str was shifted
            replacement = reindent(new_str, old_str, indents[(start, end)])
        pieces += [text[done:start], to_newline(replacement, newline)]
        done = end
    pieces.append(text[done:])
    updated = _keep_final_newline(text, "".join(pieces))
    try:
        atomic_write(target, original.encode(updated))
    except OSError as exc:
        raise ToolError(f"Cannot write {rel}: {exc.strerror or exc}.") from None

    count = len(chosen)
    first = _line_of(updated, chosen[0][0])
    new = _lf(new_str)
    changed_lines = max(new.count("\n") + (0 if new.endswith("\n") else 1), 1)
    what = "1 occurrence" if count == 1 else f"{count} occurrences"
    head = f"Replaced {what} in {rel}{how}"
    if count > 1:
        head += f" (first at line {first})"
    snippet = _snippet(updated, first, first + changed_lines - 1)
    return f"{head}. Lines {snippet[0]}-{snippet[1]} now read:\n{snippet[2]}"


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _join_numbers(numbers: list[int], limit: int = 20) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f", ... ({len(numbers) - limit} more)" if len(numbers) > limit else "")


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _non_overlapping(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Left to right, each span that does not overlap the one kept before it."""
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def _newline_around(text: str, start: int, end: int, default: Newline) -> Newline:
    """The line ending new text replacing text[start:end] should use.

    That of the replaced lines when they agree, else the file's usual one; for a
    match inside one line, that line's own ending. Untouched lines keep theirs.
    """
    region = text[start:end]
    crlf = region.count("\r\n")
    lf = region.count("\n") - crlf
    if crlf or lf:
        return default if crlf and lf else ("\r\n" if crlf else "\n")
    eol = text.find("\n", end)
    if eol == -1:  # the last line has no ending: follow the line before it
        eol = text.rfind("\n", 0, start)
        if eol == -1:
            return default
    return "\r\n" if eol > 0 and text[eol - 1] == "\r" else "\n"


def _keep_final_newline(before: str, after: str) -> str:
    """An edit at the end of the file must not add or drop its final newline."""
    if not after or before.endswith("\n") == after.endswith("\n"):
        return after
    if before.endswith("\n"):
        return after + ("\r\n" if before.endswith("\r\n") else "\n")
    return after[:-2] if after.endswith("\r\n") else after[:-1]


def _snippet(text: str, first: int, last: int) -> tuple[int, int, str]:
    lines = split_lines(printable(text))
    lo = max(first - _SNIPPET_CONTEXT, 1)
    hi = min(last + _SNIPPET_CONTEXT, len(lines))
    body = "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(lo, hi + 1))
    return lo, hi, body


def _no_match_message(
    rel: str, text: str, old_str: str, cancel: threading.Event | None = None
) -> str:
    """Why old_str was not found, and the file region that looks most like it."""
    file_lines = split_lines(text)
    want = split_lines(old_str) or [old_str]
    hints: list[str] = []
    if all(_LINE_NUMBER_PREFIX.match(line) for line in want):
        hints.append(
            "old_str seems to include read_file's line-number prefixes "
            "(number + tab); quote only the file text after the tab."
        )
    best_line, score = closest_window(file_lines, want, cancel)
    if best_line:
        window = file_lines[best_line - 1 : best_line - 1 + len(want)]
        if len(window) == len(want) and [w.replace("\r", "") for w in window] == [
            w.replace("\r", "") for w in want
        ]:
            hints.append(
                f"The text matches at line {best_line} except for stray carriage returns "
                "(\\r) that read_file does not show; remove them with bash, or rewrite "
                "the file with write_file."
            )
        elif len(window) == len(want) and [squash(w) for w in window] == [squash(w) for w in want]:
            hints.append(
                f"The text matches at line {best_line} except for whitespace or "
                "indentation (tabs vs spaces, trailing spaces); copy it exactly."
            )
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

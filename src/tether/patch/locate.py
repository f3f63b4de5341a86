"""Where each hunk of a file goes, or an error that shows the file as it really is.

Hunks are placed in order against the original file, each after the one before,
so they cannot overlap. Envelope hunks (no line numbers) go after their `@@`
anchors and must match in one place only: with several candidates the hunk is
refused, naming them, unless an anchor precedes it (then the first match after
the anchor is meant). Unified-diff hunks carry line numbers that may be stale:
the match nearest the stated line wins, and two equally near are refused.
"""

from __future__ import annotations

from tether.patch.match import STAGES, FileLines, normalise
from tether.patch.model import Hunk, PatchError
from tether.tools.closest_match import closest_window

__all__ = ["locate_hunks", "numbered"]

_AROUND = 3  # lines of the file shown either side of the best candidate
_MAX_LISTED = 10


def locate_hunks(path: str, lines: FileLines, hunks: tuple[Hunk, ...]) -> list[int]:
    """The 0-based line index where each hunk's old lines start, in hunk order."""
    positions: list[int] = []
    start = 0
    for hunk in hunks:
        at = _locate(path, lines, hunk, start)
        positions.append(at)
        start = at + len(hunk.old)
    return positions


def _locate(path: str, lines: FileLines, hunk: Hunk, start: int) -> int:
    for anchor in hunk.anchors:
        anchored = lines.first([anchor], start)
        if anchored is None:
            raise PatchError(_not_found(path, lines, hunk, [anchor], start, what="anchor"))
        start = anchored[0] + 1
    old = hunk.old
    if not old:  # only additions: after the anchor, at the stated line, or at the end
        if hunk.old_start is not None:
            return min(max(hunk.old_start - 1, start), len(lines))
        return start if hunk.anchors and not hunk.at_eof else len(lines)
    if hunk.at_eof:
        at = len(lines) - len(old)
        for stage in range(len(STAGES)):
            if at >= start and lines.matches_at([normalise(w, stage) for w in old], at, stage):
                return at
        raise PatchError(_not_found(path, lines, hunk, old, start, what="end"))
    for stage in range(len(STAGES)):
        want = [normalise(w, stage) for w in old]
        if hunk.old_start is not None:
            found = lines.nearest(want, hunk.old_start - 1, start, stage)
            if len(found) == 1:
                return found[0]
            if found:
                raise PatchError(
                    f"{path}: {hunk.label}: the line numbers are stale and the hunk's lines "
                    f"match equally near the stated line {hunk.old_start}, at lines "
                    f"{_numbers(found)}. Fix the line numbers in the '@@' header or add "
                    "context lines."
                )
            continue
        found = lines.find_all(want, start, stage, limit=1 if hunk.anchors else 0)
        if len(found) == 1:
            return found[0]
        if found:
            raise PatchError(
                f"{path}: {hunk.label}: its lines match {len(found)} places "
                f"({STAGES[stage]}), starting at lines {_numbers(found)}. Add context lines "
                "that tell them apart, or an '@@ <line>' anchor such as '@@ def name' naming "
                "a line above the place meant."
            )
    raise PatchError(_not_found(path, lines, hunk, old, start, what="context"))


def _numbers(found: list[int]) -> str:
    shown = ", ".join(str(at + 1) for at in found[:_MAX_LISTED])
    more = len(found) - _MAX_LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def numbered(lines: list[str], first: int, last: int) -> str:
    """Lines `first`..`last` (0-based, inclusive, clamped) as `cat -n` shows them."""
    first, last = max(first, 0), min(last, len(lines) - 1)
    return "\n".join(f"{n + 1:6d}\t{lines[n]}" for n in range(first, last + 1))


def _not_found(
    path: str, lines: FileLines, hunk: Hunk, want: list[str], start: int, *, what: str
) -> str:
    expected = "\n".join(f"\t{line}" for line in want)
    if what == "anchor":
        lead = f"the anchor line {want[0]!r} (after @@) was not found"
    elif what == "end":
        lead = "its lines are not the last lines of the file ('*** End of File')"
    else:
        lead = "its context and removed lines were not found"
    after = f" after line {start}" if start else ""
    message = f"{path}: {hunk.label}: {lead}{after}. The patch expects:\n{expected}\n"
    raw = lines.lines
    if what == "end":
        best = max(len(raw) - len(want), 0)
    else:
        best_line, score = closest_window(raw[start:], want)
        best = start + best_line - 1 if best_line and score > 0 else -1
    if not raw:
        return message + "The file is empty. Fix the patch and apply it again."
    if best < 0:
        best = start
    lo, hi = best - _AROUND, best + len(want) - 1 + _AROUND
    message += (
        f"The file's closest lines ({max(lo, 0) + 1}-{min(hi, len(raw) - 1) + 1}) are:\n"
        f"{numbered(raw, lo, hi)}\n"
    )
    return message + "Copy the context from the file exactly, then apply the patch again."

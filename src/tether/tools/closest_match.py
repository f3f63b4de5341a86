"""The region of a file most like a piece of text that was not found in it exactly.

`str_replace` (in `edit.py`) quotes it back when an `old_str` does not match, so
the model can see what the file really says. Files may be large and the quote
long, so the search is bounded: lines are compared whitespace-squashed and cut
short, a linear pass ranks every window, and only the best few are scored in
detail; a cancel flag stops it with the best answer so far.
"""

from __future__ import annotations

import difflib
import re
import threading

__all__ = ["closest_window", "squash"]

# Looking for the region most like an unmatched old_str; bounds keep it fast.
_MAX_LINE_CHARS = 400  # of each line compared
_SMALL_WANT_CHARS = 400  # an old_str up to this long is scored character by character
_MAX_WINDOW_CHARS = 2_000  # of a window so scored
_MAX_TOKENS_COMPARED = 400  # of each side otherwise
_TOP_WINDOWS = 16  # best-ranked windows scored in detail...
_OTHER_REGIONS = 6  # ...plus the best window of this many separate regions
_CANCEL_EVERY = 1024  # lines between checks of the cancel flag
# Tokens for ranking windows: words split at camelCase and "_", numbers, symbols.
_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^\W\d_]+|\S")


def closest_window(
    file_lines: list[str], want: list[str], cancel: threading.Event | None = None
) -> tuple[int, float]:
    """(1-based first line, similarity 0..1) of the window most like `want`; (0, 0) if none.

    Cheap enough for big files: lines are compared with whitespace squashed and cut
    to `_MAX_LINE_CHARS`. A window equal to `want` but for whitespace wins outright.
    Otherwise a sliding count of shared tokens ranks every window in linear time and
    only the best few (plus the best of other regions) are scored in detail by
    `_Scorer`. A set `cancel` stops the search with the best answer so far.
    """
    if not file_lines or not want:
        return 0, 0.0
    file_sq = [squash(line[:_MAX_LINE_CHARS]) for line in file_lines]
    want_sq = [squash(line[:_MAX_LINE_CHARS]) for line in want]
    same = _squashed_match(file_sq, want_sq)
    if same is not None:
        return same + 1, 1.0
    if cancel is not None and cancel.is_set():
        return 0, 0.0
    size = min(len(want_sq), len(file_sq))
    tokens = [_TOKEN.findall(line) for line in file_sq]
    scorer = _Scorer(want_sq)
    best, best_score = 0, 0.0
    for start in _ranked_windows(tokens, scorer.need, size, cancel):
        if cancel is not None and cancel.is_set():
            break
        score = scorer.score(file_sq[start : start + size], tokens[start : start + size])
        if score > best_score:
            best, best_score = start + 1, score
    return best, best_score


def _squashed_match(file_sq: list[str], want_sq: list[str]) -> int | None:
    """Where `want_sq` occurs in `file_sq` (0-based line), or None."""
    size = len(want_sq)
    if size > len(file_sq):
        return None
    anchor = max(range(size), key=lambda i: len(want_sq[i]))  # the most telling line
    line = want_sq[anchor]
    for index, candidate in enumerate(file_sq):
        start = index - anchor
        if (
            candidate == line
            and 0 <= start <= len(file_sq) - size
            and file_sq[start : start + size] == want_sq
        ):
            return start
    return None


def _ranked_windows(
    tokens: list[list[str]], need: dict[str, int], size: int, cancel: threading.Event | None
) -> list[int]:
    """Starts of the windows of `size` lines worth a detailed look, best first.

    Every window is ranked by the Dice overlap of its token multiset with `need`
    (the old_str's), kept up to date as the window slides: linear time.
    """
    last = len(tokens) - size
    if last <= 0:
        return [0]
    need_total = sum(need.values())
    have = dict.fromkeys(need, 0)
    scores = [0.0] * (last + 1)
    overlap = count = 0
    for index, added in enumerate(tokens):
        if index % _CANCEL_EVERY == 0 and cancel is not None and cancel.is_set():
            break
        for token in added:
            held = have.get(token)
            if held is not None:
                overlap += held < need[token]
                have[token] = held + 1
        count += len(added)
        if index >= size:
            removed = tokens[index - size]
            for token in removed:
                held = have.get(token)
                if held is not None:
                    overlap -= held <= need[token]
                    have[token] = held - 1
            count -= len(removed)
        if index >= size - 1 and need_total + count:
            scores[index - size + 1] = 2 * overlap / (need_total + count)
    order = sorted(range(last + 1), key=scores.__getitem__, reverse=True)
    chosen = dict.fromkeys(order[:_TOP_WINDOWS])
    peaks: list[int] = []
    for start in order:  # the best window of each other region, too
        if len(peaks) >= _OTHER_REGIONS:
            break
        if all(abs(start - peak) >= size for peak in peaks):
            peaks.append(start)
            chosen[start] = None
    return list(chosen)


class _Scorer:
    """Similarity 0..1 of a window to old_str (both squashed), like difflib's ratio.

    A short old_str is compared character by character, as difflib would; a long one
    token by token, weighted by token length, which costs far less and, unlike a
    line-by-line diff, still credits lines that differ by a typo. Either way the
    work per window is capped (`_MAX_WINDOW_CHARS`, `_MAX_TOKENS_COMPARED`).
    """

    __slots__ = ("by_chars", "matcher", "need", "want_weight")

    def __init__(self, want_sq: list[str]) -> None:
        want_tokens = [token for line in want_sq for token in _TOKEN.findall(line)]
        self.need: dict[str, int] = {}
        for token in want_tokens:
            self.need[token] = self.need.get(token, 0) + 1
        joined = "\n".join(want_sq)
        self.by_chars = len(joined) <= _SMALL_WANT_CHARS
        self.matcher: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None, autojunk=False)
        if self.by_chars:
            self.matcher.set_seq2(joined)
            self.want_weight = 0
        else:
            capped = want_tokens[:_MAX_TOKENS_COMPARED]
            self.matcher.set_seq2(capped)
            self.want_weight = sum(map(len, capped))

    def score(self, window_sq: list[str], window_tokens: list[list[str]]) -> float:
        if self.by_chars:
            self.matcher.set_seq1("\n".join(window_sq)[:_MAX_WINDOW_CHARS])
            return self.matcher.ratio()
        flat = [token for line in window_tokens for token in line][:_MAX_TOKENS_COMPARED]
        self.matcher.set_seq1(flat)
        total = sum(map(len, flat)) + self.want_weight
        matched = sum(
            len(token)
            for block in self.matcher.get_matching_blocks()
            for token in flat[block.a : block.a + block.size]
        )
        return 2 * matched / total if total else 0.0


def squash(line: str) -> str:
    """The line with each run of whitespace as one space, and none at either end."""
    return " ".join(line.split())

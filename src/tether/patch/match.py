"""Finding a hunk's lines in a file, exactly first and then ever more leniently.

Models copy context lines imperfectly: trailing spaces dropped, indentation
changed, typographic quotes and dashes where the file has ASCII. Each stage
forgives a little more, and a later stage is only tried when no earlier one found
anything, so a lenient match can never beat an exact one.
"""

from __future__ import annotations

__all__ = ["STAGES", "FileLines", "normalise"]

STAGES: tuple[str, ...] = (
    "exactly",
    "ignoring trailing whitespace",
    "ignoring surrounding whitespace",
    "ignoring whitespace and Unicode punctuation",
)

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys(
            "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
            "\u200a\u202f\u205f\u3000",
            " ",
        ),
        "\u2026": "...",
    }
)


def normalise(line: str, stage: int) -> str:
    """`line` as compared at `stage` (an index into `STAGES`)."""
    if stage == 0:
        return line
    if stage == 1:
        return line.rstrip()
    if stage == 2:
        return line.strip()
    return line.translate(_PUNCTUATION).strip()


class FileLines:
    """A file's lines with each stage's normalised copy made once, when first needed."""

    __slots__ = ("_views", "lines")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._views: dict[int, list[str]] = {0: lines}

    def __len__(self) -> int:
        return len(self.lines)

    def view(self, stage: int) -> list[str]:
        view = self._views.get(stage)
        if view is None:
            view = [normalise(line, stage) for line in self.lines]
            self._views[stage] = view
        return view

    def matches_at(self, want: list[str], at: int, stage: int) -> bool:
        """Whether `want` (already normalised for `stage`) is at line index `at`."""
        if at < 0 or at + len(want) > len(self.lines):
            return False
        return self.view(stage)[at : at + len(want)] == want

    def find_all(self, want: list[str], start: int, stage: int, limit: int = 0) -> list[int]:
        """Every index >= `start` where `want` (normalised for `stage`) begins.

        With `limit`, stop after that many (the caller needs only the first few).
        """
        view = self.view(stage)
        found: list[int] = []
        if not want:
            return found
        first, size, last = want[0], len(want), len(view) - len(want)
        at = start
        while at <= last and (not limit or len(found) < limit):
            try:
                at = view.index(first, at, last + 1)
            except ValueError:
                break
            if size == 1 or view[at + 1 : at + size] == want[1:]:
                found.append(at)
            at += 1
        return found

    def nearest(self, want: list[str], stated: int, start: int, stage: int) -> list[int]:
        """The matches >= `start` closest to `stated`: none, one, or two equally close.

        Searches outward from `stated`, so a slightly stale line number costs a few
        comparisons rather than a scan of the whole file.
        """
        view = self.view(stage)
        last = len(view) - len(want)
        if not want or last < start:
            return []
        first = want[0]
        stated = min(max(stated, start), last)
        for distance in range(max(stated - start, last - stated) + 1):
            found = [
                at
                for at in {stated - distance, stated + distance}
                if start <= at <= last and view[at] == first and view[at : at + len(want)] == want
            ]
            if found:
                return sorted(found)
        return []

    def first(self, want: list[str], start: int) -> tuple[int, int] | None:
        """(index, stage) of the first match at the first stage that has one."""
        for stage in range(len(STAGES)):
            found = self.find_all([normalise(w, stage) for w in want], start, stage, limit=1)
            if found:
                return found[0], stage
        return None

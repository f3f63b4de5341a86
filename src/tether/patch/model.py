"""What a parsed patch is, independent of the format it was written in.

Both formats (the `*** Begin Patch` envelope and unified diffs) parse into the same
`Patch`, so matching and applying never need to know where a hunk came from, except
for the one rule that differs: how to find where a hunk goes (`Hunk.old_start`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Action", "FileChange", "Hunk", "Op", "Patch", "PatchError"]

Action = Literal["add", "delete", "update"]
# One hunk line: " " context, "-" removed, "+" added; the text has no line ending.
Op = tuple[Literal[" ", "-", "+"], str]


class PatchError(Exception):
    """The patch cannot be applied; the message is written for whoever wrote the patch."""


@dataclass(frozen=True, slots=True)
class Hunk:
    """One run of context, removed and added lines.

    `anchors` (envelope `@@ def f`) are lines searched for, in order, before the hunk;
    `old_start` (unified `@@ -12,3`) is the 1-based line the diff claims the hunk
    starts at, None for the envelope. `at_eof` pins the hunk to the end of the file.
    `old_no_eol`/`new_no_eol` come from `\\ No newline at end of file`.
    """

    number: int
    header: str
    ops: tuple[Op, ...]
    anchors: tuple[str, ...] = ()
    old_start: int | None = None
    at_eof: bool = False
    old_no_eol: bool = False
    new_no_eol: bool = False

    @property
    def old(self) -> list[str]:
        return [text for kind, text in self.ops if kind != "+"]

    @property
    def new(self) -> list[str]:
        return [text for kind, text in self.ops if kind != "-"]

    @property
    def label(self) -> str:
        return f"hunk {self.number} ({self.header})"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's part of a patch.

    `lines` is the whole content of an added file; `final_newline` says whether it
    ends with a newline. `mode` is a unified diff's `new file mode`/`new mode`.
    """

    action: Action
    path: str
    move_to: str | None = None
    hunks: tuple[Hunk, ...] = ()
    lines: tuple[str, ...] = ()
    final_newline: bool = True
    mode: int | None = None


@dataclass(frozen=True, slots=True)
class Patch:
    """The changes in patch order; `format` is "envelope" or "unified"."""

    changes: tuple[FileChange, ...]
    format: Literal["envelope", "unified"]

"""What a parsed patch is, independent of the format it was written in.

Both formats (the `*** Begin Patch` envelope and unified diffs) parse into the same
`Patch`, so matching and applying never need to know where a hunk came from, except
for the one rule that differs: how to find where a hunk goes (`Hunk.old_start`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Action", "FileChange", "Hunk", "Op", "Patch", "PatchError", "Touch", "touched"]

Action = Literal["add", "delete", "update"]
# One hunk line: " " context, "-" removed, "+" added; the text has no line ending.
Op = tuple[Literal[" ", "-", "+"], str]
# How a patch touches a path, in the permission policy's terms: "write" replaces or
# removes the whole file, "edit" changes part of it.
Touch = tuple[str, Literal["write", "edit"]]


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


def touched(patch: Patch) -> tuple[Touch, ...]:
    """Every path `patch` changes and how, in patch order, each path once.

    For the permission check before a patch runs: cheap and side-effect free (no
    file is read). Adds and deletes are "write"; an update is "edit"; a move is
    "write" at both ends, since the source goes away whole and the destination is
    created whole. A path touched twice keeps the stronger kind, "write".
    """
    kinds: dict[str, Literal["write", "edit"]] = {}

    def note(path: str, kind: Literal["write", "edit"]) -> None:
        kinds[path] = "write" if "write" in (kind, kinds.get(path)) else "edit"

    for change in patch.changes:
        if change.action != "update":
            note(change.path, "write")
        elif change.move_to is None or change.move_to == change.path:
            note(change.path, "edit")
        else:
            note(change.path, "write")
            note(change.move_to, "write")
    return tuple(kinds.items())

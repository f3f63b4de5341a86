"""Applying patches: validated whole in memory, then written to every file at once.

Two formats, detected from the text: the `*** Begin Patch` envelope and unified
diffs (`git diff`). `parse` turns either into a `Patch`; `plan` checks it against
the files and returns each file's final bytes; `commit` writes them all or none.
`apply_patch_text` does all three; `touched` lists the paths a parsed patch
changes, for the permission check before it runs.
"""

from __future__ import annotations

from tether.patch.apply import FileResult, Summary, apply_patch_text, plan
from tether.patch.atomic import PlannedWrite, commit
from tether.patch.model import FileChange, Hunk, Patch, PatchError, Touch, touched
from tether.patch.parse import parse

__all__ = [
    "FileChange",
    "FileResult",
    "Hunk",
    "Patch",
    "PatchError",
    "PlannedWrite",
    "Summary",
    "Touch",
    "apply_patch_text",
    "commit",
    "parse",
    "patch_paths",
    "plan",
    "touched",
]


def patch_paths(text: str) -> list[str]:
    """The files a patch would touch, in patch order; none when it is no patch at all."""
    try:
        return [path for path, _kind in touched(parse(text))]
    except (PatchError, ValueError):
        return []

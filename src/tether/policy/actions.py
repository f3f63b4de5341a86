"""What the permission policy judges, and what it answers.

An action is one thing a tool call would do: run a shell command, read a path,
write or edit a path, or use some other tool. A decision is the verdict with its
reasons, per part, so that every answer can be explained.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "VERDICTS",
    "Action",
    "Decision",
    "Part",
    "ReadAction",
    "ShellAction",
    "ToolAction",
    "Verdict",
    "WriteAction",
    "strictest",
]

Verdict = Literal["allow", "ask", "deny"]
VERDICTS: tuple[Verdict, ...] = ("allow", "ask", "deny")  # in order of strictness


def strictest(verdicts: tuple[Verdict, ...] | list[Verdict]) -> Verdict:
    """deny beats ask beats allow; nothing at all is allow."""
    return max(verdicts, key=VERDICTS.index, default="allow")


@dataclass(frozen=True, slots=True)
class ShellAction:
    """A command line for `bash`, exactly as the model sent it."""

    command: str


@dataclass(frozen=True, slots=True)
class ReadAction:
    """Reading a file or listing/searching a directory; `path` is absolute."""

    path: Path
    tool: str = "read_file"


@dataclass(frozen=True, slots=True)
class WriteAction:
    """Changing a file: `kind` "write" replaces it whole, "edit" changes part of it."""

    path: Path
    tool: str = "write_file"
    kind: Literal["write", "edit"] = "write"


@dataclass(frozen=True, slots=True)
class ToolAction:
    """Any other tool, judged by its name alone."""

    tool: str


Action = ShellAction | ReadAction | WriteAction | ToolAction


@dataclass(frozen=True, slots=True)
class Part:
    """One judged piece: a simple command of a shell line, a path, or a tool.

    `argv` is set for a command, `path` and `access` ("Read", "Write", "Edit") for a
    path, so that an approval can propose a rule that covers the piece.
    """

    text: str
    verdict: Verdict
    reason: str
    matched_rules: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    path: str | None = None
    access: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The verdict for a whole action: the strictest of its parts, explained."""

    verdict: Verdict
    reason: str
    matched_rules: tuple[str, ...]
    parts: tuple[Part, ...]

    @classmethod
    def of(cls, parts: Sequence[Part]) -> Decision:
        """The whole from its parts: the strictest verdict, the reason of the first part
        with it, every matched rule once. One place, so an action judged in several
        pieces (a shell line, a patch's files) is summed up like a single one."""
        verdict = strictest([p.verdict for p in parts])
        deciding = next((p for p in parts if p.verdict == verdict), None)
        reason = deciding.reason if deciding is not None else "nothing to judge"
        labels: list[str] = []
        for part in parts:
            labels.extend(label for label in part.matched_rules if label not in labels)
        return cls(verdict, reason, tuple(labels), tuple(parts))

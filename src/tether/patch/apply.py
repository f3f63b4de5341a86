"""Planning a patch in memory, then writing it: the whole patch or nothing.

`plan` reads every file the patch touches, applies every hunk to an in-memory copy
and checks every path, so any mistake anywhere is found before a byte is written;
`commit` (in `atomic.py`) then writes all files at once. Changes apply in patch
order to a virtual view of the workspace, so a patch may touch one file twice
(update then move, delete then add).

What a file keeps: its encoding and BOM, its line endings (each untouched line its
own; added lines the file's usual one), its permission bits, and whether it ends
with a newline. Only a unified diff's `\\ No newline at end of file` (or its
absence, in a hunk that reaches the end of the file) changes the last; envelope
hunks, `*** End of File` included, never do. Added files are UTF-8 with LF and a
final newline (a unified diff may say otherwise); adding over an existing file
replaces its content but keeps its mode.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tether.errors import ToolError
from tether.patch.atomic import PlannedWrite, commit
from tether.patch.locate import locate_hunks
from tether.patch.match import FileLines
from tether.patch.model import FileChange, Hunk, Patch, PatchError
from tether.patch.parse import parse
from tether.sandbox.workspace import Workspace
from tether.tools.textio import count_lines, decode, escape_surrogates, looks_binary

__all__ = ["FileResult", "Summary", "apply_patch_text", "plan"]


@dataclass(frozen=True, slots=True)
class FileResult:
    """What happened to one file: action is added/replaced/updated/deleted/moved."""

    action: str
    path: str
    added: int = 0
    removed: int = 0
    to: str | None = None

    def line(self) -> str:
        letter = {"added": "A", "replaced": "A", "updated": "M", "deleted": "D", "moved": "R"}
        name = f"{self.path} -> {self.to}" if self.to else self.path
        counts = " ".join(f"{sign}{n}" for sign, n in (("+", self.added), ("-", self.removed)) if n)
        note = " (replaced existing file)" if self.action == "replaced" else ""
        shown = f" ({counts})" if self.added or self.removed else ""
        return f"{letter[self.action]} {name}{shown}{note}"


@dataclass(frozen=True, slots=True)
class Summary:
    """The outcome of a patch, short enough to hand back to a model."""

    files: tuple[FileResult, ...]
    checked_only: bool = False

    @property
    def text(self) -> str:
        count = len(self.files)
        noun = "file" if count == 1 else "files"
        if self.checked_only:
            head = f"The patch applies cleanly ({count} {noun}); nothing was written."
        else:
            head = f"Applied the patch: {count} {noun} changed."
        return "\n".join([head, *(result.line() for result in self.files)])

    def __str__(self) -> str:
        return self.text


def apply_patch_text(text: str, root: Path | str, *, check: bool = False) -> Summary:
    """Parse, validate and (unless `check`) write `text` under `root`; PatchError if not."""
    planner = _Planner(Workspace(root))
    writes = planner.run(parse(text))
    if not check:
        commit(writes)
    return Summary(tuple(planner.results), checked_only=check)


def plan(patch: Patch, root: Path | str) -> list[PlannedWrite]:
    """Every file's final bytes after `patch`, checked in full; writes nothing."""
    return _Planner(Workspace(root)).run(patch)


@dataclass(slots=True)
class _Entry:
    """A file in the virtual workspace: its bytes (None: absent) and mode bits."""

    data: bytes | None
    mode: int | None


class _Planner:
    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.state: dict[Path, _Entry] = {}
        self.original: dict[Path, _Entry] = {}
        self.results: list[FileResult] = []

    def run(self, patch: Patch) -> list[PlannedWrite]:
        for change in patch.changes:
            self._change(change)
        writes: list[PlannedWrite] = []
        for path, entry in self.state.items():
            before = self.original[path]
            if entry.data == before.data and (entry.mode is None or entry.mode == before.mode):
                continue
            writes.append(PlannedWrite(path, entry.data, entry.mode, self._shown(path)))
        return writes

    def _change(self, change: FileChange) -> None:
        path = self._resolve(change.path)
        if change.action == "delete":
            path = self._link_itself(change.path) or path
        entry = self._entry(path)
        shown = self._shown(path)
        if change.action == "add":
            body = "\n".join(change.lines)
            if change.lines and change.final_newline:
                body += "\n"
            mode = change.mode if change.mode is not None else entry.mode
            action = "replaced" if entry.data is not None else "added"
            self.state[path] = _Entry(_encode_new(body), mode)
            self.results.append(FileResult(action, shown, added=len(change.lines)))
            return
        if entry.data is None:
            verb = "delete" if change.action == "delete" else "update"
            raise PatchError(f"Cannot {verb} {shown}: the file does not exist.")
        if change.action == "delete":
            removed = self._deleted_lines(shown, entry.data, change.hunks)
            self.state[path] = _Entry(None, None)
            self.results.append(FileResult("deleted", shown, removed=removed))
            return
        data = self._updated(shown, entry.data, change.hunks)
        added = sum(kind == "+" for hunk in change.hunks for kind, _ in hunk.ops)
        removed = sum(kind == "-" for hunk in change.hunks for kind, _ in hunk.ops)
        mode = change.mode if change.mode is not None else entry.mode
        if change.move_to is None:
            self.state[path] = _Entry(data, mode)
            self.results.append(FileResult("updated", shown, added, removed))
            return
        dest = self._resolve(change.move_to)
        dest_shown = self._shown(dest)
        if dest != path and self._entry(dest).data is not None:
            raise PatchError(
                f"Cannot move {shown} to {dest_shown}: {dest_shown} already exists. Delete it "
                "first ('*** Delete File:') or choose another name."
            )
        self.state[path] = _Entry(None, None)
        self.state[dest] = _Entry(data, mode if mode is not None else entry.mode)
        self.results.append(FileResult("moved", shown, added, removed, to=dest_shown))

    def _updated(self, shown: str, data: bytes, hunks: tuple[Hunk, ...]) -> bytes:
        if looks_binary(data):
            raise PatchError(f"{shown} is a binary file; patches can only change text files.")
        if not hunks:
            return data
        original = decode(data)
        bodies, ends = _split(original.text)
        positions = locate_hunks(shown, FileLines(bodies), hunks)
        text = _rebuild(bodies, ends, hunks, positions, original.newline)
        return original.encode(text)

    def _deleted_lines(self, shown: str, data: bytes, hunks: tuple[Hunk, ...]) -> int:
        """Lines removed; a unified diff's hunks must remove the whole file as it is."""
        if looks_binary(data):
            if hunks:
                raise PatchError(f"{shown} is a binary file; patches can only change text files.")
            return 0
        if hunks and decode(self._updated(shown, data, hunks)).text.strip():
            raise PatchError(
                f"Cannot delete {shown}: the diff's removed lines are not the whole file. "
                "Read it again, or use '*** Delete File:' to delete it whatever it holds."
            )
        return count_lines(decode(data).text)

    def _resolve(self, path: str) -> Path:
        try:
            real = self.workspace.resolve(path)
        except ToolError as exc:
            raise PatchError(escape_surrogates(str(exc))) from None
        except (OSError, ValueError) as exc:
            raise PatchError(f"Invalid path {path!r}: {exc}.") from None
        if real == self.workspace.root or real.is_dir():
            raise PatchError(f"{path!r} is a directory; a patch changes files.")
        return real

    def _link_itself(self, path: str) -> Path | None:
        """Deleting a symlink removes the link, not the file it points to (as `rm`
        and git do); only for a link whose directory is inside the workspace."""
        lexical = Path(os.path.normpath(self.workspace.root / path.strip()))
        if not lexical.is_symlink():
            return None
        try:
            parent = self.workspace.resolve(str(lexical.parent))
        except ToolError:
            return None
        return parent / lexical.name

    def _entry(self, path: Path) -> _Entry:
        if path not in self.state:
            self.original[path] = self.state[path] = self._read(path)
        return self.state[path]

    def _read(self, path: Path) -> _Entry:
        try:
            info = path.stat()
        except FileNotFoundError:
            return _Entry(None, None)
        except OSError as exc:
            raise PatchError(f"Cannot read {self._shown(path)}: {exc.strerror or exc}.") from None
        if not stat.S_ISREG(info.st_mode):
            raise PatchError(f"{self._shown(path)} is not a regular file.")
        try:
            return _Entry(path.read_bytes(), stat.S_IMODE(info.st_mode))
        except OSError as exc:
            raise PatchError(f"Cannot read {self._shown(path)}: {exc.strerror or exc}.") from None

    def _shown(self, path: Path) -> str:
        return escape_surrogates(self.workspace.relative(path))


def _encode_new(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _split(text: str) -> tuple[list[str], list[str]]:
    """Lines and each line's own ending ("\\n", "\\r\\n", or "" for a last line without)."""
    if not text:
        return [], []
    parts = text.split("\n")
    last = parts.pop()
    ends = ["\n"] * len(parts)
    for i, part in enumerate(parts):
        if part.endswith("\r"):
            parts[i] = part[:-1]
            ends[i] = "\r\n"
    if last:
        parts.append(last)
        ends.append("")
    return parts, ends


def _rebuild(
    bodies: list[str], ends: list[str], hunks: tuple[Hunk, ...], positions: list[int], nl: str
) -> str:
    final_newline = not bodies or ends[-1] != ""
    out_bodies: list[str] = []
    out_ends: list[str] = []
    cursor = 0
    for hunk, at in zip(hunks, positions, strict=True):
        out_bodies += bodies[cursor:at]
        out_ends += ends[cursor:at]
        index = at
        for kind, text in hunk.ops:
            if kind == " ":
                out_bodies.append(bodies[index])
                out_ends.append(ends[index])
                index += 1
            elif kind == "-":
                index += 1
            else:
                out_bodies.append(text)
                out_ends.append(nl)
        cursor = index
        if hunk.old_start is not None and index == len(bodies):
            final_newline = not hunk.new_no_eol
    out_bodies += bodies[cursor:]
    out_ends += ends[cursor:]
    if not out_bodies:
        return ""
    for i in range(len(out_ends) - 1):
        if not out_ends[i]:
            out_ends[i] = nl
    if final_newline and not out_ends[-1]:
        out_ends[-1] = nl
    elif not final_newline:
        out_ends[-1] = ""
    return "".join(b + e for b, e in zip(out_bodies, out_ends, strict=True))

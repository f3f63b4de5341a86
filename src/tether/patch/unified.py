"""Unified diffs (`git diff`, `diff -u`) to `FileChange`s.

Hunk line counts in `@@ -a,b +c,d @@` are not trusted: models miscount them, so a
hunk runs until the next header instead. Line numbers are kept as a hint for
where the hunk goes (`Hunk.old_start`). Git's extended headers give adds, deletes,
renames and modes; binary patches are refused.
"""

from __future__ import annotations

import re

from tether.patch.model import Action, FileChange, Hunk, Op, PatchError

__all__ = ["parse_unified"]

_HUNK = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+ ?(.*)$")
_DEV_NULL = "/dev/null"
_NO_EOL = "\\"  # "\ No newline at end of file"


class _Section:
    """The headers of one file's diff, gathered before its hunks are read."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.git_old: str | None = None
        self.git_new: str | None = None
        self.old: str | None = None
        self.new: str | None = None
        self.rename_from: str | None = None
        self.rename_to: str | None = None
        self.new_file = False
        self.deleted = False
        self.mode: int | None = None
        self.hunks: list[Hunk] = []


def parse_unified(lines: list[str]) -> tuple[FileChange, ...]:
    """Every file section of a unified diff; text around the sections is ignored."""
    sections: list[_Section] = []
    current: _Section | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("diff --git "):
            current = _Section(index)
            sections.append(current)
            current.git_old, current.git_new = _git_paths(line[len("diff --git ") :])
        elif (
            line.startswith("--- ")
            and index + 1 < len(lines)
            and lines[index + 1].startswith("+++ ")
        ):
            if current is None or current.old is not None or current.hunks:
                current = _Section(index)
                sections.append(current)
            current.old = _header_path(line[4:])
            current.new = _header_path(lines[index + 1][4:])
            index += 1
        elif line.startswith("@@"):
            if current is None or (current.old is None and current.git_old is None):
                raise PatchError(f"Patch line {index + 1}: a hunk before any '---'/'+++' header.")
            index = _hunk(lines, index, current)
            continue
        elif current is not None:
            _extended(line, index, current)
        index += 1
    if not sections:
        raise PatchError("The diff has no file sections ('--- a/path' and '+++ b/path').")
    return tuple(_change(section) for section in sections)


def _extended(line: str, index: int, section: _Section) -> None:
    if line.startswith("GIT binary patch") or (
        line.startswith("Binary files ") and line.endswith(" differ")
    ):
        raise PatchError(
            f"Patch line {index + 1}: binary patches are not supported; edit text files only."
        )
    for key in ("new file mode ", "new mode "):
        if line.startswith(key):
            section.mode = _mode(line[len(key) :], index)
            section.new_file = section.new_file or key == "new file mode "
    if line.startswith("deleted file mode "):
        section.deleted = True
    elif line.startswith("rename from "):
        section.rename_from = _unquote(line[len("rename from ") :])
    elif line.startswith("rename to "):
        section.rename_to = _unquote(line[len("rename to ") :])


def _mode(text: str, index: int) -> int:
    try:
        return int(text.strip(), 8) & 0o7777
    except ValueError:
        raise PatchError(f"Patch line {index + 1}: bad file mode {text!r}.") from None


def _hunk(lines: list[str], index: int, section: _Section) -> int:
    """Read the hunk starting at `index`; returns the index of the line after it."""
    match = _HUNK.match(lines[index].strip())
    if match is None:
        raise PatchError(
            f"Patch line {index + 1}: bad hunk header {lines[index]!r}; expected "
            "'@@ -start,count +start,count @@'."
        )
    old_start, old_count = int(match.group(1)), int(match.group(2) or "1")
    header = lines[index].strip()
    ops: list[Op] = []
    old_no_eol = new_no_eol = False
    blank_tail = 0
    index += 1
    while index < len(lines):
        line = lines[index]
        if line.startswith(("@@", "diff --git ")) or (
            line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1][:4] == "+++ "
        ):
            break
        if line.startswith(_NO_EOL):
            if not ops:
                raise PatchError(f"Patch line {index + 1}: {line!r} must follow a line.")
            kind = ops[-1][0]
            old_no_eol = old_no_eol or kind != "+"
            new_no_eol = new_no_eol or kind != "-"
        elif line == "":
            ops.append((" ", ""))
            blank_tail += 1
            index += 1
            continue
        elif line[0] in " +-":
            ops.append((line[0], line[1:]))  # type: ignore[arg-type]
        else:
            break  # trailing text (e.g. a mail signature) ends the hunk
        blank_tail = 0
        index += 1
    if blank_tail:
        del ops[-blank_tail:]
    if not ops:
        raise PatchError(f"Patch line {index}: the hunk {header!r} has no lines.")
    # "-5,0" means "insert after line 5": the hunk's old lines start at line 6.
    start = old_start + 1 if old_count == 0 else old_start
    section.hunks.append(
        Hunk(
            len(section.hunks) + 1,
            header,
            tuple(ops),
            old_start=max(start, 1),
            old_no_eol=old_no_eol,
            new_no_eol=new_no_eol,
        )
    )
    return index


def _change(section: _Section) -> FileChange:
    old, new = _strip_prefixes(section.old or section.git_old, section.new or section.git_new)
    old = section.rename_from or old
    new = section.rename_to or new
    hunks = tuple(section.hunks)
    action: Action = "update"
    if section.new_file or old in (None, _DEV_NULL):
        action = "add"
    elif section.deleted or new in (None, _DEV_NULL):
        action = "delete"
    path = new if action == "add" else old
    if path is None or path == _DEV_NULL:
        raise PatchError(f"Patch line {section.line + 1}: cannot tell which file this diff is for.")
    if action == "add":
        if any(kind != "+" for hunk in hunks for kind, _ in hunk.ops) or len(hunks) > 1:
            raise PatchError(
                f"The diff adding {path} must have one hunk of '+' lines only "
                "(it is a new file: there is nothing to keep or remove)."
            )
        no_eol = bool(hunks) and hunks[0].new_no_eol
        lines = tuple(text for hunk in hunks for _, text in hunk.ops)
        return FileChange("add", path, lines=lines, final_newline=not no_eol, mode=section.mode)
    if action == "delete":
        return FileChange("delete", path, hunks=hunks)
    move_to = new if new is not None and new != old else None
    if not hunks and move_to is None and section.mode is None:
        raise PatchError(f"The diff for {path} has no hunks: it changes nothing.")
    return FileChange("update", path, move_to=move_to, hunks=hunks, mode=section.mode)


def _strip_prefixes(old: str | None, new: str | None) -> tuple[str | None, str | None]:
    """Drop git's `a/` and `b/` when the diff uses them (not every diff does)."""
    real_old = old not in (None, _DEV_NULL)
    real_new = new not in (None, _DEV_NULL)
    if not (real_old or real_new):
        return old, new
    if real_old and not (old or "").startswith("a/"):
        return old, new
    if real_new and not (new or "").startswith("b/"):
        return old, new
    return (old[2:] if old and real_old else old), (new[2:] if new and real_new else new)


def _header_path(text: str) -> str:
    """A `---`/`+++` path without the timestamp `diff -u` puts after a tab."""
    return _unquote(text.split("\t", 1)[0].rstrip())


def _git_paths(text: str) -> tuple[str | None, str | None]:
    """`a/x b/x` from a `diff --git` line; only unambiguous when both names match."""
    text = text.strip()
    if text.startswith('"'):
        return None, None
    half = len(text) // 2
    if text[half : half + 1] == " " and text[2:half] == text[half + 3 :]:
        return text[:half], text[half + 1 :]
    old, _, new = text.partition(" b/")
    return (old, "b/" + new) if new else (None, None)


def _unquote(path: str) -> str:
    """Git quotes names with unusual characters: "a/sp\\303\\251c"."""
    if len(path) >= 2 and path[0] == path[-1] == '"':
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "ignore").decode("utf-8", "replace")
    return path

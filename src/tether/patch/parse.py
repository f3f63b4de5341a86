"""Text to `Patch`: detect the format, strip wrappers, parse the envelope format.

Models send patches in the `*** Begin Patch` envelope or as unified diffs, often
inside a shell heredoc they were trained to run (`apply_patch <<'EOF'`), with
stray spaces around markers and CRLF line ends. All of that is accepted; anything
structurally wrong is a `PatchError` naming the patch line, because a guess at
what a malformed patch meant could edit the wrong thing. Unified diffs are parsed
in `unified.py`.
"""

from __future__ import annotations

import re

from tether.patch.model import FileChange, Hunk, Op, Patch, PatchError
from tether.patch.unified import parse_unified

__all__ = ["parse", "patch_lines"]

_BEGIN = "*** Begin Patch"
_END = "*** End Patch"
_ADD = "*** Add File:"
_DELETE = "*** Delete File:"
_UPDATE = "*** Update File:"
_MOVE = "*** Move to:"
_EOF = "*** End of File"
_FILE_MARKERS = (_ADD, _DELETE, _UPDATE)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1\s*$")


def parse(text: str) -> Patch:
    """Parse either format, chosen by content: an envelope if it has `*** Begin Patch`."""
    lines = patch_lines(text)
    if any(line.strip() == _BEGIN for line in lines):
        return Patch(_parse_envelope(lines), "envelope")
    if any(line.startswith(("diff --git ", "--- ", "+++ ")) for line in lines):
        return Patch(parse_unified(lines), "unified")
    if any(line.strip().startswith(_FILE_MARKERS) for line in lines):
        raise PatchError("The patch has file markers but no '*** Begin Patch' line; start it so.")
    raise PatchError(
        "This is not a patch: expected '*** Begin Patch' ... '*** End Patch' or a unified "
        "diff ('--- a/path', '+++ b/path', '@@ -l,n +l,n @@')."
    )


def patch_lines(text: str) -> list[str]:
    """The patch's lines without line ends and without a heredoc wrapper around it."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise PatchError("The patch is empty.")
    opener = _HEREDOC.search(lines[first])
    if opener is None or lines[first].lstrip().startswith(("+", "-", " ", "@@")):
        return lines
    word = opener.group(2)
    body = lines[first + 1 :]
    for index in range(len(body) - 1, -1, -1):
        if body[index].strip() == word:
            return body[:index]
        if body[index].strip():
            break
    return body


def _marker(line: str) -> str:
    """The line as a marker would be written: stray whitespace around it removed."""
    return line.strip()


def _parse_envelope(lines: list[str]) -> tuple[FileChange, ...]:
    start = next(i for i, line in enumerate(lines) if _marker(line) == _BEGIN)
    if any(line.strip() for line in lines[:start]):
        bad = next(i for i, line in enumerate(lines[:start]) if line.strip())
        raise PatchError(f"Patch line {bad + 1}: unexpected text before '{_BEGIN}'.")
    end = next((i for i in range(start + 1, len(lines)) if _marker(lines[i]) == _END), None)
    if end is None:
        raise PatchError(f"The patch has no '{_END}' line; was it cut off? End it with one.")
    if any(line.strip() for line in lines[end + 1 :]):
        raise PatchError(f"Patch line {end + 2}: unexpected text after '{_END}'.")
    changes: list[FileChange] = []
    index = start + 1
    while index < end:
        marker = _marker(lines[index])
        if not marker:
            index += 1
            continue
        section_end = index + 1
        while section_end < end and not _marker(lines[section_end]).startswith(_FILE_MARKERS):
            section_end += 1
        body = list(range(index + 1, section_end))
        if marker.startswith(_ADD):
            changes.append(_add(lines, index, body))
        elif marker.startswith(_DELETE):
            _no_body(lines, body, "Delete File")
            changes.append(FileChange("delete", _path(marker, _DELETE, index)))
        elif marker.startswith(_UPDATE):
            changes.append(_update(lines, index, body))
        else:
            raise PatchError(
                f"Patch line {index + 1}: expected '{_ADD} path', '{_DELETE} path' or "
                f"'{_UPDATE} path', got {lines[index]!r}."
            )
        index = section_end
    if not changes:
        raise PatchError("The patch changes no file: it has no '*** ... File:' sections.")
    return tuple(changes)


def _path(marker: str, prefix: str, index: int) -> str:
    path = marker[len(prefix) :].strip()
    if not path:
        raise PatchError(f"Patch line {index + 1}: '{prefix}' needs a path after it.")
    return path


def _no_body(lines: list[str], body: list[int], what: str) -> None:
    for i in body:
        if lines[i].strip():
            raise PatchError(
                f"Patch line {i + 1}: '*** {what}' takes no lines after it, got {lines[i]!r}."
            )


def _trim(lines: list[str], body: list[int]) -> list[int]:
    """Blank lines at the end of a section separate sections; they are no content."""
    while body and not lines[body[-1]].strip():
        body.pop()
    return body


def _add(lines: list[str], index: int, body: list[int]) -> FileChange:
    path = _path(_marker(lines[index]), _ADD, index)
    content: list[str] = []
    for i in _trim(lines, body):
        if not lines[i].startswith("+"):
            raise PatchError(
                f"Patch line {i + 1} (in '{_ADD} {path}'): every line of an added file must "
                f"start with '+' ('+' alone for an empty line), got {lines[i]!r}."
            )
        content.append(lines[i][1:])
    return FileChange("add", path, lines=tuple(content))


def _update(lines: list[str], index: int, body: list[int]) -> FileChange:
    path = _path(_marker(lines[index]), _UPDATE, index)
    body = _trim(lines, body)
    move_to: str | None = None
    if body and _marker(lines[body[0]]).startswith(_MOVE):
        move_to = _path(_marker(lines[body[0]]), _MOVE, body[0])
        body = body[1:]
    hunks = _hunks(lines, body, path)
    if not hunks and move_to is None:
        raise PatchError(
            f"Patch line {index + 1}: '{_UPDATE} {path}' has no hunks; add '@@' hunks with "
            "context and '+'/'-' lines, or remove the section."
        )
    return FileChange("update", path, move_to=move_to, hunks=tuple(hunks))


class _Draft:
    """A hunk being read: anchors, lines, and where it started in the patch."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.anchors: list[str] = []
        self.headers: list[str] = []
        self.ops: list[Op] = []
        self.blank_tail = 0  # trailing ops that came from wholly empty patch lines
        self.at_eof = False

    def finish(self, number: int, path: str) -> Hunk:
        if self.blank_tail:
            del self.ops[-self.blank_tail :]
        if not self.ops:
            raise PatchError(
                f"Patch line {self.line + 1} (in '{_UPDATE} {path}'): the hunk has no lines."
            )
        header = " | ".join(self.headers) or "@@"
        return Hunk(number, header, tuple(self.ops), tuple(self.anchors), at_eof=self.at_eof)


def _hunks(lines: list[str], body: list[int], path: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    draft: _Draft | None = None
    for i in body:
        line = lines[i]
        marker = _marker(line)
        if marker == "@@" or (marker.startswith("@@") and not line.startswith((" ", "+", "-"))):
            if draft is not None and (draft.ops or draft.at_eof):
                hunks.append(draft.finish(len(hunks) + 1, path))
                draft = None
            draft = draft or _Draft(i)
            anchor = marker[2:].strip()
            if anchor.endswith("@@") and anchor.startswith("-"):
                raise PatchError(
                    f"Patch line {i + 1}: {line!r} is a unified-diff hunk header; in a "
                    "'*** Begin Patch' patch write '@@' alone or '@@ def name' (a line to find)."
                )
            draft.headers.append(marker)
            if anchor:
                draft.anchors.append(anchor)
            continue
        if marker == _EOF:
            if draft is None or not draft.ops:
                raise PatchError(f"Patch line {i + 1}: '{_EOF}' must follow a hunk's lines.")
            draft.at_eof = True
            continue
        if marker.startswith(_MOVE) or (marker.startswith("***") and line[0] not in " +-"):
            raise PatchError(
                f"Patch line {i + 1} (in '{_UPDATE} {path}'): unexpected marker {line!r}; "
                f"'{_MOVE}' must come right after '{_UPDATE}'."
            )
        if draft is not None and draft.at_eof:
            raise PatchError(f"Patch line {i + 1}: nothing may follow '{_EOF}' in a hunk.")
        if draft is None:
            draft = _Draft(i)  # the first hunk may leave out its '@@'
        if line == "":
            draft.ops.append((" ", ""))
            draft.blank_tail += 1
            continue
        if line[0] not in " +-":
            raise PatchError(
                f"Patch line {i + 1} (in '{_UPDATE} {path}'): a hunk line must start with "
                f"' ' (context), '-' (remove) or '+' (add), got {line!r}."
            )
        draft.ops.append((line[0], line[1:]))  # type: ignore[arg-type]
        draft.blank_tail = 0
    if draft is not None:
        hunks.append(draft.finish(len(hunks) + 1, path))
    return hunks

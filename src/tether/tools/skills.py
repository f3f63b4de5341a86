"""The read_skill tool: load one skill's instructions when the model decides to use it.

The index is fixed when the session starts (it is part of the system prompt), but the
body is read again at each call, so an edited SKILL.md is seen as it is now. The
file is refused if it now resolves somewhere else than when it was found: tether
reads it outside the sandbox, and the model could otherwise swap in a symlink to any
file the user can read.
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.errors import ToolError
from tether.memory.skills import MAX_SKILL_BYTES, Skill, SkillIndex, split_front_matter
from tether.safe_read import NotReadable, read_regular
from tether.tools.registry import Tool, ToolContext, tool

__all__ = ["MAX_SKILL_FILES", "read_skill_tool"]

MAX_SKILL_FILES = 100


def read_skill_tool(index: SkillIndex) -> Tool:
    """The `read_skill` tool over the skills in `index`."""

    @tool
    def read_skill(_ctx: ToolContext, name: str) -> str:
        """Load a skill: its full instructions and the list of files that come with it.

        The system prompt lists the available skills by name and description; call
        this before doing a task a skill is meant for, then follow its instructions.
        Files the instructions mention can be read with read_file, by the absolute
        folder shown.

        Args:
            name: The skill's name, exactly as listed (e.g. "pdf-forms").
        """
        skill = index.get(name.strip())
        if skill is None:
            known = ", ".join(s.name for s in index.skills) or "(none)"
            raise ToolError(f"There is no skill named {name!r}. Known skills: {known}.")
        return _render(skill, _body(skill))

    return read_skill


def _body(skill: Skill) -> str:
    """The instructions of SKILL.md as the file is now, without its front matter."""
    if not os.path.lexists(skill.path):
        raise ToolError(
            f"The skill {skill.name!r} is gone: {skill.path} was removed after the session started."
        )
    now = Path(os.path.realpath(skill.path))
    if now != skill.real:
        raise ToolError(
            f"The skill {skill.name!r} cannot be loaded: {skill.path} now leads to {now}, "
            f"not to {skill.real} as when the session started."
        )
    try:
        data, size = read_regular(now, MAX_SKILL_BYTES)
    except NotReadable as exc:
        raise ToolError(f"The skill {skill.name!r} cannot be read ({skill.path}: {exc}).") from None
    if size > MAX_SKILL_BYTES:
        raise ToolError(
            f"The skill {skill.name!r} cannot be loaded: {skill.path} has grown to {size:,} "
            f"bytes, over the {MAX_SKILL_BYTES:,}-byte limit."
        )
    text = data.decode("utf-8", "replace")
    parts = split_front_matter(text)
    return (parts[1] if parts is not None else text.removeprefix("\ufeff")).strip()


def _render(skill: Skill, body: str) -> str:
    folder = Path(os.path.realpath(skill.directory))
    files, more = _other_files(folder)
    out = [f'Skill "{skill.name}" ({skill.path})', "", body or "(SKILL.md has no instructions)"]
    if files:
        out += ["", f"Files in the skill's folder {folder} (read them with read_file):"]
        out += [f"- {rel}" for rel in files]
        if more:
            out.append(f"[only the first {MAX_SKILL_FILES} files are listed]")
    else:
        out += ["", f"The skill's folder {folder} holds no other files."]
    return "\n".join(out)


def _other_files(folder: Path) -> tuple[list[str], bool]:
    """Up to MAX_SKILL_FILES paths relative to `folder` (hidden ones and SKILL.md left
    out; symlinked directories not followed), and whether there were more."""
    found: list[str] = []
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            rel = (Path(top) / name).relative_to(folder).as_posix()
            if name.startswith(".") or rel == "SKILL.md":
                continue
            if len(found) == MAX_SKILL_FILES:
                return found, True
            found.append(rel)
    return found, False

"""The system prompt: built once per session and never changed afterwards.

It holds only what stays true for the whole session, so every request shares the
same cacheable prefix. Anything volatile (todos, budgets, loop notes) belongs at the
tail of the conversation instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.memory.instructions import Instructions
    from tether.memory.skills import SkillIndex

__all__ = ["SessionPrompt", "build_system_prompt", "session_prompt"]

_BASE = """\
You are tether, a coding agent working inside a software project on the user's machine.
You act through tools: read and search files, edit them, and run shell commands. Work
until the user's request is done, then answer with a short report of what you did.

How to work:
- Look before you change: read the relevant files and search the code first.
- Make the smallest change that does the job, in the style of the surrounding code.
- Check your work: run the project's tests or the command that shows the fix works.
- If a tool returns an error, read it and correct the call; do not repeat a call
  that failed the same way twice.
- Paths are relative to the workspace root. Prefer the file tools over shell commands
  for reading and editing files (str_replace for one edit, apply_patch for several
  edits or files at once, write_file for new files).
- Shell commands run non-interactively with no stdin: pass flags that avoid prompts
  and pagers.
- When you are done, stop calling tools and reply with what changed and how you
  verified it. If you could not finish, say what remains and why."""


def build_system_prompt(workspace: Path, *, extra: str = "") -> str:
    """The session's fixed instructions plus facts about where it runs."""
    facts = (
        f"\n\nEnvironment:\n- Workspace root: {workspace}\n"
        f"- Platform: {_platform()}\n"
        f"- Git repository: {'yes' if (workspace / '.git').exists() else 'no'}"
    )
    return _BASE + facts + (f"\n\n{extra.strip()}" if extra.strip() else "")


def _platform() -> str:
    """Like platform.system() and .machine(), without importing `platform` (~3 ms)."""
    try:
        info = os.uname()
    except AttributeError:  # not POSIX
        return os.name
    return f"{info.sysname} {info.machine}"


@dataclass(frozen=True, slots=True)
class SessionPrompt:
    """The system prompt and what went into it (for doctor, read_skill and notices)."""

    text: str
    instructions: Instructions
    skills: SkillIndex


def session_prompt(workspace: Path, *, config_home: Path, max_bytes: int) -> SessionPrompt:
    """The session's prompt: the fixed part, the project's instructions (AGENTS.md),
    and the index of skills (their bodies load on demand through read_skill)."""
    from tether.memory.instructions import load_instructions
    from tether.memory.skills import discover_skills, index_text

    instructions = load_instructions(workspace, config_home=config_home, max_bytes=max_bytes)
    skills = discover_skills(workspace, config_home=config_home)
    extra = "\n\n".join(t for t in (instructions.text, index_text(skills)) if t)
    return SessionPrompt(build_system_prompt(workspace, extra=extra), instructions, skills)

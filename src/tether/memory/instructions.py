"""Project instructions: the AGENTS.md files (or CLAUDE.md) that apply to the workspace.

They are read once, when a session starts, and become a fixed section of the system
prompt. Order: the user's own `~/.config/tether/AGENTS.md`, then one file per
directory from the repository root down to the workspace, so that nearer (more
specific) files come later and win where they disagree.

Over `[instructions] max_bytes`, the budget is given out by importance, not by
order: the user's file first (a cloned repository must not be able to push the
user's own instructions out), then the nearest file, then outwards to the root
(nearer files are the specific ones; the root's is the general and usually the
longest, and its tail is what is lost least). The first file that does not fit is
cut at a line boundary and every less important one is dropped, each with a note.

These files belong to the repository, and tether reads them outside the sandbox:
symlinks to regular files are followed (`AGENTS.md -> CLAUDE.md` is common), but
FIFOs, devices and directories are refused without blocking, and no read is
unbounded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tether.safe_read import NotReadable, read_regular

__all__ = [
    "Instructions",
    "LoadedFile",
    "config_home",
    "load_instructions",
    "repository_root",
]

_NAMES = ("AGENTS.md", "CLAUDE.md")  # CLAUDE.md only where no AGENTS.md stands beside it
_HEADER = (
    "Project instructions (from AGENTS.md files: the user's own first, then from the "
    "repository root down to the workspace; nearer files take precedence):"
)


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """One instruction file: its size and how much of it the prompt holds (0: dropped)."""

    path: Path
    label: str  # how the prompt names it: relative to the workspace, or ~/...
    size: int
    used: int
    cut: bool


@dataclass(frozen=True, slots=True)
class Instructions:
    """The files found, what went wrong, and the system-prompt section ("" when none)."""

    files: tuple[LoadedFile, ...]
    notes: tuple[str, ...]
    text: str


def config_home(environ: Mapping[str, str]) -> Path:
    """Where user configuration lives, as `load_settings` finds it: $XDG_CONFIG_HOME,
    else $HOME/.config."""
    home = Path(environ.get("HOME") or Path.home())
    return Path(environ.get("XDG_CONFIG_HOME") or home / ".config")


def load_instructions(workspace: Path, *, config_home: Path, max_bytes: int) -> Instructions:
    """The instruction files for `workspace`, cut to `max_bytes` of content in all."""
    notes: list[str] = []
    found: list[tuple[Path, str, bytes, int]] = []  # document order
    seen: set[str] = set()
    user_file = config_home / "tether" / "AGENTS.md"
    repository = Path(os.path.realpath(repository_root(workspace) or workspace))
    for path, label in _candidates(workspace, config_home):
        real = os.path.realpath(path)
        if real in seen:
            continue  # e.g. sub/AGENTS.md -> ../AGENTS.md: one copy is enough
        seen.add(real)
        if path != user_file and not Path(real).is_relative_to(repository):
            # A cloned repository's AGENTS.md -> ~/.ssh/id_rsa would put the user's
            # secrets in the prompt sent to the provider: only files inside it count.
            notes.append(f"{label}: leads outside the repository; not read")
            continue
        try:
            data, size = read_regular(path, max_bytes + 1)  # +1: is a cut mid-character?
        except NotReadable as exc:
            notes.append(f"{label}: not read: {exc}")
            continue
        if data.strip():
            found.append((path, label, data, size))

    # Budget by importance: the user's file (always first if found), then nearest to farthest.
    user = [0] if found and found[0][0] == config_home / "tether" / "AGENTS.md" else []
    order = user + [i for i in reversed(range(len(found))) if i not in user]
    used: dict[int, int] = {}
    left = max_bytes
    for i in order:
        path, label, data, size = found[i]
        if left and size <= left and len(data) == size:
            used[i] = size
            left -= size
            continue
        if left:
            used[i] = _cut_point(data, left)
            notes.append(
                f"{label}: cut to {used[i]:,} of {size:,} bytes "
                f"([instructions] max_bytes = {max_bytes:,})"
            )
        else:
            used[i] = 0
            notes.append(f"{label}: not loaded ({size:,} bytes): over [instructions] max_bytes")
        left = 0

    files = tuple(
        LoadedFile(path=p, label=label, size=size, used=used[i], cut=used[i] < size)
        for i, (p, label, _, size) in enumerate(found)
    )
    return Instructions(files=files, notes=tuple(notes), text=_render(found, files))


def _candidates(workspace: Path, config_home: Path) -> list[tuple[Path, str]]:
    """The files to try, in prompt order, with the label each is shown under."""
    user = config_home / "tether" / "AGENTS.md"
    result = [(user, _user_label(config_home))] if os.path.lexists(user) else []
    root = repository_root(workspace)
    for directory in [workspace] if root is None else _chain(root, workspace):
        agents = directory / _NAMES[0]
        path = agents if os.path.lexists(agents) else directory / _NAMES[1]
        if os.path.lexists(path):
            result.append((path, os.path.relpath(path, workspace)))
    return result


def _chain(root: Path, workspace: Path) -> list[Path]:
    """The directories from `root` down to `workspace`, both included."""
    below = workspace.relative_to(root).parts
    return [root.joinpath(*below[:n]) for n in range(len(below) + 1)]


def repository_root(workspace: Path) -> Path | None:
    """The nearest directory at or above the workspace holding `.git` (file or dir)."""
    for directory in (workspace, *workspace.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def _user_label(config_home: Path) -> str:
    path = config_home / "tether" / "AGENTS.md"
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except (ValueError, RuntimeError):  # not under home, or no home to speak of
        return str(path)


def _cut_point(data: bytes, budget: int) -> int:
    """Where to cut `data` to fit `budget`: after the last whole line that fits, else
    at a character boundary."""
    if budget >= len(data):
        return len(data)
    newline = data.rfind(b"\n", 0, budget)
    if newline >= 0:
        return newline + 1
    while budget > 0 and (data[budget] & 0xC0) == 0x80:  # inside a UTF-8 sequence
        budget -= 1
    return budget


def _render(found: list[tuple[Path, str, bytes, int]], files: tuple[LoadedFile, ...]) -> str:
    parts: list[str] = []
    for (_, label, data, size), loaded in zip(found, files, strict=True):
        if loaded.used == 0:
            parts.append(f"--- {label} (not shown: over the size limit for instructions) ---")
            continue
        body = data[: loaded.used].removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")
        parts.append(f"--- {label} ---\n{body.rstrip()}")
        if loaded.cut:
            parts.append(f"[cut here: {loaded.used:,} of {size:,} bytes shown]")
    if not parts:
        return ""
    return _HEADER + "\n\n" + "\n\n".join(parts)

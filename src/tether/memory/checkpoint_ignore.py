"""The ignore rules git would apply to the workspace but cannot see through our own GIT_DIR.

Checkpoints run git with a repository of their own, so git reads the workspace's
`.gitignore` files and the global excludes, but not the user repository's
`info/exclude` — nor, when the workspace is a subdirectory of a repository, the
`.gitignore` files above it. Those rules are gathered here and rewritten relative to
the workspace, to be placed in our repository's `info/exclude`. Without them a
checkpoint of `frontend/` would copy the `.env` and `node_modules/` that the parent
repository ignores.

Every file is read with `read_small`: the agent can make them symlinks or FIFOs, and
this runs outside the sandbox.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from tether.memory.checkpoint_git import read_small, user_exclude_file

__all__ = ["inherited_excludes"]

_MAX_LEVELS = 64


def inherited_excludes(workspace: Path) -> bytes:
    """Exclude lines for the workspace from its repository's rules that git will not read."""
    own = user_exclude_file(workspace)
    if own is not None or os.path.lexists(workspace / ".git"):
        return (read_small(own) or b"") if own is not None else b""
    root = _repository_root(workspace)
    if root is None:
        return b""
    lines: list[bytes] = []
    exclude = user_exclude_file(root)
    if exclude is not None:
        lines += _rebase(read_small(exclude) or b"", workspace.relative_to(root).parts)
    directory = root
    for part in workspace.relative_to(root).parts:
        data = read_small(directory / ".gitignore")
        if data:
            lines += _rebase(data, workspace.relative_to(directory).parts)
        directory = directory / part
    return b"".join(line + b"\n" for line in lines)


def _repository_root(workspace: Path) -> Path | None:
    for level, parent in enumerate(workspace.parents):
        if level >= _MAX_LEVELS:
            return None
        if os.path.lexists(parent / ".git"):
            return parent
    return None


def _rebase(data: bytes, below: tuple[str, ...]) -> list[bytes]:
    """The lines of an ignore file in a directory `below` levels above the workspace
    (as path parts), rewritten to mean the same for paths inside the workspace."""
    result: list[bytes] = []
    for raw in data.split(b"\n"):
        line = raw.rstrip(b"\r")
        stripped = line.rstrip(b" ")
        if line.endswith(b"\\ "):  # an escaped trailing space is part of the pattern
            stripped = line
        if not stripped or stripped.startswith(b"#"):
            continue
        rebased = _rebase_line(stripped, below)
        if rebased is not None:
            result.append(rebased)
    return result


def _rebase_line(line: bytes, below: tuple[str, ...]) -> bytes | None:
    negate = line.startswith(b"!")
    body = line[1:] if negate else line
    prefix = b"!" if negate else b""
    dir_only = body.endswith(b"/")
    core = body.rstrip(b"/")
    if not core:
        return None
    if b"/" not in core or core.startswith(b"**/"):
        return line  # matches at any depth: the same inside the workspace
    parts = core.lstrip(b"/").split(b"/")
    names = [os.fsencode(p) for p in below]
    if len(parts) <= len(names):
        return None  # names the workspace or a place beside it, nothing inside
    for pattern, name in zip(parts, names, strict=False):
        if pattern == b"**":
            rest = b"/".join(parts[parts.index(pattern) :])
            return prefix + rest + (b"/" if dir_only else b"")
        if not fnmatch.fnmatchcase(name, pattern):
            return None
    rest = b"/".join(parts[len(names) :])
    return prefix + b"/" + rest + (b"/" if dir_only else b"")

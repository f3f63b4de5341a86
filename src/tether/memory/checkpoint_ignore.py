"""The ignore rules git would apply to the workspace but cannot see through our own GIT_DIR.

Checkpoints run git with a repository of their own, so git reads the workspace's
`.gitignore` files and the global excludes, but not the user repository's
`info/exclude` — nor, when the workspace is a subdirectory of a repository, the
`.gitignore` files above it. Those rules are gathered here and rewritten relative to
the workspace, to be placed in our repository's `info/exclude`. Without them a
checkpoint of `frontend/` would copy the `.env` and `node_modules/` that the parent
repository ignores.

Every file is read with `safe_read.read_small`: the agent can make them symlinks or FIFOs, and
this runs outside the sandbox.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from pathlib import Path

from tether.memory.checkpoint_git import CheckpointError
from tether.safe_read import read_small

__all__ = ["global_excludes_file", "inherited_excludes", "user_exclude_file"]

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
    (as path parts), rewritten to mean the same for paths inside the workspace. Where a
    pattern cannot be rewritten exactly it is dropped: the checkpoint then holds more,
    never less."""
    result: list[bytes] = []
    data = data.removeprefix(b"\xef\xbb\xbf")
    for raw in data.split(b"\n"):
        line = raw.rstrip(b"\r")
        stripped = line if line.endswith(b"\\ ") else line.rstrip(b" ")
        if not stripped or stripped.startswith(b"#"):
            continue
        result.extend(_rebase_line(stripped, below))
    return list(dict.fromkeys(result))


def _rebase_line(line: bytes, below: tuple[str, ...]) -> list[bytes]:
    negate = line.startswith(b"!")
    body = line[1:] if negate else line
    prefix = b"!" if negate else b""
    suffix = b"/" if body.endswith(b"/") else b""
    core = body.rstrip(b"/")
    if not core:
        return []
    if b"/" not in core:
        return [line]  # matches at any depth: the same inside the workspace
    parts = core.removeprefix(b"/").split(b"/")
    names = [os.fsencode(p) for p in below]
    rebased: list[bytes] = []
    for rest in _consume(parts, names):
        if rest and rest != [b"**"]:
            rebased.append(prefix + b"/" + b"/".join(rest) + suffix)
    return rebased


def _consume(parts: list[bytes], names: list[bytes]) -> list[list[bytes]]:
    """What is left of the pattern `parts` once it has matched every directory in
    `names`; several answers where `**` can match in several ways."""
    if not names:
        return [parts]
    if not parts:
        return []
    head = parts[0]
    if head == b"**":  # zero directories, or one more
        return _consume(parts[1:], names) + _consume(parts, names[1:])
    if _component_matches(names[0], head):
        return _consume(parts[1:], names[1:])
    return []


def _component_matches(name: bytes, pattern: bytes) -> bool:
    """One path component against one gitignore glob component."""
    if b"\\" in pattern:
        pattern = re.sub(rb"\\(.)", lambda m: b"[" + m.group(1) + b"]", pattern)
    pattern = pattern.replace(b"[^", b"[!")
    return fnmatch.fnmatchcase(name, pattern)


def user_exclude_file(workspace: Path) -> Path | None:
    """Where the user's repo keeps `info/exclude`, found without running git in it."""
    dotgit = workspace / ".git"
    if dotgit.is_dir() and not dotgit.is_symlink():
        return dotgit / "info" / "exclude"
    data = read_small(dotgit, 4096)
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace").strip()
    if not text.startswith("gitdir:"):
        return None
    gitdir = workspace / text[len("gitdir:") :].strip()  # an absolute path replaces the base
    common = read_small(gitdir / "commondir", 4096)
    if common is not None:  # a linked worktree: excludes live in the main repo
        gitdir = gitdir / common.decode("utf-8", errors="replace").strip()
    return gitdir / "info" / "exclude"


def global_excludes_file() -> str:
    """The user's global ignore file as git would find it (config, else the XDG default)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_")
        or k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_EXEC_PATH")
    }
    try:
        proc = subprocess.run(
            ["git", "config", "--global", "--path", "--get", "core.excludesFile"],
            env=env,
            cwd="/",
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise CheckpointError(f"cannot run git ({exc}); checkpoints need the git CLI") from exc
    value = os.fsdecode(proc.stdout).strip()
    if proc.returncode == 0 and value:
        return value
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return str(Path(xdg) / "git" / "ignore")

"""Writing a restore plan into the workspace: deletions, then files, never through links.

Kept apart from the store so that what touches the user's files is small enough to
read in one sitting: it never writes below a symlink or over a directory, never
replaces a file that an ignored or too-large file occupies, never writes into `.git`,
and replaces each file atomically (a temporary file beside it, then a rename).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from tether.memory.checkpoint_git import CheckpointError, CheckpointGit, RawChange

__all__ = ["apply_plan"]


def apply_plan(
    workspace: Path, git: CheckpointGit, plan: list[RawChange]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(written, deleted, skipped): deletions first (then emptied directories), then writes."""
    written: list[str] = []
    deleted: list[str] = []
    skipped: list[str] = []
    for change in plan:
        if change.new_mode != "000000":
            continue
        path = workspace / change.path
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                path.unlink()
                deleted.append(change.path)
        except FileNotFoundError:
            deleted.append(change.path)
        _prune(workspace, path.parent)
    writes = [c for c in plan if c.new_mode not in ("000000", "160000")]
    blobs = git.read_blobs([c.new_sha for c in writes])
    for change in writes:
        if _write(workspace, change, blobs[change.new_sha]):
            written.append(change.path)
        else:
            skipped.append(change.path)
    return tuple(written), tuple(deleted), tuple(skipped)


def _prune(workspace: Path, directory: Path) -> None:
    while directory != workspace and workspace in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _write(workspace: Path, change: RawChange, data: bytes) -> bool:
    parts = change.path.split("/")
    if any(p.lower() == ".git" or p in ("", ".", "..") for p in parts):
        return False
    directory = workspace
    for part in parts[:-1]:  # never follow a symlink or replace a file on the way
        directory = directory / part
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                return False
        except FileNotFoundError:
            directory.mkdir()
    path = directory / parts[-1]
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and (stat.S_ISDIR(st.st_mode) or change.old_mode == "000000"):
        return False  # an ignored or too-large file (or a directory) holds the place
    tmp = directory / f".{parts[-1][:100]}.tether-{secrets.token_hex(4)}"
    try:
        if change.new_mode == "120000":
            tmp.symlink_to(os.fsdecode(data))
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            if change.new_mode == "100755":
                mode = os.lstat(tmp).st_mode
                tmp.chmod(stat.S_IMODE(mode) | (stat.S_IMODE(mode) & 0o444) >> 2)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise CheckpointError(f"cannot restore {change.path}: {exc}") from exc
    return True

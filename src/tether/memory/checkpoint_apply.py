"""Writing a restore plan into the workspace: never through links, never losing a file
the checkpoint did not hold.

Kept apart from the store so that what touches the user's files is small enough to
read in one sitting. It never writes below a symlink or over a directory, never
replaces a file that an ignored or too-large file occupies, never writes into `.git`,
and replaces each file atomically (a temporary file beside it, then a rename), keeping
the permission bits of the file it replaces.

A file present now and absent from the checkpoint is deleted only if the checkpoint
would have held it: not if the checkpoint listed it as not covered (too large, a
nested repository), and not if the checkpoint's own ignore rules ignore it (an agent
that rewrote `.gitignore` made `.env` visible; undoing that must not delete `.env`).
Those rules are the checkpoint's, not whatever `.gitignore` the workspace holds now.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from tether.memory.checkpoint_git import CheckpointError, CheckpointGit, RawChange

__all__ = ["Applied", "apply_plan"]


@dataclass(frozen=True, slots=True)
class Applied:
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    skipped: tuple[str, ...]  # a directory, link or ignored file holds the place
    kept: tuple[str, ...]  # present now, not held by the checkpoint: left alone


def apply_plan(
    workspace: Path,
    git: CheckpointGit,
    plan: list[RawChange],
    *,
    tree: str,
    not_covered: tuple[str, ...],
) -> Applied:
    """Deletions first (then emptied directories), then files; `tree` is the target's."""
    writes = [c for c in plan if c.new_mode not in ("000000", "160000")]
    blobs = git.read_blobs([c.new_sha for c in writes])  # all read before anything changes
    removals = [c.path for c in plan if c.new_mode == "000000"]
    kept = [p for p in removals if _held_back(p, not_covered)]
    candidates = [p for p in removals if p not in kept]
    ignored = git.check_ignored(candidates, tree)
    kept += [p for p in candidates if p in ignored]
    deleted: list[str] = []
    for rel in candidates:
        if rel in ignored:
            continue
        path = workspace / rel
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                path.unlink()
                deleted.append(rel)
        except FileNotFoundError:
            deleted.append(rel)
        _prune(workspace, path.parent)
    written: list[str] = []
    skipped: list[str] = []
    for change in writes:
        if _write(workspace, change, blobs[change.new_sha]):
            written.append(change.path)
        else:
            skipped.append(change.path)
    return Applied(tuple(written), tuple(deleted), tuple(skipped), tuple(sorted(kept)))


def _held_back(rel: str, not_covered: tuple[str, ...]) -> bool:
    return any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in not_covered)


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
    tmp = directory / f".tether-restore-{secrets.token_hex(6)}"  # short: any name fits
    try:
        if change.new_mode == "120000":
            tmp.symlink_to(os.fsdecode(data))
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                _write_all(fd, data)
                os.fchmod(fd, _mode(st, change.new_mode == "100755"))
            finally:
                os.close(fd)
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise CheckpointError(f"cannot restore {change.path}: {exc}") from exc
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _mode(current: os.stat_result | None, executable: bool) -> int:
    """The replaced file's permission bits (a 0600 secret stays 0600); a new file gets
    the umask's; either way with the checkpoint's exec bit."""
    if current is not None and stat.S_ISREG(current.st_mode):
        base = stat.S_IMODE(current.st_mode) & ~0o111
    else:
        base = 0o666 & ~_umask()
    return base | ((base & 0o444) >> 2) if executable else base


def _umask() -> int:
    """The process umask, read without setting it (os.umask would change it for every
    thread for a moment)."""
    try:
        with Path("/proc/self/status").open(encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022

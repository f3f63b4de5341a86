"""Writing a planned patch to disk so that it lands whole or not at all.

Guarantee: every new content is first written to a temp file next to its target
(same directory, so a rename is atomic) and fsynced; only then are the targets
replaced, one rename each, with a hard-link backup of every file replaced or
deleted. If any step fails, what was already done is undone from the backups and
the error is raised: the files are as before. What cannot be promised: a crash of
the whole process (or machine) midway through the renames leaves the files renamed
so far changed, and the backups and temp files (`.name.<hex>.tmp`/`.bak`) behind.
Another process writing the same files at the same time is not detected.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from tether.patch.model import PatchError
from tether.tools.textio import fsync_dir

__all__ = ["PlannedWrite", "commit"]


@dataclass(frozen=True, slots=True)
class PlannedWrite:
    """The final state of one file: new bytes, or None to delete it.

    `mode` is the permission bits to give it (None: keep the file's own, or the
    umask default for a new file); `shown` is how messages name it.
    """

    path: Path
    data: bytes | None
    mode: int | None
    shown: str


@dataclass(slots=True)
class _Step:
    write: PlannedWrite
    temp: Path | None = None
    backup: Path | None = None
    done: bool = False


def commit(plans: list[PlannedWrite]) -> None:
    """Write every plan, or (on any failure) none: raises PatchError after undoing."""
    steps = [_Step(plan) for plan in plans]
    made_dirs: list[Path] = []
    try:
        for step in steps:
            _stage(step, made_dirs)
        for step in steps:
            _swap(step)
    except OSError as exc:
        failed = next((s.write.shown for s in steps if not s.done), "a file")
        problems = _undo(steps, made_dirs)
        note = f" Could not undo: {'; '.join(problems)}." if problems else " Nothing was changed."
        raise PatchError(f"Cannot write {failed}: {exc.strerror or exc}.{note}") from None
    finally:
        _clean(steps)
    for directory in {s.write.path.parent for s in steps}:
        fsync_dir(directory)


def _stage(step: _Step, made_dirs: list[Path]) -> None:
    """Temp file with the new bytes and a backup of the old file; nothing visible yet."""
    target = step.write.path
    old_mode: int | None = None
    if os.path.lexists(target):
        old_mode = stat.S_IMODE(target.stat().st_mode)
        step.backup = _sibling(target, "bak")
        try:
            os.link(target, step.backup)
        except OSError:  # no hard links here (some file systems): copy instead
            shutil.copy2(target, step.backup)
    if step.write.data is None:
        return
    _make_parents(target.parent, made_dirs)
    step.temp = _sibling(target, "tmp")
    fd = os.open(step.temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(step.write.data)
        handle.flush()
        os.fsync(handle.fileno())
    mode = step.write.mode if step.write.mode is not None else old_mode
    if mode is not None:
        step.temp.chmod(mode)


def _swap(step: _Step) -> None:
    if step.temp is not None:
        step.temp.replace(step.write.path)
        step.temp = None
    else:
        step.write.path.unlink()
    step.done = True


def _undo(steps: list[_Step], made_dirs: list[Path]) -> list[str]:
    """Put back what `_swap` changed, newest first; returns what could not be undone."""
    problems: list[str] = []
    for step in reversed(steps):
        if not step.done:
            continue
        try:
            if step.backup is not None:
                step.backup.replace(step.write.path)
                step.backup = None
            else:
                step.write.path.unlink()
        except OSError as exc:
            problems.append(f"{step.write.shown}: {exc.strerror or exc}")
    for directory in reversed(made_dirs):
        with contextlib.suppress(OSError):
            directory.rmdir()
    return problems


def _clean(steps: list[_Step]) -> None:
    for step in steps:
        for leftover in (step.temp, step.backup):
            if leftover is not None:
                with contextlib.suppress(OSError):
                    leftover.unlink()


def _make_parents(directory: Path, made_dirs: list[Path]) -> None:
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir()
        made_dirs.append(path)


def _sibling(target: Path, suffix: str) -> Path:
    return target.with_name(f".{target.name}.{secrets.token_hex(6)}.{suffix}")

"""Git's own configuration is not the agent's to change, wherever git looks for it.

The mounts keep `.git/hooks` and `.git/config` read-only, but git reads more: a
`.git/commondir` can point the repository at a directory the agent wrote (with a
config whose `core.fsmonitor` runs at the user's next `git status`), and so can
`config.worktree`, the configs of submodules under `.git/modules` and of linked
worktrees, or a `.git` file's `gitdir:` line. Nothing a command started outlives
it, so checking right after each command and putting these entries back is as good
as forbidding the change, and it also works where no mount namespace is possible.

This runs outside the sandbox, on a tree the command controlled, so it trusts
nothing there: it never follows a symlink (a link is an entry of its own, removed
as a link), reads regular files only (a FIFO cannot make it wait), and writes only
into real directories inside `.git`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from pathlib import Path

__all__ = ["GitGuard"]

# (kind, data): ("file", content or a digest for big ones), ("link", target),
# ("dir", b""), ("other", mode); None when absent.
Entry = tuple[str, bytes] | None

_FILES = ("commondir", "config", "config.worktree", "info/attributes")
_MODULE_FILES = ("config", "config.worktree", "commondir")
_WORKTREE_FILES = ("config.worktree", "commondir", "gitdir")
_KEEP_BYTES = 4 << 20  # files bigger than this are compared by digest, not restored
_MAX_DEPTH = 8  # nested submodules under .git/modules
_PLAIN_CONFIG = (
    b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    b"\tlogallrefupdates = true\n"
)


class GitGuard:
    """Snapshot before a command; after it, restore and name what it had changed."""

    def __init__(self, workspace: Path) -> None:
        self.git = workspace / ".git"

    def snapshot(self) -> dict[Path, Entry]:
        top = _entry(self.git)
        if top is None or top[0] != "dir":
            return {self.git: top}
        found: dict[Path, Entry] = {self.git: top}
        for name in _FILES:
            path = self.git / name
            found[path] = _entry(path) if _real_dirs(self.git, path.parent) else ("other", b"")
        self._directory(self.git / "hooks", found, every=True)
        self._modules(self.git / "modules", found, 0)
        worktrees = self.git / "worktrees"
        if self._directory(worktrees, found, every=False):
            for child in _children(worktrees):
                if self._directory(child, found, every=False):
                    for name in _WORKTREE_FILES:
                        found[child / name] = _entry(child / name)
        return found

    def restore(self, before: dict[Path, Entry]) -> list[str]:
        """Put back what changed since `before`; the changed paths, relative to .git's parent."""
        after = self.snapshot()
        created = before.get(self.git) is None and after.get(self.git) == ("dir", b"")
        if created:
            before = self._fresh_repository(after)
        changed: list[str] = []
        # parents before children when putting back, children before parents when removing
        for path in sorted(set(before) | set(after), key=lambda p: len(p.parts)):
            old, new = before.get(path), after.get(path)
            if old == new:
                continue
            changed.append(str(path.relative_to(self.git.parent)))
            self._put_back(path, old)
        return changed

    def _fresh_repository(self, after: dict[Path, Entry]) -> dict[Path, Entry]:
        """A repository the command created may keep its directories, sample hooks and
        attributes, and gets the config `git init` writes: nothing in it runs a program."""
        keep: dict[Path, Entry] = dict.fromkeys(after)
        for path, entry in after.items():
            if (
                (entry is not None and entry[0] == "dir")
                or (path.parent.name == "hooks" and path.name.endswith(".sample"))
                or path == self.git / "info/attributes"
            ):
                keep[path] = entry
        keep[self.git / "config"] = ("file", _PLAIN_CONFIG)
        return keep

    def _directory(self, path: Path, found: dict[Path, Entry], *, every: bool) -> bool:
        """Record a directory entry (and with `every`, each entry in it); True if real."""
        entry = _entry(path)
        found[path] = entry
        if entry is None or entry[0] != "dir" or not _real_dirs(self.git, path):
            return False
        if every:
            for child in _children(path):
                found[child] = _entry(child)
        return True

    def _modules(self, path: Path, found: dict[Path, Entry], depth: int) -> None:
        if depth > _MAX_DEPTH or not self._directory(path, found, every=False):
            return
        for module in _children(path):
            if not self._directory(module, found, every=False):
                continue
            if (module / "HEAD").exists() or (module / "config").exists():
                for name in _MODULE_FILES:
                    found[module / name] = _entry(module / name)
                self._directory(module / "hooks", found, every=True)
                self._modules(module / "modules", found, depth + 1)
            else:  # a namespace directory (modules/a/b): go one level down
                self._modules(module, found, depth + 1)

    def _put_back(self, path: Path, entry: Entry) -> None:
        if not _real_dirs(self.git.parent, path.parent):
            return  # the parent is itself being put back (a link replaced it): done there
        with contextlib.suppress(OSError):
            _remove(path)
            if entry is None:
                return
            kind, data = entry
            if kind == "dir":
                path.mkdir()
            elif kind == "link":
                path.symlink_to(os.fsdecode(data))
            elif kind == "file" and not data.startswith(b"sha256:"):
                _write_new(path, data)


def _entry(path: Path) -> Entry:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except OSError:
        return ("other", b"unreadable")
    if stat.S_ISLNK(info.st_mode):
        return ("link", os.fsencode(path.readlink()))
    if stat.S_ISDIR(info.st_mode):
        return ("dir", b"")
    if not stat.S_ISREG(info.st_mode):
        return ("other", str(stat.S_IFMT(info.st_mode)).encode())
    return ("file", _content(path))


def _content(path: Path) -> bytes:
    """The bytes of a regular file, opened without following links or blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b"sha256:unreadable"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"sha256:not-a-file"
        data = handle.read(_KEEP_BYTES + 1)
        if len(data) <= _KEEP_BYTES:
            return data
        digest = hashlib.sha256(data)
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
        return b"sha256:" + digest.hexdigest().encode()


def _children(directory: Path) -> list[Path]:
    try:
        return sorted(Path(entry.path) for entry in os.scandir(directory))
    except OSError:
        return []


def _real_dirs(root: Path, directory: Path) -> bool:
    """Whether every component from `root` down to `directory` is a real directory."""
    try:
        relative = directory.relative_to(root)
    except ValueError:
        return False
    current = root
    for part in ("", *relative.parts):
        current = current / part if part else current
        try:
            if not stat.S_ISDIR(current.lstat().st_mode):
                return False
        except OSError:
            return False
    return True


def _remove(path: Path) -> None:
    """Remove an entry itself: a link as a link, a directory with what is inside it."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # does not follow symlinks inside
    else:
        path.unlink()


def _write_new(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.tether-restore")
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    temp.replace(path)

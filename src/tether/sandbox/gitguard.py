"""Git's own configuration is not the agent's to change, wherever git looks for it.

The mounts keep `.git/hooks` and `.git/config` read-only, but git reads more: a
`.git/commondir` can point the repository at a directory the agent wrote (with a
config whose `core.fsmonitor` runs at the user's next `git status`), and so can
`config.worktree`, the configs of submodules under `.git/modules` and of linked
worktrees, or a `.git` file's `gitdir:` line. Nothing a command started outlives
it, so checking right after each command and putting these files back is as good
as forbidding the change, and it also works where no mount namespace is possible.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

__all__ = ["GitGuard"]

_FILES = ("commondir", "config", "config.worktree", "info/attributes")
_PATTERNS = (
    "hooks/*",
    "modules/**/config",
    "modules/**/config.worktree",
    "modules/**/commondir",
    "modules/**/hooks/*",
    "worktrees/*/config.worktree",
    "worktrees/*/commondir",
    "worktrees/*/gitdir",
)
_MAX_BYTES = 1 << 20


class GitGuard:
    """Snapshot before a command; after it, restore and name what it had changed."""

    def __init__(self, workspace: Path) -> None:
        self.git = workspace / ".git"

    def snapshot(self) -> dict[Path, bytes | None]:
        if self.git.is_symlink() or self.git.is_file():
            return {self.git: _read(self.git)}
        if not self.git.is_dir():
            return {}
        found: dict[Path, bytes | None] = {
            self.git / name: _read(self.git / name) for name in _FILES
        }
        for pattern in _PATTERNS:
            for path in self.git.glob(pattern):
                if path.is_file() and not path.is_symlink():
                    found[path] = _read(path)
        return found

    def restore(self, before: dict[Path, bytes | None]) -> list[str]:
        """Put back what changed since `before`; the changed paths, relative to .git's parent."""
        after = self.snapshot()
        if not before and self.git.is_dir():
            before = self._fresh_repository(after)
        changed: list[str] = []
        for path in sorted(set(before) | set(after)):
            if before.get(path) == after.get(path):
                continue
            changed.append(str(path.relative_to(self.git.parent)))
            _put_back(path, before.get(path))
        return changed

    def _fresh_repository(self, after: dict[Path, bytes | None]) -> dict[Path, bytes | None]:
        """What a repository the command created may keep: sample hooks, and a config
        that runs nothing (else the plain one `git init` writes)."""
        keep: dict[Path, bytes | None] = dict.fromkeys(after)
        for path, data in after.items():
            if path.parent.name == "hooks" and path.name.endswith(".sample"):
                keep[path] = data
            elif path == self.git / "config":
                safe = data is not None and not _RUNS_SOMETHING.search(data)
                keep[path] = data if safe else _PLAIN_CONFIG
            elif path == self.git / "info/attributes":
                keep[path] = data
        return keep


_RUNS_SOMETHING = re.compile(
    rb"(?i)fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|textconv|"
    rb"\[filter|\[diff|\[merge|\[credential|\[include|\[alias|=\s*!|worktree|sparse"
)
_PLAIN_CONFIG = (
    b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    b"\tlogallrefupdates = true\n"
)


def _read(path: Path) -> bytes | None:
    try:
        with path.open("rb") as handle:
            return handle.read(_MAX_BYTES)
    except OSError:
        return None


def _put_back(path: Path, data: bytes | None) -> None:
    with contextlib.suppress(OSError):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            path.unlink()
        if data is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.tether-restore")
            temp.write_bytes(data)
            temp.replace(path)

"""Git plumbing for workspace checkpoints, kept away from the user's own repository.

Every command runs with our own `GIT_DIR` (a bare repository under `$TETHER_HOME`), a
private index inside it and `GIT_WORK_TREE=<workspace>`, in an environment built from
scratch: no system or global config, no hooks, no fsmonitor, no line-ending or filter
conversion, no signing. The user's `.git` is only ever read (its `info/exclude`, which
git would not see with a foreign `GIT_DIR`), never written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tether.errors import TetherError

__all__ = [
    "EMPTY_TREE",
    "CheckpointError",
    "CheckpointGit",
    "CheckpointTimeout",
    "RawChange",
]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
MIN_GIT = (2, 31)  # GIT_CONFIG_COUNT; --pathspec-from-file needs 2.25

# git's complaints about one path it will not store; the path is then left out.
_REFUSED = re.compile(
    rb"^error: (?:invalid path|unable to index file|unable to add) '(.*)'(?: to index)?$",
    re.MULTILINE,
)
_MAX_REFUSED_ROUNDS = 20

# Given on every call through GIT_CONFIG_COUNT, so they win over any file-based config.
_CONFIG = {
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.fsmonitor": "false",
    "core.protectNTFS": "false",  # store `GIT~1/x` like any name; Linux is no NTFS
    "core.protectHFS": "false",
    "core.hooksPath": os.devnull,  # no hook runs, even one planted in our repository
    "core.untrackedCache": "true",
    "core.symlinks": "true",
    "core.fileMode": "true",
    "core.ignoreCase": "false",
    "core.quotePath": "false",
    "core.bare": "false",
    "core.sparseCheckout": "false",
    "commit.gpgSign": "false",
    "gc.auto": "0",
    "maintenance.auto": "false",
    "advice.addEmbeddedRepo": "false",
    "advice.addIgnoredFile": "false",
    "safe.directory": "*",
}
# `$GIT_DIR/info/attributes` beats every .gitattributes: store bytes exactly as on disk.
_ATTRIBUTES = b"* -text -eol -filter -ident -working-tree-encoding\n"


class CheckpointError(TetherError):
    """Checkpointing failed: git missing, repository unusable, unknown checkpoint."""

    def __init__(self, message: str, detail: bytes = b"") -> None:
        super().__init__(message)
        self.detail = detail  # git's stderr, when git failed


class CheckpointTimeout(CheckpointError):
    """git did not finish in time: later checkpoints of this workspace would hang too."""


@dataclass(frozen=True, slots=True)
class RawChange:
    """One path that differs between two trees; mode "000000" means absent."""

    old_mode: str
    new_mode: str
    new_sha: str
    path: str


def _is_sha(text: str) -> bool:
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text)


class CheckpointGit:
    """Runs git against the checkpoint repository with a sealed environment."""

    def __init__(
        self, git_dir: Path, work_tree: Path, excludes_file: str, *, timeout_s: float = 60.0
    ) -> None:
        """`timeout_s` bounds each git command: a FIFO named `.gitignore` in the
        workspace makes git block reading it for ever."""
        self.git_dir = git_dir
        self.timeout_s = timeout_s
        self.work_tree = work_tree
        config = {**_CONFIG, "core.excludesFile": excludes_file}
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(git_dir),
            "XDG_CONFIG_HOME": str(git_dir / "no-xdg"),
            "LC_ALL": "C",
            "LANG": "C",
            "TZ": "UTC",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(work_tree),
            "GIT_INDEX_FILE": str(git_dir / "tether-index"),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_AUTHOR_NAME": "tether",
            "GIT_AUTHOR_EMAIL": "tether@localhost",
            "GIT_COMMITTER_NAME": "tether",
            "GIT_COMMITTER_EMAIL": "tether@localhost",
            "GIT_CONFIG_COUNT": str(len(config)),
        }
        for i, (key, value) in enumerate(config.items()):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        self._env = env
        self.lock_wait_s = 30.0
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._lock_fd: int | None = None

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        env: dict[str, str | None] | None = None,
        allow: Sequence[int] = (0,),
        cwd: Path | None = None,
    ) -> bytes:
        """Run one git command; any failure becomes a CheckpointError naming it."""
        full = dict(self._env)
        for key, value in (env or {}).items():
            if value is None:
                full.pop(key, None)
            else:
                full[key] = value
        try:
            proc = subprocess.run(
                ["git", *args],
                input=stdin,
                env=full,
                cwd=cwd or self.work_tree,
                capture_output=True,
                check=False,
                timeout=self.timeout_s,
            )
        except subprocess.TimeoutExpired:
            raise CheckpointTimeout(
                f"git {args[0]} did not finish within {self.timeout_s:g} s in {self.work_tree} "
                "(a FIFO or device named .gitignore, or a very large workspace?)"
            ) from None
        except OSError as exc:
            raise CheckpointError(f"cannot run git ({exc}); checkpoints need the git CLI") from exc
        if proc.returncode not in allow:
            err = os.fsdecode(proc.stderr).strip() or f"exit status {proc.returncode}"
            raise CheckpointError(
                f"git {args[0]} failed in checkpoint repo {self.git_dir}: {err}", proc.stderr
            )
        return proc.stdout

    def init(self) -> None:
        """Create the bare repository on first use (no template, so no sample hooks)."""
        if not (self.git_dir / "HEAD").is_file():
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            out = self.run("version")
            self._check_version(out)
            self.run(
                "init", "-q", "--bare", "--template=", str(self.git_dir),
                env={"GIT_WORK_TREE": None, "GIT_DIR": None},
            )  # fmt: skip
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        attributes = info / "attributes"
        if not attributes.is_file() or attributes.read_bytes() != _ATTRIBUTES:
            attributes.write_bytes(_ATTRIBUTES)

    @contextlib.contextmanager
    def locked(self, wait_s: float | None = None) -> Iterator[None]:
        """One writer per checkpoint repository at a time, across processes and threads;
        re-entrant in the thread that holds it (a step holds it around its own
        checkpoints, so that no undo can run while the agent's commands change files).

        Once the lock is ours, git lock files left behind by a writer that was killed
        are stale by definition; they are cleared, or every later checkpoint would fail.
        """
        wait_s = self.lock_wait_s if wait_s is None else wait_s
        busy = CheckpointError(
            f"checkpoint repo {self.git_dir} stayed busy for {wait_s:g} s (a tether session "
            "is running a step or recording, or another undo is running)"
        )
        if not self._thread_lock.acquire(timeout=wait_s):
            raise busy
        try:
            if self._depth == 0:
                self._lock_fd = self._flock(wait_s, busy)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._lock_fd is not None:
                    os.close(self._lock_fd)
                    self._lock_fd = None
        finally:
            self._thread_lock.release()

    def _flock(self, wait_s: float, busy: CheckpointError) -> int:
        fd = os.open(self.git_dir / "tether.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise busy from None
                time.sleep(0.02)
        try:
            self._clear_stale_locks()
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _clear_stale_locks(self) -> None:
        stale = [self.git_dir / "tether-index.lock", self.git_dir / "packed-refs.lock"]
        stale += (self.git_dir / "refs").rglob("*.lock")
        for lock in stale:
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()

    @staticmethod
    def _check_version(out: bytes) -> None:
        parts = out.decode(errors="replace").split()
        try:
            version = tuple(int(p) for p in parts[2].split(".")[:2])
        except (IndexError, ValueError):
            return
        if version < MIN_GIT:
            raise CheckpointError(
                f"checkpoints need git >= {MIN_GIT[0]}.{MIN_GIT[1]}, found {parts[2]}"
            )

    def sync_exclude(self, content: bytes) -> None:
        """Mirror the user's `.git/info/exclude` into ours, which git reads for this GIT_DIR."""
        path = self.git_dir / "info" / "exclude"
        try:
            if path.read_bytes() == content:
                return
        except OSError:
            pass
        path.write_bytes(content)

    def candidates(self) -> list[str]:
        """Untracked-and-not-ignored plus modified paths: the only ones whose size can matter."""
        out = self.run("ls-files", "-z", "-m", "-o", "--exclude-standard")
        return [os.fsdecode(p) for p in out.split(b"\0") if p]

    def stage(self, excluded: Iterable[str]) -> tuple[str, list[str]]:
        """Bring the private index to the workspace state (stat cache: only changes are
        hashed); return its tree id and the paths git refused (left out, like
        `excluded`): an unreadable file, a name git will not store. One such path must
        not make every later checkpoint fail."""
        left_out = list(excluded)
        refused: list[str] = []
        for _attempt in range(_MAX_REFUSED_ROUNDS):
            try:
                self._add(left_out)
            except CheckpointError as exc:
                names = [os.fsdecode(m) for m in _REFUSED.findall(exc.detail)]
                new = [n for n in dict.fromkeys(names) if n not in left_out]
                if not new:
                    raise
                left_out += new
                refused += new
                continue
            return self.run("write-tree").decode().strip(), refused
        raise CheckpointError(f"git refused too many paths in {self.work_tree}: {refused[:10]}")

    def _add(self, excluded: list[str]) -> None:
        specs = b"".join(b":(literal)" + os.fsencode(p) + b"\0" for p in excluded)
        if not specs:
            self.run("add", "-A")
            return
        self.run(
            "rm", "--cached", "-r", "-q", "-f", "--ignore-unmatch",
            "--pathspec-from-file=-", "--pathspec-file-nul", stdin=specs,
        )  # fmt: skip
        excludes = specs.replace(b":(literal)", b":(exclude,literal)")
        self.run(
            "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul",
            stdin=b".\0" + excludes,
        )  # fmt: skip

    def check_ignored(self, paths: Sequence[str], tree: str) -> set[str]:
        """Which of `paths` the ignore rules of checkpoint `tree` ignore: its own
        `.gitignore` files (laid out in a scratch directory, not read from the
        workspace, which may hold other rules now), our `info/exclude`, the global
        excludes."""
        if not paths:
            return set()
        rules: list[tuple[str, str]] = []
        for entry in self.run("ls-tree", "-r", "-z", tree).split(b"\0"):
            meta, _, raw = entry.partition(b"\t")
            fields = meta.split()
            regular = len(fields) == 3 and fields[0] in (b"100644", b"100755")
            if regular and raw.rsplit(b"/", 1)[-1] == b".gitignore":
                rules.append((os.fsdecode(raw), fields[2].decode()))
        blobs = self.read_blobs([sha for _, sha in rules])
        stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
        with tempfile.TemporaryDirectory(prefix="tether-ignore-") as scratch:
            for rel, sha in rules:
                dest = Path(scratch, rel)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(blobs[sha])
            out = self.run(
                "check-ignore", "--no-index", "-z", "--stdin",
                stdin=stdin, allow=(0, 1), env={"GIT_WORK_TREE": scratch}, cwd=Path(scratch),
            )  # fmt: skip
        return {os.fsdecode(p) for p in out.split(b"\0") if p}

    def resolve(self, rev: str) -> tuple[str, str] | None:
        """(commit, tree) of a revision, or None when it does not exist."""
        out = self.run("rev-parse", f"{rev}^{{commit}}", f"{rev}^{{tree}}", allow=(0, 128))
        lines = out.decode(errors="replace").split()
        if len(lines) != 2 or not all(_is_sha(x) for x in lines):
            return None
        return lines[0], lines[1]

    def commit(self, tree: str, parent: str | None, message: str, when: str) -> str:
        """A commit with a fixed identity and date, so nothing depends on user config."""
        args = ["commit-tree", tree] + (["-p", parent] if parent else [])
        dates: dict[str, str | None] = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        return self.run(*args, stdin=message.encode(), env=dates).decode().strip()

    def update_refs(self, updates: Sequence[tuple[str, str, str | None]]) -> None:
        """Move refs together; an old value guards against a concurrent writer."""
        lines = []
        for ref, new, old in updates:
            lines.append(f"update {ref} {new} {old}" if old else f"update {ref} {new}")
        self.run("update-ref", "--stdin", stdin=("\n".join(lines) + "\n").encode())

    def diff(self, old_tree: str, new_tree: str) -> list[RawChange]:
        """Per-path differences between two trees, recursive, renames off."""
        out = self.run("diff-tree", "-r", "-z", "--raw", "--no-renames", old_tree, new_tree)
        fields = out.split(b"\0")
        changes: list[RawChange] = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, _old_sha, new_sha, _status = meta[1:].decode().split()
            changes.append(RawChange(old_mode, new_mode, new_sha, os.fsdecode(path)))
        return changes

    def log(self, ref: str) -> list[tuple[str, str, str, str]]:
        """(commit, tree, parent, message) newest first; empty when the ref is missing."""
        if self.resolve(ref) is None:
            return []
        out = self.run("log", "-z", "--format=%H%x01%T%x01%P%x01%B", ref)
        entries = []
        for record in out.split(b"\0"):
            parts = record.decode(errors="replace").split("\x01", 3)
            if len(parts) == 4:
                commit, tree, parents, body = parts
                entries.append((commit.strip(), tree, parents.split(" ")[0], body))
        return entries

    def read_blobs(self, shas: Sequence[str]) -> dict[str, bytes]:
        """Contents of many blobs through one `cat-file --batch`."""
        if not shas:
            return {}
        unique = list(dict.fromkeys(shas))
        out = self.run("cat-file", "--batch", stdin=("\n".join(unique) + "\n").encode())
        blobs: dict[str, bytes] = {}
        pos = 0
        for sha in unique:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            if len(header) != 3 or header[1] != b"blob":
                raise CheckpointError(f"checkpoint repo {self.git_dir} lacks blob {sha}")
            size = int(header[2])
            blobs[sha] = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
        return blobs

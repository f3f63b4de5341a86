"""Checkpoints of the workspace, so anything the agent changed can be rolled back.

Snapshots live in a bare repository of their own, `<home>/checkpoints/<key>.git` (key: a
hash of the workspace's real path; `workspace.json` beside the objects names it), and
never in or through the user's `.git`. A checkpoint covers tracked and untracked files,
honours every ignore source git would (nested `.gitignore`, the user's
`.git/info/exclude`, global excludes) and leaves out files over `max_file_bytes`,
listing them as not covered. All checkpoints of a workspace form one linear chain on
`refs/tether/latest`; `refs/tether/sessions/<id>` marks each session's newest.

"Changed outside tether" means: the workspace differs from the latest checkpoint. So the
caller records a checkpoint before each mutating step (`create`) and another after it
(`settle`, tool "after:<tool>"); then the agent's own edits are always in the latest
checkpoint and only edits made since by someone else count as outside changes, which
`restore` refuses to overwrite unless forced. The pre-restore state is itself recorded
(tool "undo"), so every restore can be undone.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import os
import re
import stat
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tether.memory.checkpoint_apply import apply_plan
from tether.memory.checkpoint_git import (
    EMPTY_TREE,
    CheckpointError,
    CheckpointGit,
)
from tether.memory.checkpoint_ignore import global_excludes_file, inherited_excludes

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointError",
    "CheckpointStore",
    "RestoreResult",
    "store_path",
]

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
LATEST = "refs/tether/latest"
SESSION_REF = "refs/tether/sessions/"
MAX_SUMMARY = 2000
_SESSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_ID_RE = re.compile(r"[0-9a-f]{4,40}")


class CheckpointConflict(CheckpointError):
    """Restoring would overwrite files changed outside tether since the latest checkpoint."""

    def __init__(self, files: builtins.list[str]) -> None:
        shown = ", ".join(files[:20]) + (f" and {len(files) - 20} more" if len(files) > 20 else "")
        super().__init__(
            f"{len(files)} file(s) changed since the latest checkpoint (by you, or by a "
            f"tether session still running) would be overwritten or removed: {shown}; use "
            "force to restore anyway (they are saved first)"
        )
        self.files = tuple(files)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One recorded state; `changed` is relative to the checkpoint before it."""

    id: str
    session: str
    turn: int
    time: str
    tool: str
    summary: str
    changed: tuple[str, ...] = ()
    not_covered: tuple[str, ...] = ()
    unchanged: bool = False
    added: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    restored: str = ""  # for "after:undo": the commit that was restored
    commit: str = ""

    @property
    def modified(self) -> tuple[str, ...]:
        gone = set(self.added) | set(self.deleted)
        return tuple(p for p in self.changed if p not in gone)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What a restore did; restoring `before.id` undoes it."""

    target: Checkpoint
    before: Checkpoint
    after: Checkpoint
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    skipped: tuple[str, ...]  # occupied by ignored/too-large files or unsafe parents
    overridden: tuple[str, ...]  # outside changes overwritten because of force
    kept: tuple[str, ...] = ()  # not held by the target (ignored there, too large): left


@dataclass(frozen=True, slots=True)
class _Snapshot:
    tree: str
    not_covered: tuple[str, ...]


def store_path(home: Path, workspace: Path) -> Path:
    """Where the checkpoints of `workspace` live (whether or not any exist yet)."""
    real = os.path.realpath(workspace)
    key = hashlib.sha256(os.fsencode(real)).hexdigest()[:20]
    return Path(home) / "checkpoints" / f"{key}.git"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class CheckpointStore:
    """Records and restores checkpoints of one workspace."""

    def __init__(
        self,
        home: Path,
        workspace: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        git_timeout_s: float = 60.0,
    ) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        if not self.workspace.is_dir():
            raise CheckpointError(f"workspace {self.workspace} is not a directory")
        self.max_file_bytes = max_file_bytes
        self.repo = store_path(home, self.workspace)
        self._own_exclude = _own_exclude(self.workspace, Path(home))
        self._git = CheckpointGit(
            self.repo, self.workspace, global_excludes_file(), timeout_s=git_timeout_s
        )
        self._git.init()
        meta = self.repo / "workspace.json"
        try:
            named = json.loads(meta.read_text(encoding="utf-8"))["workspace"]
        except (OSError, ValueError, KeyError, TypeError):
            named = None
        if named is None:
            record = {"workspace": os.fsdecode(self.workspace), "created": _now()}
            meta.write_text(json.dumps(record) + "\n", encoding="utf-8")
        elif named != os.fsdecode(self.workspace):
            raise CheckpointError(f"checkpoint repo {self.repo} belongs to {named}")

    # -- recording -----------------------------------------------------------------

    def create(self, *, session: str, turn: int, tool: str, summary: str) -> Checkpoint:
        """Record the workspace now; no commit when nothing changed since the latest."""
        _check_session(session)
        with self._git.locked():
            snap = self._snapshot()
            return self._record(snap, session=session, turn=turn, tool=tool, summary=summary)

    def hold(self) -> contextlib.AbstractContextManager[None]:
        """Keep other writers (an undo, another process's step) out for a while: around a
        step, so nothing restores files while the agent's commands change them."""
        return self._git.locked()

    def settle(self, *, session: str, turn: int, tool: str, summary: str = "") -> Checkpoint:
        """Record the state after a step, so the agent's own edits are not outside edits."""
        return self.create(session=session, turn=turn, tool=f"after:{tool}", summary=summary)

    def _snapshot(self) -> _Snapshot:
        self._git.sync_exclude(inherited_excludes(self.workspace) + self._own_exclude)
        excluded: list[str] = []
        not_covered: list[str] = []
        for rel in self._git.candidates():
            if rel.endswith("/"):  # a nested repository: git would store only a gitlink
                excluded.append(rel.rstrip("/"))
                not_covered.append(rel)
                continue
            if any(part.lower() == ".git" for part in rel.split("/")):
                excluded.append(rel)  # `.GIT/x`: git refuses it, a restore never writes it
                not_covered.append(rel)
                continue
            try:
                st = os.lstat(self.workspace / rel)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                excluded.append(rel)
                not_covered.append(rel)
        tree, refused = self._git.stage(excluded)
        return _Snapshot(tree, tuple(sorted([*not_covered, *refused])))

    def _record(
        self,
        snap: _Snapshot,
        *,
        session: str,
        turn: int,
        tool: str,
        summary: str,
        restored: str = "",
    ) -> Checkpoint:
        latest = self._git.resolve(LATEST)
        when = _now()
        summary = summary[:MAX_SUMMARY]
        base = Checkpoint(
            "", session, turn, when, tool, summary, not_covered=snap.not_covered, restored=restored
        )
        if latest is not None and latest[1] == snap.tree:
            return replace(base, id=latest[0][:12], commit=latest[0], unchanged=True)
        changes = self._git.diff(latest[1] if latest else EMPTY_TREE, snap.tree)
        added = tuple(c.path for c in changes if c.old_mode == "000000")
        deleted = tuple(c.path for c in changes if c.new_mode == "000000")
        cp = replace(base, changed=tuple(c.path for c in changes), added=added, deleted=deleted)
        meta = {k: v for k, v in cp.to_dict().items() if k not in ("id", "commit", "unchanged")}
        message = f"tether {tool} (session {session}, turn {turn})\n\n{json.dumps(meta)}\n"
        commit = self._git.commit(snap.tree, latest[0] if latest else None, message, when)
        self._git.update_refs(
            [(LATEST, commit, latest[0] if latest else None), (SESSION_REF + session, commit, None)]
        )
        return replace(cp, id=commit[:12], commit=commit)

    # -- reading -------------------------------------------------------------------

    def list(self, session: str | None = None) -> builtins.list[Checkpoint]:
        """Checkpoints of this workspace, oldest first, optionally of one session."""
        result = [cp for cp, _tree, _parent in self._entries()]
        if session is not None:
            result = [cp for cp in result if cp.session == session]
        return result

    def get(self, checkpoint_id: str) -> Checkpoint:
        """The checkpoint with this id (any unique prefix of at least 4 hex digits)."""
        return self._lookup(checkpoint_id)[0]

    def undo_target(self) -> Checkpoint | None:
        """The state before the last step that changed the workspace; repeated undos walk
        further back, skipping states that earlier undos already returned from."""
        entries = self._entries()
        if not entries:
            return None
        by_commit = {cp.commit: (cp, tree, parent) for cp, tree, parent in entries}
        current_tree = entries[-1][1]
        cp, _tree, parent = entries[-1]
        while cp.tool == "after:undo" and cp.restored in by_commit:
            cp, _tree, parent = by_commit[cp.restored]
        while parent in by_commit:
            cp, tree, parent = by_commit[parent]
            if tree != current_tree:
                return cp
        return None

    def session_start(self, session: str | None = None) -> Checkpoint | None:
        """The state before a session (default: the latest one) first changed anything."""
        entries = self._entries()
        if session is None:
            if not entries:
                return None
            session = entries[-1][0].session
        by_commit = {cp.commit: cp for cp, _tree, _parent in entries}
        for cp, _tree, parent in entries:
            if cp.session == session:
                if not cp.tool.startswith("after:"):
                    return cp
                return by_commit.get(parent)
        return None

    def _entries(self) -> builtins.list[tuple[Checkpoint, str, str]]:
        entries = []
        for commit, tree, parent, body in reversed(self._git.log(LATEST)):
            cp = _parse(commit, body)
            if cp is not None:
                entries.append((cp, tree, parent))
        return entries

    def _lookup(self, checkpoint_id: str) -> tuple[Checkpoint, str]:
        if not _ID_RE.fullmatch(checkpoint_id):
            raise CheckpointError(f"{checkpoint_id!r} is not a checkpoint id (hex digits)")
        found = self._git.resolve(checkpoint_id)
        if found is None:
            raise CheckpointError(f"no checkpoint {checkpoint_id} for {self.workspace}")
        body = self._git.run("cat-file", "commit", found[0]).decode(errors="replace")
        cp = _parse(found[0], body.split("\n\n", 1)[-1])
        if cp is None:
            raise CheckpointError(f"{checkpoint_id} is not a tether checkpoint")
        return cp, found[1]

    # -- restoring -----------------------------------------------------------------

    def restore(
        self,
        checkpoint_id: str,
        *,
        force: bool = False,
        session: str | None = None,
        turn: int | None = None,
    ) -> RestoreResult:
        """Bring the workspace back to a checkpoint, first recording the current state.

        `session`/`turn` label the two checkpoints the restore records; they default to
        those of the latest checkpoint.
        """
        with self._git.locked():
            return self._restore(checkpoint_id, force=force, session=session, turn=turn)

    def _restore(
        self, checkpoint_id: str, *, force: bool, session: str | None, turn: int | None
    ) -> RestoreResult:
        target, target_tree = self._lookup(checkpoint_id)
        latest = self._git.resolve(LATEST)
        if latest is None:  # pragma: no cover - a checkpoint exists, so latest does
            raise CheckpointError(f"checkpoint repo {self.repo} has no latest ref")
        last = self._lookup(latest[0])[0]
        session = session if session is not None else last.session
        turn = turn if turn is not None else last.turn
        _check_session(session)
        snap = self._snapshot()
        outside = {c.path for c in self._git.diff(latest[1], snap.tree)}
        plan = self._git.diff(snap.tree, target_tree)
        conflicts = sorted(outside & {c.path for c in plan})
        if conflicts and not force:
            raise CheckpointConflict(conflicts)
        before = self._record(
            snap, session=session, turn=turn, tool="undo", summary=f"before restoring {target.id}"
        )
        try:
            applied = apply_plan(
                self.workspace, self._git, plan, tree=target_tree, not_covered=target.not_covered
            )
        except CheckpointError as exc:
            # Cut short: record what is there now, not as a finished restore (so a plain
            # undo does not skip past it), and say how to go back.
            with contextlib.suppress(CheckpointError):
                self._record(
                    self._snapshot(),
                    session=session,
                    turn=turn,
                    tool="after:undo",
                    summary=f"partly restored {target.id}: {exc}",
                )
            raise CheckpointError(
                f"the restore of {target.id} stopped part way ({exc}); some files were "
                f"already restored. To return to the state before it: undo --to {before.id}"
            ) from exc
        after = self._record(
            self._snapshot(),
            session=session,
            turn=turn,
            tool="after:undo",
            summary=f"restored {target.id}",
            restored=target.commit,
        )
        return RestoreResult(
            target,
            before,
            after,
            applied.written,
            applied.deleted,
            applied.skipped,
            tuple(conflicts),
            applied.kept,
        )


def _own_exclude(workspace: Path, store_dir: Path) -> bytes:
    """An exclude line for all of tether's state (transcripts, checkpoints) when
    $TETHER_HOME lies inside the workspace: it changes at every step."""
    real = Path(os.path.realpath(store_dir))
    if workspace not in real.parents:
        return b""
    rel = os.fsencode(real.relative_to(workspace).as_posix())
    return b"\n/" + re.sub(rb"([*?\[\\!#])", rb"\\\1", rel) + b"/\n"


def _check_session(session: str) -> None:
    if not _SESSION_RE.fullmatch(session) or session.endswith(".lock") or ".." in session:
        raise CheckpointError(f"invalid session id for a checkpoint ref: {session!r}")


def _parse(commit: str, body: str) -> Checkpoint | None:
    """A checkpoint from its commit message, or None when it is not one of ours."""
    _subject, _, payload = body.partition("\n\n")
    try:
        meta = json.loads(payload)
        return Checkpoint(
            id=commit[:12],
            session=str(meta["session"]),
            turn=int(meta["turn"]),
            time=str(meta["time"]),
            tool=str(meta["tool"]),
            summary=str(meta["summary"]),
            changed=tuple(meta.get("changed", ())),
            not_covered=tuple(meta.get("not_covered", ())),
            added=tuple(meta.get("added", ())),
            deleted=tuple(meta.get("deleted", ())),
            restored=str(meta.get("restored", "")),
            commit=commit,
        )
    except (ValueError, KeyError, TypeError):
        return None

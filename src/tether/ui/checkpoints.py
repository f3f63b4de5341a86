"""`tether checkpoints` and `tether undo`: see what was recorded, roll the workspace back.

Both work on the checkpoints of one workspace (the current directory, or `-C DIR`),
whichever sessions recorded them. Undo refuses to overwrite files changed outside
tether since the latest checkpoint unless forced, and every undo can itself be undone.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from tether.config import Settings
from tether.errors import EXIT_OK, EXIT_UNDO_CONFLICT, UsageError
from tether.memory.checkpoints import (
    Checkpoint,
    CheckpointConflict,
    CheckpointError,
    CheckpointStore,
    RestoreResult,
    store_path,
)

if TYPE_CHECKING:
    from tether.session import Session

__all__ = ["list_checkpoints", "session_undo", "undo"]

_SHOWN_FILES = 3


def list_checkpoints(
    settings: Settings, out: TextIO, *, session: str | None = None, as_json: bool = False
) -> int:
    """Oldest first: id, session, turn, time, tool, command, files changed."""
    found: list[Checkpoint] = []
    if store_path(settings.home, settings.workspace).is_dir():
        store = _store(settings)
        found = store.list(session)
    if as_json:
        out.write(json.dumps([_public(cp) for cp in found], indent=2) + "\n")
        return EXIT_OK
    if not found:
        which = f" of session {session}" if session else ""
        out.write(f"No checkpoints{which} for {settings.workspace}.\n")
        return EXIT_OK
    out.write(f"{'ID':12}  {'SESSION':22}  {'TURN':>4}  {'TIME':19}  {'TOOL':12}  CHANGES\n")
    for cp in found:
        when = cp.time.replace("T", " ")[:19]
        out.write(
            f"{cp.id:12}  {_safe(cp.session)[:22]:22}  {cp.turn:>4}  {when:19}  {cp.tool[:12]:12}  "
            f"{_changes(cp)}\n"
        )
        if cp.summary:
            out.write(f"{'':14}{_one_line(cp.summary)}\n")
    out.write(f"{len(found)} checkpoint(s); `tether undo` goes back one step, --to ID to any.\n")
    return EXIT_OK


def undo(
    settings: Settings,
    out: TextIO,
    *,
    to: str | None = None,
    session: str | None = None,
    whole_session: bool = False,
    force: bool = False,
    as_json: bool = False,
) -> int:
    """Restore the state before the last change, before a whole session, or checkpoint `to`."""
    if not store_path(settings.home, settings.workspace).is_dir():
        out.write(f"Nothing to undo: no checkpoints for {settings.workspace}.\n")
        return EXIT_OK
    store = _store(settings)
    later: list[str] = []
    if whole_session:
        target = store.session_start(session)
        if target is None:
            which = f"session {session}" if session else "the latest session"
            raise UsageError(f"no checkpoints of {which} for {settings.workspace}")
        to = target.id
        later = _later_sessions(store.list(), target, session)
    elif to is None:
        target = store.undo_target()
        if target is None:
            out.write(f"Nothing to undo for {settings.workspace}.\n")
            return EXIT_OK
        to = target.id
    else:
        try:
            store.get(to)
        except CheckpointError as exc:
            raise UsageError(f"{exc}; see `tether checkpoints`") from None
    try:
        result = store.restore(to, force=force)
    except CheckpointConflict as exc:
        if as_json:
            out.write(json.dumps({"restored": False, "conflicts": list(exc.files)}) + "\n")
        else:
            out.write(f"Nothing was changed: {_safe(str(exc))}.\n")
            out.write("Run `tether undo --force` to restore anyway; their current content is ")
            out.write("recorded first, so that undo can be undone too.\n")
        return EXIT_UNDO_CONFLICT
    if as_json:
        out.write(json.dumps({**_result(result), "later_sessions": later}, indent=2) + "\n")
    else:
        _report(result, out)
        if later:
            shown = ", ".join(_safe(x) for x in later)
            out.write(f"This also undid what later sessions changed: {shown}.\n")
    return EXIT_OK


def _later_sessions(found: list[Checkpoint], start: Checkpoint, session: str | None) -> list[str]:
    """Sessions other than the one undone that recorded changes after its start."""
    own = session or (found[-1].session if found else "")
    ids = [cp.commit for cp in found]
    after = found[ids.index(start.commit) + 1 :] if start.commit in ids else []
    return sorted({cp.session for cp in after if cp.session != own and cp.changed})


def _store(settings: Settings) -> CheckpointStore:
    return CheckpointStore(
        settings.home, settings.workspace, max_file_bytes=settings.checkpoint_max_file_bytes
    )


def _report(result: RestoreResult, out: TextIO) -> None:
    target = result.target
    what = f"{target.tool} {_one_line(target.summary)}".strip()
    out.write(
        f"Restored checkpoint {target.id} (session {_safe(target.session)}, turn {target.turn}"
    )
    out.write(f", {what}).\n" if what else ").\n")
    for label, paths in (
        ("written", result.written),
        ("deleted", result.deleted),
        ("not restored (an ignored or too-large file, or a directory, is in the way)",
         result.skipped),
        ("overwritten although changed outside tether (saved first)", result.overridden),
        ("left as they are (ignored or not covered at that checkpoint)", result.kept),
    ):  # fmt: skip
        if paths:
            shown = ", ".join(_safe(p) for p in paths[:20])
            shown += f" (+{len(paths) - 20} more)" if len(paths) > 20 else ""
            out.write(f"  {label}: {shown}\n")
    if not (result.written or result.deleted):
        out.write("  the workspace was already in that state\n")
    out.write(f"To undo this undo: tether undo --to {result.before.id}\n")


def _public(cp: Checkpoint) -> dict[str, object]:
    data = cp.to_dict()
    data.pop("unchanged", None)
    return data


def _result(result: RestoreResult) -> dict[str, object]:
    return {
        "restored": True,
        "target": _public(result.target),
        "before": result.before.id,
        "after": result.after.id,
        "written": list(result.written),
        "deleted": list(result.deleted),
        "skipped": list(result.skipped),
        "overridden": list(result.overridden),
        "kept": list(result.kept),
    }


def _changes(cp: Checkpoint) -> str:
    if not cp.changed:
        return "-"
    names = ", ".join(_safe(p) for p in cp.changed[:_SHOWN_FILES])
    more = f" +{len(cp.changed) - _SHOWN_FILES}" if len(cp.changed) > _SHOWN_FILES else ""
    return f"{len(cp.changed)}: {names}{more}"


def _one_line(text: str) -> str:
    line = _safe(" ".join(text.split()))
    return line if len(line) <= 100 else line[:97] + "..."


def _safe(text: str) -> str:
    """Control characters shown as escapes: a file name must not drive the terminal."""
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in text)


def session_undo(session: Session, argument: str, out: TextIO) -> None:
    """`/undo [ID] [--force]` inside an interactive session; `/checkpoints` lists."""
    words = argument.split()
    force = "--force" in words
    ids = [w for w in words if w != "--force"]
    if len(ids) > 1:
        out.write("usage: /undo [CHECKPOINT] [--force]\n")
        return
    try:
        result = session.undo(ids[0] if ids else None, force=force)
    except CheckpointConflict as exc:
        out.write(
            f"Nothing was changed: {_safe(str(exc))}.\nUse /undo --force to restore anyway.\n"
        )
        return
    except CheckpointError as exc:
        out.write(f"Cannot undo: {exc}.\n")
        return
    if result is None:
        out.write("Nothing to undo.\n")
        return
    _report(result, out)
    out.write("The model is told about the undo with your next request.\n")

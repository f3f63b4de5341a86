"""Process limits: a fork bomb dies inside the sandbox, and nothing outlives a command.

The strong guard is a cgroup with a `pids` limit per running command: every process
the command starts lands in it, a fork bomb hits the ceiling there, and at the end
everything still in it is killed, including processes that left the command's
process group (`setsid`, double forks). On cgroup v1 the cgroups are kept and reused
through resident spawner threads (see `spawner`), since each move into a cgroup is
slow; on v2 each command gets a fresh one. Where no pids cgroup is writable,
a non-root user falls back to RLIMIT_NPROC; root has no fallback (the kernel exempts
it from RLIMIT_NPROC), and `describe` says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from tether.sandbox.spawner import Spawner, kill_members

__all__ = ["Guard", "ProcessLimits"]

_MAX_SPAWNERS = 4  # per backend; each holds a cgroup (and a thread)
_KILL_PATIENCE = 2.0  # seconds to keep killing what is left in a cgroup


@dataclass(frozen=True, slots=True)
class Guard:
    """What a launch does for its limits: in the child before exec (`preexec`; None
    when there is nothing to do), and afterwards (`cleanup`). `procs` is the cgroup's
    `cgroup.procs` when there is one: a launch that would rather not fork the parent
    with a pre-exec hook can have a tiny shell write its own pid there, then exec."""

    preexec: Callable[[], None] | None
    cleanup: Callable[[], None]
    procs: str | None = None
    spawn: Callable[[Callable[[], Any]], Any] | None = None
    offline: bool = False  # what `spawn` starts is already in a namespace without network


class ProcessLimits:
    """Finds how processes can be bounded here (once), then makes a guard per command."""

    def __init__(self) -> None:
        self._parent: Path | bool | None = False  # False: not looked yet
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._spawners: list[Spawner] = []
        self._free: dict[bool, list[Spawner]] = {True: [], False: []}
        self._offline_works = True
        self._running: int | None = None  # the user's processes when first needed

    def describe(self) -> str:
        parent = self._cgroup_parent()
        if parent is not None:
            return f"pids cgroup under {parent}"
        if os.geteuid() != 0:
            return "RLIMIT_NPROC (no writable pids cgroup)"
        return "none: no writable pids cgroup, and root ignores RLIMIT_NPROC"

    def guard(self, max_processes: int, *, offline: bool = False) -> Guard:
        """`offline`: prefer a spawner without network (the guard says if it got one)."""
        parent = self._cgroup_parent()
        if parent is not None and (parent / "tasks").exists():  # v1: threads placed singly
            with contextlib.suppress(OSError):
                spawner = self._borrow(parent, offline)
                spawner.set_limit(max_processes)
                give_back = partial(self._give_back, spawner)
                return Guard(None, give_back, spawn=spawner.run, offline=spawner.offline)
        if parent is not None:
            with contextlib.suppress(OSError):
                return _cgroup_guard(parent, max_processes, next(self._counter))
        if self._running is None and os.geteuid() != 0:
            self._running = _processes_of(os.getuid())  # a /proc scan: once, not per command
        return _rlimit_guard(max_processes, self._running or 0)

    def close(self) -> None:
        """Remove the cgroups of the spawners (their threads leave them first)."""
        with self._lock:
            spawners, self._spawners = self._spawners, []
            self._free = {True: [], False: []}
        for spawner in spawners:
            spawner.close()

    def _borrow(self, parent: Path, offline: bool) -> Spawner:
        """A free spawner whose last command is gone; while the only free ones are still
        tearing down (commands back to back), a new one, up to a few; else wait."""
        with self._lock:
            offline = offline and self._offline_works
            free = self._free[offline]
            ready = next((s for s in free if s.is_empty()), None)
            if ready is not None:
                free.remove(ready)
                return ready
            waiting = free.pop() if free and len(self._spawners) >= _MAX_SPAWNERS else None
            if not self._spawners:
                _sweep_stale(parent)
        if waiting is not None:
            if waiting.empty():
                return waiting
            with self._lock:  # it could not be emptied: never use it again
                self._spawners.remove(waiting)
        group = parent / f"tether-{os.getpid()}-spawner{next(self._counter)}"
        try:
            spawner = Spawner(group, offline=offline and self._offline_works)
        except OSError:
            if not (offline and self._offline_works):
                raise
            self._offline_works = False  # no namespaces for threads here: launches add them
            spawner = Spawner(group)
        with self._lock:
            self._spawners.append(spawner)
        return spawner

    def _give_back(self, spawner: Spawner) -> None:
        """Everything left is killed now; waiting for it to be gone happens at the next
        borrow (a spawner whose cgroup cannot be emptied then is not used again)."""
        spawner.kill_all()
        with self._lock:
            if spawner in self._spawners:
                self._free[spawner.offline].append(spawner)

    def _cgroup_parent(self) -> Path | None:
        if self._parent is False:
            self._parent = _writable_pids_cgroup()
        return self._parent if isinstance(self._parent, Path) else None


def _sweep_stale(parent: Path) -> None:
    """Empty cgroups left by a tether that died without closing: remove them."""
    for group in parent.glob("tether-*-*"):
        pid = group.name.split("-")[1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                group.rmdir()


def _cgroup_guard(parent: Path, max_processes: int, serial: int) -> Guard:
    group = parent / f"tether-{os.getpid()}-{serial}"
    group.mkdir()
    try:
        (group / "pids.max").write_text(str(max_processes))
        procs = os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        group.rmdir()
        raise

    def join() -> None:
        os.write(procs, b"0")  # "0": the writing process itself

    def cleanup() -> None:
        os.close(procs)
        _empty(group)

    return Guard(join, cleanup, str(group / "cgroup.procs"))


def _empty(group: Path) -> None:
    """Kill everything left in `group`, then remove it."""
    give_up = time.monotonic() + _KILL_PATIENCE
    while True:
        pids = kill_members(group) or []
        if not pids:
            with contextlib.suppress(OSError):
                group.rmdir()
                return
        if time.monotonic() > give_up:
            with contextlib.suppress(OSError):
                group.rmdir()
            return
        time.sleep(0.001)


def _rlimit_guard(max_processes: int, running: int) -> Guard:
    """RLIMIT_NPROC counts all the user's processes, so allow what runs now and more."""
    if os.geteuid() == 0:
        return Guard(None, lambda: None)
    limit = running + max_processes
    _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))

    return Guard(apply, lambda: None)


def _processes_of(uid: int) -> int:
    count = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid:
                        count += 1
    return count


def _writable_pids_cgroup() -> Path | None:
    """The cgroup we are in, on a hierarchy with the pids controller, if we may add to it."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        ident, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if "pids" in controllers.split(","):
            root = _mount_point(mounts, "cgroup", "pids")
        elif ident == "0" and controllers == "":
            root = _mount_point(mounts, "cgroup2", None)
        else:
            continue
        if root is None:
            continue
        here = root / path.lstrip("/")
        usable = (here / "cgroup.procs").exists() and os.access(here, os.W_OK)
        if usable and (controllers or _v2_pids_delegated(here)):
            return here
    return None


def _v2_pids_delegated(here: Path) -> bool:
    try:
        return "pids" in (here / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


def _mount_point(mountinfo: list[str], fstype: str, option: str | None) -> Path | None:
    for line in mountinfo:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3 or extra[0] != fstype:
            continue
        if fields[3] != "/":  # a bind of a sub-cgroup: paths in /proc/self/cgroup mislead
            continue
        if option is None or option in extra[2].split(","):
            return Path(fields[4])
    return None

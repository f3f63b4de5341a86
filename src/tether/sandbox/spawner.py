"""A thread that lives in a pids cgroup and starts commands there.

Moving a process into a cgroup costs an RCU grace period (the kernel's cgroup
threadgroup lock): from 1 to 15 ms on the 2-core machines here, for every command.
A process is born in the cgroup of the thread that forks it, and cgroup v1 places
threads one by one, so a thread that moved itself into a cgroup once can start any
number of commands inside it for free. Each command borrows a spawner (one per
concurrent command); when the command ends, everything left in the cgroup but our
own thread is killed, and the spawner is free for the next command.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import queue
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tether.sandbox import linux

__all__ = ["Spawner", "kill_members"]

T = TypeVar("T")
_KILL_PATIENCE = 2.0  # seconds to keep killing what is left after a command
_START_PATIENCE = 60.0  # seconds a fork and exec may take, even on a machine thrashing


class Spawner:
    """One cgroup (v1, pids) with one resident thread that forks commands into it."""

    def __init__(self, group: Path, *, offline: bool = False) -> None:
        """`offline`: the thread also moves into a network and IPC namespace of its own
        (with only loopback, up), so what it starts has no network without paying for
        a new namespace per command; network and IPC namespaces are per thread."""
        self.group = group
        self.offline = offline
        self._reaper = _orphans_come_to_us()
        self._limit = -1
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event] | None]
        self._jobs = queue.SimpleQueue()
        group.mkdir()
        ready = threading.Event()
        failure: list[OSError] = []
        self._thread = threading.Thread(
            target=self._serve, args=(ready, failure), name=f"tether-spawner-{group.name}"
        )
        self._thread.daemon = True
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            with contextlib.suppress(OSError):
                group.rmdir()
            raise failure[0]

    def set_limit(self, max_processes: int) -> None:
        """Our resident thread counts as one task, hence the + 1."""
        if max_processes != self._limit:
            (self.group / "pids.max").write_text(str(max_processes + 1))
            self._limit = max_processes

    def run(self, start: Callable[[], T]) -> T:
        """Call `start` (which forks) on the resident thread, so the child is born inside."""
        box: list[Any] = []
        done = threading.Event()
        self._jobs.put((start, box, done))
        if not done.wait(_START_PATIENCE):
            raise OSError(f"the spawner thread did not start the command in {_START_PATIENCE} s")
        result = box[0]
        if isinstance(result, BaseException):
            raise result
        return result  # type: ignore[no-any-return]

    def empty(self) -> bool:
        """Kill every process left in the cgroup (ours excepted) and wait until gone.

        Orphans of the command may have become our children (tether as PID 1 in a
        container, or a subreaper): they are reaped here, or as zombies they would
        keep counting against the limit. False when the cgroup could not be emptied.
        """
        me = os.getpid()
        give_up = time.monotonic() + _KILL_PATIENCE
        while True:
            others = kill_members(self.group, spare=me)
            if others is None:
                return False
            if not others and (not self._reaper or self._charged() <= 1):
                return True
            if not others:  # zombies of ours still charged: we are their reaper
                self._reap_zombies(me)
            if time.monotonic() > give_up:
                return False
            time.sleep(0.001)

    def is_empty(self) -> bool:
        """Nothing of a previous command left, zombies included (no waiting)."""
        try:
            pids = (self.group / "cgroup.procs").read_text().split()
        except OSError:
            return False
        return pids in ([], [str(os.getpid())]) and (not self._reaper or self._charged() <= 1)

    def kill_all(self) -> None:
        """One pass of SIGKILL over what is left, without waiting for it to be gone:
        a PID namespace takes a while to tear down, and nobody needs to wait for that
        until the cgroup is used again (`empty` then)."""
        kill_members(self.group, spare=os.getpid())

    def _charged(self) -> int:
        """Tasks the pids controller counts here, zombies included (our thread is one)."""
        try:
            return int((self.group / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    def _reap_zombies(self, me: int) -> None:
        """Reap our zombie children that were in this cgroup; nothing else is ours."""
        mark = f"/{self.group.name}\n".encode()
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_bytes().rpartition(b")")[2].split()
                if stat[0] != b"Z" or int(stat[1]) != me:
                    continue
                if mark not in Path(entry.path, "cgroup").read_bytes():
                    continue
                os.waitpid(int(entry.name), os.WNOHANG)
            except (OSError, ValueError, IndexError):
                continue

    def close(self) -> None:
        """Stop the thread (it leaves the cgroup first) and remove the cgroup."""
        self.empty()
        self._jobs.put(None)
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self.group.rmdir()

    def _serve(self, ready: threading.Event, failure: list[OSError]) -> None:
        tid = str(threading.get_native_id())
        try:
            (self.group / "tasks").write_text(tid)
            if self.offline:
                linux.unshare(linux.CLONE_NEWNET | linux.CLONE_NEWIPC)
                _loopback_up()
        except Exception as exc:  # whatever it is, the caller must hear of it, not hang
            failure.append(exc if isinstance(exc, OSError) else OSError(str(exc)))
            ready.set()
            return
        ready.set()
        try:
            while (job := self._jobs.get()) is not None:
                start, box, done = job
                try:
                    box.append(start())
                except BaseException as exc:  # handed to the caller, raised there
                    box.append(exc)
                done.set()
        finally:
            with contextlib.suppress(OSError):
                (self.group.parent / "tasks").write_text(tid)


def _loopback_up() -> None:
    """A fresh network namespace has `lo` down: 127.0.0.1 would not even reach itself."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def _orphans_come_to_us() -> bool:
    """PID 1 (a container's init) or a subreaper: the command's orphans become ours."""
    if os.getpid() == 1:
        return True
    flag = ctypes.c_int(0)
    linux.libc().prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return bool(flag.value)


def kill_members(group: Path, *, spare: int | None = None) -> list[int] | None:
    """SIGKILL every process in the cgroup `group` but `spare`, reaping any that are
    our children; the pids found (None when the cgroup cannot be read)."""
    try:
        pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return None
    others = [pid for pid in pids if pid != spare]
    for pid in others:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)  # only ever one of ours: the command's
    return others

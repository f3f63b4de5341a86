"""Landlock + seccomp: the command restricts itself in the child, before exec.

For machines without bwrap. The parent builds everything — a Landlock ruleset that
allows writing only beneath the workspace, the private temp directory and the extra
writable paths (reading and executing stay free), and a seccomp filter refusing
inet sockets when the network is off — so that the child, between fork and exec,
only makes system calls: it joins its process-limit cgroup, keeps the protected
paths read-only with bind mounts in a mount namespace of its own, drops every
capability, sets no_new_privs, and enforces the ruleset and the filter. Landlock
cannot deny a subtree of an allowed one, hence the mounts for `.git/hooks` & co.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from tether.sandbox import linux
from tether.sandbox.base import Launch, SandboxPolicy, hidden_mounts, protected_mounts
from tether.sandbox.limits import ProcessLimits
from tether.sandbox.seccomp import network_filter

__all__ = ["LandlockSandbox", "abi_version"]

# filesystem rights (the kernel's LANDLOCK_ACCESS_FS_*), and the ABI that added them
_WRITE_FILE = 1 << 1
_FILE_WRITES = {_WRITE_FILE: 1, 1 << 14: 3}  # write, truncate
_DIR_WRITES = {
    1 << 4: 1, 1 << 5: 1, 1 << 6: 1, 1 << 7: 1, 1 << 8: 1, 1 << 9: 1, 1 << 10: 1,
    1 << 11: 1, 1 << 12: 1,  # remove dir/file, make char/dir/reg/sock/fifo/block/sym
    1 << 13: 2,  # refer: rename and link across directories
}  # fmt: skip
_NET_TCP = (1 << 0) | (1 << 1)  # bind, connect (ABI 4)
_SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1  # ABI 6
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx")
_SHARED_DIRS = ("/dev/pts", "/dev/shm")  # ptys; POSIX shared memory (multiprocessing)
_SEALED = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
_PTS = b"newinstance,ptmxmode=0666,mode=620"
_ST_TO_MS = {2: linux.MS_NOSUID, 4: linux.MS_NODEV, 8: 8, 1024: 1024, 2048: 2048, 4096: 1 << 21}


def abi_version() -> int:
    """The Landlock ABI this kernel offers; 0 when it has none (or it is disabled)."""
    try:
        return linux.syscall("landlock_create_ruleset", None, 0, _CREATE_RULESET_VERSION)
    except OSError:
        return 0


def _rights(table: dict[int, int], abi: int) -> int:
    return sum(bit for bit, since in table.items() if abi >= since)


class LandlockSandbox:
    name = "landlock"

    def __init__(self) -> None:
        self.limits = ProcessLimits()
        self._namespaces: str | bool | None = False  # False: not tried yet
        self._abi = 0

    @property
    def caveat(self) -> str | None:
        """What this backend cannot do here, said to the user (None: nothing)."""
        mode = self._mount_mode()
        if mode is None:
            return (
                "landlock here cannot use a mount namespace, so .git/hooks, .git/config "
                "and .tether are not kept read-only, and sockets such as the session bus "
                "are not hidden; install bubblewrap"
            )
        return None

    def close(self) -> None:
        self.limits.close()

    def probe(self) -> str | None:
        self._abi = abi_version()
        if self._abi < 1:
            return "this kernel has no Landlock (needs Linux 5.13+ with landlock in lsm=)"
        if self._abi < 4 or network_filter() is None:
            return f"Landlock ABI {self._abi} cannot refuse network access here (needs 4+)"
        root = Path("/")  # not the cwd: it may be gone, or unreadable
        launch = self.launch(["true"], SandboxPolicy(workspace=root, tmp=root))
        try:
            done = subprocess.run(
                launch.argv, preexec_fn=launch.preexec, capture_output=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"restricting a child failed: {exc}"
        finally:
            if launch.cleanup is not None:
                launch.cleanup()
            self.limits.close()  # the probe's spawner: a session makes its own
        if done.returncode != 0:
            return f"a restricted `true` exited with {done.returncode}"
        return None

    def launch(self, argv: Sequence[str], policy: SandboxPolicy) -> Launch:
        abi = self._abi or abi_version()
        self._abi = abi
        private = self._mount_mode() is not None
        ruleset = _ruleset(policy, abi, shared_devices=not private)
        seccomp = None if policy.network else network_filter()
        guard = self.limits.guard(policy.max_processes, offline=not policy.network)
        mounts = self._mount_steps(policy, ruleset, abi)

        def restrict() -> None:
            if guard.preexec is not None:
                guard.preexec()
            mounts()
            linux.drop_capabilities()
            linux.no_new_privs()
            linux.syscall("landlock_restrict_self", ruleset, 0)
            if seccomp is not None:
                seccomp.install()

        def cleanup() -> None:
            os.close(ruleset)
            guard.cleanup()

        env = {"TMPDIR": str(policy.tmp)}
        return Launch(tuple(argv), preexec=restrict, env=env, cleanup=cleanup, spawn=guard.spawn)

    def _mount_steps(self, policy: SandboxPolicy, ruleset: int, abi: int) -> Callable[[], None]:
        """The child's own view of the filesystem, where a mount namespace is possible.

        Host sockets covered; then the whole tree read-only, as under bwrap (Landlock
        does not cover chmod, chown or utimes, which root could otherwise do anywhere);
        the writable paths bound back writable; the protected paths read-only on top;
        and private /dev/pts and /dev/shm, so host terminals and shared memory are out
        of reach. Their ruleset entries are added here, on the new inodes.
        """
        mode = self._mount_mode()
        if mode is None:
            return lambda: None
        enter = _enter_namespace(mode)
        hide = [
            (b"tmpfs", os.fsencode(p), _SEALED, b"tmpfs", b"size=4k,mode=755")
            if is_dir
            else (b"/dev/null", os.fsencode(p), linux.MS_BIND, None, None)
            for p, is_dir in hidden_mounts(policy)
        ]
        writable = [
            (os.fsencode(p), _locked_flags(p))
            for p in (policy.workspace, policy.tmp, *policy.writable)
            if p.is_dir()
        ]
        protect = [
            (os.fsencode(p), rw, 0 if rw else _locked_flags(p))
            for p, rw in protected_mounts(policy)
        ]
        dir_writes = _rights(_FILE_WRITES, abi) | _rights(_DIR_WRITES, abi)
        file_writes = _rights(_FILE_WRITES, abi)

        def run() -> None:
            enter()
            linux.mount(None, b"/", linux.MS_REC | linux.MS_PRIVATE)
            for source, target, flags, fstype, data in hide:
                with contextlib.suppress(FileNotFoundError):  # a socket gone meanwhile
                    linux.mount(source, target, flags, fstype, data)
            linux.read_only_tree(b"/")
            for path, locked in writable:
                linux.mount(path, path, linux.MS_BIND | linux.MS_REC)
                linux.mount(None, path, linux.MS_BIND | linux.MS_REMOUNT | locked)
            for path, rw, locked in protect:
                linux.mount(path, path, linux.MS_BIND)
                if not rw:
                    flags = linux.MS_BIND | linux.MS_REMOUNT | linux.MS_RDONLY | locked
                    linux.mount(None, path, flags)
            linux.mount(b"devpts", b"/dev/pts", _SEALED & ~linux.MS_NODEV, b"devpts", _PTS)
            linux.mount(b"/dev/pts/ptmx", b"/dev/ptmx", linux.MS_BIND)
            linux.mount(b"tmpfs", b"/dev/shm", _SEALED, b"tmpfs", b"mode=1777")
            for path, rights in ((b"/dev/pts", dir_writes), (b"/dev/shm", dir_writes)):
                _allow_in_child(ruleset, path, rights)
            _allow_in_child(ruleset, b"/dev/ptmx", file_writes)
            # The working directory was entered before these mounts (subprocess changes
            # it before the pre-exec hook): enter it again, on the writable mount.
            os.chdir(os.getcwd())  # noqa: PTH109 (the plainest call between fork and exec)

        return run

    def _mount_mode(self) -> str | None:
        """ "root" (unshare a mount namespace), "user" (in a user namespace), or None."""
        if self._namespaces is False:
            self._namespaces = None
            for mode in ("root", "user") if os.geteuid() == 0 else ("user",):
                enter = _enter_namespace(mode)
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    done = subprocess.run(["true"], preexec_fn=enter, timeout=10, check=False)
                    if done.returncode == 0:
                        self._namespaces = mode
                        break
        return self._namespaces if isinstance(self._namespaces, str) else None


def _enter_namespace(mode: str) -> Callable[[], None]:
    if mode == "root":
        return lambda: linux.unshare(linux.CLONE_NEWNS)
    uid, gid = os.getuid(), os.getgid()
    writes = (
        (b"/proc/self/setgroups", b"deny"),
        (b"/proc/self/uid_map", f"{uid} {uid} 1".encode()),
        (b"/proc/self/gid_map", f"{gid} {gid} 1".encode()),
    )

    def enter() -> None:
        linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNS)
        for name, data in writes:
            fd = os.open(name, os.O_WRONLY)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)

    return enter


def _locked_flags(path: Path) -> int:
    """A read-only remount must keep the mount's nosuid/nodev/... or a user namespace refuses."""
    try:
        have = os.statvfs(path).f_flag
    except OSError:
        return 0
    return sum(ms for st, ms in _ST_TO_MS.items() if have & st)


def _ruleset(policy: SandboxPolicy, abi: int, *, shared_devices: bool) -> int:
    """A ruleset fd (close-on-exec) allowing writes only where the policy says.

    `shared_devices`: the host's /dev/pts and /dev/shm are writable (no mount namespace
    to give the command its own)."""
    file_writes = _rights(_FILE_WRITES, abi)
    dir_writes = file_writes | _rights(_DIR_WRITES, abi)
    net = 0 if policy.network or abi < 4 else _NET_TCP
    scoped = 0
    if abi >= 6:
        # abstract sockets are not network: a host service's stays out of reach with it on
        scoped = _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", dir_writes, net, scoped)[:size], size)
    fd = linux.syscall("landlock_create_ruleset", ctypes.cast(attr, ctypes.c_void_p), size, 0)
    try:
        shared = map(Path, _SHARED_DIRS if shared_devices else ())
        for path in (policy.workspace, policy.tmp, *policy.writable, *shared):
            _allow(fd, path, dir_writes)
        for device in _DEVICES if shared_devices else _DEVICES[:-1]:
            _allow(fd, Path(device), file_writes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _allow_in_child(ruleset: int, path: bytes, rights: int) -> None:
    """A rule added between fork and exec, for an inode only the child's mounts show."""
    _add_rule(ruleset, path, rights)


def _allow(ruleset: int, path: Path, rights: int) -> None:
    """A rule for `path` if it exists; a file gets only the rights a file can take."""
    if not path.is_dir():
        rights &= _rights(_FILE_WRITES, 99)
    with contextlib.suppress(OSError):  # a path that does not exist (or is out of reach): no rule
        _add_rule(ruleset, os.fsencode(path), rights)


def _add_rule(ruleset: int, path: bytes, rights: int) -> None:
    target = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, target), 12)
        linux.syscall(
            "landlock_add_rule", ruleset, _RULE_PATH_BENEATH, ctypes.cast(rule, ctypes.c_void_p), 0
        )
    finally:
        os.close(target)

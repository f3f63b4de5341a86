"""The few Linux system calls the sandbox needs that `os` does not offer, via ctypes.

Everything here is meant to run in a forked child between fork and exec (the
`preexec` of a launch), so each function makes one system call on arguments the
parent prepared, and raises OSError with the errno on failure.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from functools import cache

__all__ = [
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWUSER",
    "MS_BIND",
    "MS_NODEV",
    "MS_NOEXEC",
    "MS_NOSUID",
    "MS_PRIVATE",
    "MS_RDONLY",
    "MS_REC",
    "MS_REMOUNT",
    "SYS",
    "drop_capabilities",
    "libc",
    "mount",
    "no_new_privs",
    "read_only_tree",
    "syscall",
    "unshare",
]

# Landlock's numbers are the same on every architecture; the rest differ.
_NUMBERS = {
    "x86_64": {"landlock_create_ruleset": 444, "landlock_add_rule": 445,
               "landlock_restrict_self": 446, "socket": 41, "io_uring_setup": 425,
               "seccomp": 317, "mount_setattr": 442},
    "aarch64": {"landlock_create_ruleset": 444, "landlock_add_rule": 445,
                "landlock_restrict_self": 446, "socket": 198, "io_uring_setup": 425,
                "seccomp": 277, "mount_setattr": 442},
}  # fmt: skip
SYS: dict[str, int] = _NUMBERS.get(platform.machine(), {})

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_LAST = 63
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1  # the kernel ignores (EINVAL) numbers past its own last capability


@cache
def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return result


def syscall(name: str, *args: int | ctypes.c_void_p | ctypes.c_char_p | None) -> int:
    """Call a system call by name; OSError(ENOSYS) where this architecture lacks it."""
    number = SYS.get(name)
    if number is None:
        raise OSError(38, f"{name} is not known on {platform.machine()}")
    call = libc().syscall
    call.restype = ctypes.c_long
    words = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return _check(call(ctypes.c_long(number), *words))


def unshare(flags: int) -> None:
    _check(libc().unshare(ctypes.c_int(flags)))


def mount(
    source: bytes | None,
    target: bytes,
    flags: int,
    fstype: bytes | None = None,
    data: bytes | None = None,
) -> None:
    _check(libc().mount(source, target, fstype, ctypes.c_ulong(flags), data))


def no_new_privs() -> None:
    """Neither setuid binaries nor file capabilities grant anything after this."""
    _check(libc().prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0))


def drop_capabilities() -> None:
    """Empty the bounding set: even root gains no capability at the next exec."""
    prctl = libc().prctl
    for cap in range(_CAP_LAST + 1):
        if prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) == -1:
            errno = ctypes.get_errno()
            if errno == 22:  # EINVAL: past the kernel's last capability
                break
            if errno == 1:  # EPERM: no CAP_SETPCAP, so no capabilities to lose either
                return
            raise OSError(errno, os.strerror(errno))


def read_only_tree(path: bytes) -> None:
    """Make every mount at and below `path` read-only (mount_setattr, Linux 5.12+)."""
    attr = ctypes.create_string_buffer(struct.pack("=QQQQ", _MOUNT_ATTR_RDONLY, 0, 0, 0), 32)
    syscall(
        "mount_setattr",
        _AT_FDCWD,
        ctypes.c_char_p(path),
        _AT_RECURSIVE,
        ctypes.cast(attr, ctypes.c_void_p),
        32,
    )

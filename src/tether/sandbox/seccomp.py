"""A seccomp filter that refuses new network sockets, for the Landlock backend.

Landlock (ABI 4+) refuses TCP connect and bind, but not UDP, raw or other socket
families; this filter refuses creating any socket but Unix and netlink ones, and
refuses io_uring, whose operations would not pass through the filter. A program
sees EPERM, as if the network were forbidden by policy, which it is.
"""

from __future__ import annotations

import ctypes
import platform
import struct

from tether.sandbox.linux import SYS, libc

__all__ = ["NetworkFilter", "network_filter"]

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_BIT = 0x40000000
_AF_UNIX = 1
_AF_NETLINK = 16
_EPERM = 1
# classic BPF opcodes
_LD_W_ABS = 0x00 | 0x00 | 0x20
_JEQ_K = 0x05 | 0x10 | 0x00
_JGE_K = 0x05 | 0x30 | 0x00
_RET_K = 0x06 | 0x00
_ALLOW = 0x7FFF0000
_DENY = 0x00050000 | _EPERM  # SECCOMP_RET_ERRNO | EPERM
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class NetworkFilter:
    """A compiled filter, built in the parent; `install` is one prctl in the child."""

    def __init__(self, code: bytes) -> None:
        self._code = ctypes.create_string_buffer(code, len(code))
        self._program = _Program(len(code) // 8, ctypes.cast(self._code, ctypes.c_void_p))

    def install(self) -> None:
        """Needs no_new_privs (or CAP_SYS_ADMIN) first."""
        pointer = ctypes.byref(self._program)
        if libc().prctl(_PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), pointer, 0, 0):
            errno = ctypes.get_errno()
            raise OSError(errno, f"seccomp filter refused: errno {errno}")


def network_filter() -> NetworkFilter | None:
    """The filter for this architecture, or None where it is not known."""
    arch = _AUDIT_ARCH.get(platform.machine())
    if arch is None or "socket" not in SYS:
        return None
    ops: list[tuple[int, int, int, int]] = []
    # Index arithmetic below is by position: each op is (code, jump-if-true, jump-if-false, k).
    ops.append((_LD_W_ABS, 0, 0, 4))  # 0: seccomp_data.arch
    ops.append((_JEQ_K, 1, 0, arch))  # 1: our architecture? skip the deny
    ops.append((_RET_K, 0, 0, _DENY))  # 2: a foreign syscall ABI: refuse everything
    ops.append((_LD_W_ABS, 0, 0, 0))  # 3: seccomp_data.nr
    ops.append((_JGE_K, 5, 0, _X32_BIT))  # 4: x32 numbers (x86_64): -> deny at 10
    ops.append((_JEQ_K, 4, 0, SYS["io_uring_setup"]))  # 5: -> deny at 10
    ops.append((_JEQ_K, 0, 4, SYS["socket"]))  # 6: not socket -> allow at 11
    ops.append((_LD_W_ABS, 0, 0, 16))  # 7: args[0] (the family), low 32 bits
    ops.append((_JEQ_K, 2, 0, _AF_UNIX))  # 8: -> allow at 11
    ops.append((_JEQ_K, 1, 0, _AF_NETLINK))  # 9: -> allow at 11
    ops.append((_RET_K, 0, 0, _DENY))  # 10
    ops.append((_RET_K, 0, 0, _ALLOW))  # 11
    return NetworkFilter(b"".join(struct.pack("=HBBI", *op) for op in ops))

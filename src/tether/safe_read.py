"""Reading files that someone else controls — a cloned repository, the agent — safely.

Tether reads some files outside the sandbox (instructions, skills, test manifests,
git's ignore files). Any of them may be a FIFO that would block forever, a device,
or huge. `read_regular` refuses what is not a regular file before it opens it, opens
without blocking in case it was swapped in meanwhile, and reads at most `limit`
bytes. `follow=False` also refuses a final symlink, for files tether reads on the
agent's behalf, where a link could point at the user's secrets.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NotReadable", "read_regular", "read_small"]


class NotReadable(Exception):
    """Why a file was not read: not a regular file, or the OS refused."""


def read_regular(path: Path, limit: int, *, follow: bool = True) -> tuple[bytes, int]:
    """At most `limit` bytes of a regular file and its whole size."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        if follow and not stat.S_ISREG(path.stat().st_mode):
            raise NotReadable(_kind(path))
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotReadable("a broken symlink" if path.is_symlink() else "missing") from None
    except OSError as exc:
        raise NotReadable(exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotReadable("not a regular file")
        chunks: list[bytes] = []
        got = 0
        while got <= limit:
            chunk = os.read(fd, limit + 1 - got)
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise NotReadable(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return data[:limit], max(st.st_size, len(data))


def read_small(path: Path, limit: int = 1 << 20) -> bytes | None:
    """A whole small regular file, never through a final symlink; None otherwise."""
    try:
        data, size = read_regular(path, limit, follow=False)
    except NotReadable:
        return None
    return data if size <= limit else None


def _kind(path: Path) -> str:
    mode = path.stat().st_mode
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
    ):
        if test(mode):
            return f"not a regular file ({name})"
    return "not a regular file"

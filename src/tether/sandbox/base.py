"""The sandbox seam: what a command may touch, and how a backend launches it.

A backend turns a command line and a `SandboxPolicy` into a `Launch`: the argv to
execute (bwrap wraps it), an optional function run in the child before exec
(Landlock and seccomp restrict the child itself), extra environment, and cleanup.
The bash tool runs every command through the chosen backend, so the kernel — not
the model, and not the permission policy — has the last word.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "BACKENDS",
    "Launch",
    "Sandbox",
    "SandboxPolicy",
    "hidden_mounts",
    "listening_sockets",
    "merged_env",
    "protected_mounts",
    "protected_paths",
]

BACKENDS = ("bwrap", "landlock", "none")
_ACCEPTING = 0x10000  # __SO_ACCEPTCON in /proc/net/unix: a listening socket
DEFAULT_HIDDEN = (
    "/run/user",  # session buses, user systemd, podman, ssh/gpg agents, wayland, pulse
    "/run/dbus",  # the system bus
    "/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/systemd/private",
    "/var/run/docker.sock",
    "/var/run/dbus",
    "/tmp/.X11-unix",  # an X server takes keystrokes for any terminal on screen
    "~/.agents",  # where tether (and others) keep endpoint keys: not the command's to read
)


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """What a sandboxed command may do.

    Writable: the workspace, `tmp` (a private temporary directory, also $TMPDIR) and
    `writable`; everything else read-only. `readonly` are paths inside the workspace
    that stay read-only all the same (`.git/hooks`, `.git/config`, `.tether`): a hook
    planted there would later run outside any sandbox. `network` False means no new
    inet/inet6 sockets. `max_processes` bounds a fork bomb. `hidden` are covered with
    an empty directory (or /dev/null): sockets a read-only mount does not stop, since
    connecting to a Unix socket is not a write — a session bus can start programs
    outside any sandbox (`systemd-run --user`), a container engine or an X server too.
    """

    workspace: Path
    tmp: Path
    writable: tuple[Path, ...] = ()
    readonly: tuple[Path, ...] = ()
    network: bool = False
    max_processes: int = 512
    hidden: tuple[Path, ...] = tuple(map(Path, DEFAULT_HIDDEN))


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start one sandboxed command."""

    argv: tuple[str, ...]
    preexec: Callable[[], None] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cleanup: Callable[[], None] | None = None
    # Starts the process (the callable does the fork) where it must be born, e.g. on
    # a thread resident in the command's cgroup; None: start it from here.
    spawn: Callable[[Callable[[], Any]], Any] | None = None


class Sandbox(Protocol):
    """A backend: `probe` says whether it works here, `launch` prepares a command."""

    @property
    def name(self) -> str: ...

    @property
    def caveat(self) -> str | None:
        """What the backend cannot enforce here although it works (None: nothing)."""
        ...

    def probe(self) -> str | None:
        """None when the backend works on this machine, else why not (one line)."""
        ...

    def launch(self, argv: Sequence[str], policy: SandboxPolicy) -> Launch: ...

    def close(self) -> None:
        """Release what the backend keeps between commands (cgroups, threads)."""
        ...


def protected_paths(
    workspace: Path, *, state: Path | None = None, writable: tuple[Path, ...] = ()
) -> tuple[Path, ...]:
    """The paths inside a workspace that stay read-only under every backend.

    `.tether/` (where project config and permission rules live) and `.git/hooks`
    (when `.git` is a directory) are created if missing: a path can only be kept
    read-only while it exists, and one the agent could create could hold a rule
    that allows everything, or a hook that runs at the user's next commit. tether's
    own `state` directory joins them when it lies in a writable place (a workspace
    that is the home directory): its checkpoint repositories are run by git outside
    the sandbox, and its transcripts are the record of what the agent did.
    """
    paths: tuple[Path, ...] = (
        workspace / ".git" / "hooks",
        workspace / ".git" / "config",
        workspace / ".tether",
    )
    for path in (paths[0], paths[2]):
        if path.parent.is_dir() and not os.path.lexists(path):
            with contextlib.suppress(OSError):  # unwritable: nothing can be planted either
                path.mkdir()
    if state is not None:
        real = Path(os.path.realpath(state))
        if any(real == w or w in real.parents for w in (workspace, *writable)):
            with contextlib.suppress(OSError):
                real.mkdir(parents=True, exist_ok=True)
            paths += (real,)
    return paths


def protected_mounts(policy: SandboxPolicy) -> list[tuple[Path, bool]]:
    """(path, writable) to mount over themselves, in order, to keep `readonly` read-only.

    The parent of a protected path (`.git`) is first mounted writable over itself: a
    mount point cannot be renamed or removed, so `mv .git x && mkdir -p .git/hooks`
    cannot swap in a directory the agent owns. Only existing paths can be mounted.
    """
    mounts: list[tuple[Path, bool]] = []
    for path in policy.readonly:
        if not os.path.lexists(path) or path.is_symlink():
            continue
        parent = path.parent
        if parent != policy.workspace and parent.is_dir() and (parent, True) not in mounts:
            mounts.append((parent, True))
        mounts.append((path, False))
    return mounts


def merged_env(base: Mapping[str, str], launch: Launch) -> dict[str, str]:
    env = dict(base)
    env.update(launch.env)
    return env


def hidden_mounts(policy: SandboxPolicy) -> list[tuple[Path, bool]]:
    """(path, is_directory) to cover: the existing `hidden` paths, symlinks resolved,
    then every listening Unix socket of the host that is not already covered (a tmux
    or screen server, an editor server, a database: a fixed list always misses some).
    Paths that hold or lie in a writable path are skipped (that would hide the
    workspace), and so are the command's own sockets there."""
    keep = [str(k) for k in (policy.workspace, policy.tmp, *policy.writable)]
    found: list[tuple[Path, bool]] = []
    taken: list[str] = []  # directories already covered
    for raw in (*(p.expanduser() for p in policy.hidden), *listening_sockets()):
        if not os.path.lexists(raw):  # most of the usual suspects are absent: cheap first
            continue
        path = os.path.realpath(raw)
        if any(_related(path, k) for k in keep) or any(_within(path, d) for d in taken):
            continue
        target = Path(path)
        is_dir = target.is_dir()
        found.append((target, is_dir))
        if is_dir:
            taken.append(path)
    return found


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _related(a: str, b: str) -> bool:
    return _within(a, b) or _within(b, a)


def listening_sockets(table: str = "/proc/net/unix") -> list[Path]:
    """Filesystem Unix sockets that accept connections, as the kernel lists them."""
    try:
        with Path(table).open(encoding="utf-8", errors="surrogateescape") as handle:
            rows = handle.read().splitlines()[1:]
    except OSError:
        return []
    sockets: list[Path] = []
    for row in rows:
        fields = row.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/") and int(fields[3], 16) & _ACCEPTING:
            sockets.append(Path(fields[7]))
    return sockets

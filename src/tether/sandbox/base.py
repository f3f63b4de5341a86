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
    "merged_env",
    "protected_mounts",
    "protected_paths",
]

BACKENDS = ("bwrap", "landlock", "none")
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


def protected_paths(workspace: Path) -> tuple[Path, ...]:
    """The paths inside a workspace that stay read-only under every backend.

    `.tether/` (where project config and permission rules live) and `.git/hooks`
    (when `.git` is a directory) are created if missing: a path can only be kept
    read-only while it exists, and one the agent could create could hold a rule
    that allows everything, or a hook that runs at the user's next commit.
    """
    paths = (workspace / ".git" / "hooks", workspace / ".git" / "config", workspace / ".tether")
    for path in (paths[0], paths[2]):
        if path.parent.is_dir() and not os.path.lexists(path):
            with contextlib.suppress(OSError):  # unwritable: nothing can be planted either
                path.mkdir()
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
    """(path, is_directory) of the existing `hidden` paths, symlinks resolved, skipping
    any that holds or lies in a writable path (hiding it would hide the workspace)."""
    keep = (policy.workspace, policy.tmp, *policy.writable)
    found: list[tuple[Path, bool]] = []
    for raw in policy.hidden:
        try:
            path = raw.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        clash = any(path == k or path in k.parents or k in path.parents for k in keep)
        if not clash and all(path != seen for seen, _ in found):
            found.append((path, path.is_dir()))
    return found

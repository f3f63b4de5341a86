"""bubblewrap: the command runs in its own mount, PID and network namespaces.

The host root is mounted read-only, with the workspace, the extra writable paths and
a private temporary directory ($TMPDIR) mounted writable on top, and the protected
paths inside the workspace mounted read-only again on top of that. Because the
kernel checks the mount a path finally lands on, a symlink or `..` planted in the
workspace still ends on a read-only mount. The PID namespace dies with bwrap, so
nothing the command started outlives it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tether.sandbox.base import Launch, SandboxPolicy, hidden_mounts, protected_mounts
from tether.sandbox.limits import ProcessLimits

__all__ = ["BwrapSandbox"]

_PROBE_TIMEOUT = 10.0


class BwrapSandbox:
    name = "bwrap"
    caveat = None

    def __init__(self, executable: str | None = None) -> None:
        self._executable = executable
        self.limits = ProcessLimits()

    def executable(self) -> str | None:
        """Looked up once per backend: a PATH walk costs more than a mount."""
        if self._executable is None:
            self._executable = shutil.which("bwrap")
        return self._executable

    def close(self) -> None:
        self.limits.close()

    def probe(self) -> str | None:
        exe = self.executable()
        if exe is None:
            return "bwrap is not installed (apt-get install bubblewrap / dnf install bubblewrap)"
        root = Path("/")  # not the cwd: it may be gone, or unreadable
        policy = SandboxPolicy(workspace=root, tmp=root, readonly=())
        argv = [*self._options(exe, policy, root), "--", "true"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_TIMEOUT, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{exe} could not run: {exc}"
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"{exe} fails here: {why[-1] if why else f'exit code {done.returncode}'}"
        return None

    def launch(self, argv: Sequence[str], policy: SandboxPolicy) -> Launch:
        """Every process of the sandbox must be born in the command's cgroup, without
        forking the parent with a pre-exec hook (~7 ms for a 100 MB parent here): on
        cgroup v1 a resident spawner thread starts bwrap; on v2 a tiny shell moves
        itself into the fresh cgroup, then execs bwrap."""
        exe = self.executable()
        if exe is None:
            raise OSError("bwrap is not installed")
        guard = self.limits.guard(policy.max_processes, offline=not policy.network)
        options = self._options(exe, policy, policy.workspace, offline=guard.offline)
        command = (*options, "--", *argv)
        preexec = guard.preexec
        if guard.procs is not None:
            join = 'echo $$ > "$0" && exec "$@"'
            command = ("/bin/sh", "-c", join, guard.procs, *command)
            preexec = None
        return Launch(
            command,
            preexec=preexec,
            env={"TMPDIR": str(policy.tmp)},
            cleanup=guard.cleanup,
            spawn=guard.spawn,
        )

    def _options(
        self, exe: str, policy: SandboxPolicy, cwd: Path, *, offline: bool = False
    ) -> list[str]:
        """`offline`: bwrap starts in a network and IPC namespace of the session's already
        (see `spawner`), so it need not build new ones for every command."""
        args = [exe, "--die-with-parent", "--new-session", "--unshare-pid"]
        if not offline:  # (uts, cgroup: nothing to hide without capabilities)
            args.append("--unshare-ipc")
        if not policy.network and not offline:
            args.append("--unshare-net")
        if os.geteuid() == 0:
            args += ["--cap-drop", "ALL"]
        # A fresh /proc is writable, and root needs no capability to write root-owned
        # sysctls: kernel.core_pattern would run a program of the command's, unconfined.
        # All of it read-only (sysctls, sysrq-trigger, irq, bus) in one remount.
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--remount-ro", "/proc"]
        for path, is_dir in hidden_mounts(policy):
            args += ["--tmpfs", str(path)] if is_dir else ["--ro-bind", "/dev/null", str(path)]
        # The private temp dir is bound at its own path, not over /tmp: what lies in the
        # host's /tmp (a venv, a log the user points at) stays readable.
        for path in (policy.workspace, policy.tmp, *policy.writable):
            if path.exists():
                args += ["--bind", str(path), str(path)]
        for path, writable in protected_mounts(policy):
            args += ["--bind" if writable else "--ro-bind", str(path), str(path)]
        args += ["--chdir", str(cwd)]
        return args

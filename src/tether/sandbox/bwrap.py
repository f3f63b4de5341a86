"""bubblewrap: the command runs in its own mount, PID and network namespaces.

The host root is mounted read-only, with the workspace, the extra writable paths and
a private temporary directory ($TMPDIR) mounted writable on top, and the protected
paths inside the workspace mounted read-only again on top of that. Because the
kernel checks the mount a path finally lands on, a symlink or `..` planted in the
workspace still ends on a read-only mount. The PID namespace dies with bwrap, so
nothing the command started outlives it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from tether.sandbox.base import Launch, SandboxPolicy, protected_mounts
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
        return self._executable or shutil.which("bwrap")

    def probe(self) -> str | None:
        exe = self.executable()
        if exe is None:
            return "bwrap is not installed (apt-get install bubblewrap / dnf install bubblewrap)"
        root = Path.cwd().resolve()
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
        """bwrap reports its sandbox's pid, then waits until the parent has put both
        processes in the command's cgroup: nothing can fork before that, and the
        parent need not fork itself with a pre-exec hook (costly for a big process)."""
        exe = self.executable()
        if exe is None:
            raise OSError("bwrap is not installed")
        guard = self.limits.guard(policy.max_processes)
        pipes = _Handshake()
        options = self._options(exe, policy, policy.workspace)
        options += ["--info-fd", str(pipes.info_w), "--block-fd", str(pipes.block_r)]

        def started(pid: int) -> None:
            pipes.close_child_ends()
            child = pipes.child_pid()
            for member in (pid, child):
                if member is not None:
                    with contextlib.suppress(ProcessLookupError):
                        guard.adopt(member)
            pipes.release()

        def cleanup() -> None:
            pipes.close_all()
            guard.cleanup()

        return Launch(
            (*options, "--", *argv),
            env={"TMPDIR": str(policy.tmp)},
            cleanup=cleanup,
            pass_fds=(pipes.info_w, pipes.block_r),
            started=started,
        )

    def _options(self, exe: str, policy: SandboxPolicy, cwd: Path) -> list[str]:
        args = [exe, "--die-with-parent", "--new-session"]
        args += ["--unshare-pid", "--unshare-ipc"]  # (uts, cgroup: nothing to hide without caps)
        if not policy.network:
            args.append("--unshare-net")
        if os.geteuid() == 0:
            args += ["--cap-drop", "ALL"]
        args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        # The private temp dir is bound at its own path, not over /tmp: what lies in the
        # host's /tmp (a venv, a log the user points at) stays readable.
        for path in (policy.workspace, policy.tmp, *policy.writable):
            if path.exists():
                args += ["--bind", str(path), str(path)]
        for path, writable in protected_mounts(policy):
            args += ["--bind" if writable else "--ro-bind", str(path), str(path)]
        args += ["--chdir", str(cwd)]
        return args


class _Handshake:
    """The two pipes of a launch: bwrap's JSON info out, and the go-ahead in."""

    def __init__(self) -> None:
        self.info_r, self.info_w = os.pipe()
        self.block_r, self.block_w = os.pipe()
        self._open = {self.info_r, self.info_w, self.block_r, self.block_w}

    def child_pid(self) -> int | None:
        """The sandbox's first process, as bwrap reports it (None if bwrap failed first)."""
        data = b""
        deadline = time.monotonic() + _PROBE_TIMEOUT
        while b"}" not in data and time.monotonic() < deadline:
            ready, _, _ = select.select([self.info_r], [], [], 0.5)
            if ready:
                chunk = os.read(self.info_r, 4096)
                if not chunk:
                    break
                data += chunk
        try:
            pid = json.loads(data[: data.index(b"}") + 1])["child-pid"]
        except (ValueError, KeyError, TypeError):
            return None
        return pid if isinstance(pid, int) else None

    def release(self) -> None:
        with contextlib.suppress(OSError):  # bwrap may have failed and gone already
            os.write(self.block_w, b"go")
        self._close(self.block_w)

    def close_child_ends(self) -> None:
        self._close(self.info_w)
        self._close(self.block_r)

    def close_all(self) -> None:
        for fd in list(self._open):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

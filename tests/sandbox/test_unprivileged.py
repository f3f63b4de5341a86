"""The backends as an ordinary user: no cgroup to write, no mount namespace without a
user namespace, RLIMIT_NPROC instead of a pids cgroup.

Tests run as root here, so a copy of the sandbox code runs as `nobody` (setpriv)
under a Python interpreter that `nobody` can execute, and reports what happened.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import tether

NOBODY = 65534
SCRIPT = textwrap.dedent(
    """
    import json, os, sys, tempfile
    from functools import partial
    from pathlib import Path
    from tether.sandbox.base import SandboxPolicy, protected_paths
    from tether.sandbox.choose import backend
    from tether.tools.shell import run_command

    box = backend(sys.argv[1])
    report = {"probe": box.probe(), "limits": box.limits.describe()}
    ws = Path(tempfile.mkdtemp(dir=sys.argv[2]))
    (ws / ".git/hooks").mkdir(parents=True)
    (ws / ".git/config").write_text("[core]\\n")
    policy = SandboxPolicy(
        workspace=ws, tmp=Path(tempfile.mkdtemp(dir=sys.argv[2])),
        readonly=protected_paths(ws), max_processes=40,
    )
    def run(command, timeout=10):
        result = run_command(command, cwd=ws, env={"PATH": "/usr/bin:/bin"},
                             timeout=timeout, launcher=partial(box.launch, policy=policy))
        return {"output": result.output, "exit": result.exit_code}
    report["outside"] = run(f"touch {sys.argv[2]}/escaped")
    report["dotdot"] = run("touch ../escaped-too")
    report["hook"] = run("touch .git/hooks/pre-commit")
    report["rename"] = run("mv .git moved")
    report["inside"] = run("echo ok > f && cat f")
    report["network"] = run("exec 3<>/dev/tcp/127.0.0.1/9")
    report["bomb"] = run("b() { b | b & }; b; sleep 1; echo after", timeout=6)
    report["setuid"] = run("grep NoNewPrivs /proc/self/status")
    box.close()
    print(json.dumps(report))
    """
)


def _python_for_nobody() -> str:
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        check = subprocess.run(
            [
                *_as_nobody(),
                "env",
                "-i",
                "PATH=/usr/bin:/bin",
                candidate,
                "-c",
                "import sys; assert sys.version_info >= (3, 11)",
            ],
            capture_output=True,
        )
        if check.returncode == 0:
            return candidate
    pytest.fail("no Python 3.11+ that the user nobody can run (tried the test's own, /usr/bin)")


def _as_nobody() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """A copy of the tether package and a scratch dir that nobody can read and write
    (pytest's own temporary directories are private to root)."""
    root = Path(tempfile.mkdtemp(prefix="tether-nobody-", dir="/var/tmp"))
    shutil.copytree(Path(tether.__file__).parent, root / "code/tether")
    (root / "scratch").mkdir()
    for path in (root, *root.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o644)
    os.chown(root / "scratch", NOBODY, NOBODY)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("name", ["bwrap", "landlock"])
def test_an_ordinary_user_is_confined_the_same(shared: Path, name: str) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test switches to the user nobody, so it must start as root")
    python = _python_for_nobody()
    done = subprocess.run(
        [*_as_nobody(), "env", "-i", "PATH=/usr/bin:/bin", f"HOME={shared}/scratch",
         f"PYTHONPATH={shared}/code", python, "-c", SCRIPT, name, str(shared / "scratch")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["probe"] is None
    assert report["limits"].startswith("RLIMIT_NPROC")
    for attempt in ("outside", "dotdot", "hook", "rename", "network"):
        assert report[attempt]["exit"] != 0, (attempt, report[attempt])
    assert not (shared / "scratch/escaped").exists()
    assert not (shared / "scratch/escaped-too").exists()
    assert report["inside"] == {"output": "ok\n", "exit": 0}
    assert "Resource temporarily unavailable" in report["bomb"]["output"]
    assert "NoNewPrivs:\t1" in report["setuid"]["output"]

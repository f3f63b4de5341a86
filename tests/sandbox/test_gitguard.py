"""What git would run later, outside any sandbox, is put back after every command.

Driven through the real bash tool with each backend, then checked with the host's
git, as the user would run it after the session.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from functools import partial
from pathlib import Path

from tether.sandbox.base import Sandbox, SandboxPolicy, protected_paths
from tether.sandbox.environment import tool_environment
from tether.sandbox.workspace import Workspace
from tether.tools.registry import ToolContext
from tether.tools.shell import bash


def git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
    )


def run_bash(box: Sandbox, ws: Path, command: str) -> str:
    tmp = ws.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    policy = SandboxPolicy(workspace=ws, tmp=tmp, readonly=protected_paths(ws))
    ctx = ToolContext(
        workspace=Workspace(ws),
        env=tool_environment(os.environ),
        sandbox=partial(box.launch, policy=policy),
    )
    return str(bash.fn(ctx, **bash.bind({"command": command})))


def test_a_planted_commondir_is_put_back(box: Sandbox, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    marker = tmp_path / f"pwned-{uuid.uuid4().hex[:6]}"
    out = run_bash(
        box,
        ws,
        "mkdir evil && cp -r .git/objects .git/refs .git/HEAD evil/ && "
        "printf '[core]\\n\\trepositoryformatversion = 0\\n"
        f'\\tfsmonitor = "touch {marker}; false"\\n\' > evil/config && '
        "echo ../evil > .git/commondir",
    )
    assert "put back .git/commondir" in out
    assert not (ws / ".git/commondir").exists()
    git(ws, "status")
    assert not marker.exists()


def test_a_repository_the_command_creates_keeps_no_hooks_or_commands(
    box: Sandbox, tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = tmp_path / f"pwned-{uuid.uuid4().hex[:6]}"
    out = run_bash(
        box,
        ws,
        f"git init -q && printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit && "
        f"chmod +x .git/hooks/pre-commit && git config core.fsmonitor 'touch {marker}; false'",
    )
    assert "put back" in out and ".git/hooks/pre-commit" in out
    assert not (ws / ".git/hooks/pre-commit").exists()
    assert "fsmonitor" not in (ws / ".git/config").read_text()
    (ws / "f").write_text("x")
    git(ws, "add", "f")
    git(ws, "commit", "-qm", "m")
    git(ws, "status")
    assert not marker.exists()


def test_a_git_file_pointer_is_put_back(box: Sandbox, tmp_path: Path) -> None:
    real = tmp_path / "real.git"
    ws = tmp_path / "ws"
    ws.mkdir()
    git(tmp_path, "init", "-q", "--separate-git-dir", str(real), str(ws))
    before = (ws / ".git").read_text()
    out = run_bash(box, ws, "mkdir other && echo 'gitdir: other' > .git")
    assert "put back .git" in out
    assert (ws / ".git").read_text() == before


def test_ordinary_git_work_is_left_alone(box: Sandbox, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    out = run_bash(
        box,
        ws,
        "echo a > a && git add a && git -c user.name=t -c user.email=t@t commit -qm one "
        "&& git checkout -qb topic && git log --oneline | wc -l",
    )
    assert "put back" not in out and "1" in out
    assert git(ws, "branch", "--show-current").stdout.strip() == "topic"


def test_the_guard_never_follows_a_symlink_out(box: Sandbox, tmp_path: Path) -> None:
    """The guard runs unconfined: a link at .git/modules must not lead it to delete or
    rewrite files elsewhere."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    victim = tmp_path / "victim"
    (victim / ".ssh").mkdir(parents=True)
    (victim / ".ssh/config").write_text("Host x\n")
    (victim / "proj/.git/hooks").mkdir(parents=True)
    (victim / "proj/.git/config").write_text("[core]\n")
    (victim / "proj/.git/hooks/post-checkout").write_text("#!/bin/sh\n")
    before = {p: p.read_bytes() for p in victim.rglob("*") if p.is_file()}
    out = run_bash(box, ws, f"ln -s {victim} .git/modules && ln -s {victim}/.ssh .git/info2")
    assert {p: p.read_bytes() for p in victim.rglob("*") if p.is_file()} == before
    assert "put back .git/modules" in out
    assert not (ws / ".git/modules").is_symlink()


def test_special_files_do_not_hang_the_guard(box: Sandbox, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    out = run_bash(box, ws, "mkfifo .git/commondir && ln -s /proc/self/fd/0 .git/config.worktree")
    assert "put back" in out
    assert not (ws / ".git/commondir").exists() and not (ws / ".git/config.worktree").exists()


def test_a_fresh_repository_gets_a_plain_config(box: Sandbox, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = run_bash(
        box,
        ws,
        "git init -q && printf '[commit]\\n\\tgpgsign = true\\n[gpg]\\n\\tprogram = ./.g\\n' "
        ">> .git/config",
    )
    assert "put back .git/config" in out
    assert "gpg" not in (ws / ".git/config").read_text()

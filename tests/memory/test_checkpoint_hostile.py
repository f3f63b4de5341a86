"""Workspaces the agent has made hostile to tether's checkpoints, which run outside the
sandbox: FIFOs and links where git's own files are read, names git refuses."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tether.memory.checkpoint_git import CheckpointError, CheckpointTimeout
from tether.memory.checkpoints import CheckpointStore
from tether.memory.sessions import Transcript
from tether.memory.step_checkpoints import StepCheckpoints
from tether.messages import ToolCall
from tether.observe.redact import Redactor


def git(cwd: Path, *args: str) -> None:
    cmd = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *args]
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)


def files_in(store: CheckpointStore, commit: str) -> set[str]:
    out = subprocess.run(
        ["git", f"--git-dir={store.repo}", "ls-tree", "-r", "--name-only", "-z", commit],
        capture_output=True,
        check=True,
    ).stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero", "huge"])
def test_a_hostile_info_exclude_neither_hangs_nor_floods(tmp_path: Path, kind: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "a.txt").write_text("a\n")
    exclude = ws / ".git" / "info" / "exclude"
    exclude.unlink()
    if kind == "fifo":
        os.mkfifo(exclude)
    elif kind == "huge":
        exclude.write_bytes(b"#" * (8 << 20))
    else:
        exclude.symlink_to("/dev/zero")
    began = time.monotonic()
    cp = CheckpointStore(tmp_path / "home", ws).create(session="s", turn=1, tool="bash", summary="")
    assert time.monotonic() - began < 20
    assert "a.txt" in cp.added


def test_a_hostile_dot_git_file_is_not_read_blocking(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / ".git")
    (ws / "a.txt").write_text("a\n")
    cp = CheckpointStore(tmp_path / "home", ws).create(session="s", turn=1, tool="bash", summary="")
    assert cp.added == ("a.txt",)


def test_a_fifo_named_gitignore_times_out_and_turns_checkpoints_off(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    warnings: list[str] = []
    transcript = Transcript.create(tmp_path / "home", "s", {}, Redactor([]))
    hook = StepCheckpoints(
        lambda: CheckpointStore(tmp_path / "home", ws, git_timeout_s=1.0),
        session="s",
        transcript=transcript,
        warn=warnings.append,
    )
    with hook.around(ToolCall("1", "bash", "{}"), "bash", {"command": "mkfifo .gitignore"}):
        os.mkfifo(ws / ".gitignore")
    began = time.monotonic()
    for n in range(3):  # off now: no more waiting
        with hook.around(ToolCall(str(n), "bash", "{}"), "bash", {"command": "touch b"}):
            pass
    assert time.monotonic() - began < 1.0
    assert len(warnings) == 1 and "Checkpoints are off" in warnings[0]
    with pytest.raises(CheckpointTimeout):
        CheckpointStore(tmp_path / "home", ws, git_timeout_s=0.5).create(
            session="s", turn=1, tool="bash", summary=""
        )


def test_a_subdirectory_workspace_inherits_the_repositorys_ignores(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    ws = repo / "apps" / "frontend"
    (ws / "node_modules" / "p").mkdir(parents=True)
    (ws / "src").mkdir()
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text(
        "node_modules/\n.env\n/apps/frontend/dist/\n/apps/*/cache\n/other/x\n!keep.env\n"
        "apps/**/secret.txt\n# comment\n\n"
    )
    (repo / "apps" / ".gitignore").write_text("/frontend/tmp/\n*.log\n")
    (repo / ".git" / "info" / "exclude").write_text("/apps/frontend/local.cfg\n")
    for rel in (
        "node_modules/p/i.js", ".env", "keep.env", "dist/app.js", "cache", "tmp/t", "x.log",
        "src/secret.txt", "local.cfg", "src/app.js", "other/x",
    ):  # fmt: skip
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    cp = CheckpointStore(tmp_path / "home", ws).create(session="s", turn=1, tool="bash", summary="")
    assert files_in(CheckpointStore(tmp_path / "home", ws), cp.commit) == {
        "keep.env",
        "src/app.js",
        "other/x",
    }


def test_names_git_refuses_are_left_out_not_fatal(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    names = [".GIT/y", "sub/.GiT/z", "GIT~1/x", ".git /x", ".git::$INDEX_ALLOCATION/x", "ok.txt"]
    for rel in names:
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
    (ws / ".gitmodules").symlink_to("ok.txt")
    store = CheckpointStore(tmp_path / "home", ws)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    stored = files_in(store, cp.commit)
    assert {"ok.txt", "GIT~1/x"} <= stored
    assert not any(p.split("/")[0].lower() == ".git" for p in stored)
    assert {".GIT/y", "sub/.GiT/z"} <= set(cp.not_covered)
    assert set(stored) | set(cp.not_covered) >= set(names) - {
        ".git /x",
        ".git::$INDEX_ALLOCATION/x",
    }
    # Later checkpoints and a restore still work.
    (ws / "ok.txt").write_text("changed")
    store.create(session="s", turn=2, tool="bash", summary="")
    store.restore(cp.id)
    assert (ws / "ok.txt").read_text() == "ok.txt"


def test_undo_keeps_files_the_checkpoint_ignored(tmp_path: Path) -> None:
    """The agent un-ignores `.env`; undoing that must not delete `.env`."""
    ws = tmp_path / "ws"
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / ".gitignore").write_text(".env\nnode_modules/\n")
    (ws / ".env").write_text("SECRET=1\n")
    (ws / "node_modules" / "pkg" / "index.js").write_text("x\n")
    (ws / "a.txt").write_text("a\n")
    store = CheckpointStore(tmp_path / "home", ws)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "made.txt").write_text("new\n")
    store.settle(session="s", turn=1, tool="bash")
    result = store.restore(cp.id)
    assert (ws / ".env").read_text() == "SECRET=1\n"
    assert (ws / "node_modules" / "pkg" / "index.js").exists()
    assert not (ws / "made.txt").exists()
    assert (ws / ".gitignore").read_text() == ".env\nnode_modules/\n"
    assert set(result.kept) == {".env", "node_modules/pkg/index.js"}
    assert result.deleted == ("made.txt",)


def test_undo_keeps_a_file_the_checkpoint_did_not_cover(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.log").write_bytes(b"x" * 5000)
    store = CheckpointStore(tmp_path / "home", ws, max_file_bytes=1000)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    assert cp.not_covered == ("big.log",)
    (ws / "big.log").write_bytes(b"small")  # now under the limit: recorded at settle
    store.settle(session="s", turn=1, tool="bash")
    result = store.restore(cp.id)
    assert (ws / "big.log").read_bytes() == b"small"  # not deleted: never held
    assert result.kept == ("big.log",)


def test_restore_keeps_permission_bits_and_long_names(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    key = ws / "key"
    key.write_text("secret v1\n")
    key.chmod(0o600)
    long_name = "文" * 80 + ".txt"  # 240 bytes: a temporary name built from it would not fit
    (ws / long_name).write_text("v1\n")
    store = CheckpointStore(tmp_path / "home", ws)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    key.write_text("secret v2\n")
    (ws / long_name).write_text("v2\n")
    store.settle(session="s", turn=1, tool="bash")
    result = store.restore(cp.id)
    assert key.read_text() == "secret v1\n" and (key.stat().st_mode & 0o777) == 0o600
    assert (ws / long_name).read_text() == "v1\n"
    assert set(result.written) == {"key", long_name}
    assert not [p for p in ws.iterdir() if p.name.startswith(".tether-restore-")]


def test_the_checkpoints_own_rules_decide_what_undo_keeps(tmp_path: Path) -> None:
    """Not the workspace's rules now: a `.gitignore` the restore cannot write back (a
    directory is in its place) must not get `.env` deleted, and one the agent added must
    not let the agent's files survive."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text(".env\n")
    (ws / ".env").write_text("SECRET=1\n")
    store = CheckpointStore(tmp_path / "home", ws)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    (ws / ".gitignore").unlink()
    (ws / ".gitignore").mkdir()  # the target's .gitignore cannot come back
    (ws / ".gitignore" / "x").write_text("x")
    store.settle(session="s", turn=1, tool="bash")
    result = store.restore(cp.id, force=True)
    assert (ws / ".env").read_text() == "SECRET=1\n"
    assert ".env" in result.kept

    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    (ws2 / "a.txt").write_text("a\n")
    store2 = CheckpointStore(tmp_path / "home", ws2)
    start = store2.create(session="s", turn=1, tool="bash", summary="")
    (ws2 / "payload.sh").write_text("evil\n")
    (ws2 / "sub").mkdir()
    (ws2 / "sub" / "run").write_text("evil\n")
    store2.settle(session="s", turn=1, tool="bash")
    (ws2 / ".gitignore").write_text("payload.sh\nrun\n")
    store2.settle(session="s", turn=2, tool="bash")
    result2 = store2.restore(start.id)
    assert sorted(p.name for p in ws2.iterdir()) == ["a.txt"]
    assert set(result2.deleted) == {"payload.sh", "sub/run", ".gitignore"}
    assert result2.kept == ()


def test_a_restore_cut_short_is_recorded_and_says_how_to_go_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "stuck").mkdir(parents=True)
    (ws / "a.txt").write_text("a1\n")
    (ws / "stuck" / "f").write_text("f1\n")
    store = CheckpointStore(tmp_path / "home", ws)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    (ws / "a.txt").write_text("a2\n")
    (ws / "stuck" / "f").write_text("f2\n")
    store.settle(session="s", turn=1, tool="bash")
    # An immutable directory: nothing may be created in it, even by root.
    if subprocess.run(["chattr", "+i", str(ws / "stuck")], capture_output=True).returncode:
        pytest.fail("chattr +i does not work on this file system")
    try:
        with pytest.raises(CheckpointError, match="stopped part way") as caught:
            store.restore(cp.id)
    finally:
        subprocess.run(["chattr", "-i", str(ws / "stuck")], check=True)
    assert (ws / "stuck" / "f").read_text() == "f2\n"
    back = str(caught.value).rsplit("undo --to ", 1)[1]
    latest = store.list()[-1]
    assert latest.tool == "after:undo" and latest.restored == "" and "partly" in latest.summary
    # A plain undo now goes back to before the partial restore, not past it.
    target = store.undo_target()
    assert target is not None and target.id == back
    store.restore(back)
    assert (ws / "a.txt").read_text() == "a2\n"


PARENT_PATTERNS = [
    "**/frontend/dist", "/**/dist", "frontend/**/sub/x", "**/sub/x", "f[^x]ontend/dist",
    "f[!x]ontend/*.log", "front*/gen/", "frontend/\\#hash", "!frontend/keep.log", "*.tmp",
]  # fmt: skip
PARENT_FILES = ["dist/a", "sub/x", "x.log", "keep.log", "gen/g", "#hash", "b.tmp", "q/sub/x", "ok"]


@pytest.mark.parametrize("depth", [("frontend",), ("frontend", "sub")])
def test_inherited_rules_agree_with_git_and_never_ignore_more(
    tmp_path: Path, depth: tuple[str, ...]
) -> None:
    root = tmp_path / "repo"
    ws = root.joinpath(*depth)
    ws.mkdir(parents=True)
    git(root, "init", "-q")
    (root / ".gitignore").write_bytes(
        b"\xef\xbb\xbf" + "\n".join(["*.log", *PARENT_PATTERNS]).encode() + b"\n"
    )
    for rel in PARENT_FILES:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(rel)
    prefix = "/".join(depth) + "/"
    truth = subprocess.run(
        ["git", "check-ignore", "--no-index", "-z", "--stdin"],
        cwd=root,
        input=b"".join((prefix + f).encode() + b"\0" for f in PARENT_FILES),
        capture_output=True,
    ).stdout
    ignored = {p.decode()[len(prefix) :] for p in truth.split(b"\0") if p}
    assert "ok" not in ignored and "dist/a" in ignored  # the case is not trivial
    store = CheckpointStore(tmp_path / "home", ws)
    cp = store.create(session="s", turn=1, tool="bash", summary="")
    assert files_in(store, cp.commit) == set(PARENT_FILES) - ignored

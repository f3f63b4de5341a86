"""Checkpoints: real git, real files; every comparison hashes every file."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tether.memory.checkpoints import (
    Checkpoint,
    CheckpointConflict,
    CheckpointError,
    CheckpointStore,
)

State = dict[str, tuple[str, str]]


def git(cwd: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def write(root: Path, rel: str, data: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def state(root: Path) -> State:
    """Every file and symlink outside .git: content hash and kind/exec bit."""
    result: State = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                result[rel] = ("link", os.readlink(path))
            else:
                kind = "exec" if os.access(path, os.X_OK) else "file"
                result[rel] = (kind, hashlib.sha256(path.read_bytes()).hexdigest())
    return result


def dirs(root: Path) -> set[str]:
    return {
        Path(d).relative_to(root).as_posix()
        for d, _, _ in os.walk(root)
        if ".git" not in Path(d).relative_to(root).parts
    }


def git_state(root: Path) -> dict[str, str]:
    """Hash of every file under the user's .git."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / ".git").rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A user repository with tracked, untracked, ignored and nested-ignored files."""
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    write(ws, ".gitignore", "build/\n*.log\n")
    write(ws, "src/app.py", "print('hi')\n")
    write(ws, "src/pkg/util.py", "x = 1\n")
    write(ws, "src/pkg/.gitignore", "generated.py\n")
    write(ws, "README.md", "# readme\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    git(ws, "stash", "list")
    write(ws, "notes.txt", "untracked but not ignored\n")
    write(ws, "build/out.bin", b"\x00\x01built")
    write(ws, "debug.log", "ignored log\n")
    write(ws, "src/pkg/generated.py", "ignored by a nested .gitignore\n")
    return ws


def store(tmp_path: Path, ws: Path, **kw: int) -> CheckpointStore:
    return CheckpointStore(tmp_path / "tether-home", ws, **kw)


def test_create_list_and_metadata(tmp_path: Path, repo: Path) -> None:
    s = store(tmp_path, repo)
    first = s.create(session="s1", turn=1, tool="bash", summary="rm -rf src")
    assert not first.unchanged and len(first.id) == 12
    assert set(first.added) == {".gitignore", "README.md", "notes.txt", "src/app.py"} | {
        "src/pkg/.gitignore",
        "src/pkg/util.py",
    }
    write(repo, "src/app.py", "print('changed')\n")
    (repo / "README.md").unlink()
    write(repo, "new.py", "n = 1\n")
    second = s.create(session="s2", turn=4, tool="edit_file", summary="src/app.py")
    assert (second.added, second.deleted, second.modified) == (
        ("new.py",),
        ("README.md",),
        ("src/app.py",),
    )
    assert sorted(second.changed) == ["README.md", "new.py", "src/app.py"]
    listed = s.list()
    assert [c.id for c in listed] == [first.id, second.id]
    assert listed[1] == second
    assert [c.id for c in s.list("s1")] == [first.id]
    assert s.get(second.id[:6]) == second
    assert listed[0].time.endswith("+00:00") and listed[0].turn == 1
    refs = subprocess.run(
        ["git", f"--git-dir={s.repo}", "for-each-ref", "--format=%(refname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert refs == ["refs/tether/latest", "refs/tether/sessions/s1", "refs/tether/sessions/s2"]
    assert '"workspace"' in (s.repo / "workspace.json").read_text()
    assert s.repo.parent == tmp_path / "tether-home" / "checkpoints"


def test_unchanged_tree_makes_no_commit(tmp_path: Path, repo: Path) -> None:
    s = store(tmp_path, repo)
    first = s.create(session="s", turn=1, tool="bash", summary="ls")
    write(repo, "build/more.o", "ignored changes do not count")
    again = s.create(session="s", turn=2, tool="bash", summary="ls")
    assert again.unchanged and again.id == first.id and again.changed == ()
    assert len(s.list()) == 1


def test_restore_brings_back_every_file_and_leaves_ignored_ones(tmp_path: Path, repo: Path) -> None:
    s = store(tmp_path, repo, max_file_bytes=1000)
    write(repo, "data/big.csv", "x" * 5000)
    before_git = git_state(repo)
    snap, snap_dirs = state(repo), dirs(repo)
    cp = s.create(session="s", turn=1, tool="bash", summary="rm -rf src")
    assert cp.not_covered == ("data/big.csv",)

    shutil.rmtree(repo / "src")
    write(repo, "README.md", "rewritten\n")
    (repo / "notes.txt").unlink()
    write(repo, "newpkg/deep/mod.py", "created\n")
    write(repo, "scratch.txt", "untracked new file\n")
    write(repo, "build/out.bin", b"rebuilt")  # ignored: must survive the restore as is
    write(repo, "debug.log", "new log\n")
    write(repo, "data/big.csv", "y" * 6000)  # too large: not covered, untouched
    s.settle(session="s", turn=1, tool="bash")

    result = s.restore(cp.id)
    now = state(repo)
    untouched = {"build/out.bin", "debug.log", "data/big.csv", "src/pkg/generated.py"}
    assert {k: v for k, v in now.items() if k not in untouched} == {
        k: v for k, v in snap.items() if k not in untouched
    }
    assert (repo / "build/out.bin").read_bytes() == b"rebuilt"
    assert (repo / "debug.log").read_text() == "new log\n"
    assert (repo / "data/big.csv").read_text() == "y" * 6000
    assert (repo / "src/pkg/generated.py").exists() is False  # rm -rf took it; ignored
    assert dirs(repo) == snap_dirs  # newpkg/deep cleaned up, src tree back
    assert set(result.deleted) == {"newpkg/deep/mod.py", "scratch.txt"}
    assert "src/app.py" in result.written and result.skipped == ()
    assert git_state(repo) == before_git
    assert git(repo, "status", "--porcelain") == "?? data/\n?? notes.txt\n"


def test_user_git_dir_is_byte_identical(tmp_path: Path, repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".git/hooks")
    write(repo, ".git/hooks/pre-commit", "#!/bin/sh\nexit 1\n").chmod(0o755)
    write(repo, "src/app.py", "dirty\n")
    git(repo, "stash", "-q")
    before = git_state(repo)
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="edit", summary="x")
    write(repo, "src/app.py", "agent edit\n")
    shutil.rmtree(repo / "src/pkg")
    s.settle(session="s", turn=1, tool="edit")
    s.restore(cp.id)
    s.restore(s.list()[-2].id)
    assert git_state(repo) == before
    assert git(repo, "stash", "list").count("\n") == 1


def test_ignore_sources_info_exclude_and_global(
    tmp_path: Path, repo: Path, isolated_home: Path
) -> None:
    write(repo, ".git/info/exclude", "local-only/\n")
    write(isolated_home, ".config/git/ignore", "*.swp\n")
    write(isolated_home, "custom-ignore", "secret.env\n")
    git(isolated_home, "config", "--global", "core.excludesFile", "~/custom-ignore")
    for rel in ("local-only/a.txt", "x.swp", "secret.env", "keep.txt"):
        write(repo, rel, rel)
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="bash", summary="x")
    assert "keep.txt" in cp.added and "x.swp" in cp.added  # custom file replaces XDG one
    assert not {"local-only/a.txt", "secret.env", "src/pkg/generated.py"} & set(cp.added)
    s.settle(session="s", turn=1, tool="bash")
    s.restore(cp.id)
    assert (repo / "local-only/a.txt").exists() and (repo / "secret.env").exists()


def test_workspace_need_not_be_a_git_repo(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    write(ws, "a.txt", "a\n")
    write(ws, "sub/b.txt", "b\n")
    write(ws, ".gitignore", "*.tmp\n")
    write(ws, "x.tmp", "ignored\n")
    snap = state(ws)
    s = store(tmp_path, ws)
    cp = s.create(session="s", turn=1, tool="bash", summary="x")
    write(ws, "a.txt", "changed\n")
    shutil.rmtree(ws / "sub")
    write(ws, "c.txt", "new\n")
    s.settle(session="s", turn=1, tool="bash")
    s.restore(cp.id)
    assert state(ws) == snap
    assert not (ws / ".git").exists()


def test_restore_is_undoable_and_undo_target_walks_back(tmp_path: Path, repo: Path) -> None:
    s = store(tmp_path, repo)
    assert s.undo_target() is None
    s0 = state(repo)
    s.create(session="s", turn=1, tool="edit", summary="step 1")
    write(repo, "README.md", "step one\n")
    s.settle(session="s", turn=1, tool="edit")
    s1 = state(repo)
    s.create(session="s", turn=2, tool="bash", summary="step 2")  # unchanged: no commit
    write(repo, "step2.txt", "two\n")
    s.settle(session="s", turn=2, tool="bash")
    s2 = state(repo)

    target = s.undo_target()
    assert target is not None
    first = s.restore(target.id)
    assert state(repo) == s1 and first.before.tool == "undo"
    target = s.undo_target()
    assert target is not None
    s.restore(target.id)
    assert state(repo) == s0
    assert s.undo_target() is None
    s.restore(first.before.id)  # redo: back to before the first undo
    assert state(repo) == s2
    assert s.list()[-1].tool == "after:undo"


def test_outside_edits_conflict_unless_forced(tmp_path: Path, repo: Path) -> None:
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="edit", summary="x")
    write(repo, "src/app.py", "agent\n")
    s.settle(session="s", turn=1, tool="edit")
    write(repo, "src/app.py", "user by hand\n")
    write(repo, "user-new.txt", "user\n")
    write(repo, "README.md", "# readme\n")  # same as target and current: not a conflict
    edited = state(repo)
    with pytest.raises(CheckpointConflict) as info:
        s.restore(cp.id)
    assert info.value.files == ("src/app.py", "user-new.txt")
    assert "src/app.py" in str(info.value)
    assert state(repo) == edited

    result = s.restore(cp.id, force=True)
    assert result.overridden == ("src/app.py", "user-new.txt")
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
    s.restore(result.before.id)  # the user's edits were saved first
    assert state(repo) == edited


def test_agent_edits_without_settle_count_as_outside(tmp_path: Path, repo: Path) -> None:
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="edit", summary="x")
    write(repo, "src/app.py", "agent, not settled\n")
    with pytest.raises(CheckpointConflict):
        s.restore(cp.id)


def test_crlf_binary_exec_symlink_round_trip(tmp_path: Path, repo: Path) -> None:
    write(repo, ".gitattributes", "* text=auto eol=lf\n*.sh filter=lfs\n")
    write(repo, "win.txt", b"line one\r\nline two\r\n")
    write(repo, "blob.bin", bytes(range(256)) * 4 + b"\r\n\x00")
    write(repo, "run.sh", "#!/bin/sh\necho hi\n").chmod(0o755)
    write(repo, "was_exec.sh", "#!/bin/sh\n").chmod(0o755)
    os.symlink("src/app.py", repo / "link")
    os.symlink("/nonexistent/target", repo / "dangling")
    snap = state(repo)
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="bash", summary="x")
    write(repo, "win.txt", b"changed\n")
    write(repo, "blob.bin", b"\x00")
    (repo / "run.sh").unlink()
    (repo / "was_exec.sh").chmod(0o644)
    (repo / "link").unlink()
    write(repo, "link", "now a file\n")
    (repo / "dangling").unlink()
    s.settle(session="s", turn=1, tool="bash")
    s.restore(cp.id)
    assert state(repo) == snap
    assert (repo / "win.txt").read_bytes() == b"line one\r\nline two\r\n"
    assert os.readlink(repo / "dangling") == "/nonexistent/target"


def test_odd_file_names(tmp_path: Path, repo: Path) -> None:
    names = ["with space.txt", "ünïcödé/日本.md", "new\nline.txt", "-dash", "tab\tname", "q'\"*?"]
    for name in names:
        write(repo, name, name)
    snap = state(repo)
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="bash", summary="x")
    assert set(names) <= set(cp.added)
    for name in names:
        (repo / name).unlink()
    write(repo, "another one\n.txt", "x")
    s.settle(session="s", turn=1, tool="bash")
    s.restore(cp.id)
    assert state(repo) == snap


def test_files_and_directories_swap_places(tmp_path: Path, repo: Path) -> None:
    snap = state(repo)
    s = store(tmp_path, repo)
    cp = s.create(session="s", turn=1, tool="bash", summary="x")
    shutil.rmtree(repo / "src/pkg")
    write(repo, "src/pkg", "now a file\n")
    (repo / "README.md").unlink()
    write(repo, "README.md/inner.txt", "now a dir\n")
    s.settle(session="s", turn=1, tool="bash")
    s.restore(cp.id)
    expected = {k: v for k, v in snap.items() if k != "src/pkg/generated.py"}
    assert state(repo) == expected


def test_large_and_nested_repo_are_not_covered(tmp_path: Path, repo: Path) -> None:
    write(repo, "grows.dat", "small\n")
    nested = repo / "vendor/lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    write(nested, "code.c", "int x;\n")
    s = store(tmp_path, repo, max_file_bytes=100)
    first = s.create(session="s", turn=1, tool="bash", summary="x")
    assert "grows.dat" in first.added and first.not_covered == ("vendor/lib/",)
    write(repo, "grows.dat", "z" * 500)
    second = s.create(session="s", turn=2, tool="bash", summary="x")
    assert second.deleted == ("grows.dat",)
    assert second.not_covered == ("grows.dat", "vendor/lib/")
    s.restore(first.id, force=True)
    assert (repo / "grows.dat").read_text() == "z" * 500  # left as is, not deleted
    assert (nested / "code.c").exists() and (nested / ".git").is_dir()


def test_store_is_keyed_by_real_workspace_path(tmp_path: Path, repo: Path) -> None:
    link = tmp_path / "alias"
    os.symlink(repo, link)
    a = store(tmp_path, repo)
    a.create(session="s", turn=1, tool="bash", summary="x")
    b = store(tmp_path, link)
    other = store(tmp_path, tmp_path / "userhome")
    assert a.repo == b.repo != other.repo
    assert len(b.list()) == 1 and other.list() == []


def test_tether_home_inside_the_workspace_is_left_out(tmp_path: Path, repo: Path) -> None:
    """All of the state: a transcript that grows at every step must not be in checkpoints
    (undo would rewind it and always see an outside change)."""
    s = CheckpointStore(repo / ".local/state/tether", repo)
    write(repo, ".local/state/tether/sessions/s.jsonl", "{}\n")
    write(repo, ".local/other.txt", "mine\n")
    cp = s.create(session="s", turn=1, tool="bash", summary="x")
    assert not any(p.startswith(".local/state") for p in cp.added)
    assert ".local/other.txt" in cp.added
    write(repo, ".local/state/tether/sessions/s.jsonl", "{}\n{}\n")
    assert s.create(session="s", turn=1, tool="bash", summary="x").unchanged
    write(repo, "x.txt", "x")
    s.settle(session="s", turn=1, tool="bash")
    s.restore(cp.id)
    assert s.repo.is_dir() and len(s.list()) == 3


def test_errors_are_checkpoint_errors(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = store(tmp_path, repo)
    with pytest.raises(CheckpointError, match="no checkpoint"):
        s.restore("deadbeef")
    with pytest.raises(CheckpointError, match="not a checkpoint id"):
        s.restore("HEAD~1")
    with pytest.raises(CheckpointError, match="invalid session"):
        s.create(session="../x", turn=1, tool="t", summary="")
    with pytest.raises(CheckpointError, match="not a directory"):
        store(tmp_path, tmp_path / "missing")
    (s.repo / "tether-index").write_bytes(b"garbage, not an index")
    with pytest.raises(CheckpointError, match="index"):
        s.create(session="s", turn=1, tool="t", summary="")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(CheckpointError, match="git"):
        store(tmp_path, repo)


def test_checkpoint_serialises() -> None:
    cp = Checkpoint("abc", "s", 1, "t", "bash", "ls", changed=("a",), added=("a",))
    assert cp.to_dict()["changed"] == ("a",) and cp.modified == ()

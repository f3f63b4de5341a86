"""Undo through the real CLI: the agent edits, deletes with bash, changes an untracked
file; `tether undo` brings every file back byte for byte and no `.git` byte changes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

Tree = dict[str, tuple[str, str]]


def tree(root: Path) -> Tree:
    """Every file, symlink and exec bit outside .git, ignored and untracked ones too."""
    found: Tree = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            else:
                kind = "exec" if os.access(path, os.X_OK) else "file"
                found[rel] = (kind, hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def git_bytes(root: Path) -> dict[str, bytes]:
    """The user's .git, byte for byte: index, refs, config, logs, objects."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / ".git").rglob("*"))
        if p.is_file()
    }


def git(root: Path, *args: str) -> None:
    cmd = ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *args]
    subprocess.run(cmd, cwd=root, check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "pkg" / "util.py").write_bytes(b"X = 1\r\nY = 2\r\n")  # CRLF
    run = root / "src" / "run.sh"
    run.write_text("#!/bin/sh\necho run\n")
    run.chmod(0o755)
    (root / "src" / "link.py").symlink_to("app.py")
    (root / "README.md").write_text("# project\n")
    (root / ".gitignore").write_text("build/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    git(root, "stash", "list")  # the user's stash and index stay as they are
    (root / "notes.txt").write_text("untracked notes\n")  # never added to git
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0ignored")
    return root


def script() -> list[Turn]:
    return [
        Turn(
            text="Editing.",
            tool_calls=(
                ScriptedCall(
                    "str_replace",
                    {"path": "src/app.py", "old_str": "return 1", "new_str": "return 2"},
                ),
                ScriptedCall("write_file", {"path": "src/extra.py", "content": "E = 1\n"}),
            ),
        ),
        Turn(text="Looking.", tool_calls=(ScriptedCall("bash", {"command": "ls -R src"}),)),
        Turn(
            text="Starting over.",
            tool_calls=(ScriptedCall("bash", {"command": "rm -rf src && echo x > new.txt"}),),
        ),
        Turn(
            text="Notes.",
            tool_calls=(ScriptedCall("bash", {"command": "printf 'more\\n' >> notes.txt"}),),
        ),
        Turn(text="Done."),
    ]


def cli_json(run_cli: Any, args: list[str], cwd: Path, env: dict[str, str]) -> Any:
    proc = run_cli([*args, "--json"], cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return json.loads(proc.stdout)


def test_undo_restores_everything_the_agent_did(
    run_cli, cli_env, project: Path, transcript
) -> None:
    original, original_git = tree(project), git_bytes(project)
    with ScriptedEndpoint(script()) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(
            ["-p", "rework", "--permission-mode", "auto", "--output-format", "json"],
            cwd=project,
            env=env,
        )
    assert proc.returncode == 0, proc.stderr
    session = json.loads(proc.stdout)["session_id"]
    after_run = tree(project)
    assert not (project / "src").exists() and (project / "new.txt").read_text() == "x\n"
    assert (project / "notes.txt").read_text() == "untracked notes\nmore\n"
    assert git_bytes(project) == original_git  # the run did not touch the user's .git

    # Each mutating step has a checkpoint before and after; `ls` (read-only) has none.
    listed = cli_json(run_cli, ["checkpoints"], project, env)
    assert [cp["tool"] for cp in listed] == [
        "str_replace",
        "after:str_replace",
        "after:write_file",
        "after:bash",
        "after:bash",
    ]  # before-checkpoints with nothing new since the last one make no commit
    assert {cp["session"] for cp in listed} == {session}
    assert listed[3]["summary"] == "rm -rf src && echo x > new.txt"
    assert "src/app.py" in listed[3]["deleted"] and "new.txt" in listed[3]["added"]
    logged = [e for e in transcript() if e["type"] == "checkpoint"]
    assert [(e["phase"], e["tool"]) for e in logged] == [
        ("before", "str_replace"),
        ("after", "str_replace"),
        ("before", "write_file"),
        ("after", "write_file"),
        ("before", "bash"),
        ("after", "bash"),
        ("before", "bash"),
        ("after", "bash"),
    ]
    assert {e["id"] for e in logged} == {cp["id"] for cp in listed}
    calls = {
        c["id"]
        for e in transcript()
        if e["type"] == "message"
        for c in e["message"].get("tool_calls") or []
    }
    assert {e["call_id"] for e in logged} <= calls

    # One step back: only the untracked file's change is undone.
    step = cli_json(run_cli, ["undo"], project, env)
    assert step["written"] == ["notes.txt"] and step["deleted"] == []
    assert (project / "notes.txt").read_text() == "untracked notes\n"
    assert not (project / "src").exists()

    # The whole session: every file as it was, byte for byte, .git untouched.
    whole = cli_json(run_cli, ["undo", "--session"], project, env)
    assert "new.txt" in whole["deleted"] and "src/app.py" in whole["written"]
    assert tree(project) == original
    assert git_bytes(project) == original_git

    # An undo is itself undoable.
    cli_json(run_cli, ["undo", "--to", whole["before"]], project, env)
    expected = dict(after_run)
    expected["notes.txt"] = original["notes.txt"]  # the first undo came before
    assert tree(project) == expected
    assert git_bytes(project) == original_git


def test_undo_refuses_to_overwrite_outside_changes(run_cli, cli_env, project: Path) -> None:
    turns = [
        Turn(
            text="Edit.",
            tool_calls=(ScriptedCall("bash", {"command": "echo agent > README.md"}),),
        ),
        Turn(text="Done."),
    ]
    with ScriptedEndpoint(turns) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "edit", "--permission-mode", "auto"], cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    (project / "README.md").write_text("the user's own edit\n")

    proc = run_cli(["undo"], cwd=project, env=env)
    assert proc.returncode == 7
    assert "README.md" in proc.stdout and "Nothing was changed" in proc.stdout
    assert (project / "README.md").read_text() == "the user's own edit\n"

    forced = cli_json(run_cli, ["undo", "--force"], project, env)
    assert forced["overridden"] == ["README.md"]
    assert (project / "README.md").read_text() == "# project\n"
    # The user's edit was recorded before it was overwritten: it can be brought back.
    cli_json(run_cli, ["undo", "--to", forced["before"]], project, env)
    assert (project / "README.md").read_text() == "the user's own edit\n"


def test_undo_without_checkpoints_and_with_a_bad_id(run_cli, cli_env, project: Path) -> None:
    proc = run_cli(["undo"], cwd=project)
    assert proc.returncode == 0 and "Nothing to undo" in proc.stdout
    proc = run_cli(["checkpoints"], cwd=project)
    assert proc.returncode == 0 and "No checkpoints" in proc.stdout
    with ScriptedEndpoint(
        [Turn(tool_calls=(ScriptedCall("bash", {"command": "touch a"}),)), Turn(text="ok")]
    ) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        assert (
            run_cli(["-p", "x", "--permission-mode", "auto"], cwd=project, env=env).returncode == 0
        )
    proc = run_cli(["undo", "--to", "zzzz"], cwd=project, env=env)
    assert proc.returncode == 2 and "not a checkpoint id" in proc.stderr
    proc = run_cli(["undo", "--to", "abcdef12"], cwd=project, env=env)
    assert proc.returncode == 2 and "no checkpoint abcdef12" in proc.stderr


def test_no_checkpoints_flag_records_nothing(
    run_cli, cli_env, project: Path, tmp_path: Path
) -> None:
    with ScriptedEndpoint(
        [Turn(tool_calls=(ScriptedCall("bash", {"command": "touch a"}),)), Turn(text="ok")]
    ) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "x", "--permission-mode", "auto", "--no-checkpoints"]
        assert run_cli(args, cwd=project, env=env).returncode == 0
    assert (project / "a").exists()
    assert not (tmp_path / "state" / "checkpoints").exists()


def test_interactive_undo_is_recorded_and_told_to_the_model(
    run_cli, cli_env, project: Path, transcript
) -> None:
    turns = [
        Turn(tool_calls=(ScriptedCall("bash", {"command": "rm README.md"}),)),
        Turn(text="Removed."),
        Turn(text="Noted."),
    ]
    with ScriptedEndpoint(turns) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        lines = "remove the readme\n/checkpoints\n/undo\n/undo nothex\nwhat now?\n"
        proc = run_cli(["--permission-mode", "auto"], cwd=project, env=env, input=lines)
        requests = [r.body for r in endpoint.requests]
    assert proc.returncode == 0, proc.stderr
    assert (project / "README.md").read_text() == "# project\n"
    assert "after:bash" in proc.stdout and "rm README.md" in proc.stdout  # /checkpoints
    assert "Restored checkpoint" in proc.stdout and "written: README.md" in proc.stdout
    assert "Cannot undo:" in proc.stdout and "not a checkpoint id" in proc.stdout
    last_user = requests[-1]["messages"][-1]
    assert last_user["role"] == "user"
    assert "[tether] The user undid changes" in last_user["content"]
    assert "README.md" in last_user["content"] and last_user["content"].endswith("what now?")
    undos = [e for e in transcript() if e["type"] == "undo"]
    assert len(undos) == 1 and undos[0]["written"] == ["README.md"]


def test_a_patch_that_adds_over_a_file_is_undone_from_its_checkpoint(
    run_cli, cli_env, project: Path
) -> None:
    """Add File over an existing file replaces it (the format's reference behaviour); the
    checkpoint before the step keeps the old content, so undo brings it back."""
    original = tree(project)
    patch = (
        "*** Begin Patch\n*** Add File: README.md\n+replaced\n"
        "*** Update File: src/app.py\n@@\n def main():\n-    return 1\n+    return 3\n"
        "*** End Patch\n"
    )
    turns = [Turn(tool_calls=(ScriptedCall("apply_patch", {"patch": patch}),)), Turn(text="ok")]
    with ScriptedEndpoint(turns) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "x", "--permission-mode", "accept-edits"], cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (project / "README.md").read_text() == "replaced\n"
    assert "return 3" in (project / "src/app.py").read_text()
    listed = cli_json(run_cli, ["checkpoints"], project, env)
    assert listed[-1]["tool"] == "after:apply_patch"
    assert listed[-1]["summary"] == "README.md, src/app.py"
    cli_json(run_cli, ["undo"], project, env)
    assert tree(project) == original


def test_a_run_without_checkpoints_says_so_and_goes_on(
    run_cli, cli_env, project: Path, tmp_path: Path, transcript
) -> None:
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "checkpoints").write_text("not a directory\n")
    turns = [
        Turn(tool_calls=(ScriptedCall("bash", {"command": "touch one"}),)),
        Turn(tool_calls=(ScriptedCall("bash", {"command": "touch two"}),)),
        Turn(text="ok"),
    ]
    with ScriptedEndpoint(turns) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "x", "--permission-mode", "auto"], cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (project / "one").exists() and (project / "two").exists()
    assert proc.stderr.count("undo will not work") == 1, proc.stderr
    notices = [e for e in transcript() if e["type"] == "notice"]
    assert len(notices) == 1 and "Checkpoints are off" in notices[0]["text"]


def test_undoing_an_earlier_session_names_the_later_ones(
    run_cli, cli_env, project: Path, tmp_path: Path
) -> None:
    sessions = []
    for name in ("first.txt", "second.txt"):
        turns = [
            Turn(tool_calls=(ScriptedCall("bash", {"command": f"touch {name}"}),)),
            Turn(text="ok"),
        ]
        with ScriptedEndpoint(turns) as endpoint:
            env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
            args = ["-p", "x", "--permission-mode", "auto", "--output-format", "json"]
            proc = run_cli(args, cwd=project, env=env)
        assert proc.returncode == 0, proc.stderr
        sessions.append(json.loads(proc.stdout)["session_id"])
    (project / "bad\x1b[2Jname").write_text("x")  # an outside change with a hostile name
    proc = run_cli(["undo", "--session", sessions[0]], cwd=project, env=env)
    assert proc.returncode == 7 and "\x1b" not in proc.stdout and "\\x1b[2Jname" in proc.stdout
    (project / "bad\x1b[2Jname").unlink()
    result = cli_json(run_cli, ["undo", "--session", sessions[0]], project, env)
    assert result["later_sessions"] == [sessions[1]]
    assert not (project / "first.txt").exists() and not (project / "second.txt").exists()

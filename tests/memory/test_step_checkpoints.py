"""Checkpoints around steps, and the store's lock: real git, real files, real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tether.memory.checkpoints import CheckpointError, CheckpointStore
from tether.memory.sessions import Transcript
from tether.memory.step_checkpoints import StepCheckpoints
from tether.messages import ToolCall
from tether.observe.redact import Redactor
from tether.policy.knowledge import is_read_only_script


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return root


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def steps(tmp_path: Path, ws: Path, warnings: list[str], **kw: Any) -> StepCheckpoints:
    transcript = Transcript.create(tmp_path / "home", "s1", {}, Redactor(["sk-secret-123456"]))
    return StepCheckpoints(
        lambda: CheckpointStore(tmp_path / "home", ws),
        session="s1",
        transcript=transcript,
        warn=warnings.append,
        redact=Redactor(["sk-secret-123456"]),
        read_only_command=is_read_only_script,
        **kw,
    )


def test_mutating_steps_are_recorded_before_and_after(tmp_path: Path, ws: Path) -> None:
    warnings: list[str] = []
    hook = steps(tmp_path, ws, warnings)
    hook.turn = 3
    call = ToolCall("c1", "bash", "{}")
    with hook.around(call, "bash", {"command": "echo sk-secret-123456 > b.txt"}):
        (ws / "b.txt").write_text("b\n")
    with hook.around(ToolCall("c2", "bash", "{}"), "bash", {"command": "cat a.txt | wc -l"}):
        pass  # read-only: no checkpoint at all
    with hook.around(ToolCall("c3", "read_file", "{}"), "read_file", {"path": "a.txt"}):
        pass
    logged = [e for e in entries(tmp_path / "home/sessions/s1.jsonl") if e["type"] == "checkpoint"]
    assert [(e["phase"], e["call_id"], e["unchanged"]) for e in logged] == [
        ("before", "c1", False),
        ("after", "c1", False),
    ]
    assert logged[1]["changed"] == ["b.txt"] and logged[1]["turn"] == 3
    listed = CheckpointStore(tmp_path / "home", ws).list()
    assert [cp.tool for cp in listed] == ["bash", "after:bash"]
    assert "sk-secret" not in listed[0].summary and "echo" in listed[0].summary
    assert warnings == []


def test_a_failing_step_is_still_settled(tmp_path: Path, ws: Path) -> None:
    hook = steps(tmp_path, ws, [])
    with (
        pytest.raises(RuntimeError),
        hook.around(ToolCall("c", "write_file", "{}"), "write_file", {"path": "x"}),
    ):
        (ws / "x").write_text("half\n")
        raise RuntimeError("the tool broke")
    store = CheckpointStore(tmp_path / "home", ws)
    assert store.list()[-1].tool == "after:write_file" and "x" in store.list()[-1].added


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("read_file", {"path": "a"}, False),
        ("search_files", {"pattern": "x"}, False),
        ("bash", {"command": "git status && ls"}, False),
        ("bash", {"command": "sed -i s/a/b/ a.txt"}, True),
        ("bash", {"command": "eval ls"}, True),
        ("bash", {"command": "echo $(rm -rf x)"}, True),
        ("bash", {"command": 42}, True),
        ("apply_patch", {"patch": ""}, True),
        ("some_future_tool", {}, True),
    ],
)
def test_what_counts_as_mutating(
    tmp_path: Path, ws: Path, tool: str, args: Any, expected: bool
) -> None:
    assert steps(tmp_path, ws, []).mutating(tool, args) is expected


def test_a_broken_store_warns_once_and_steps_still_run(tmp_path: Path, ws: Path) -> None:
    warnings: list[str] = []

    def broken() -> CheckpointStore:
        raise CheckpointError("cannot run git (no such file); checkpoints need the git CLI")

    transcript = Transcript.create(tmp_path / "home", "s2", {}, Redactor([]))
    hook = StepCheckpoints(broken, session="s2", transcript=transcript, warn=warnings.append)
    ran = 0
    for n in range(3):
        with hook.around(ToolCall(str(n), "bash", "{}"), "bash", {"command": "touch b"}):
            ran += 1
    assert ran == 3
    assert len(warnings) == 1 and "undo will not work" in warnings[0]


def test_stale_git_locks_from_a_killed_writer_are_cleared(tmp_path: Path, ws: Path) -> None:
    store = CheckpointStore(tmp_path / "home", ws)
    store.create(session="s", turn=1, tool="bash", summary="")
    (store.repo / "tether-index.lock").write_text("")
    (store.repo / "refs" / "tether" / "latest.lock").write_text("")
    (ws / "a.txt").write_text("changed\n")
    cp = store.create(session="s", turn=2, tool="bash", summary="")
    assert cp.changed == ("a.txt",)


WRITER = """
import sys
from pathlib import Path
from tether.memory.checkpoints import CheckpointStore
home, ws, tag = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
store = CheckpointStore(home, ws)
for i in range(8):
    (ws / f"{tag}-{i}.txt").write_text(str(i))
    store.create(session=tag, turn=i, tool="bash", summary=f"{tag} {i}")
"""


def test_concurrent_writers_keep_one_linear_chain(tmp_path: Path, ws: Path) -> None:
    """Two processes and a thread record at once: nothing fails, nothing is lost."""
    CheckpointStore(tmp_path / "home", ws)  # create the repository once
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path / "home"), str(ws), tag],
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("p1", "p2")
    ]
    errors: list[BaseException] = []

    def thread_writer() -> None:
        try:
            store = CheckpointStore(tmp_path / "home", ws)
            for i in range(8):
                (ws / f"t-{i}.txt").write_text(str(i))
                store.create(session="t", turn=i, tool="bash", summary="")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=thread_writer)
    thread.start()
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    thread.join(120)
    assert errors == []
    store = CheckpointStore(tmp_path / "home", ws)
    listed = store.list()
    assert len({cp.commit for cp in listed}) == len(listed)
    assert {cp.session for cp in listed} == {"p1", "p2", "t"}
    assert len(listed) >= 20  # a create that found nothing new makes no commit
    final = store.create(session="x", turn=0, tool="bash", summary="")
    assert final.unchanged  # the chain's newest commit holds every file written


def test_a_hook_planted_in_the_store_never_runs(tmp_path: Path, ws: Path) -> None:
    store = CheckpointStore(tmp_path / "home", ws)
    hooks = store.repo / "hooks"
    hooks.mkdir(exist_ok=True)
    marker = tmp_path / "hook-ran"
    for name in ("reference-transaction", "post-index-change", "pre-commit"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
        hook.chmod(0o755)
    (ws / "a.txt").write_text("changed\n")
    store.create(session="s", turn=1, tool="bash", summary="")
    store.restore(store.list()[0].id)
    assert not marker.exists()


def test_tools_may_not_touch_tethers_own_state(tmp_path: Path) -> None:
    from tether.errors import ToolError
    from tether.sandbox.workspace import Workspace

    state = tmp_path / ".local" / "state" / "tether"
    state.mkdir(parents=True)
    workspace = Workspace(tmp_path, reserved=(state,))
    for path in (".local/state/tether/checkpoints/x.git/hooks/post", str(state)):
        with pytest.raises(ToolError, match="tether's own state"):
            workspace.resolve(path)
    assert workspace.resolve(".local/other") == tmp_path / ".local" / "other"


def test_no_restore_runs_while_a_step_holds_the_store(tmp_path: Path, ws: Path) -> None:
    """The agent's commands may be changing files: an undo waits for the step to end."""
    store = CheckpointStore(tmp_path / "home", ws)
    first = store.create(session="s", turn=1, tool="bash", summary="")
    script = (
        "import sys; from pathlib import Path; from tether.memory.checkpoints import "
        "CheckpointStore\n"
        "s = CheckpointStore(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "s._git.lock_wait_s = 0.5\n"
        "s.restore(sys.argv[3])\n"
    )
    args = [sys.executable, "-c", script, str(tmp_path / "home"), str(ws), first.id]
    with store.hold():
        (ws / "a.txt").write_text("the step is writing\n")
        store.settle(session="s", turn=1, tool="bash")  # re-entrant in the holder
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0 and "stayed busy" in proc.stderr
        assert (ws / "a.txt").read_text() == "the step is writing\n"
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "a.txt").read_text() == "a\n"

"""Overflow files are tether's own output: the read-only tools may read them without
asking, in every mode, wherever they lie; nothing may write them; and opening them
opens nothing else (not the rest of the state directory, not a symlink's target).

Calls go through the real dispatcher with the real gate in front of the built-in
tools, headless (no approver), so "needs approval" shows up as a refusal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.config import PermissionMode
from tether.messages import ToolCall, ToolResult
from tether.policy.actions import Decision
from tether.policy.gate import Gate
from tether.policy.rules import compile_rules
from tether.sandbox.workspace import Workspace
from tether.tools.builtin import builtin_tools
from tether.tools.dispatch import Dispatcher
from tether.tools.registry import Registry, ToolContext

MODES: list[PermissionMode] = ["default", "plan", "accept-edits", "auto"]


class Setup:
    def __init__(self, root: Path, state: Path, mode: PermissionMode = "default") -> None:
        self.root = root
        self.state = state
        self.overflow = state / "sessions" / "s1" / "overflow"
        self.overflow.mkdir(parents=True)
        self.file = self.overflow / "0001-bash.txt"
        self.file.write_text("".join(f"out {i}\n" for i in range(1, 101)))
        (state / "sessions" / "s1" / "transcript.jsonl").write_text('{"secret": 1}\n')
        workspace = Workspace(root, reserved=(state,), readable=(self.overflow,))
        self.decisions: list[Decision] = []
        self.gate = Gate(
            compile_rules([]),
            mode,
            workspace,
            home=root.parent / "home",
            on_decision=lambda tool, decision, ran: self.decisions.append(decision),
        )
        context = ToolContext(workspace=workspace, env={}, overflow_dir=self.overflow)
        self.dispatcher = Dispatcher(Registry(builtin_tools()), context, gate=self.gate.check)

    def __call__(self, name: str, **args: object) -> ToolResult:
        return self.dispatcher.execute(ToolCall("c", name, json.dumps(args)))


@pytest.fixture(params=["outside", "inside"])
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Setup:
    """State outside the workspace, and inside it (the workspace is the home directory)."""
    if request.param == "outside":
        root = tmp_path / "ws"
        root.mkdir()
        return Setup(root, tmp_path / "state")
    root = tmp_path / "home"
    root.mkdir()
    return Setup(root, root / ".tether")


@pytest.mark.parametrize("mode", MODES)
def test_reading_an_overflow_file_is_allowed_in_every_mode(
    tmp_path: Path, mode: PermissionMode
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    s = Setup(root, tmp_path / "state", mode)
    result = s("read_file", path=str(s.file), offset=50, limit=2)
    assert not result.is_error, result.content
    assert "    50\tout 50\n    51\tout 51" in result.content
    assert s.decisions[-1].verdict == "allow"
    assert s.decisions[-1].reason == "tether's own overflow file"


def test_search_and_list_are_allowed_too(setup: Setup) -> None:
    found = setup("search_files", pattern="^out 7[0-9]$", path=str(setup.file))
    assert not found.is_error and found.content.count("\n") == 9
    first = found.content.splitlines()[0]  # the path as the tools show it, fed back as is
    path, line, text = first.rsplit(":", 2)
    assert (line, text) == ("70", "out 70")
    again = setup("read_file", path=path, offset=70, limit=1)
    assert "    70\tout 70" in again.content
    listed = setup("list_files", path=str(setup.overflow))
    assert not listed.is_error and listed.content.endswith("0001-bash.txt")
    assert all(d.verdict == "allow" for d in setup.decisions)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"content": "forged\n"}),
        ("str_replace", {"old_str": "out 1\n", "new_str": "forged\n"}),
    ],
)
def test_nothing_may_write_an_overflow_file(setup: Setup, tool: str, args: dict[str, str]) -> None:
    before = setup.file.read_text()
    result = setup(tool, path=str(setup.file), **args)
    assert result.is_error
    assert setup.file.read_text() == before
    fresh = setup("write_file", path=str(setup.overflow / "9999-new.txt"), content="x")
    assert fresh.is_error and not (setup.overflow / "9999-new.txt").exists()


def test_apply_patch_may_not_write_there_either(setup: Setup) -> None:
    patch = f"*** Begin Patch\n*** Add File: {setup.overflow}/0002-x.txt\n+forged\n*** End Patch\n"
    result = setup("apply_patch", patch=patch)
    assert result.is_error and not (setup.overflow / "0002-x.txt").exists()


def test_the_rest_of_the_state_directory_stays_closed(setup: Setup) -> None:
    transcript = setup.state / "sessions" / "s1" / "transcript.jsonl"
    result = setup("read_file", path=str(transcript))
    assert result.is_error and "secret" not in result.content
    listing = setup("list_files", path=str(setup.state / "sessions"))
    assert listing.is_error or "transcript" not in listing.content
    found = setup("search_files", pattern="secret", path=str(setup.state))
    assert found.is_error or "secret" not in found.content
    up = setup("read_file", path=f"{setup.overflow}/../transcript.jsonl")
    assert up.is_error and "secret" not in up.content


def test_a_symlink_into_the_overflow_dir_opens_nothing_new(setup: Setup) -> None:
    (setup.root / "link").symlink_to(setup.overflow)
    (setup.root / "file-link").symlink_to(setup.file)
    read = setup("read_file", path="link/0001-bash.txt", offset=3, limit=1)
    assert "     3\tout 3" in read.content  # the same file a direct path reads
    before = setup.file.read_text()
    for path in ("link/0001-bash.txt", "file-link", "link/new.txt"):
        assert setup("write_file", path=path, content="forged\n").is_error
    assert setup("str_replace", path="file-link", old_str="out 2\n", new_str="x\n").is_error
    assert setup.file.read_text() == before
    assert not (setup.overflow / "new.txt").exists()


def test_a_symlink_inside_the_overflow_dir_does_not_lead_out(setup: Setup) -> None:
    secret = setup.state / "sessions" / "s1" / "transcript.jsonl"
    (setup.overflow / "0002-evil.txt").symlink_to(secret)
    result = setup("read_file", path=str(setup.overflow / "0002-evil.txt"))
    assert result.is_error and "secret" not in result.content


def test_without_readable_roots_overflow_paths_are_like_any_other(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "elsewhere" / "0001-bash.txt"
    outside.parent.mkdir()
    outside.write_text("hello\n")
    workspace = Workspace(root)
    gate = Gate(compile_rules([]), "default", workspace, home=tmp_path / "home")
    context = ToolContext(workspace=workspace, env={})
    dispatcher = Dispatcher(Registry(builtin_tools()), context, gate=gate.check)
    result = dispatcher.execute(ToolCall("c", "read_file", json.dumps({"path": str(outside)})))
    assert result.is_error and "outside the workspace" in result.content

"""The apply_patch tool: results and failures as the dispatcher hands them to a model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tether.errors import ToolError
from tether.messages import ToolCall
from tether.sandbox.workspace import Workspace
from tether.tools.dispatch import Dispatcher
from tether.tools.patch import apply_patch
from tether.tools.registry import Registry, ToolContext

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    return ToolContext(workspace=Workspace(root), env=dict(os.environ))


def call(ctx: ToolContext, **args: object) -> str:
    return apply_patch.fn(ctx, **apply_patch.bind(args))


def test_schema_has_one_required_string() -> None:
    spec = apply_patch.spec
    assert spec.name == "apply_patch"
    assert spec.parameters["required"] == ["patch"]
    assert spec.parameters["properties"]["patch"]["type"] == "string"
    assert "*** Begin Patch" in spec.description and "unified diff" in spec.description


def test_success_returns_the_summary(ctx: ToolContext) -> None:
    result = call(ctx, patch=PATCH)
    assert result == "Applied the patch: 1 file changed.\nM a.txt (+1 -1)"
    assert (ctx.workspace.root / "a.txt").read_text() == "b\n"


def test_failure_is_a_tool_error_saying_nothing_changed(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"no file changed.*a\.txt: hunk 1"):
        call(ctx, patch=PATCH.replace("-a", "-zzz"))
    assert (ctx.workspace.root / "a.txt").read_text() == "a\n"


@pytest.mark.parametrize("patch", ["", "   \n", "\ud83d broken", "hello"])
def test_nonsense_is_a_tool_error(ctx: ToolContext, patch: str) -> None:
    with pytest.raises(ToolError):
        call(ctx, patch=patch)


def test_through_the_dispatcher(ctx: ToolContext) -> None:
    dispatcher = Dispatcher(Registry([apply_patch]), ctx)
    ok = dispatcher.execute(ToolCall("1", "apply_patch", json.dumps({"patch": PATCH})))
    assert not ok.is_error and "M a.txt" in ok.content
    bad = dispatcher.execute(ToolCall("2", "apply_patch", json.dumps({"patch": PATCH})))
    assert bad.is_error and "hunk 1" in bad.content

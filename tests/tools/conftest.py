"""A real workspace in tmp_path and tools called the way the dispatcher calls them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tether.sandbox.workspace import Workspace
from tether.tools.registry import Tool, ToolContext


@dataclass
class Harness:
    root: Path
    ctx: ToolContext

    def call(self, tool: Tool, **args: Any) -> str:
        return tool.fn(self.ctx, **tool.bind(args))

    def write(self, rel: str, data: str | bytes) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode()
        path.write_bytes(data)
        return path


@pytest.fixture
def ws(tmp_path: Path) -> Harness:
    root = tmp_path / "ws"
    root.mkdir()
    return Harness(root, ToolContext(workspace=Workspace(root), env=dict(os.environ)))


@pytest.fixture
def git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Run git in a repo, isolated from user and system config (global excludes)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)

    def run(root: Path, *args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=root,
            check=True,
            capture_output=True,
        )

    return run

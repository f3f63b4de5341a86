"""Fixtures for whole runs: the real `tether` CLI in a subprocess, a clean home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """An environment with no user config or credentials leaking in."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TETHER_", "OPENAI_", "ANTHROPIC_", "XDG_"))
    }
    home = tmp_path / "home"
    home.mkdir()
    env.update(
        HOME=str(home),
        TETHER_HOME=str(tmp_path / "state"),
        TETHER_MODEL="scripted",
        PYTHONDONTWRITEBYTECODE="1",
        NO_COLOR="1",
    )
    return env


@pytest.fixture
def run_cli(cli_env: dict[str, str]) -> RunCli:
    def run(
        args: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        input: str | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether", *args],
            cwd=cwd,
            env=env or cli_env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    return run


@pytest.fixture
def transcript(tmp_path: Path) -> Callable[[], list[dict[str, Any]]]:
    """Reads the entries of the only transcript under the test's TETHER_HOME."""

    def read() -> list[dict[str, Any]]:
        files = sorted((tmp_path / "state" / "sessions").glob("*.jsonl"))
        assert len(files) == 1, files
        return [json.loads(line) for line in files[0].read_text().splitlines()]

    return read


@pytest.fixture
def buggy_repo(tmp_path: Path) -> Path:
    """A tiny git repo whose test fails until `total` is fixed."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "shop.py").write_text(
        "def total(prices, discount=0.0):\n"
        '    """Sum of prices after a fractional discount."""\n'
        "    return sum(prices) * (1 + discount)\n"
    )
    (root / "test_shop.py").write_text(
        "import unittest\n\nfrom shop import total\n\n\n"
        "class TotalTest(unittest.TestCase):\n"
        "    def test_discount(self):\n"
        "        self.assertAlmostEqual(total([10, 10], discount=0.25), 15.0)\n\n"
        "    def test_plain(self):\n"
        "        self.assertEqual(total([1, 2]), 3)\n"
    )
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


class Processes:
    """`ps` as the signal tests need it, with sleep lengths no other test uses."""

    def __init__(self, salt: int) -> None:
        self._salt = salt

    def nap(self) -> str:
        """A unique `sleep` argument, so `ps` finds exactly this test's processes."""
        self._salt += 1
        return f"{300 + self._salt % 100_000}.5"

    def text(self) -> str:
        return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout

    def wait_for(self, needle: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            assert time.monotonic() < deadline, f"{needle!r} never started"
            time.sleep(0.05)


@pytest.fixture
def processes(request: pytest.FixtureRequest) -> Processes:
    return Processes(os.getpid() * 1000 + abs(hash(request.node.nodeid)) % 1000)


@pytest.fixture
def spawn_cli(cli_env: dict[str, str]) -> Callable[..., subprocess.Popen[str]]:
    """Start the real CLI without waiting, for tests that signal it mid-run."""

    def spawn(
        args: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None, stdin: bool = False
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "tether", *args],
            cwd=cwd,
            env=env or cli_env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    return spawn

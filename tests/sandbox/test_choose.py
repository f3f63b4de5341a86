"""Choosing a backend: probed for real, cached, and never a silent downgrade."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tether.errors import ConfigError
from tether.sandbox.choose import choose, for_run


def test_auto_picks_the_strongest_that_works_and_caches_the_probe(tmp_path: Path) -> None:
    first = choose("auto", tmp_path)
    assert first.name == "bwrap"  # CI installs bubblewrap; this machine has it
    assert first.probes["bwrap"] is None and not first.cached
    cache = json.loads((tmp_path / "sandbox-probe.json").read_text())
    assert cache["key"]["kernel"] == os.uname().release
    started = time.perf_counter()
    again = choose("auto", tmp_path)
    assert again.cached and again.name == "bwrap"
    assert time.perf_counter() - started < 0.05  # no probe ran


def test_a_changed_key_probes_again(tmp_path: Path) -> None:
    choose("auto", tmp_path)
    path = tmp_path / "sandbox-probe.json"
    data = json.loads(path.read_text())
    data["key"]["kernel"] = "an older kernel"
    data["probes"]["bwrap"] = "stale answer"
    path.write_text(json.dumps(data))
    fresh = choose("auto", tmp_path)
    assert not fresh.cached and fresh.probes["bwrap"] is None


def test_explicit_none_is_said_loudly_and_refused_in_auto_mode(tmp_path: Path) -> None:
    sandbox, notices = for_run("none", tmp_path, permission_mode="default", skip=False)
    assert sandbox is not None and sandbox.name == "none"
    assert "SANDBOX OFF" in notices[0]
    with pytest.raises(ConfigError, match="dangerously-skip-sandbox"):
        for_run("none", tmp_path, permission_mode="auto", skip=False)
    sandbox, notices = for_run("auto", tmp_path, permission_mode="auto", skip=True)
    assert sandbox is None and "SANDBOX OFF" in notices[0]


def test_without_a_working_backend_auto_mode_refuses_and_default_mode_warns(
    tmp_path: Path,
) -> None:
    # A machine without bwrap that asks for bwrap: run where PATH has no bwrap.
    code = (
        "import sys; from pathlib import Path; from tether.errors import ConfigError\n"
        "from tether.sandbox.choose import for_run\n"
        f"state = Path({str(tmp_path)!r})\n"
        "box, notes = for_run('bwrap', state, permission_mode='default', skip=False)\n"
        "print(box, notes[0])\n"
        "try:\n    for_run('bwrap', state, permission_mode='auto', skip=False)\n"
        "except ConfigError as e:\n    print('refused:', e)\n"
    )
    env = {**os.environ, "PATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("None No sandbox works here (bwrap: ")
    assert "refused: auto permission mode needs a sandbox" in out
    assert "apt-get install bubblewrap" in out

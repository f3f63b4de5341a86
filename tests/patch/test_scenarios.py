"""Every folder in scenarios/: apply its patch to a copy of input/ and compare.

A scenario with `expected/` must produce exactly that tree (bytes, symlinks);
one with `error` must fail with a message holding each of its lines, and leave
the tree byte-for-byte as it was. Regenerate the folders with make_scenarios.py.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tether.patch import PatchError, apply_patch_text

SCENARIOS = Path(__file__).parent / "scenarios"
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir())


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file (bytes) and symlink (target) under `root`; directories only by content."""
    tree: dict[str, bytes | str] = {}
    if not root.is_dir():
        return tree
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            tree[rel] = "-> " + os.readlink(path) if path.is_symlink() else path.read_bytes()
    return tree


def copy_input(folder: Path, work: Path) -> None:
    source = folder / "input"
    if source.is_dir():
        shutil.copytree(source, work, symlinks=True)
    else:
        work.mkdir()


def test_there_are_enough_scenarios() -> None:
    assert len(NAMES) >= 45


@pytest.mark.parametrize("name", NAMES)
def test_scenario(name: str, tmp_path: Path) -> None:
    folder = SCENARIOS / name
    work = tmp_path / "ws"
    copy_input(folder, work)
    before = snapshot(work)
    patch = (folder / "patch").read_bytes().decode()
    error_file = folder / "error"
    if error_file.exists():
        with pytest.raises(PatchError) as caught:
            apply_patch_text(patch, work)
        message = str(caught.value)
        for want in error_file.read_text().splitlines():
            if want:
                assert want in message, f"{want!r} not in error:\n{message}"
        assert snapshot(work) == before
    else:
        summary = apply_patch_text(patch, work)
        assert snapshot(work) == snapshot(folder / "expected"), summary.text


@pytest.mark.parametrize("name", NAMES)
def test_scenario_check_writes_nothing(name: str, tmp_path: Path) -> None:
    folder = SCENARIOS / name
    work = tmp_path / "ws"
    copy_input(folder, work)
    before = snapshot(work)
    patch = (folder / "patch").read_bytes().decode()
    try:
        summary = apply_patch_text(patch, work, check=True)
    except PatchError:
        assert (folder / "error").exists()
    else:
        assert summary.checked_only
        assert "nothing was written" in summary.text
    assert snapshot(work) == before

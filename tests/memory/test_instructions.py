"""AGENTS.md files: which are read, in what order, how they are cut, and what is refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tether.memory.instructions import Instructions, config_home, load_instructions


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "sub/sub").mkdir(parents=True)
    return root


@pytest.fixture
def conf(isolated_home: Path) -> Path:
    return isolated_home / ".config"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_user_file_first_then_root_down_to_the_workspace(repo: Path, conf: Path) -> None:
    write(conf / "tether/AGENTS.md", "user\n")
    write(repo / "AGENTS.md", "root\n")
    write(repo / "sub/AGENTS.md", "middle\n")
    write(repo / "sub/sub/AGENTS.md", "nearest\n")
    write(repo.parent / "AGENTS.md", "outside the repository\n")

    loaded = load_instructions(repo / "sub/sub", config_home=conf, max_bytes=32768)

    assert [f.label for f in loaded.files] == [
        "~/.config/tether/AGENTS.md",
        "../../AGENTS.md",
        "../AGENTS.md",
        "AGENTS.md",
    ]
    assert loaded.text == (
        "Project instructions (from AGENTS.md files: the user's own first, then from the "
        "repository root down to the workspace; nearer files take precedence):\n\n"
        "--- ~/.config/tether/AGENTS.md ---\nuser\n\n"
        "--- ../../AGENTS.md ---\nroot\n\n"
        "--- ../AGENTS.md ---\nmiddle\n\n"
        "--- AGENTS.md ---\nnearest"
    )
    assert loaded.notes == ()
    assert all(f.used == f.size and not f.cut for f in loaded.files)


def test_without_a_repository_only_the_workspace_is_read(tmp_path: Path, conf: Path) -> None:
    write(tmp_path / "AGENTS.md", "parent\n")
    write(tmp_path / "ws/AGENTS.md", "here\n")
    loaded = load_instructions(tmp_path / "ws", config_home=conf, max_bytes=1000)
    assert [f.label for f in loaded.files] == ["AGENTS.md"]


def test_a_git_file_marks_the_root_too(tmp_path: Path, conf: Path) -> None:
    write(tmp_path / "wt/.git", "gitdir: /elsewhere\n")  # a worktree or submodule
    write(tmp_path / "wt/AGENTS.md", "root\n")
    (tmp_path / "wt/pkg").mkdir()
    loaded = load_instructions(tmp_path / "wt/pkg", config_home=conf, max_bytes=1000)
    assert [f.label for f in loaded.files] == ["../AGENTS.md"]


def test_claude_md_only_where_no_agents_md_beside_it(repo: Path, conf: Path) -> None:
    write(repo / "CLAUDE.md", "root claude\n")
    write(repo / "sub/AGENTS.md", "sub agents\n")
    write(repo / "sub/CLAUDE.md", "sub claude\n")
    loaded = load_instructions(repo / "sub", config_home=conf, max_bytes=1000)
    assert [f.label for f in loaded.files] == ["../CLAUDE.md", "AGENTS.md"]
    assert "sub claude" not in loaded.text


def test_a_symlinked_agents_md_is_read_once(repo: Path, conf: Path) -> None:
    write(repo / "CLAUDE.md", "shared rules\n")
    (repo / "AGENTS.md").symlink_to("CLAUDE.md")
    (repo / "sub/AGENTS.md").symlink_to("../AGENTS.md")
    loaded = load_instructions(repo / "sub", config_home=conf, max_bytes=1000)
    assert [f.label for f in loaded.files] == ["../AGENTS.md"]
    assert loaded.text.count("shared rules") == 1


def test_a_fifo_does_not_hang_and_is_noted(repo: Path, conf: Path) -> None:
    os.mkfifo(repo / "AGENTS.md")
    write(repo / "sub/AGENTS.md", "sub\n")
    result: list[Instructions] = []
    worker = threading.Thread(
        target=lambda: result.append(
            load_instructions(repo / "sub", config_home=conf, max_bytes=1000)
        ),
        daemon=True,
    )
    worker.start()
    worker.join(timeout=5)
    assert result, "load_instructions blocked on a FIFO"
    (loaded,) = result
    assert [f.label for f in loaded.files] == ["AGENTS.md"]
    assert loaded.notes == ("../AGENTS.md: not read: not a regular file (a FIFO)",)


def test_directories_broken_links_and_empty_files(repo: Path, conf: Path) -> None:
    (repo / "AGENTS.md").mkdir()
    (repo / "sub/AGENTS.md").symlink_to("missing.md")
    write(repo / "sub/sub/AGENTS.md", "  \n\n")
    loaded = load_instructions(repo / "sub/sub", config_home=conf, max_bytes=1000)
    assert loaded.files == ()
    assert loaded.text == ""
    assert loaded.notes == (
        "../../AGENTS.md: not read: not a regular file (a directory)",
        "../AGENTS.md: not read: a broken symlink",
    )


def test_no_files_no_text(tmp_path: Path, conf: Path) -> None:
    loaded = load_instructions(tmp_path, config_home=conf, max_bytes=1000)
    assert (loaded.files, loaded.notes, loaded.text) == ((), (), "")


def test_over_the_cap_user_and_nearest_win_the_root_is_cut(repo: Path, conf: Path) -> None:
    write(conf / "tether/AGENTS.md", "u" * 9 + "\n")  # 10 bytes
    write(repo / "AGENTS.md", "root line one\nroot line two\n")  # 28 bytes
    write(repo / "sub/AGENTS.md", "m" * 19 + "\n")  # 20 bytes
    write(repo / "sub/sub/AGENTS.md", "n" * 19 + "\n")  # 20 bytes

    loaded = load_instructions(repo / "sub/sub", config_home=conf, max_bytes=65)

    used = {f.label: (f.used, f.size, f.cut) for f in loaded.files}
    assert used == {
        "~/.config/tether/AGENTS.md": (10, 10, False),
        "../../AGENTS.md": (14, 28, True),  # 15 bytes left: cut after its first line
        "../AGENTS.md": (20, 20, False),
        "AGENTS.md": (20, 20, False),
    }
    assert loaded.notes == (
        "../../AGENTS.md: cut to 14 of 28 bytes ([instructions] max_bytes = 65)",
    )
    assert (
        "--- ../../AGENTS.md ---\nroot line one\n\n[cut here: 14 of 28 bytes shown]" in loaded.text
    )
    assert "root line two" not in loaded.text


def test_after_a_cut_the_farther_files_are_dropped(repo: Path, conf: Path) -> None:
    write(repo / "AGENTS.md", "root\n")
    write(repo / "sub/AGENTS.md", "a" * 5000)  # one long line: cut inside it
    write(repo / "sub/sub/AGENTS.md", "near\n")
    loaded = load_instructions(repo / "sub/sub", config_home=conf, max_bytes=100)
    assert [(f.label, f.used) for f in loaded.files] == [
        ("../../AGENTS.md", 0),
        ("../AGENTS.md", 95),
        ("AGENTS.md", 5),
    ]
    assert loaded.notes == (
        "../AGENTS.md: cut to 95 of 5,000 bytes ([instructions] max_bytes = 100)",
        "../../AGENTS.md: not loaded (5 bytes): over [instructions] max_bytes",
    )
    assert "--- ../../AGENTS.md (not shown: over the size limit for instructions) ---" in (
        loaded.text
    )
    assert "root" not in loaded.text.split("---")[2]


def test_a_cut_never_splits_a_character(tmp_path: Path, conf: Path) -> None:
    write(tmp_path / "AGENTS.md", "é" * 100)  # 2 bytes each, no newline
    loaded = load_instructions(tmp_path, config_home=conf, max_bytes=7)
    assert loaded.files[0].used == 6
    assert "--- AGENTS.md ---\nééé\n" in loaded.text and "\ufffd" not in loaded.text


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path, conf: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"\xef\xbb\xbfok \xff\n")
    loaded = load_instructions(tmp_path, config_home=conf, max_bytes=100)
    assert loaded.text.endswith("--- AGENTS.md ---\nok \ufffd")


def test_config_home_follows_xdg_then_home() -> None:
    assert config_home({"HOME": "/h"}) == Path("/h/.config")
    assert config_home({"HOME": "/h", "XDG_CONFIG_HOME": "/x"}) == Path("/x")


def test_a_repository_file_leading_outside_is_not_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("SECRETKEYMATERIAL\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")
    (repo / "sub").mkdir()
    (repo / "sub" / "CLAUDE.md").symlink_to("/proc/self/environ")
    (repo / "sub" / "AGENTS.md").symlink_to(repo / "NOTES.md")  # inside: fine
    (repo / "NOTES.md").write_text("Inside the repository.\n")
    found = load_instructions(repo / "sub", config_home=home / ".config", max_bytes=10_000)
    assert "SECRETKEYMATERIAL" not in found.text
    assert "Inside the repository." in found.text
    assert any("AGENTS.md: leads outside the repository" in n for n in found.notes)

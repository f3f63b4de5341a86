from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

import tether
from tether.errors import TetherError
from tether.tools.ignore import compile_glob, list_files, path_key, walk_files

ROOT_GITIGNORE = "\n".join(
    [
        "# comment line",
        "*.log",
        "!keep.log",
        "build/",
        "/root_only.txt",
        "docs/**/*.tmp",
        "file?.bak",
        "[ab]x.dat",
        "**/cache",
        "trailing.txt   ",  # trailing spaces are not part of the pattern
        "\\#hash.txt",
        "logs/*",
        "!logs/important/",
        "",
    ]
)

NESTED_GITIGNORE = "*.tmp\n!special.log\n/local.txt\n"

KEPT = [
    ".env",
    ".gitignore",
    ".hidden/file",
    "build.txt",
    "cx.dat",
    "docs/readme.md",
    "file10.bak",
    "keep.log",
    "link_to_sub",
    "logs/important/b.txt",
    "nested/.gitignore",
    "nested/deep/local.txt",
    "nested/special.log",
    "other/build",
    "other/c.tmp",
    "sub/keep.log",
    "sub/root_only.txt",
    "with space.txt",
    "ünï.txt",
]
IGNORED = [
    "a.log",
    "ax.dat",
    "bx.dat",
    "build/out.o",
    "cache/z",
    "docs/a/b/c.tmp",
    "docs/c.tmp",
    "file1.bak",
    "#hash.txt",
    "logs/a.txt",
    "nested/deep/y.tmp",
    "nested/local.txt",
    "nested/x.tmp",
    "root_only.txt",
    "sub/b.log",
    "sub/build/x",
    "trailing.txt",
    "x/cache/y",
]


def make_tree(root: Path) -> list[str]:
    """The fixture tree; returns the files a correct listing must give, sorted."""
    (root / ".gitignore").write_text(ROOT_GITIGNORE)
    for rel in KEPT + IGNORED:
        if rel in (".gitignore", "link_to_sub"):
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(NESTED_GITIGNORE if rel == "nested/.gitignore" else f"{rel}\n")
    (root / "empty_dir").mkdir()
    (root / "link_to_sub").symlink_to("sub", target_is_directory=True)
    return sorted(KEPT, key=path_key)


def test_walker_applies_gitignore_rules(tmp_path: Path) -> None:
    expected = make_tree(tmp_path)
    assert walk_files(tmp_path) == expected


def test_auto_outside_a_repo_uses_the_walker(tmp_path: Path) -> None:
    expected = make_tree(tmp_path)
    assert list_files(tmp_path) == expected
    with pytest.raises(TetherError):
        list_files(tmp_path, engine="git")


def test_git_and_walker_agree_untracked_and_committed(
    tmp_path: Path, git: Callable[..., None]
) -> None:
    expected = make_tree(tmp_path)
    git(tmp_path, "init", "-q")
    assert list_files(tmp_path, engine="git") == expected
    assert list_files(tmp_path, engine="python") == expected
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "fixture")
    assert list_files(tmp_path, engine="git") == expected
    assert list_files(tmp_path, engine="python") == expected


def test_git_and_walker_agree_below_a_subdirectory(
    tmp_path: Path, git: Callable[..., None]
) -> None:
    make_tree(tmp_path)
    git(tmp_path, "init", "-q")
    nested = tmp_path / "nested"
    want = ["nested/.gitignore", "nested/deep/local.txt", "nested/special.log"]
    assert list_files(tmp_path, nested, engine="git") == want
    assert list_files(tmp_path, nested, engine="python") == want


def test_deleted_tracked_file_is_not_listed(tmp_path: Path, git: Callable[..., None]) -> None:
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "b.txt").write_text("b")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "x")
    (tmp_path / "a.txt").unlink()
    assert list_files(tmp_path, engine="git") == ["b.txt"]
    assert list_files(tmp_path, engine="python") == ["b.txt"]


def test_dot_git_is_always_skipped(tmp_path: Path, git: Callable[..., None]) -> None:
    (tmp_path / "f.txt").write_text("f")
    git(tmp_path, "init", "-q")
    assert (tmp_path / ".git" / "HEAD").exists()
    assert list_files(tmp_path, engine="git") == ["f.txt"]
    assert walk_files(tmp_path) == ["f.txt"]


def test_walker_honours_git_info_exclude(tmp_path: Path, git: Callable[..., None]) -> None:
    (tmp_path / "kept.txt").write_text("k")
    (tmp_path / "secret.txt").write_text("s")
    git(tmp_path, "init", "-q")
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("secret.txt\n")
    assert list_files(tmp_path, engine="git") == ["kept.txt"]
    assert walk_files(tmp_path) == ["kept.txt"]


def test_ancestor_rules_apply_when_walking_a_subdirectory(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.o\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.c").write_text("")
    (tmp_path / "src" / "a.o").write_text("")
    assert walk_files(tmp_path, tmp_path / "src") == ["src/a.c"]


def test_unreadable_directory_is_skipped_not_fatal() -> None:
    # Root reads any directory, so the walk runs as `nobody` when the tests run as root.
    root = Path(tempfile.mkdtemp())
    try:
        root.chmod(0o755)
        (root / "locked").mkdir()
        (root / "locked" / "x").write_text("")
        (root / "ok.txt").write_text("")
        (root / "locked").chmod(0)
        src = str(Path(tether.__file__).parent.parent)
        code = (
            f"import sys; sys.path.insert(0, {src!r}); from pathlib import Path; "
            f"from tether.tools.ignore import walk_files; print(walk_files(Path({str(root)!r})))"
        )
        cmd = [sys.executable, "-c", code]
        if os.geteuid() == 0:
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "['ok.txt']"
    finally:
        (root / "locked").chmod(0o755)
        shutil.rmtree(root)


def test_path_key_keeps_directories_together() -> None:
    paths = ["a.txt", "a/b", "a-b", "a/c/d", "B"]
    assert sorted(paths, key=path_key) == ["B", "a/b", "a/c/d", "a-b", "a.txt"]


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*.py", ["a.py", "x/y/a.py"], ["a.pyc", "py"]),
        ("src/*.py", ["src/a.py"], ["src/x/a.py", "lib/src/a.py"]),
        ("src/**/*.py", ["src/a.py", "src/x/y/a.py"], ["lib/a.py"]),
        ("**/*.py", ["a.py", "x/a.py"], ["a.txt"]),
        ("*.{ts,tsx}", ["a.ts", "d/b.tsx"], ["c.js"]),
        ("test_?.py", ["test_1.py"], ["test_12.py"]),
        ("[ab].txt", ["a.txt", "q/b.txt"], ["c.txt"]),
        ("[!a].txt", ["b.txt"], ["a.txt"]),
        ("./docs/*.md", ["docs/x.md"], ["x.md"]),
        ("/top.txt", ["top.txt"], ["d/top.txt"]),
    ],
)
def test_compile_glob(pattern: str, yes: list[str], no: list[str]) -> None:
    matches = compile_glob(pattern)
    assert [p for p in yes if not matches(p)] == []
    assert [p for p in no if matches(p)] == []


def test_compile_glob_rejects_unbalanced_braces() -> None:
    with pytest.raises(ValueError, match="unbalanced"):
        compile_glob("*.{py")

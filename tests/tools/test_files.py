from __future__ import annotations

import codecs
import dataclasses
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
from tether.tools.files import list_files, read_file, write_file

if TYPE_CHECKING:
    from conftest import Harness

# --- read_file ---------------------------------------------------------------


def test_read_numbers_lines_like_cat_n(ws: Harness) -> None:
    ws.write("src/a.py", "import os\n\nprint(os.name)\n")
    assert ws.call(read_file, path="src/a.py") == (
        "src/a.py: lines 1-3 of 3\n     1\timport os\n     2\t\n     3\tprint(os.name)"
    )


def test_read_offset_and_limit_page_through_the_file(ws: Harness) -> None:
    ws.write("f.txt", "".join(f"line {i}\n" for i in range(1, 11)))
    out = ws.call(read_file, path="f.txt", offset=4, limit=3)
    assert out.splitlines() == [
        "f.txt: lines 4-6 of 10",
        "     4\tline 4",
        "     5\tline 5",
        "     6\tline 6",
        "[4 more lines: call read_file with offset=7 to continue]",
    ]
    last = ws.call(read_file, path="f.txt", offset="7")  # a string, as models send
    assert last.splitlines()[0] == "f.txt: lines 7-10 of 10"
    assert "more line" not in last


def test_read_caps_at_2000_lines(ws: Harness) -> None:
    ws.write("big.txt", "x\n" * 2500)
    out = ws.call(read_file, path="big.txt", limit=5000)
    lines = out.splitlines()
    assert lines[0] == "big.txt: lines 1-2000 of 2500"
    assert lines[-1] == (
        "[limit capped at 2000; 500 more lines: call read_file with offset=2001 to continue]"
    )
    assert len(lines) == 2002


def test_read_stops_at_the_output_budget_and_says_where_to_continue(ws: Harness) -> None:
    ws.write("wide.txt", "".join(f"{i:04d} " + "y" * 90 + "\n" for i in range(1, 501)))
    small = dataclasses.replace(ws.ctx, output_limit=2_000)
    out = read_file.fn(small, **read_file.bind({"path": "wide.txt"}))
    assert len(out) <= 2_000
    shown = out.splitlines()
    last_number = int(shown[-2].split("\t")[0])
    assert shown[-1].startswith("[output limit reached; ")
    assert f"offset={last_number + 1}" in shown[-1]


def test_read_cuts_very_long_lines(ws: Harness) -> None:
    ws.write("min.js", "a" * 5000 + "\nshort\n")
    out = ws.call(read_file, path="min.js")
    first = out.splitlines()[1]
    assert first == "     1\t" + "a" * 2000 + "… [line cut: 5,000 characters]"
    assert "1 long line cut" in out.splitlines()[0]
    assert out.splitlines()[2] == "     2\tshort"


def test_read_binary_file_reports_size_not_bytes(ws: Harness) -> None:
    ws.write("img.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    out = ws.call(read_file, path="img.png")
    assert out.startswith("img.png is a binary file (116 bytes)")
    assert "PNG" not in out.replace("img.png", "")


def test_read_crlf_bom_file_shows_clean_lines_and_says_so(ws: Harness) -> None:
    ws.write("win.txt", codecs.BOM_UTF8 + b"one\r\ntwo\r\n")
    out = ws.call(read_file, path="win.txt")
    assert out == "win.txt: lines 1-2 of 2 (BOM, CRLF line endings)\n     1\tone\n     2\ttwo"


def test_read_undecodable_bytes_are_replaced_and_noted(ws: Harness) -> None:
    ws.write("latin1.txt", b"caf\xe9\n")
    out = ws.call(read_file, path="latin1.txt")
    assert "     1\tcaf\ufffd" in out
    assert "not valid UTF-8" in out.splitlines()[0]


def test_read_empty_file(ws: Harness) -> None:
    ws.write("empty.txt", b"")
    assert ws.call(read_file, path="empty.txt") == "empty.txt is empty (0 bytes)."


def test_read_last_line_without_newline_counts(ws: Harness) -> None:
    ws.write("f.txt", "a\nb")
    assert ws.call(read_file, path="f.txt").splitlines()[0] == "f.txt: lines 1-2 of 2"


def test_read_offset_past_end_is_an_error(ws: Harness) -> None:
    ws.write("f.txt", "a\nb\n")
    with pytest.raises(ToolError, match=r"offset=5 is past the end of f.txt, which has 2 lines"):
        ws.call(read_file, path="f.txt", offset=5)


def test_read_bad_offset_and_limit(ws: Harness) -> None:
    ws.write("f.txt", "a\n")
    with pytest.raises(ToolError, match="numbered from 1"):
        ws.call(read_file, path="f.txt", offset=-1)
    with pytest.raises(ToolError, match="positive"):
        ws.call(read_file, path="f.txt", limit=0)


def test_read_directory_suggests_list_files(ws: Harness) -> None:
    (ws.root / "src").mkdir()
    with pytest.raises(ToolError, match=r"src is a directory.*list_files"):
        ws.call(read_file, path="src")


def test_read_missing_file_suggests_similar_siblings(ws: Harness) -> None:
    ws.write("src/config.py", "")
    ws.write("src/configure.py", "")
    with pytest.raises(ToolError) as info:
        ws.call(read_file, path="src/confg.py")
    assert "src/confg.py does not exist" in str(info.value)
    assert "src/config.py" in str(info.value)


def test_read_missing_file_finds_same_name_elsewhere(ws: Harness) -> None:
    ws.write("src/pkg/util.py", "")
    with pytest.raises(ToolError, match=r"Did you mean: src/pkg/util.py\?"):
        ws.call(read_file, path="lib/util.py")


def test_read_missing_file_without_candidates_points_to_list_files(ws: Harness) -> None:
    with pytest.raises(ToolError, match="list_files"):
        ws.call(read_file, path="nothing_like_it.txt")


def test_read_fifo_is_refused_without_hanging(ws: Harness) -> None:
    os.mkfifo(ws.root / "pipe")
    started = time.monotonic()
    with pytest.raises(ToolError, match="not a regular file"):
        ws.call(read_file, path="pipe")
    assert time.monotonic() - started < 2


# --- confinement --------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("top secret\n")
    return secret


def test_symlink_escape_is_refused_for_read_and_write(ws: Harness, outside: Path) -> None:
    (ws.root / "link.txt").symlink_to(outside)
    (ws.root / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(read_file, path="link.txt")
    with pytest.raises(ToolError, match="through a symlink"):
        ws.call(write_file, path="link.txt", content="pwned\n")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(write_file, path="linkdir/new.txt", content="pwned\n")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(list_files, path="linkdir")
    assert outside.read_text() == "top secret\n"
    assert sorted(p.name for p in outside.parent.iterdir()) == ["secret.txt"]


def test_dotdot_and_absolute_escapes_are_refused(ws: Harness, outside: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(read_file, path="../outside/secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(write_file, path="sub/../../outside/new.txt", content="x")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(read_file, path=str(outside))
    assert not (outside.parent / "new.txt").exists()


def test_symlink_inside_the_workspace_is_fine(ws: Harness) -> None:
    ws.write("real.txt", "real\n")
    (ws.root / "alias.txt").symlink_to("real.txt")
    ws.call(write_file, path="alias.txt", content="changed\n")
    assert (ws.root / "alias.txt").is_symlink()  # the link survives; its target changed
    assert (ws.root / "real.txt").read_text() == "changed\n"


# --- write_file ----------------------------------------------------------------


def test_write_creates_parents_and_reports(ws: Harness) -> None:
    out = ws.call(write_file, path="a/b/new.py", content="x = 1\ny = 2\n")
    assert out == "Created a/b/new.py (2 lines)."
    assert (ws.root / "a/b/new.py").read_bytes() == b"x = 1\ny = 2\n"


def test_write_overwrite_keeps_crlf_bom_and_mode(ws: Harness) -> None:
    path = ws.write("run.bat", codecs.BOM_UTF8 + b"@echo off\r\necho hi\r\n")
    path.chmod(0o750)
    out = ws.call(write_file, path="run.bat", content="@echo off\necho bye\nexit\n")
    assert out == "Overwrote run.bat (3 lines; was 2; kept CRLF line endings, kept BOM)."
    assert path.read_bytes() == codecs.BOM_UTF8 + b"@echo off\r\necho bye\r\nexit\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_write_lf_file_stays_lf_and_content_is_verbatim(ws: Harness) -> None:
    path = ws.write("f.txt", "old\n")
    ws.call(write_file, path="f.txt", content="no trailing newline")
    assert path.read_bytes() == b"no trailing newline"


def test_write_content_with_crlf_is_not_doubled(ws: Harness) -> None:
    path = ws.write("f.txt", "a\r\nb\r\n")
    ws.call(write_file, path="f.txt", content="c\r\nd\r\n")
    assert path.read_bytes() == b"c\r\nd\r\n"


def test_write_over_binary_file_is_allowed(ws: Harness) -> None:
    path = ws.write("blob", b"\x00\x01")
    assert ws.call(write_file, path="blob", content="text\n").startswith("Overwrote blob")
    assert path.read_bytes() == b"text\n"


def test_write_to_a_directory_is_an_error(ws: Harness) -> None:
    (ws.root / "d").mkdir()
    with pytest.raises(ToolError, match="d is a directory"):
        ws.call(write_file, path="d", content="x")


def test_write_below_a_file_is_an_error(ws: Harness) -> None:
    ws.write("plain", "x")
    with pytest.raises(ToolError, match=r"Cannot write plain/child\.txt"):
        ws.call(write_file, path="plain/child.txt", content="x")


# --- list_files -----------------------------------------------------------------


def make_project(ws: Harness) -> None:
    ws.write(".gitignore", "*.pyc\nbuild/\n")
    for rel in [
        "README.md",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/pkg/core.pyc",
        "src/main.py",
        "src/main.ts",
        "src/view.tsx",
        "tests/test_core.py",
        "build/out.py",
        ".git/config",
    ]:
        ws.write(rel, "")


def test_list_respects_gitignore_and_skips_git(ws: Harness) -> None:
    make_project(ws)
    assert ws.call(list_files).splitlines() == [
        ".gitignore",
        "README.md",
        "src/main.py",
        "src/main.ts",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "src/view.tsx",
        "tests/test_core.py",
    ]


def test_list_patterns(ws: Harness) -> None:
    make_project(ws)
    assert ws.call(list_files, pattern="*.py").splitlines() == [
        "src/main.py",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
        "tests/test_core.py",
    ]
    assert ws.call(list_files, path="src", pattern="*.py").splitlines() == [
        "src/main.py",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
    ]
    assert ws.call(list_files, path="src", pattern="pkg/*.py").splitlines() == [
        "src/pkg/__init__.py",
        "src/pkg/core.py",
    ]
    assert ws.call(list_files, pattern="src/**/*.py").splitlines() == [
        "src/main.py",
        "src/pkg/__init__.py",
        "src/pkg/core.py",
    ]
    assert ws.call(list_files, pattern="*.{ts,tsx}").splitlines() == [
        "src/main.ts",
        "src/view.tsx",
    ]


def test_list_no_match_and_empty_messages(ws: Harness) -> None:
    make_project(ws)
    (ws.root / "empty").mkdir()
    (ws.root / "ignored_only").mkdir()
    ws.write("ignored_only/x.pyc", "")
    assert ws.call(list_files, pattern="*.rs") == (
        "No files under the workspace root match '*.rs' (8 files there in total). "
        "Without a '/' the pattern matches file names; to list a directory, pass it as `path`."
    )
    assert ws.call(list_files, path="empty") == "empty/ is empty."
    assert "ignored by .gitignore" in ws.call(list_files, path="ignored_only")


def test_list_is_capped(ws: Harness) -> None:
    for i in range(1050):
        ws.write(f"many/f{i:04d}.txt", "")
    lines = ws.call(list_files, path="many").splitlines()
    assert len(lines) == 1001
    assert lines[0] == "many/f0000.txt"
    assert lines[-1] == "... and 50 more; narrow with pattern or path"


def test_list_errors(ws: Harness) -> None:
    ws.write("file.txt", "")
    with pytest.raises(ToolError, match="is a file, not a directory"):
        ws.call(list_files, path="file.txt")
    with pytest.raises(ToolError, match="does not exist"):
        ws.call(list_files, path="nowhere")
    with pytest.raises(ToolError, match="Invalid pattern"):
        ws.call(list_files, pattern="*.{py")


# --- text the OS cannot take; file names that are not UTF-8 -------------------

BAD_TEXT = [
    ("a\x00b.txt", r"contains a NUL byte"),
    ("a\ud83d.txt", r"contains text that is not valid Unicode \(a lone surrogate, U\+D83D"),
    ("a\udcff.txt", r"contains text that is not valid Unicode \(a lone surrogate, U\+DCFF"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_TEXT)
def test_bad_text_in_a_path_is_the_callers_fault(ws: Harness, bad: str, message: str) -> None:
    ws.write("dir/ok.txt", "x\n")
    with pytest.raises(ToolError, match=f"^The path {message}"):
        ws.call(read_file, path=bad)
    with pytest.raises(ToolError, match=f"^The path {message}"):
        ws.call(write_file, path=f"dir/{bad}", content="x")
    with pytest.raises(ToolError, match=f"^The path {message}"):
        ws.call(list_files, path=bad)
    with pytest.raises(ToolError, match=f"^The pattern {message}"):
        ws.call(list_files, pattern=bad)
    assert sorted(p.name for p in (ws.root / "dir").iterdir()) == ["ok.txt"]


def test_write_refuses_lone_surrogates_in_content(ws: Harness) -> None:
    with pytest.raises(
        ToolError, match=r"^The content contains text that is not valid Unicode \(a lone surrogate"
    ):
        ws.call(write_file, path="e.txt", content="half an emoji: \ud83d\n")
    assert not (ws.root / "e.txt").exists()
    ws.call(write_file, path="e.txt", content="a whole one: \U0001f600 and a NUL \x00\n")
    assert (ws.root / "e.txt").read_bytes() == "a whole one: 😀 and a NUL \x00\n".encode()


def make_undecodable_names(root: Path) -> None:
    """Files whose names are Latin-1, not UTF-8: `café.txt` and `dir\\xff/inner.txt`."""
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"latin one\n")
    (root / os.fsdecode(b"dir\xff")).mkdir()
    (root / os.fsdecode(b"dir\xff") / "inner.txt").write_bytes(b"inner\n")
    (root / "plain.txt").write_bytes(b"plain\n")


@pytest.mark.parametrize("in_git", [False, True])
def test_list_shows_undecodable_names_escaped(
    ws: Harness, git: Callable[..., None], in_git: bool
) -> None:
    make_undecodable_names(ws.root)
    if in_git:
        git(ws.root, "init", "-q")
    out = ws.call(list_files)
    out.encode("utf-8")  # no lone surrogates that would break encoding later
    assert out.splitlines() == ["caf\\xe9.txt", "dir\\xff/inner.txt", "plain.txt"]
    assert ws.call(list_files, pattern="*.txt") == out
    assert ws.call(list_files, path="dir\\xff") == "dir\\xff/inner.txt"


def test_escaped_names_can_be_read_and_written(ws: Harness) -> None:
    make_undecodable_names(ws.root)
    assert (
        ws.call(read_file, path="caf\\xe9.txt") == "caf\\xe9.txt: lines 1-1 of 1\n     1\tlatin one"
    )
    assert ws.call(read_file, path="dir\\xff/inner.txt").endswith("     1\tinner")
    out = ws.call(write_file, path="caf\\xe9.txt", content="rewritten\n")
    assert out == "Overwrote caf\\xe9.txt (1 line; was 1)."
    assert (ws.root / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"rewritten\n"
    assert not (ws.root / "caf\\xe9.txt").exists()  # no file with a literal backslash name


def test_a_literal_backslash_name_wins_over_the_escaped_reading(ws: Harness) -> None:
    ws.write("x\\xe9.txt", "literal\n")
    (ws.root / os.fsdecode(b"x\xe9.txt")).write_bytes(b"latin\n")
    assert ws.call(read_file, path="x\\xe9.txt").endswith("     1\tliteral")


def test_suggestions_and_errors_escape_undecodable_names(ws: Harness, tmp_path: Path) -> None:
    make_undecodable_names(ws.root)
    with pytest.raises(ToolError) as info:
        ws.call(read_file, path="cafe.txt")
    assert str(info.value) == "cafe.txt does not exist. Did you mean: caf\\xe9.txt?"
    with pytest.raises(ToolError) as info:
        ws.call(read_file, path="elsewhere/inner.txt")
    assert str(info.value).endswith("Did you mean: dir\\xff/inner.txt?")
    outside = tmp_path / os.fsdecode(b"secret\xfe")
    outside.mkdir()
    (ws.root / "link").symlink_to(outside)
    with pytest.raises(ToolError, match="outside the workspace") as info:
        ws.call(read_file, path="link/x.txt")
    assert "secret\\xfe" in str(info.value)
    str(info.value).encode("utf-8")

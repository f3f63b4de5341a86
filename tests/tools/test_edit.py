from __future__ import annotations

import argparse
import codecs
import difflib
import inspect
import os
import re
import stat
import tarfile
import threading
import time
import typing
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
from tether.tools.closest_match import closest_window as _closest_window
from tether.tools.edit import str_replace

if TYPE_CHECKING:
    from conftest import Harness

PY = """\
def greet(name):
    message = "hello " + name
    print(message)
    return message


def part(name):
    print(message)
    return None
"""


def test_unique_match_is_replaced_and_snippet_shown(ws: Harness) -> None:
    path = ws.write("g.py", PY)
    out = ws.call(
        str_replace,
        path="g.py",
        old_str='    message = "hello " + name\n',
        new_str='    message = f"hello {name}"\n',
    )
    assert path.read_text() == PY.replace('"hello " + name', 'f"hello {name}"')
    assert out.splitlines() == [
        "Replaced 1 occurrence in g.py. Lines 1-5 now read:",
        "     1\tdef greet(name):",
        '     2\t    message = f"hello {name}"',
        "     3\t    print(message)",
        "     4\t    return message",
        "     5\t",
    ]


def test_several_matches_name_their_lines(ws: Harness) -> None:
    path = ws.write("g.py", PY)
    with pytest.raises(ToolError) as info:
        ws.call(str_replace, path="g.py", old_str="    print(message)\n", new_str="")
    message = str(info.value)
    assert "occurs 2 times in g.py (starting at lines 3, 8)" in message
    assert "replace_all=true" in message
    assert path.read_text() == PY


def test_replace_all_replaces_every_occurrence(ws: Harness) -> None:
    path = ws.write("g.py", PY)
    out = ws.call(
        str_replace,
        path="g.py",
        old_str="print(message)",
        new_str="log(message)",
        replace_all="true",
    )
    assert out.startswith("Replaced 2 occurrences in g.py (first at line 3).")
    assert path.read_text() == PY.replace("print(message)", "log(message)")


def test_overlapping_occurrences_are_not_unique(ws: Harness) -> None:
    ws.write("a.txt", "aaa\n")
    with pytest.raises(ToolError, match="occurs 2 times"):
        ws.call(str_replace, path="a.txt", old_str="aa", new_str="b")


def test_no_match_shows_nearest_lines_with_numbers(ws: Harness) -> None:
    ws.write("g.py", PY)
    with pytest.raises(ToolError) as info:
        ws.call(
            str_replace,
            path="g.py",
            old_str='    mesage = "hello " + nam\n    print(mesage)\n',
            new_str="x",
        )
    message = str(info.value)
    assert message.startswith("old_str was not found in g.py.")
    assert "The most similar lines (1-5) are:" in message
    assert '     2\t    message = "hello " + name' in message
    assert "     3\t    print(message)" in message


def test_no_match_hints_at_whitespace(ws: Harness) -> None:
    """Inside a line no stage is tolerant; the hint says what differs."""
    ws.write("t.py", "value  =  compute(a,\tb)\n")
    with pytest.raises(ToolError, match="except for whitespace or indentation") as info:
        ws.call(str_replace, path="t.py", old_str="value = compute(a, b)", new_str="y")
    assert "at line 1" in str(info.value)


def test_no_match_hints_at_pasted_line_numbers(ws: Harness) -> None:
    ws.write("g.py", PY)
    with pytest.raises(ToolError, match="line-number prefixes"):
        ws.call(str_replace, path="g.py", old_str="     3\t    print(message)", new_str="x")


def test_no_match_in_unrelated_text(ws: Harness) -> None:
    ws.write("g.py", PY)
    with pytest.raises(ToolError, match="Nothing in the file resembles it"):
        ws.call(str_replace, path="g.py", old_str="zzzzzzzzzzzzzzzzzzzz", new_str="x")


def test_empty_or_identical_strings_are_errors(ws: Harness) -> None:
    ws.write("g.py", PY)
    with pytest.raises(ToolError, match="old_str is empty"):
        ws.call(str_replace, path="g.py", old_str="", new_str="x")
    with pytest.raises(ToolError, match="identical"):
        ws.call(str_replace, path="g.py", old_str="print", new_str="print")


def test_crlf_file_matched_with_lf_and_written_back_crlf(ws: Harness) -> None:
    path = ws.write("w.txt", b"one\r\ntwo\r\nthree\r\n")
    ws.call(str_replace, path="w.txt", old_str="one\ntwo\n", new_str="1\n2\n2.5\n")
    assert path.read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"


def test_bom_mode_and_lossy_bytes_survive_an_edit(ws: Harness) -> None:
    path = ws.write("x.sh", codecs.BOM_UTF8 + b"echo caf\xe9\nexit 0\n")
    path.chmod(0o755)
    ws.call(str_replace, path="x.sh", old_str="exit 0", new_str="exit 1")
    assert path.read_bytes() == codecs.BOM_UTF8 + b"echo caf\xe9\nexit 1\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_lossy_file_explains_unmatchable_bytes(ws: Harness) -> None:
    ws.write("l.txt", b"caf\xe9\n")
    with pytest.raises(ToolError, match="not valid UTF-8"):
        ws.call(str_replace, path="l.txt", old_str="caf\ufffd", new_str="cafe")


def test_utf16_file_stays_utf16(ws: Harness) -> None:
    data = codecs.BOM_UTF16_LE + "alpha\r\nbeta\r\n".encode("utf-16-le")
    path = ws.write("u.txt", data)
    ws.call(str_replace, path="u.txt", old_str="beta", new_str="gamma")
    assert path.read_bytes() == codecs.BOM_UTF16_LE + "alpha\r\ngamma\r\n".encode("utf-16-le")


def test_final_newline_is_kept(ws: Harness) -> None:
    path = ws.write("f.txt", "a\nlast\n")
    ws.call(str_replace, path="f.txt", old_str="last\n", new_str="end")
    assert path.read_bytes() == b"a\nend\n"


def test_missing_final_newline_is_not_added(ws: Harness) -> None:
    path = ws.write("f.txt", "a\r\nlast")
    ws.call(str_replace, path="f.txt", old_str="last", new_str="end\n")
    assert path.read_bytes() == b"a\r\nend"


def test_deleting_everything_leaves_an_empty_file(ws: Harness) -> None:
    path = ws.write("f.txt", "only\n")
    ws.call(str_replace, path="f.txt", old_str="only\n", new_str="")
    assert path.read_bytes() == b""


def test_binary_missing_and_directory_targets(ws: Harness) -> None:
    ws.write("blob", b"\x00abc")
    (ws.root / "dir").mkdir()
    with pytest.raises(ToolError, match="binary"):
        ws.call(str_replace, path="blob", old_str="abc", new_str="x")
    with pytest.raises(ToolError, match="does not exist"):
        ws.call(str_replace, path="nope.txt", old_str="a", new_str="b")
    with pytest.raises(ToolError, match="is a directory"):
        ws.call(str_replace, path="dir", old_str="a", new_str="b")


def test_symlink_escape_is_refused(ws: Harness, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (ws.root / "link").symlink_to(outside)
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(str_replace, path="link", old_str="secret", new_str="pwned")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(str_replace, path="../outside.txt", old_str="secret", new_str="pwned")
    assert outside.read_text() == "secret\n"


# --- line endings ---------------------------------------------------------------


def test_mixed_line_endings_lf_quote_of_lf_lines(ws: Harness) -> None:
    path = ws.write("m.txt", b"a\r\nb\nc\r\n")
    ws.call(str_replace, path="m.txt", old_str="b\nc", new_str="B\nC")
    assert path.read_bytes() == b"a\r\nB\nC\r\n"  # every line keeps its own ending


def test_mixed_line_endings_lf_quote_of_crlf_lines(ws: Harness) -> None:
    path = ws.write("m.txt", b"a\r\nb\nc\r\n")
    ws.call(str_replace, path="m.txt", old_str="a\nb", new_str="A\nB")
    assert path.read_bytes() == b"A\r\nB\nc\r\n"


def test_mixed_line_endings_crlf_quote_of_lf_lines(ws: Harness) -> None:
    path = ws.write("m.txt", b"x\nb\ny\r\nc\n")  # mostly LF
    ws.call(str_replace, path="m.txt", old_str="b\r\n", new_str="d\r\ne\r\n")
    assert path.read_bytes() == b"x\nd\ne\ny\r\nc\n"


def test_mixed_line_endings_across_both_kinds_use_the_files_usual_ending(ws: Harness) -> None:
    path = ws.write("m.txt", b"a\r\nb\nc\r\nd\r\n")
    ws.call(str_replace, path="m.txt", old_str="a\nb\nc\n", new_str="1\n2\n")
    assert path.read_bytes() == b"1\r\n2\r\nd\r\n"
    path = ws.write("m.txt", b"a\nb\r\nc\nd\n")
    ws.call(str_replace, path="m.txt", old_str="a\nb\nc\n", new_str="1\n2\n")
    assert path.read_bytes() == b"1\n2\nd\n"


def test_inserted_lines_follow_the_ending_of_their_line(ws: Harness) -> None:
    path = ws.write("m.txt", b"a\r\nb\nc\r\n")
    ws.call(str_replace, path="m.txt", old_str="b", new_str="b\nb2")
    assert path.read_bytes() == b"a\r\nb\nb2\nc\r\n"
    ws.call(str_replace, path="m.txt", old_str="c", new_str="c\nc2")
    assert path.read_bytes() == b"a\r\nb\nb2\nc\r\nc2\r\n"


def test_mixed_line_endings_count_occurrences_whatever_their_endings(ws: Harness) -> None:
    path = ws.write("m.txt", b"k\r\nv\nk\nv\r\n")
    with pytest.raises(ToolError, match=r"occurs 2 times in m.txt \(starting at lines 1, 3\)"):
        ws.call(str_replace, path="m.txt", old_str="k\nv", new_str="K\nV")
    ws.call(str_replace, path="m.txt", old_str="k\nv", new_str="K\nV", replace_all=True)
    assert path.read_bytes() == b"K\r\nV\nK\nV\r\n"


def test_stray_carriage_returns_are_named_not_blamed_on_whitespace(ws: Harness) -> None:
    ws.write("m.txt", b"ab\rc\r\nd\n")  # a stray CR inside a line
    with pytest.raises(ToolError) as info:
        ws.call(str_replace, path="m.txt", old_str="abc\nd", new_str="x")
    message = str(info.value)
    assert "matches at line 1 except for stray carriage returns" in message
    assert "whitespace" not in message


# --- text that is not Unicode ------------------------------------------------------


@pytest.mark.parametrize("field", ["old_str", "new_str"])
def test_lone_surrogates_in_old_or_new_str_are_refused(ws: Harness, field: str) -> None:
    path = ws.write("e.txt", "smile\n")
    args = {"old_str": "smile", "new_str": "smile!"} | {field: "smile \ud83d"}
    with pytest.raises(ToolError, match=rf"^{field} contains text that is not valid Unicode"):
        ws.call(str_replace, path="e.txt", **args)
    assert path.read_text() == "smile\n"


def test_bad_text_in_the_path_is_refused(ws: Harness) -> None:
    with pytest.raises(ToolError, match=r"^The path contains text that is not valid Unicode"):
        ws.call(str_replace, path="\ud83d.txt", old_str="a", new_str="b")


def test_file_with_undecodable_name_is_edited_by_its_escaped_name(ws: Harness) -> None:
    path = ws.root / os.fsdecode(b"caf\xe9.txt")
    path.write_bytes(b"old\n")
    out = ws.call(str_replace, path="caf\\xe9.txt", old_str="old", new_str="new")
    assert out.startswith("Replaced 1 occurrence in caf\\xe9.txt.")
    assert path.read_bytes() == b"new\n"


# --- the "most similar lines" hint on big files ---------------------------------


def stdlib_source(min_lines: int) -> list[str]:
    """Real code as lines: argparse.py, then as many more stdlib modules as it takes."""
    lines: list[str] = []
    for module in (argparse, inspect, typing, tarfile, difflib, zipfile):
        file = module.__file__
        assert file is not None
        lines += Path(file).read_text(encoding="utf-8").splitlines()
        if len(lines) >= min_lines:
            break
    assert len(lines) >= min_lines
    return lines


def def_line_at_or_after(lines: list[str], index: int) -> int:
    """0-based index of the first method definition from `index` on: a telling region."""
    while not lines[index].startswith("    def "):
        index += 1
    return index


def no_match_within(ws: Harness, path: str, old_str: str, bound: float) -> str:
    """The no-match error message, failing if it takes longer than `bound` seconds."""
    outcome: dict[str, str] = {}

    def run() -> None:
        try:
            ws.call(str_replace, path=path, old_str=old_str, new_str="X")
        except ToolError as exc:
            outcome["error"] = str(exc)

    worker = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(bound)
    if worker.is_alive():
        ws.ctx.cancel.set()  # what the dispatcher does when it abandons a call
        pytest.fail(f"the no-match error took longer than {bound} s")
    assert "error" in outcome, "old_str unexpectedly matched"
    assert time.monotonic() - started < bound
    return outcome["error"]


def indent(line: str) -> str:
    return "  " + line if line.strip() else line


def typo(line: str) -> str:
    return line.replace("e", "3", 1)


@pytest.mark.parametrize("size", [10, 30])
def test_wrong_indentation_in_a_real_big_file_still_lands_in_place(ws: Harness, size: int) -> None:
    """A quote shifted by two columns matches ignoring indentation, and new_str is
    shifted back: the file changes only where meant."""
    lines = stdlib_source(0)  # argparse.py: about 2.6k lines
    path = ws.write("argparse.py", "\n".join(lines) + "\n")
    first = def_line_at_or_after(lines, 1500)
    region = lines[first : first + size]
    old = "\n".join(indent(line) for line in region)
    new = "\n".join(indent(line) for line in ["    # edited", *region])
    out = ws.call(str_replace, path="argparse.py", old_str=old, new_str=new)
    assert "matched ignoring indentation" in out
    expected = [*lines[:first], "    # edited", *region, *lines[first + size :]]
    assert path.read_text() == "\n".join(expected) + "\n"


@pytest.mark.parametrize("size", [10, 30])
def test_wrong_indentation_and_a_typo_is_an_error_showing_the_place(ws: Harness, size: int) -> None:
    lines = stdlib_source(0)
    ws.write("argparse.py", "\n".join(lines) + "\n")
    first = def_line_at_or_after(lines, 1500)
    old = "\n".join(indent(line) for line in lines[first : first + size]) + "\n  zzz"
    message = no_match_within(ws, "argparse.py", old, bound=2.0)
    line = first + 1
    assert "The most similar lines" in message
    assert f"{line:6d}\t{lines[first]}\n" in message


@pytest.mark.parametrize("size", [10, 30])
def test_typos_in_a_real_big_file_are_located_fast(ws: Harness, size: int) -> None:
    lines = stdlib_source(0)  # argparse.py: about 2.6k lines
    ws.write("argparse.py", "\n".join(lines) + "\n")
    first = def_line_at_or_after(lines, 1500)
    old = "\n".join(indent(typo(line)) for line in lines[first : first + size])
    message = no_match_within(ws, "argparse.py", old, bound=2.0)
    line = first + 1
    assert "whitespace" not in message
    assert f"The most similar lines ({line - 2}-{line + size + 1}) are:" in message


def test_a_long_old_str_in_a_10k_line_file_stays_bounded(ws: Harness) -> None:
    lines = stdlib_source(10_000)[:10_000]
    ws.write("big.py", "\n".join(lines) + "\n")
    first = def_line_at_or_after(lines, 6000)
    want = [indent(typo(line)) for line in lines[first : first + 200]]
    del want[100]  # and a line left out
    message = no_match_within(ws, "big.py", "\n".join(want), bound=2.0)
    region = re.search(r"The most similar lines \((\d+)-(\d+)\) are:", message)
    assert region is not None
    assert abs(int(region.group(1)) - (first + 1 - 2)) <= 1


def test_cancel_stops_the_search_for_similar_lines() -> None:
    lines = stdlib_source(10_000)[:10_000]
    want = [typo(line) for line in lines[6000:6200]]
    cancel = threading.Event()
    assert _closest_window(lines, want, cancel)[0] == 6001
    cancel.set()
    started = time.monotonic()
    assert _closest_window(lines, want, cancel) == (0, 0.0)
    assert time.monotonic() - started < 0.5

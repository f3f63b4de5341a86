from __future__ import annotations

import codecs
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
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
    ws.write("t.py", "if x:\n\treturn 1\n")
    with pytest.raises(ToolError, match="except for whitespace or indentation") as info:
        ws.call(str_replace, path="t.py", old_str="if x:\n    return 1\n", new_str="y")
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

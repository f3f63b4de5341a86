"""str_replace's tolerant stages: each stage matches, each stage refuses ambiguity, and
no stage ever edits anything but the span it found (property tests)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import ToolError
from tether.sandbox.workspace import Workspace
from tether.tools.edit import find_occurrences, str_replace
from tether.tools.registry import ToolContext

from .conftest import Harness


def test_exact_ambiguity_is_not_resolved_by_a_looser_stage(ws: Harness) -> None:
    path = ws.write("a.py", "a = 1  \nb = 2\na = 1\n")
    with pytest.raises(ToolError, match=r"occurs 2 times in a.py \(starting at lines 1, 3\)"):
        ws.call(str_replace, path="a.py", old_str="a = 1", new_str="a = 9")
    assert path.read_text() == "a = 1  \nb = 2\na = 1\n"


def test_trailing_whitespace_stage(ws: Harness) -> None:
    path = ws.write("f.py", "def f():  \n    return 1\t\nx = 2\n")
    out = ws.call(str_replace, path="f.py", old_str="def f():\n    return 1", new_str="def g():")
    assert "matched ignoring trailing whitespace" in out
    assert path.read_text() == "def g():\nx = 2\n"


def test_trailing_whitespace_ambiguity_names_the_lines(ws: Harness) -> None:
    text = "x = 1 \ny = 2\n\nx = 1\t\ny = 2  \n"
    path = ws.write("f.py", text)
    with pytest.raises(ToolError, match=r"starting at lines 1, 4\) \(matched ignoring trailing"):
        ws.call(str_replace, path="f.py", old_str="x = 1\ny = 2", new_str="z")
    assert path.read_text() == text


def test_indentation_stage_reindents_new_str(ws: Harness) -> None:
    text = "class A:\n    def f(self):\n        if x:\n            return 1\n        return 2\n"
    path = ws.write("a.py", text)
    old = "def f(self):\n    if x:\n        return 1\n"
    new = "def f(self):\n    if x:\n        log()\n        return 1\n"
    out = ws.call(str_replace, path="a.py", old_str=old, new_str=new)
    assert "matched ignoring indentation" in out
    assert path.read_text() == (
        "class A:\n    def f(self):\n        if x:\n            log()\n"
        "            return 1\n        return 2\n"
    )


def test_indentation_stage_with_tabs(ws: Harness) -> None:
    path = ws.write("t.go", "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n")
    out = ws.call(str_replace, path="t.go", old_str="    if x {\n        return 1", new_str=(
        "    if y {\n        return 2"
    ))  # fmt: skip
    assert "matched ignoring indentation" in out
    assert path.read_text() == "func f() {\n\tif y {\n\t\treturn 2\n\t}\n}\n"


def test_indentation_ambiguity_names_the_lines(ws: Harness) -> None:
    text = "def a():\n    return 1\n\nclass B:\n    def a():\n        return 1\n"
    path = ws.write("a.py", text)
    with pytest.raises(ToolError, match=r"starting at lines 1, 5\) \(matched ignoring indent"):
        ws.call(str_replace, path="a.py", old_str="  def a():\n      return 1", new_str="z")
    assert path.read_text() == text


def test_punctuation_stage(ws: Harness) -> None:
    text = "msg = \u201cdon\u2019t panic\u201d  # \u2014 a\u00a0note\u2026\nend\n"
    path = ws.write("m.py", text)
    out = ws.call(
        str_replace,
        path="m.py",
        old_str='msg = "don\'t panic"  # - a note...',
        new_str='msg = "relax"',
    )
    assert "matched normalising punctuation" in out
    assert path.read_text() == 'msg = "relax"\nend\n'


def test_punctuation_ambiguity_names_the_lines(ws: Harness) -> None:
    text = "say(\u201chi\u201d)\nsay(\u2018hi\u2019)\n"
    path = ws.write("m.py", text.replace("\u2018hi\u2019", "\u201chi\u201d"))
    with pytest.raises(ToolError, match=r"starting at lines 1, 2\) \(matched normalising"):
        ws.call(str_replace, path="m.py", old_str='say("hi")', new_str="x")
    assert "say" in path.read_text()


def test_replace_all_at_a_tolerant_stage(ws: Harness) -> None:
    path = ws.write("f.py", "x = 1 \ny\nx = 1\t\n")
    out = ws.call(str_replace, path="f.py", old_str="x = 1\n", new_str="x = 2\n", replace_all=True)
    assert "2 occurrences" in out
    assert path.read_text() == "x = 2\ny\nx = 2\n"


def test_tolerant_stage_keeps_crlf_and_bom(ws: Harness) -> None:
    path = ws.write("w.txt", b"\xef\xbb\xbfa  \r\n  b\r\nc\r\n")
    ws.call(str_replace, path="w.txt", old_str="a\nb", new_str="A\nB")
    assert path.read_bytes() == b"\xef\xbb\xbfA\r\nB\r\nc\r\n"


def test_whitespace_only_quote_is_never_matched_loosely(ws: Harness) -> None:
    path = ws.write("f.py", "a\n\n\nb\n")
    with pytest.raises(ToolError):
        ws.call(str_replace, path="f.py", old_str="   \n   ", new_str="x")
    assert path.read_text() == "a\n\n\nb\n"


# --- properties -------------------------------------------------------------------

WORDS = st.sampled_from(["x", "y", "def", "(", ")", "=", "1", "return", ":", "#", "\u201cq\u201d"])
LINE = st.builds(
    lambda indent, words, trail: " " * indent + " ".join(words) + trail,
    st.integers(0, 8),
    st.lists(WORDS, min_size=0, max_size=5),
    st.sampled_from(["", "", " ", "\t"]),
)
FILES = st.lists(LINE, min_size=1, max_size=25)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _call(root: Path, text: str, **args: object) -> tuple[str | None, str]:
    """(error or None, file text after) for one str_replace on a fresh file."""
    path = root / "f.txt"
    path.write_text(text, encoding="utf-8", newline="")
    ctx = ToolContext(workspace=Workspace(root), env=dict(os.environ))
    try:
        str_replace.fn(ctx, **str_replace.bind({"path": "f.txt", **args}))
    except ToolError as exc:
        return str(exc), _read(path)
    return None, _read(path)


def _read(path: Path) -> str:
    with path.open(encoding="utf-8", newline="") as handle:
        return handle.read()


@SETTINGS
@given(FILES, st.data())
def test_a_unique_exact_snippet_changes_only_its_span(
    lines: list[str], data: st.DataObject
) -> None:
    text = "\n".join(lines) + "\n"
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    snippet = text[start:end]
    if len(find_occurrences(text, snippet)) != 1 or not snippet.strip():
        return
    new = "\u2603"
    with tempfile.TemporaryDirectory() as tmp:
        error, after = _call(Path(tmp), text, old_str=snippet, new_str=new)
    assert error is None, error
    expected = text[:start] + new + text[end:]
    if not expected.endswith("\n"):
        expected += "\n"  # the file's final newline is kept
    assert after == expected


@SETTINGS
@given(FILES, st.data())
def test_a_loose_quote_edits_its_lines_or_nothing(lines: list[str], data: st.DataObject) -> None:
    """Quote whole lines with whitespace changed: either exactly those lines (or another
    window equal to them at that stage) are replaced, or it is an error and the file is
    unchanged. Nothing else in the file ever moves."""
    text = "\n".join(lines) + "\n"
    first = data.draw(st.integers(0, len(lines) - 1))
    last = data.draw(st.integers(first, min(first + 4, len(lines) - 1)))
    window = lines[first : last + 1]
    if not any(line.strip() for line in window):
        return
    shift = data.draw(st.sampled_from(["", " ", "  ", "\t"]))
    quoted = [shift + line.strip() + data.draw(st.sampled_from(["", " "])) for line in window]
    old = "\n".join(quoted)
    if find_occurrences(text, old):
        return  # an exact match: the property above covers it
    new = "\u2603"
    with tempfile.TemporaryDirectory() as tmp:
        error, after = _call(Path(tmp), text, old_str=old, new_str=new)
    if error is not None:
        assert after == text
        return
    after_lines = after.split("\n")
    # exactly one window of len(window) lines became the marker line; the rest is intact
    size = len(window)
    for i in range(len(lines) - size + 1):
        candidate = [*lines[:i], after_lines[i], *lines[i + size :]]
        if "\n".join(candidate) + "\n" == after and new in after_lines[i]:
            replaced = lines[i : i + size]
            assert [ln.strip() for ln in replaced] == [q.strip() for q in quoted]
            return
    pytest.fail(f"the edit changed more than one window of lines:\n{text!r}\n->\n{after!r}")

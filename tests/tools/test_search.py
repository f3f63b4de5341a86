from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
from tether.sandbox.workspace import Workspace
from tether.tools.search import SearchEngine, search, search_files

if TYPE_CHECKING:
    from conftest import Harness

ENGINES = ("rg", "python")


def make_tree(root: Path) -> None:
    files: dict[str, bytes] = {
        ".gitignore": b"*.log\n!keep.log\nbuild/\n/secret.txt\n",
        "a.txt": b"foo first\nnothing\nfoo again\n",
        "a/b.txt": b"foo in a dir\n",
        "a-b.txt": b"foo dash\n",
        "keep.log": b"foo kept log\n",
        "drop.log": b"foo dropped log\n",
        "build/gen.txt": b"foo generated\n",
        "secret.txt": b"foo secret\n",
        "sub/secret.txt": b"foo not secret here\n",
        "sub/.gitignore": b"*.tmp\n!special.log\n",
        "sub/x.tmp": b"foo tmp\n",
        "sub/special.log": b"foo special\n",
        ".hidden/h.txt": b"foo hidden\n",
        "crlf.txt": b"foo crlf\r\nbar foo\r\n",
        "bom.txt": codecs.BOM_UTF8 + b"foo with bom\n",
        "utf16.txt": codecs.BOM_UTF16_LE + "foo sixteen\n".encode("utf-16-le"),
        "bin.dat": b"foo\x00binary\n",
        "long.txt": b"foo " + b"z" * 1000 + b"\n",
        "café.txt": "café foo\n".encode(),
        "nonl.txt": b"last foo",
        "code.py": b"def foo(x):\n    return bar(x)\n",
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "link.txt").symlink_to("a.txt")


EXPECTED_FOO = """\
.hidden/h.txt:1:foo hidden
a/b.txt:1:foo in a dir
a-b.txt:1:foo dash
a.txt:1:foo first
a.txt:3:foo again
bom.txt:1:foo with bom
café.txt:1:café foo
code.py:1:def foo(x):
crlf.txt:1:foo crlf
crlf.txt:2:bar foo
keep.log:1:foo kept log
long.txt:1:foo {z}… [line cut: 1,004 characters]
nonl.txt:1:last foo
sub/secret.txt:1:foo not secret here
sub/special.log:1:foo special
utf16.txt:1:foo sixteen""".format(z="z" * 296)


@pytest.mark.parametrize("engine", ENGINES)
def test_exact_output_outside_git(tmp_path: Path, engine: str) -> None:
    make_tree(tmp_path)
    assert search(Workspace(tmp_path), "foo", engine=engine) == EXPECTED_FOO  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("pattern", "path", "glob"),
    [
        ("foo", None, None),
        ("^foo", None, None),
        ("foo$", None, None),
        (r"\bbar\b", None, None),
        ("(?i)FOO", None, None),
        ("é", None, None),
        ("foo", "sub", None),
        ("foo", "a.txt", None),
        ("foo", None, "*.txt"),
        ("foo", None, "sub/*.log"),
        ("foo", "sub", "*.log"),
        ("foo", None, "{a,sub}/**"),
        ("no such text", None, None),
    ],
)
def test_engines_agree(
    tmp_path: Path,
    git: Callable[..., None],
    pattern: str,
    path: str | None,
    glob: str | None,
) -> None:
    make_tree(tmp_path)
    workspace = Workspace(tmp_path)
    outside = [search(workspace, pattern, path=path, glob=glob, engine=e) for e in ENGINES]
    assert outside[0] == outside[1]
    git(tmp_path, "init", "-q")
    inside = [search(workspace, pattern, path=path, glob=glob, engine=e) for e in ENGINES]
    assert inside[0] == inside[1] == outside[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_regex_is_a_tool_error(tmp_path: Path, engine: str) -> None:
    make_tree(tmp_path)
    with pytest.raises(ToolError, match=r"Invalid regular expression '\(unclosed'"):
        search(Workspace(tmp_path), "(unclosed", engine=engine)  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_matches_says_so(tmp_path: Path, engine: str) -> None:
    make_tree(tmp_path)
    out = search(Workspace(tmp_path), "xyzzy", path="sub", glob="*.log", engine=engine)  # type: ignore[arg-type]
    assert out == "No matches for 'xyzzy' in sub (files matching '*.log')."


@pytest.mark.parametrize("engine", ENGINES)
def test_matches_are_capped_with_a_note(tmp_path: Path, engine: str) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 250)
    lines = search(Workspace(tmp_path), "hit", engine=engine).splitlines()  # type: ignore[arg-type]
    assert len(lines) == 201
    assert lines[0] == "many.txt:1:hit"
    assert lines[199] == "many.txt:200:hit"
    assert lines[200] == (
        "[50 more matches not shown (250 in all); narrow the pattern, path or glob]"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_output_budget_is_respected(tmp_path: Path, engine: str) -> None:
    (tmp_path / "wide.txt").write_text(("hit " + "w" * 200 + "\n") * 100)
    out = search(Workspace(tmp_path), "hit", engine=engine, max_chars=3000)  # type: ignore[arg-type]
    assert len(out) <= 3000
    assert out.splitlines()[-1].endswith("in all); narrow the pattern, path or glob]")


def test_bad_glob_and_missing_path(tmp_path: Path) -> None:
    make_tree(tmp_path)
    with pytest.raises(ToolError, match="Invalid glob"):
        search(Workspace(tmp_path), "foo", glob="*.{txt", engine="python")
    with pytest.raises(ToolError, match="does not exist"):
        search(Workspace(tmp_path), "foo", path="nowhere", engine="rg")
    with pytest.raises(ToolError, match="outside the workspace"):
        search(Workspace(tmp_path), "foo", path="..", engine="rg")


def test_tool_entry_point(ws: Harness) -> None:
    ws.write("src/m.py", "import os\nos.getcwd()\n")
    assert ws.call(search_files, pattern=r"os\.", path="src") == "src/m.py:2:os.getcwd()"


def make_undecodable_names(root: Path) -> None:
    (root / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"foo latin\n")
    (root / os.fsdecode(b"dir\xff")).mkdir()
    (root / os.fsdecode(b"dir\xff") / "in.txt").write_bytes(b"foo inner\n")
    (root / "plain.txt").write_bytes(b"foo plain\n")


@pytest.mark.parametrize("in_git", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_undecodable_names_are_shown_escaped(
    tmp_path: Path, git: Callable[..., None], engine: SearchEngine, in_git: bool
) -> None:
    make_undecodable_names(tmp_path)
    if in_git:
        git(tmp_path, "init", "-q")
    workspace = Workspace(tmp_path)
    out = search(workspace, "foo", engine=engine)
    out.encode("utf-8")  # no lone surrogates
    assert out == "caf\\xe9.txt:1:foo latin\ndir\\xff/in.txt:1:foo inner\nplain.txt:1:foo plain"
    assert search(workspace, "foo", glob="*.txt", engine=engine) == out
    # The escaped names, given back, find the same files.
    assert search(workspace, "foo", path="dir\\xff", engine=engine) == "dir\\xff/in.txt:1:foo inner"
    assert search(workspace, "o", path="caf\\xe9.txt", engine=engine) == (
        "caf\\xe9.txt:1:foo latin"
    )
    assert search(workspace, "nothing", path="dir\\xff", engine=engine) == (
        "No matches for 'nothing' in dir\\xff."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"pattern": "a\x00b"}, "The pattern contains a NUL byte"),
        ({"pattern": "\ud83d"}, r"The pattern contains text that is not valid Unicode \(a lone"),
        ({"pattern": "foo", "glob": "*\x00.txt"}, "The glob contains a NUL byte"),
        ({"pattern": "foo", "glob": "\udcff*"}, "The glob contains text that is not valid Unicode"),
        ({"pattern": "foo", "path": "a\x00"}, "The path contains a NUL byte"),
        ({"pattern": "foo", "path": "a\ud83d"}, "The path contains text that is not valid Unicode"),
    ],
)
@pytest.mark.parametrize("engine", ENGINES)
def test_nul_and_lone_surrogates_are_the_callers_fault(
    tmp_path: Path, engine: SearchEngine, args: dict[str, str], message: str
) -> None:
    make_tree(tmp_path)
    with pytest.raises(ToolError, match=f"^{message}"):
        search(Workspace(tmp_path), engine=engine, **args)


def test_tool_refuses_a_nul_in_the_pattern(ws: Harness) -> None:
    ws.write("a.txt", "x\n")
    with pytest.raises(ToolError, match="The pattern contains a NUL byte"):
        ws.call(search_files, pattern="x\x00")

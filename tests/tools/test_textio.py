from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

from tether.errors import ToolError
from tether.tools.textio import (
    atomic_write,
    check_text,
    count_lines,
    decode,
    detect_newline,
    escape_surrogates,
    looks_binary,
    read_text,
    split_lines,
    to_newline,
)


def test_nul_in_first_8k_is_binary_but_later_is_not() -> None:
    assert looks_binary(b"abc\x00def")
    assert not looks_binary(b"a" * 8192 + b"\x00")
    assert not looks_binary(b"plain text\n")
    assert not looks_binary(b"")


def test_utf16_with_bom_is_text_not_binary() -> None:
    data = codecs.BOM_UTF16_LE + "héllo\r\nwörld\r\n".encode("utf-16-le")
    assert not looks_binary(data)
    text_file = decode(data)
    assert text_file.text == "héllo\r\nwörld\r\n"
    assert text_file.encoding == "utf-16-le"
    assert text_file.newline == "\r\n"
    assert text_file.encode(text_file.text) == data


def test_utf8_bom_is_stripped_and_restored() -> None:
    data = codecs.BOM_UTF8 + "naïve\n".encode()
    text_file = decode(data)
    assert text_file.bom
    assert text_file.text == "naïve\n"
    assert text_file.encode(text_file.text) == data
    assert text_file.encode("x\n") == codecs.BOM_UTF8 + b"x\n"


def test_undecodable_bytes_never_crash_and_round_trip() -> None:
    data = b"caf\xe9 ok\nline \xff\xfe two\n"
    text_file = decode(data)
    assert text_file.lossy
    assert "undecodable" in text_file.description
    assert text_file.display == "caf\ufffd ok\nline \ufffd\ufffd two\n"
    assert text_file.encode(text_file.text) == data
    edited = text_file.text.replace("ok", "OK")
    assert text_file.encode(edited) == b"caf\xe9 OK\nline \xff\xfe two\n"


def test_newline_detection() -> None:
    assert detect_newline("a\r\nb\r\n") == "\r\n"
    assert detect_newline("a\nb\n") == "\n"
    assert detect_newline("no newline") == "\n"
    assert detect_newline("a\r\nb\r\nc\n") == "\r\n"
    assert detect_newline("a\r\nb\nc\n") == "\n"


def test_line_helpers() -> None:
    assert split_lines("a\r\nb\r\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("") == []
    assert split_lines("\n") == [""]
    assert count_lines("a\nb") == 2
    assert count_lines("a\nb\n") == 2
    assert count_lines("") == 0
    assert to_newline("a\nb\r\nc", "\r\n") == "a\r\nb\r\nc"
    assert to_newline("a\r\nb\r\n", "\n") == "a\nb\n"


def test_read_text_returns_none_for_binary(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\x7fELF\x00\x01")
    (tmp_path / "txt").write_bytes(b"hi\n")
    assert read_text(tmp_path / "bin") is None
    text_file = read_text(tmp_path / "txt")
    assert text_file is not None and text_file.text == "hi\n"


def test_atomic_write_creates_parents_and_writes_exact_bytes(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c.txt"
    atomic_write(target, "x\r\ny\n")
    assert target.read_bytes() == b"x\r\ny\n"
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]  # no temp left


def test_atomic_write_keeps_mode_of_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "script.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o751)
    atomic_write(target, "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o751


def test_atomic_write_new_file_gets_umask_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    atomic_write(tmp_path / "new.txt", "x")
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o666 & ~umask


def test_atomic_write_replaces_instead_of_writing_in_place(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old\n")
    link = tmp_path / "hardlink"
    os.link(target, link)
    atomic_write(target, "new\n")
    assert target.read_text() == "new\n"
    assert link.read_text() == "old\n"  # the old inode was never touched


def test_atomic_write_failure_leaves_no_temp_file(tmp_path: Path) -> None:
    directory = tmp_path / "dir"
    (directory / "sub").mkdir(parents=True)
    with pytest.raises(OSError):
        atomic_write(directory / "sub", "cannot replace a directory with a file")
    assert [p.name for p in directory.iterdir()] == ["sub"]


def test_escape_surrogates_shows_undecodable_name_bytes_like_backslashreplace() -> None:
    name = os.fsdecode(b"caf\xe9-\xff.txt")
    shown = escape_surrogates(name)
    assert shown == os.fsencode(name).decode("utf-8", "backslashreplace")
    assert shown == "caf\\xe9-\\xff.txt"
    assert escape_surrogates("half \ud83d emoji") == "half \\ud83d emoji"
    assert escape_surrogates("plain café 😀") == "plain café 😀"
    shown.encode("utf-8")  # never raises


def test_check_text_refuses_nul_and_lone_surrogates() -> None:
    check_text("fine café 😀", "The command")
    with pytest.raises(
        ToolError, match=r"^The command contains a NUL byte \(\\x00, at character 1\)"
    ):
        check_text("a\x00b", "The command")
    check_text("a\x00b", "The content", allow_nul=True)
    with pytest.raises(
        ToolError,
        match=r"^The path contains text that is not valid Unicode \(a lone surrogate, U\+D83D, "
        r"at character 2\).* Hint\.$",
    ):
        check_text("ab\ud83d", "The path", hint="Hint.")
    with pytest.raises(ToolError, match="lone surrogate, U\\+DCFF"):
        check_text("\udcff", "The content", allow_nul=True)

"""Clamp and spill: a long output reaches the model as head + marker + tail, and the
full text is saved in an overflow file the marker names (real files throughout)."""

from __future__ import annotations

import re
import stat
import threading
from pathlib import Path

import pytest

from tether.context import overflow
from tether.context.clamp import clamp, spill

MARKER = re.compile(
    r"\[\.\.\. ([\d,]+) characters cut here \(lines? ([\d,]+)(?:-([\d,]+))? of ([\d,]+)\)\. "
    r"The full output \(([\d,]+) characters\) is saved in (\S+)\."
)


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def parse(result: str) -> tuple[int, int, int, Path]:
    """(characters cut, first cut line, last cut line, overflow file) from a marker."""
    found = MARKER.search(result)
    assert found is not None, result[-2000:]
    first = int(found[2].replace(",", ""))
    last = int((found[3] or found[2]).replace(",", ""))
    return int(found[1].replace(",", "")), first, last, Path(found[6])


def test_text_that_fits_comes_back_unchanged_and_nothing_is_written(tmp_path: Path) -> None:
    directory = tmp_path / "overflow"
    assert spill("short", 100, directory, "bash") == "short"
    assert not directory.exists()


def test_the_overflow_file_holds_the_full_text_and_the_marker_locates_the_cut(
    tmp_path: Path,
) -> None:
    text = numbered(20_000)
    result = spill(text, 3_000, tmp_path / "overflow", "read_file")
    assert len(result) <= 3_000
    cut, first, last, path = parse(result)
    assert path.read_text() == text
    assert path.name == "0001-read_file.txt"
    head, _, tail = result.partition("\n[... ")
    tail = tail.split("...]\n", 1)[1]
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + cut + len(tail) == len(text)
    lines = text.split("\n")
    assert head.endswith("\n") and lines[first - 1] == f"line {first}"
    assert head.count("\n") == first - 1  # the head ends right before the cut
    assert tail.startswith(f"line {last + 1}\n")  # and the tail starts right after it
    assert f"read_file path={path} offset={first} limit=2000" in result
    assert f"search_files pattern=<regex> path={path}" in result
    assert len(tail) > len(head)  # errors tend to be at the end


def test_a_cut_inside_one_long_line_names_that_line(tmp_path: Path) -> None:
    text = "start\n" + "x" * 50_000 + "\nend\n"
    result = spill(text, 2_000, tmp_path, "bash")
    _, first, last, path = parse(result)
    assert (first, last) == (2, 2)
    assert path.read_text() == text


def test_without_a_directory_it_is_the_old_clamp(tmp_path: Path) -> None:
    text = numbered(20_000)
    assert spill(text, 3_000, None, "bash") == clamp(text, 3_000)
    assert "cut from the middle" in clamp(text, 3_000)


def test_an_unwritable_directory_falls_back_to_the_clamp_and_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    text = numbered(5_000)
    result = spill(text, 2_000, blocker / "overflow", "bash")
    assert len(result) <= 2_000 and result.endswith("line 5000\n")  # the tail survives
    assert "cut from the middle" in result
    assert "the full output could not be saved: [Errno 20] Not a directory" in result


def test_the_directory_is_private_and_made_on_first_use(tmp_path: Path) -> None:
    directory = tmp_path / "sessions" / "s1" / "overflow"
    path = overflow.write_text(directory, "bash", "hello\n")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "hello\n"


def test_concurrent_writes_get_distinct_numbered_files(tmp_path: Path) -> None:
    directory = tmp_path / "overflow"
    start = threading.Barrier(16)
    paths: list[Path] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        start.wait()
        for k in range(5):
            path = overflow.write_text(directory, "bash", f"{n}:{k}\n" * 1000)
            with lock:
                paths.append(path)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 80
    assert sorted(p.name for p in paths) == [f"{i:04d}-bash.txt" for i in range(1, 81)]
    contents = {p.read_text() for p in paths}
    assert contents == {f"{n}:{k}\n" * 1000 for n in range(16) for k in range(5)}


def test_numbering_continues_after_files_already_there(tmp_path: Path) -> None:
    directory = tmp_path / "fresh"  # a directory this process has not numbered yet
    directory.mkdir()
    (directory / "0041-bash.txt").write_text("from an earlier run\n")
    (directory / "notes.txt").write_text("not ours\n")
    assert overflow.write_text(directory, "search_files", "x").name == "0042-search_files.txt"


def test_a_name_taken_behind_our_back_is_skipped(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    first = overflow.write_text(directory, "bash", "a")
    (directory / "0002-bash.txt").write_text("another process got here first")
    second = overflow.write_text(directory, "bash", "b")
    assert (first.name, second.name) == ("0001-bash.txt", "0003-bash.txt")
    assert (directory / "0002-bash.txt").read_text() == "another process got here first"


def test_odd_tool_names_make_safe_file_names(tmp_path: Path) -> None:
    path, handle = overflow.create(tmp_path, "../../etc/pass wd")
    handle.close()
    assert path.parent == tmp_path and re.fullmatch(r"\d{4}-[\w.-]+\.txt", path.name)


def test_an_unwritable_directory_is_an_oserror_the_caller_handles(tmp_path: Path) -> None:
    """A file where the directory should be: unwritable for root too."""
    directory = tmp_path / "not-a-dir"
    directory.write_text("in the way\n")
    with pytest.raises(OSError):
        overflow.write_text(directory, "bash", "x")
    assert "could not be saved" in spill("y" * 5_000, 1_000, directory, "bash")

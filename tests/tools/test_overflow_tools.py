"""Nothing the agent ran is lost: long outputs are saved whole in overflow files, and
the marker's path and offset work when fed back to read_file and search_files.

Everything runs for real: the built-in tools through the real Dispatcher, real
commands, real files; memory is measured in a separate Python process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tether.errors import ToolError
from tether.messages import ToolCall, ToolResult
from tether.sandbox.workspace import Workspace
from tether.tools import bigread
from tether.tools.builtin import builtin_tools
from tether.tools.dispatch import Dispatcher
from tether.tools.registry import Registry, ToolContext, tool
from tether.tools.textio import split_lines

LIMIT = 4_000
MARKER = re.compile(
    r"\[\.\.\. ([\d,]+) (characters|bytes) cut here \(lines? ([\d,]+)(?:-([\d,]+))? of "
    r"([\d,]+)\)\. The full output \(([\d,]+) \2\) is saved in (\S+)\."
)


@tool
def chatty(ctx: ToolContext, lines: int, fail: bool = False) -> str:
    """Prints numbered lines, or fails with them.

    Args:
        lines: How many.
        fail: Raise them as a ToolError instead.
    """
    text = "".join(f"row {i}\n" for i in range(1, lines + 1)) + "the end"
    if fail:
        raise ToolError(text)
    return text


class Run:
    def __init__(self, root: Path, overflow: Path | None, limit: int = LIMIT) -> None:
        self.root = root
        self.overflow = overflow
        context = ToolContext(
            workspace=Workspace(root),
            env={"PATH": os.environ["PATH"]},
            output_limit=limit,
            overflow_dir=overflow,
        )
        self.dispatcher = Dispatcher(Registry([*builtin_tools(), chatty]), context)

    def __call__(self, name: str, **args: object) -> ToolResult:
        return self.dispatcher.execute(ToolCall("c", name, json.dumps(args)))

    def files(self) -> list[Path]:
        assert self.overflow is not None
        return sorted(self.overflow.iterdir()) if self.overflow.exists() else []


@pytest.fixture
def run(tmp_path: Path) -> Run:
    root = tmp_path / "ws"
    root.mkdir()
    return Run(root, tmp_path / "state" / "sessions" / "s1" / "overflow")


def marker(text: str) -> tuple[int, int, int, Path]:
    """(size of the whole, first cut line, last cut line, file) from a result's marker."""
    found = MARKER.search(text)
    assert found is not None, text[-1500:]
    first = int(found[3].replace(",", ""))
    last = int((found[4] or found[3]).replace(",", ""))
    return int(found[6].replace(",", "")), first, last, Path(found[7])


def test_marker_path_and_offset_lead_read_file_to_the_first_cut_line(run: Run) -> None:
    result = run("chatty", lines=50_000)
    assert not result.is_error and len(result.content) <= LIMIT
    size, first, last, path = marker(result.content)
    assert path.parent == run.overflow and path.name == "0001-chatty.txt"
    full = "".join(f"row {i}\n" for i in range(1, 50_001)) + "the end"
    assert path.read_text() == full and size == len(full)
    assert result.content.endswith("row 50000\nthe end")
    page = run("read_file", path=str(path), offset=first, limit=3)
    assert not page.is_error, page.content
    assert f"{first:6d}\trow {first}\n" in page.content
    assert f"{first + 2:6d}\trow {first + 2}" in page.content
    assert f"of {50_001}" in page.content.splitlines()[0]
    assert f"{last + 1}" in result.content.partition("...]\n")[2].splitlines()[0]
    found = run("search_files", pattern=f"^row {first + 10}$", path=str(path))
    assert found.content == f"{path}:{first + 10}:row {first + 10}"
    listing = run("list_files", path=str(run.overflow))
    assert listing.content == str(path)


def test_errors_are_spilled_too_keeping_their_end(run: Run) -> None:
    result = run("chatty", lines=20_000, fail=True)
    assert result.is_error and len(result.content) <= LIMIT
    _, _, _, path = marker(result.content)
    assert path.read_text().startswith("Error: row 1\n")
    assert result.content.startswith("Error: row 1\n") and result.content.endswith("the end")


def test_bash_output_is_saved_byte_for_byte_and_the_result_fits(run: Run) -> None:
    (run.root / "data.bin").write_bytes(os.urandom(7_500_000))
    command = "base64 data.bin; printf 'done\\n' >&2"
    direct = subprocess.run(["bash", "-c", command], cwd=run.root, capture_output=True, check=True)
    expected = direct.stdout + direct.stderr  # stderr follows: nothing interleaves
    assert len(expected) > 10_000_000
    result = run("bash", command=command)
    assert not result.is_error and len(result.content) <= LIMIT
    assert result.content.endswith("done\n[exit code: 0]")
    size, first, _, path = marker(result.content)
    assert [p.name for p in run.files()] == ["0001-bash.txt"]  # the dispatcher kept no copy
    data = path.read_bytes()
    assert size == len(data) == len(expected)
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(expected).hexdigest()
    wanted = expected.split(b"\n")[first - 1].decode()
    page = run("read_file", path=str(path), offset=first, limit=1)
    assert page.content.splitlines()[1] == f"{first:6d}\t{wanted}"


def test_binary_output_is_kept_exactly_too(run: Run) -> None:
    blob = os.urandom(5_000_000)
    (run.root / "blob").write_bytes(blob)
    result = run("bash", command="cat blob")
    _, _, _, path = marker(result.content)
    assert path.read_bytes() == blob
    assert len(result.content) <= LIMIT


def test_output_between_the_spill_point_and_the_limit_is_shown_whole(run: Run) -> None:
    result = run("bash", command="printf 'é%.0s' $(seq 1 1800)")  # 3600 bytes, 1800 chars
    assert result.content == "é" * 1800 + "\n[exit code: 0]"
    assert run.files() == []  # the file made at the spill point went: nothing was cut


def test_concurrent_calls_spill_to_distinct_files(run: Run) -> None:
    results: dict[int, ToolResult] = {}

    def call(n: int) -> None:
        results[n] = run("bash", command=f"seq {n} {n + 200_000}")

    threads = [threading.Thread(target=call, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    paths = {n: marker(r.content)[3] for n, r in results.items()}
    assert len(set(paths.values())) == 8 and len(run.files()) == 8
    for n, path in paths.items():
        assert path.read_text() == "".join(f"{i}\n" for i in range(n, n + 200_001))


def test_a_command_killed_on_timeout_keeps_what_it_printed(run: Run) -> None:
    result = run("bash", command="seq 1 300000; sleep 30", timeout=1.5)
    assert "[timed out after 1.5 s; process group killed]" in result.content
    assert len(result.content) <= LIMIT
    path = marker(result.content)[3]
    assert path.read_text() == "".join(f"{i}\n" for i in range(1, 300_001))


def test_when_no_file_can_be_made_bash_says_so_and_stays_bounded(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "blocker").write_text("a file where the directory should be")
    broken = Run(root, tmp_path / "blocker" / "overflow")
    result = broken("bash", command="head -c 5000000 /dev/zero | tr '\\0' a; echo; echo END")
    assert result.content.endswith("END\n[exit code: 0]")
    assert "could not be saved" in result.content
    assert len(result.content) <= LIMIT + 200


def test_without_an_overflow_dir_nothing_is_written_and_output_is_cut(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    plain = Run(root, None)
    result = plain("bash", command="seq 1 100000")
    assert len(result.content) <= LIMIT and "cut from the middle" in result.content
    assert result.content.endswith("100000\n[exit code: 0]")
    huge = plain("bash", command="head -c 5000000 /dev/zero | tr '\\0' a; echo; echo END")
    assert "bytes of output dropped from the middle" not in huge.content  # clamped after
    assert huge.content.endswith("END\n[exit code: 0]")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["ws"]


def test_a_huge_output_is_handled_in_bounded_memory(tmp_path: Path) -> None:
    """100 MB through the bash tool: the file gets every byte, the process does not."""
    script = textwrap.dedent(
        """
        import json, os, re, resource, sys
        from pathlib import Path
        from tether.messages import ToolCall
        from tether.sandbox.workspace import Workspace
        from tether.tools.builtin import builtin_tools
        from tether.tools.dispatch import Dispatcher
        from tether.tools.registry import Registry, ToolContext

        root, overflow = Path(sys.argv[1]), Path(sys.argv[2])
        ctx = ToolContext(workspace=Workspace(root), env={"PATH": os.environ["PATH"]},
                          overflow_dir=overflow)
        d = Dispatcher(Registry(builtin_tools()), ctx)
        def call(name, **args):
            return d.execute(ToolCall("c", name, json.dumps(args))).content
        call("bash", command="seq 1 100000")  # warm up: imports, threads, first spill
        call("read_file", path=str(next(overflow.iterdir())), offset=5)
        def status(field):
            text = Path("/proc/self/status").read_text()
            return int(re.search(field + r":\\s+(\\d+) kB", text).group(1))
        try:  # reset the peak, so that an earlier one cannot hide growth from this call
            Path("/proc/self/clear_refs").write_text("5")
            before, peak = status("VmRSS"), lambda: status("VmHWM")
        except OSError:  # cannot reset: growth of the lifetime peak (weaker)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = call("bash", command="seq 1 15000000")
        page = call("read_file", path=str(overflow / "0002-bash.txt"), offset=12345678, limit=2)
        print(json.dumps({"grew_kb": peak() - before, "out": out, "page": page}))
        """
    )
    root = tmp_path / "ws"
    root.mkdir()
    overflow = tmp_path / "overflow"
    proc = subprocess.run(
        [sys.executable, "-c", script, str(root), str(overflow)],
        capture_output=True,
        text=True,
        timeout=110,
        check=True,
    )
    report = json.loads(proc.stdout)
    path = overflow / "0002-bash.txt"
    size = path.stat().st_size
    assert size > 100_000_000
    expected = hashlib.sha256("".join(f"{i}\n" for i in range(1, 15_000_001)).encode())
    with path.open("rb") as handle:
        assert hashlib.file_digest(handle, "sha256").hexdigest() == expected.hexdigest()
    assert report["grew_kb"] < 30 * 1024, report["grew_kb"]
    assert len(report["out"]) <= 30_000 and report["out"].endswith("15000000\n[exit code: 0]")
    assert marker(report["out"])[0] == size
    assert "lines 12345678-12345679 of 15000000" in report["page"]
    assert "12345678\t12345678\n12345679\t12345679" in report["page"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "one",
        "one\n",
        "a\r\nb\r\n\nc",
        "x" * 20_000 + "\nshort\n" + "y" * 9_000,
        "é\n" * 3 + "\ufffd\n",
    ],
)
def test_streamed_reading_numbers_lines_as_the_whole_file_reading_does(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(text.encode())
    lines = split_lines(text)
    assert bigread.count_lines(path) == len(lines)
    for start in range(1, len(lines) + 2):
        got = bigread.window(path, start, 2, 8_000)
        want = lines[start - 1 : start + 1]
        assert [len(t) if n > 8_000 else t for t, n in got] == [
            len(w[:8_000]) if len(w) > 8_000 else w for w in want
        ]
        assert [n for _, n in got] == [len(w.encode()) for w in want]

"""`tether apply-patch` through the real CLI: every file or none, --check writes nothing."""

from __future__ import annotations

from pathlib import Path

ENVELOPE = """*** Begin Patch
*** Update File: a.txt
@@
-hello
+hi
 world
*** Add File: new/b.txt
+fresh
*** End Patch
"""


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_apply_check_and_refuse(run_cli, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\nworld\n")
    before = tree(tmp_path)
    check = run_cli(["apply-patch", "--check"], cwd=tmp_path, input=ENVELOPE)
    assert check.returncode == 0, check.stderr
    assert "nothing was written" in check.stdout and tree(tmp_path) == before
    done = run_cli(["apply-patch"], cwd=tmp_path, input=ENVELOPE)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a.txt").read_text() == "hi\nworld\n"
    assert (tmp_path / "new/b.txt").read_text() == "fresh\n"
    after = tree(tmp_path)
    again = run_cli(["apply-patch"], cwd=tmp_path, input=ENVELOPE)
    assert again.returncode == 6
    assert "a.txt" in again.stderr and "hunk 1" in again.stderr
    assert tree(tmp_path) == after  # the Add File of the second run did not happen either


def test_root_flag_and_a_unified_diff(run_cli, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "m.py").write_text("a = 1\nb = 2\n")
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    done = run_cli(["apply-patch", "--root", str(ws)], cwd=tmp_path, input=diff)
    assert done.returncode == 0, done.stderr
    assert (ws / "m.py").read_text() == "a = 1\nb = 3\n"
    missing = run_cli(["apply-patch", "--root", str(tmp_path / "nope")], cwd=tmp_path, input=diff)
    assert missing.returncode == 2 and "not a directory" in missing.stderr

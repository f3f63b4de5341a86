"""What the scenario folders cannot show: modes, the summary, plan/commit, rollback."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tether.patch import PatchError, apply_patch_text, commit, parse, plan, touched
from tether.patch import atomic as commit_module


def envelope(body: str) -> str:
    return f"*** Begin Patch\n{body}*** End Patch\n"


def test_update_keeps_the_file_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("echo hi\n")
    script.chmod(0o755)
    apply_patch_text(envelope("*** Update File: run.sh\n@@\n-echo hi\n+echo bye\n"), tmp_path)
    assert script.read_text() == "echo bye\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_move_keeps_the_file_mode(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("x\n")
    (tmp_path / "a.sh").chmod(0o750)
    apply_patch_text(envelope("*** Update File: a.sh\n*** Move to: b.sh\n"), tmp_path)
    assert stat.S_IMODE((tmp_path / "b.sh").stat().st_mode) == 0o750
    assert not (tmp_path / "a.sh").exists()


def test_unified_new_file_mode_is_applied(tmp_path: Path) -> None:
    diff = (
        "diff --git a/t.sh b/t.sh\nnew file mode 100755\n--- /dev/null\n+++ b/t.sh\n"
        "@@ -0,0 +1 @@\n+echo\n"
    )
    apply_patch_text(diff, tmp_path)
    assert stat.S_IMODE((tmp_path / "t.sh").stat().st_mode) == 0o755


def test_summary_names_every_file_with_line_counts(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\nb\n")
    (tmp_path / "gone.txt").write_text("1\n2\n3\n")
    summary = apply_patch_text(
        envelope(
            "*** Add File: new.txt\n+x\n+y\n*** Update File: a.txt\n@@\n-a\n+A\n+A2\n"
            "*** Delete File: gone.txt\n"
        ),
        tmp_path,
    )
    assert summary.text.splitlines() == [
        "Applied the patch: 3 files changed.",
        "A new.txt (+2)",
        "M a.txt (+2 -1)",
        "D gone.txt (-3)",
    ]


def test_check_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    patch = envelope("*** Update File: a.txt\n@@\n-a\n+b\n*** Add File: n/new.txt\n+n\n")
    summary = apply_patch_text(patch, tmp_path, check=True)
    assert summary.checked_only and "nothing was written" in summary.text
    assert (tmp_path / "a.txt").read_text() == "a\n"
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]


def test_plan_returns_final_bytes_without_writing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"a\r\nb\r\n")
    writes = plan(parse(envelope("*** Update File: a.txt\n@@\n a\n-b\n+c\n")), tmp_path)
    assert [(w.shown, w.data) for w in writes] == [("a.txt", b"a\r\nc\r\n")]
    assert (tmp_path / "a.txt").read_bytes() == b"a\r\nb\r\n"
    commit(writes)
    assert (tmp_path / "a.txt").read_bytes() == b"a\r\nc\r\n"


def test_a_failed_rename_midway_restores_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"{name}\n")
    patch = envelope(
        "*** Update File: a.txt\n@@\n-a.txt\n+A\n*** Delete File: b.txt\n"
        "*** Add File: d/new.txt\n+new\n*** Update File: c.txt\n@@\n-c.txt\n+C\n"
    )
    real_swap = commit_module._swap
    calls = 0

    def failing_swap(step: commit_module._Step) -> None:
        nonlocal calls
        calls += 1
        if calls == 4:
            raise OSError(28, "No space left on device")
        real_swap(step)

    monkeypatch.setattr(commit_module, "_swap", failing_swap)
    with pytest.raises(PatchError, match=r"No space left on device.*Nothing was changed"):
        apply_patch_text(patch, tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["a.txt", "b.txt", "c.txt"]
    for name in ("a.txt", "b.txt", "c.txt"):
        assert (tmp_path / name).read_text() == f"{name}\n"


def test_utf16_file_keeps_its_encoding(tmp_path: Path) -> None:
    path = tmp_path / "w.txt"
    path.write_bytes("\ufeffone\r\ntwo\r\n".encode("utf-16-le"))
    apply_patch_text(envelope("*** Update File: w.txt\n@@\n one\n-two\n+zwei\n"), tmp_path)
    assert path.read_bytes() == "\ufeffone\r\nzwei\r\n".encode("utf-16-le")


def test_invalid_utf8_bytes_elsewhere_survive(tmp_path: Path) -> None:
    path = tmp_path / "l.txt"
    path.write_bytes(b"caf\xe9\nkeep\nold\n")
    apply_patch_text(envelope("*** Update File: l.txt\n@@\n keep\n-old\n+new\n"), tmp_path)
    assert path.read_bytes() == b"caf\xe9\nkeep\nnew\n"


def test_symlink_inside_the_workspace_edits_its_target(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("a\n")
    (tmp_path / "link.txt").symlink_to("real.txt")
    apply_patch_text(envelope("*** Update File: link.txt\n@@\n-a\n+b\n"), tmp_path)
    assert (tmp_path / "real.txt").read_text() == "b\n"
    assert (tmp_path / "link.txt").is_symlink()


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(PatchError, match="is a directory"):
        apply_patch_text(envelope("*** Add File: d\n+x\n"), tmp_path)


def test_hunk_header_appears_in_second_hunk_errors(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("".join(f"v{n} = {n}\n" for n in range(30)))
    patch = envelope(
        "*** Update File: a.py\n@@\n-v3 = 3\n+v3 = 33\n@@ v20 = 20\n-v21 = 99\n+v21 = 0\n"
    )
    with pytest.raises(PatchError) as caught:
        apply_patch_text(patch, tmp_path)
    message = str(caught.value)
    assert "a.py: hunk 2 (@@ v20 = 20)" in message
    assert "    22\tv21 = 21" in message


def test_touched_lists_every_path_and_how_without_reading_files(tmp_path: Path) -> None:
    text = envelope(
        "*** Add File: new.txt\n+x\n"
        "*** Delete File: gone.txt\n"
        "*** Update File: a.py\n@@\n-a\n+b\n"
        "*** Update File: old.py\n*** Move to: new.py\n"
        "*** Update File: a.py\n*** Move to: a.py\n@@\n-b\n+c\n"
        "*** Add File: gone.txt\n+back\n"
    )
    assert touched(parse(text)) == (
        ("new.txt", "write"),
        ("gone.txt", "write"),
        ("a.py", "edit"),
        ("old.py", "write"),
        ("new.py", "write"),
    )
    unified = (
        "diff --git a/x b/y\nrename from x\nrename to y\n"
        "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+n\n"
        "diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-d\n"
        "--- a/u\n+++ b/u\n@@ -1 +1 @@\n-u\n+v\n"
    )
    assert touched(parse(unified)) == (
        ("x", "write"),
        ("y", "write"),
        ("n", "write"),
        ("d", "write"),
        ("u", "edit"),
    )
    assert list(tmp_path.iterdir()) == []


def test_deleting_a_symlink_removes_the_link_not_its_target(tmp_path: Path) -> None:
    (tmp_path / "important.txt").write_text("keep me\n")
    (tmp_path / "link").symlink_to("important.txt")
    apply_patch_text("*** Begin Patch\n*** Delete File: link\n*** End Patch\n", tmp_path)
    assert not os.path.lexists(tmp_path / "link")
    assert (tmp_path / "important.txt").read_text() == "keep me\n"
    # Updating through a link still edits the file it points to.
    (tmp_path / "link2").symlink_to("important.txt")
    patch = "*** Begin Patch\n*** Update File: link2\n@@\n-keep me\n+kept\n*** End Patch\n"
    apply_patch_text(patch, tmp_path)
    assert (tmp_path / "important.txt").read_text() == "kept\n"
    assert (tmp_path / "link2").is_symlink()

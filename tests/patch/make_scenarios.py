"""Writes tests/patch/scenarios/ from the table below: python tests/patch/make_scenarios.py

Kept as a script because several scenarios need bytes an editor or a checkout might
change (CRLF, no final newline, a BOM, NUL bytes, symlinks). Source files are named
`.code`, not `.py`, so that linters and formatters leave them alone. The generated
folders are committed; `scenarios/.gitattributes` stops git from touching line endings.
Each scenario: input/ (files before), patch, and expected/ (files after) or error
(substrings the error must contain, one per line).
"""

from __future__ import annotations

import shutil
from pathlib import Path

HERE = Path(__file__).parent / "scenarios"
Tree = dict[str, bytes | str]

SCENARIOS: dict[str, tuple[Tree, str, Tree | None, str | None]] = {}


def scenario(
    name: str, before: Tree, patch: str, after: Tree | None = None, error: str = ""
) -> None:
    assert name not in SCENARIOS, name
    SCENARIOS[name] = (before, patch, after, error or None)


def env(body: str) -> str:
    return f"*** Begin Patch\n{body}*** End Patch\n"


PY = "def g():\n    return 1\n\n\ndef f():\n    return 1\n"
LINES = "".join(f"line {n}\n" for n in range(1, 21))

# --- the envelope format -------------------------------------------------------------
scenario(
    "env_add_file",
    {"keep.txt": "keep\n"},
    env("*** Add File: pkg/new.code\n+import os\n+\n+print(os.sep)\n"),
    {"keep.txt": "keep\n", "pkg/new.code": "import os\n\nprint(os.sep)\n"},
)
scenario(
    "env_delete_file",
    {"a.txt": "a\n", "b.txt": "b\n"},
    env("*** Delete File: a.txt\n"),
    {"b.txt": "b\n"},
)
scenario(
    "env_update_simple",
    {"a.code": "x = 1\ny = 2\nz = 3\n"},
    env("*** Update File: a.code\n@@\n x = 1\n-y = 2\n+y = 20\n z = 3\n"),
    {"a.code": "x = 1\ny = 20\nz = 3\n"},
)
scenario(
    "env_first_hunk_without_at",
    {"a.code": "x = 1\ny = 2\nz = 3\n"},
    env("*** Update File: a.code\n x = 1\n-y = 2\n+y = 20\n"),
    {"a.code": "x = 1\ny = 20\nz = 3\n"},
)
scenario(
    "env_move",
    {"old/a.code": "a\n"},
    env("*** Update File: old/a.code\n*** Move to: new/b.code\n"),
    {"new/b.code": "a\n"},
)
scenario(
    "env_move_update",
    {"a.code": "x = 1\ny = 2\n"},
    env("*** Update File: a.code\n*** Move to: b.code\n@@\n x = 1\n-y = 2\n+y = 3\n"),
    {"b.code": "x = 1\ny = 3\n"},
)
scenario(
    "env_move_to_same_file",
    {"a.code": "x = 1\n"},
    env("*** Update File: a.code\n*** Move to: ./a.code\n@@\n-x = 1\n+x = 2\n"),
    {"a.code": "x = 2\n"},
)
scenario(
    "env_anchor_def",
    {"m.code": PY},
    env("*** Update File: m.code\n@@ def f():\n-    return 1\n+    return 2\n"),
    {"m.code": PY.replace("def f():\n    return 1", "def f():\n    return 2")},
)
scenario(
    "env_nested_anchors",
    {
        "c.code": "class A:\n    def run(self):\n        pass\n\n\n"
        "class B:\n    def run(self):\n        pass\n"
    },
    env(
        "*** Update File: c.code\n@@ class B:\n@@ def run(self):\n"
        "-        pass\n+        return 42\n"
    ),
    {
        "c.code": "class A:\n    def run(self):\n        pass\n\n\n"
        "class B:\n    def run(self):\n        return 42\n"
    },
)
scenario(
    "env_anchor_insert_only",
    {"m.code": PY},
    env('*** Update File: m.code\n@@ def f():\n+    """Doc."""\n'),
    {"m.code": PY.replace("def f():\n", 'def f():\n    """Doc."""\n')},
)
scenario(
    "env_multiple_hunks",
    {"n.txt": LINES},
    env(
        "*** Update File: n.txt\n@@\n line 2\n-line 3\n+LINE 3\n line 4\n"
        "@@\n line 9\n-line 10\n+LINE 10\n+LINE 10b\n line 11\n"
        "@@\n line 18\n-line 19\n line 20\n"
    ),
    {
        "n.txt": LINES.replace("line 3\n", "LINE 3\n")
        .replace("line 10\n", "LINE 10\nLINE 10b\n")
        .replace("line 19\n", "")
    },
)
scenario(
    "env_order_disambiguates",
    {"d.txt": "start\nx\nmid\nx\nend\n"},
    env("*** Update File: d.txt\n@@\n start\n-x\n+one\n@@\n-x\n+two\n end\n"),
    {"d.txt": "start\none\nmid\ntwo\nend\n"},
)
scenario(
    "env_end_of_file",
    {"e.txt": "a\nb\na\nb\n"},
    env("*** Update File: e.txt\n@@\n a\n-b\n+B\n*** End of File\n"),
    {"e.txt": "a\nb\na\nB\n"},
)
scenario(
    "env_end_of_file_append",
    {"e.txt": "one\ntwo\n"},
    env("*** Update File: e.txt\n@@\n two\n+three\n*** End of File\n"),
    {"e.txt": "one\ntwo\nthree\n"},
)
scenario(
    "env_heredoc_single_quotes",
    {"a.txt": "old\n"},
    "apply_patch <<'EOF'\n" + env("*** Update File: a.txt\n@@\n-old\n+new\n") + "EOF\n",
    {"a.txt": "new\n"},
)
scenario(
    "env_heredoc_plain",
    {"a.txt": "old\n"},
    "apply_patch <<EOF\n" + env("*** Update File: a.txt\n@@\n-old\n+new\n") + "EOF",
    {"a.txt": "new\n"},
)
scenario(
    "env_heredoc_double_quotes",
    {"a.txt": "old\n"},
    'apply_patch <<"PATCH"\n' + env("*** Update File: a.txt\n@@\n-old\n+new\n") + "PATCH\n\n",
    {"a.txt": "new\n"},
)
scenario(
    "env_stray_whitespace_markers",
    {"a.txt": "old\n", "b.txt": "b\n"},
    "\n  *** Begin Patch  \n*** Update File:   a.txt   \n  @@  \n-old\n+new\n\n"
    " *** Delete File: b.txt \n\n*** End Patch   \n\n",
    {"a.txt": "new\n"},
)
scenario(
    "env_multiple_files",
    {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c1\nc2\n"},
    env(
        "*** Add File: d.txt\n+d\n*** Delete File: a.txt\n"
        "*** Update File: c.txt\n@@\n c1\n-c2\n+C2\n*** Update File: b.txt\n*** Move to: bb.txt\n"
    ),
    {"bb.txt": "b\n", "c.txt": "c1\nC2\n", "d.txt": "d\n"},
)
scenario(
    "env_crlf_patch_text",
    {"a.txt": "x\ny\n"},
    env("*** Update File: a.txt\n@@\n x\n-y\n+z\n").replace("\n", "\r\n"),
    {"a.txt": "x\nz\n"},
)
scenario(
    "env_blank_context_lines",
    {"a.code": "a = 1\n\nb = 2\n"},
    env("*** Update File: a.code\n@@\n a = 1\n\n-b = 2\n+b = 3\n\n"),
    {"a.code": "a = 1\n\nb = 3\n"},
)
scenario(
    "env_add_over_existing",
    {"a.txt": "old content\nmore\n"},
    env("*** Add File: a.txt\n+new content\n"),
    {"a.txt": "new content\n"},
)
scenario(
    "env_delete_then_add_same_file",
    {"a.txt": "old\n"},
    env("*** Delete File: a.txt\n*** Add File: a.txt\n+fresh\n"),
    {"a.txt": "fresh\n"},
)

# --- leniency stages -------------------------------------------------------------------
scenario(
    "lenient_trailing_whitespace",
    {"t.code": "a = 1   \nb = 2\t\nc = 3\n"},
    env("*** Update File: t.code\n@@\n a = 1\n-b = 2\n+b = 20\n c = 3\n"),
    {"t.code": "a = 1   \nb = 20\nc = 3\n"},
)
scenario(
    "lenient_surrounding_whitespace",
    {"t.code": "def f():\n\tif x:\n\t\treturn 1\n"},
    env("*** Update File: t.code\n@@\n def f():\n    if x:\n-        return 1\n+\t\treturn 2\n"),
    {"t.code": "def f():\n\tif x:\n\t\treturn 2\n"},
)
scenario(
    "lenient_unicode_punctuation",
    {
        "u.code": "msg = \u201chello\u201d\n"
        "note = \u2018it\u2019s\u2019 \u2014 fine\u2026\nx\u00a0= 1\n"
    },
    env(
        "*** Update File: u.code\n@@\n msg = \"hello\"\n note = 'it's' - fine...\n-x = 1\n+x = 2\n"
    ),
    {"u.code": "msg = \u201chello\u201d\nnote = \u2018it\u2019s\u2019 \u2014 fine\u2026\nx = 2\n"},
)
scenario(
    "lenient_exact_preferred",
    {"p.txt": "key = 1 \nkey = 1\n"},
    env("*** Update File: p.txt\n@@\n-key = 1\n+key = 2\n"),
    {"p.txt": "key = 1 \nkey = 2\n"},
)

# --- line endings, encodings, final newline ---------------------------------------------------
scenario(
    "crlf_update",
    {"w.txt": b"one\r\ntwo\r\nthree\r\n"},
    env("*** Update File: w.txt\n@@\n one\n-two\n+TWO\n+two and a half\n three\n"),
    {"w.txt": b"one\r\nTWO\r\ntwo and a half\r\nthree\r\n"},
)
scenario(
    "crlf_mixed_keeps_each_line",
    {"w.txt": b"a\r\nb\nc\r\nd\r\n"},
    env("*** Update File: w.txt\n@@\n b\n-c\n+C\n d\n"),
    {"w.txt": b"a\r\nb\nC\r\nd\r\n"},
)
scenario(
    "no_final_newline_middle",
    {"n.txt": b"a\nb\nc"},
    env("*** Update File: n.txt\n@@\n a\n-b\n+B\n c\n"),
    {"n.txt": b"a\nB\nc"},
)
scenario(
    "no_final_newline_last_line",
    {"n.txt": b"a\nb\nc"},
    env("*** Update File: n.txt\n@@\n b\n-c\n+C\n+D\n*** End of File\n"),
    {"n.txt": b"a\nb\nC\nD"},
)
scenario(
    "bom_utf8_kept",
    {"b.txt": b"\xef\xbb\xbfalpha\nbeta\n"},
    env("*** Update File: b.txt\n@@\n alpha\n-beta\n+gamma\n"),
    {"b.txt": b"\xef\xbb\xbfalpha\ngamma\n"},
)

# --- failures (the tree must stay as it was) -------------------------------------------------
scenario(
    "err_context_not_found",
    {"a.code": "def f():\n    return 1\n"},
    env("*** Update File: a.code\n@@ def f():\n-    return 3\n+    return 4\n"),
    error="a.code\nhunk 1 (@@ def f():)\nnot found\n     2\t    return 1",
)
scenario(
    "err_ambiguous_context",
    {"a.txt": "x\ny\nx\ny\n"},
    env("*** Update File: a.txt\n@@\n-x\n+z\n y\n"),
    error="a.txt\nhunk 1 (@@)\n2 places\nlines 1, 3",
)
scenario(
    "err_anchor_not_found",
    {"m.code": PY},
    env("*** Update File: m.code\n@@ def h():\n-    return 1\n+    return 2\n"),
    error="m.code\nhunk 1\nanchor line 'def h():'",
)
scenario(
    "err_end_of_file_mismatch",
    {"e.txt": "a\nb\nc\n"},
    env("*** Update File: e.txt\n@@\n-a\n+A\n*** End of File\n"),
    error="e.txt\nhunk 1\nEnd of File",
)
scenario(
    "err_delete_missing",
    {"a.txt": "a\n"},
    env("*** Delete File: nope.txt\n"),
    error="nope.txt\ndoes not exist",
)
scenario(
    "err_update_missing",
    {"a.txt": "a\n"},
    env("*** Update File: nope.txt\n@@\n-a\n+b\n"),
    error="Cannot update nope.txt",
)
scenario(
    "err_add_non_plus_line",
    {},
    env("*** Add File: n.txt\n+ok\nnot a plus line\n"),
    error="Patch line 4\nmust start with '+'",
)
scenario(
    "err_missing_end_patch",
    {"a.txt": "a\n"},
    "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n",
    error="*** End Patch",
)
scenario(
    "err_unknown_marker",
    {"a.txt": "a\n"},
    env("*** Modify File: a.txt\n@@\n-a\n+b\n"),
    error="Patch line 2\n*** Modify File",
)
scenario(
    "err_bad_hunk_line",
    {"a.txt": "a\n"},
    env("*** Update File: a.txt\n@@\n-a\n+b\n*c\n"),
    error="Patch line 6\n' ' (context)",
)
scenario(
    "err_not_a_patch",
    {"a.txt": "a\n"},
    "please change a to b\n",
    error="not a patch",
)
scenario(
    "err_escape_dotdot",
    {"a.txt": "a\n"},
    env("*** Add File: ../escaped.txt\n+x\n"),
    error="outside the workspace",
)
scenario(
    "err_escape_absolute",
    {"a.txt": "a\n"},
    env("*** Add File: /etc/tether-patch-test.txt\n+x\n"),
    error="outside the workspace",
)
scenario(
    "err_escape_symlink",
    {"a.txt": "a\n", "out": Path("/etc")},  # type: ignore[dict-item]
    env("*** Add File: out/tether-patch-test.txt\n+x\n"),
    error="outside the workspace\nthrough a symlink",
)
scenario(
    "err_move_escape",
    {"a.txt": "a\n"},
    env("*** Update File: a.txt\n*** Move to: sub/../../a.txt\n"),
    error="outside the workspace",
)
scenario(
    "err_binary_file",
    {"img.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
    env("*** Update File: img.bin\n@@\n-PNG\n+JPG\n"),
    error="img.bin is a binary file",
)
scenario(
    "err_move_onto_existing",
    {"a.txt": "a\n", "b.txt": "b\n"},
    env("*** Update File: a.txt\n*** Move to: b.txt\n"),
    error="Cannot move a.txt to b.txt\nalready exists",
)
scenario(
    "err_fails_in_last_file",
    {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c1\nc2\n"},
    env(
        "*** Add File: new.txt\n+new\n*** Delete File: a.txt\n*** Update File: b.txt\n@@\n-b\n+B\n"
        "*** Update File: c.txt\n@@\n c1\n-c3\n+C3\n"
    ),
    error="c.txt\nhunk 1 (@@)\n     1\tc1\n     2\tc2",
)

# --- unified diffs ---------------------------------------------------------------------
scenario(
    "uni_git_modify",
    {"src/a.code": "import os\n\n\ndef f():\n    return 1\n"},
    "diff --git a/src/a.code b/src/a.code\nindex 83db48f..bf269f4 100644\n--- a/src/a.code\n"
    "+++ b/src/a.code\n@@ -3,3 +3,3 @@ import os\n \n def f():\n-    return 1\n+    return 2\n",
    {"src/a.code": "import os\n\n\ndef f():\n    return 2\n"},
)
scenario(
    "uni_new_file",
    {},
    "diff --git a/n.txt b/n.txt\nnew file mode 100644\nindex 0000000..3b18e51\n--- /dev/null\n"
    "+++ b/n.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n",
    {"n.txt": "hello\nworld\n"},
)
scenario(
    "uni_deleted_file",
    {"d.txt": "bye\nnow\n", "k.txt": "k\n"},
    "diff --git a/d.txt b/d.txt\ndeleted file mode 100644\nindex 3b18e51..0000000\n--- a/d.txt\n"
    "+++ /dev/null\n@@ -1,2 +0,0 @@\n-bye\n-now\n",
    {"k.txt": "k\n"},
)
scenario(
    "uni_rename",
    {"old.txt": "same\n"},
    "diff --git a/old.txt b/new.txt\nsimilarity index 100%\n"
    "rename from old.txt\nrename to new.txt\n",
    {"new.txt": "same\n"},
)
scenario(
    "uni_rename_modify",
    {"old.txt": "one\ntwo\nthree\n"},
    "diff --git a/old.txt b/dir/new.txt\nsimilarity index 70%\nrename from old.txt\n"
    "rename to dir/new.txt\nindex 1..2 100644\n--- a/old.txt\n+++ b/dir/new.txt\n"
    "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
    {"dir/new.txt": "one\nTWO\nthree\n"},
)
scenario(
    "uni_stale_line_numbers",
    {"n.txt": LINES},
    "--- a/n.txt\n+++ b/n.txt\n@@ -5,3 +5,3 @@\n line 11\n-line 12\n+LINE 12\n line 13\n",
    {"n.txt": LINES.replace("line 12\n", "LINE 12\n")},
)
scenario(
    "uni_offset_picks_nearest",
    {"r.txt": "a\nx\nb\nc\nd\ne\nf\ng\nx\nh\n"},
    "--- a/r.txt\n+++ b/r.txt\n@@ -7,1 +7,1 @@\n-x\n+X\n",
    {"r.txt": "a\nx\nb\nc\nd\ne\nf\ng\nX\nh\n"},
)
scenario(
    "uni_multiple_hunks",
    {"n.txt": LINES},
    "--- a/n.txt\n+++ b/n.txt\n@@ -1,3 +1,3 @@\n-line 1\n+LINE 1\n line 2\n line 3\n"
    "@@ -15,3 +15,4 @@\n line 15\n+line 15.5\n line 16\n line 17\n",
    {
        "n.txt": LINES.replace("line 1\n", "LINE 1\n", 1).replace(
            "line 15\n", "line 15\nline 15.5\n"
        )
    },
)
scenario(
    "uni_remove_final_newline",
    {"f.txt": "a\nb\n"},
    "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
    {"f.txt": b"a\nc"},
)
scenario(
    "uni_add_final_newline",
    {"f.txt": b"a\nb"},
    "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
    {"f.txt": "a\nb\n"},
)
scenario(
    "uni_no_newline_context_kept",
    {"f.txt": b"a\nb\nc"},
    "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n\\ No newline at end of file\n",
    {"f.txt": b"A\nb\nc"},
)
scenario(
    "uni_new_file_no_newline",
    {},
    "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+only\n\\ No newline at end of file\n",
    {"n.txt": b"only"},
)
scenario(
    "uni_plain_diff_u",
    {"x.txt": "1\n2\n3\n"},
    "--- x.txt\t2024-01-01 10:00:00.000000000 +0000\n"
    "+++ x.txt\t2024-01-02 10:00:00.000000000 +0000\n"
    "@@ -1,3 +1,3 @@\n 1\n-2\n+two\n 3\n",
    {"x.txt": "1\ntwo\n3\n"},
)
scenario(
    "uni_crlf_file",
    {"w.txt": b"one\r\ntwo\r\n"},
    "--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,3 @@\n one\n-two\n+2\n+3\n",
    {"w.txt": b"one\r\n2\r\n3\r\n"},
)
scenario(
    "uni_multiple_files",
    {"a.txt": "a\n", "b.txt": "b\n"},
    "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n"
    "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n",
    {"a.txt": "A\n", "b.txt": "B\n"},
)
scenario(
    "uni_heredoc",
    {"a.txt": "a\n"},
    "apply_patch <<'EOF'\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\nEOF\n",
    {"a.txt": "A\n"},
)
scenario(
    "err_uni_ambiguous_offset",
    {"r.txt": "x\na\nb\nc\nx\n"},
    "--- a/r.txt\n+++ b/r.txt\n@@ -3,1 +3,1 @@\n-x\n+X\n",
    error="r.txt\nhunk 1 (@@ -3,1 +3,1 @@)\nequally near\nlines 1, 5",
)
scenario(
    "err_uni_not_found",
    {"r.txt": "a\nb\nc\n"},
    "--- a/r.txt\n+++ b/r.txt\n@@ -2,1 +2,1 @@\n-q\n+Q\n",
    error="r.txt\nhunk 1 (@@ -2,1 +2,1 @@)\nnot found",
)
scenario(
    "err_uni_binary_patch",
    {"i.bin": b"\x00\x01"},
    "diff --git a/i.bin b/i.bin\nindex 1..2 100644\nBinary files a/i.bin and b/i.bin differ\n",
    error="binary patches are not supported",
)
scenario(
    "err_uni_delete_mismatch",
    {"d.txt": "bye\nnow\nmore\n"},
    "--- a/d.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-bye\n-now\n",
    error="Cannot delete d.txt\nnot the whole file",
)
scenario(
    "err_uni_fails_in_last_file",
    {"a.txt": "a\n", "b.txt": "b\n"},
    "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+c\n"
    "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-zzz\n+B\n",
    error="b.txt\nhunk 1 (@@ -1 +1 @@)\n     1\tb",
)


def write_tree(root: Path, tree: Tree) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            path.symlink_to(content)
        else:
            path.write_bytes(content.encode() if isinstance(content, str) else content)


def main() -> None:
    if HERE.exists():
        shutil.rmtree(HERE)
    HERE.mkdir()
    (HERE / ".gitattributes").write_text("* -text\n")
    for name, (before, patch, after, error) in SCENARIOS.items():
        folder = HERE / name
        write_tree(folder / "input", before)
        (folder / "patch").write_bytes(patch.encode())
        if error is not None:
            (folder / "error").write_bytes((error + "\n").encode())
        else:
            assert after is not None, name
            write_tree(folder / "expected", after)
    print(f"wrote {len(SCENARIOS)} scenarios to {HERE}")


if __name__ == "__main__":
    main()

"""apply_patch through the real CLI: `tether apply-patch`, the model's tool, and the policy."""

from __future__ import annotations

import json
from pathlib import Path

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

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


def _patch_turn(patch: str) -> Turn:
    return Turn(tool_calls=(ScriptedCall("apply_patch", {"patch": patch}),))


def _tool_results(endpoint: ScriptedEndpoint) -> list[str]:
    return [m["content"] for m in endpoint.requests[-1].body["messages"] if m["role"] == "tool"]


def test_the_model_patches_files_in_accept_edits_mode(run_cli, cli_env, buggy_repo: Path) -> None:
    fix = (
        "*** Begin Patch\n*** Update File: shop.py\n@@ def total(prices, discount=0.0):\n"
        "-    return sum(prices) * (1 + discount)\n+    return sum(prices) * (1 - discount)\n"
        "*** Add File: NOTES.md\n+fixed the discount sign\n*** End Patch\n"
    )
    script = [_patch_turn(fix), Turn(text="Fixed.")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        args = ["-p", "fix it", "--permission-mode", "accept-edits"]
        proc = run_cli(args, cwd=buggy_repo, env=env)
        results = _tool_results(endpoint)
        tools = [t["function"]["name"] for t in endpoint.requests[0].body["tools"]]
    assert proc.returncode == 0, proc.stderr
    assert tools[3:5] == ["str_replace", "apply_patch"]
    assert results[0].startswith("Applied the patch: 2 files changed."), results[0]
    assert "(1 - discount)" in (buggy_repo / "shop.py").read_text()
    assert (buggy_repo / "NOTES.md").read_text() == "fixed the discount sign\n"


def test_headless_default_mode_refuses_a_patch_naming_its_files(
    run_cli, cli_env, buggy_repo: Path
) -> None:
    before = (buggy_repo / "shop.py").read_text()
    patch = (
        "*** Begin Patch\n*** Update File: shop.py\n@@\n-def total(prices, discount=0.0):\n"
        "+def total(prices, discount=0.1):\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n"
        "*** End Patch\n"
    )
    script = [_patch_turn(patch), Turn(text="It needs approval.")]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "change it"], cwd=buggy_repo, env=env)
        results = _tool_results(endpoint)
    assert proc.returncode == 0, proc.stderr
    assert "`apply_patch shop.py, .git/hooks/pre-commit` needs the user's approval" in results[0]
    assert (buggy_repo / "shop.py").read_text() == before
    assert not (buggy_repo / ".git/hooks/pre-commit").exists()


def test_permissions_check_judges_a_whole_patch(run_cli, tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: .git/x\n+x\n*** End Patch\n"
    lines = "\n".join(
        json.dumps(line)
        for line in (
            {"tool": "apply_patch", "patch": patch},
            {"tool": "apply_patch", "patch": patch.replace(".git/x", "src/y")},
            {"tool": "apply_patch", "patch": "not a patch"},
        )
    )
    args = ["permissions", "check", "--jsonl", "--mode", "accept-edits"]
    proc = run_cli(args, cwd=tmp_path, input=lines + "\n")
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [o.get("verdict") for o in out] == ["ask", "allow", None]
    assert [p["verdict"] for p in out[0]["parts"]] == ["allow", "ask"]
    assert "This is not a patch" in out[2]["error"]

"""The gate judges `apply_patch` by every file its patch touches, as one decision.

Calls go through the real dispatcher with the real gate in front of the built-in
tools, so "refused" also means "nothing on disk changed".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.config import PermissionMode
from tether.messages import ToolCall, ToolResult
from tether.policy.actions import Decision, WriteAction
from tether.policy.gate import Approval, ApprovalRequest, Approver, Gate
from tether.policy.rules import RuleSpec, compile_rules
from tether.sandbox.workspace import Workspace
from tether.tools.builtin import builtin_tools
from tether.tools.dispatch import Dispatcher
from tether.tools.registry import Registry, ToolContext


def envelope(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def add(path: str, line: str = "new") -> str:
    return f"*** Add File: {path}\n+{line}\n"


def update(path: str, old: str = "old", new: str = "new") -> str:
    return f"*** Update File: {path}\n@@\n-{old}\n+{new}\n"


TWO_FILES = envelope(update("a.txt"), update("src/b.py"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / ".git").mkdir()
    for rel in ("a.txt", "src/b.py", "ok.txt"):
        (ws / rel).write_text("old\n")
    return ws


def make_gate(
    root: Path,
    mode: PermissionMode = "default",
    rules: list[RuleSpec] | None = None,
    approver: Approver | None = None,
    decisions: list[Decision] | None = None,
) -> Gate:
    def record(tool: str, decision: Decision, ran: bool) -> None:
        if decisions is not None:
            decisions.append(decision)

    return Gate(
        compile_rules(rules or []),
        mode,
        Workspace(root),
        home=root.parent / "home",
        approver=approver,
        on_decision=record,
    )


def decide_patch(root: Path, patch: str, mode: PermissionMode = "default") -> Decision:
    """The decision the gate makes for a patch, as its `on_decision` hook sees it."""
    seen: list[Decision] = []
    make_gate(root, mode, decisions=seen).check("apply_patch", {"patch": patch})
    assert len(seen) == 1
    return seen[0]


def run_patch(gate: Gate, root: Path, patch: str) -> ToolResult:
    dispatcher = Dispatcher(
        Registry(builtin_tools()), ToolContext(workspace=Workspace(root), env={}), gate=gate.check
    )
    return dispatcher.execute(ToolCall("c1", "apply_patch", json.dumps({"patch": patch})))


def contents(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_default_mode_asks_and_the_headless_refusal_names_every_file(root: Path) -> None:
    before = contents(root)
    result = run_patch(make_gate(root), root, TWO_FILES)
    assert result.is_error and "needs the user's approval" in result.content
    assert "`apply_patch a.txt, src/b.py`" in result.content
    assert "--allow 'Edit(**)'" in result.content and "--allow 'Edit(src/**)'" in result.content
    assert contents(root) == before


def test_the_approval_request_lists_the_files_and_a_yes_applies_the_patch(root: Path) -> None:
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked.append(request)
        return Approval("yes")

    patch = envelope(update("a.txt"), update("src/b.py"), add("c.txt"), add("d/e.txt"))
    result = run_patch(make_gate(root, approver=approver), root, patch)
    assert not result.is_error, result.content
    assert [r.subject for r in asked] == ["apply_patch a.txt, src/b.py (+2 more)"]
    assert asked[0].tool == "apply_patch" and asked[0].decision.verdict == "ask"
    assert len(asked[0].decision.parts) == 4
    assert asked[0].proposals == ("Edit(**)", "Edit(src/**)", "Edit(d/**)")
    assert (root / "a.txt").read_text() == "new\n" and (root / "d/e.txt").read_text() == "new\n"


def test_always_remembers_rules_that_cover_the_next_patch(root: Path) -> None:
    answers = iter([Approval("always")])
    gate = make_gate(root, approver=lambda request: next(answers))  # a second ask would raise
    assert not run_patch(gate, root, TWO_FILES).is_error
    again = envelope(update("a.txt", "new", "newer"), update("src/b.py", "new", "newer"))
    assert not run_patch(gate, root, again).is_error
    assert (root / "src/b.py").read_text() == "newer\n"


def test_accept_edits_and_auto_apply_a_patch_inside_the_workspace(root: Path) -> None:
    for mode, new in (("accept-edits", "new"), ("auto", "newer")):
        old = "old" if new == "new" else "new"
        result = run_patch(
            make_gate(root, mode), root, envelope(update("a.txt", old, new), add(f"{mode}.txt"))
        )
        assert not result.is_error, result.content
        assert (root / "a.txt").read_text() == f"{new}\n" and (root / f"{mode}.txt").exists()


def test_plan_mode_refuses_a_patch_like_any_edit(root: Path) -> None:
    before = contents(root)
    result = run_patch(make_gate(root, "plan"), root, TWO_FILES)
    assert result.is_error and "Not allowed" in result.content and "plan mode" in result.content
    assert contents(root) == before


@pytest.mark.parametrize("mode", ["default", "accept-edits", "auto"])
def test_one_protected_file_stops_the_whole_patch(root: Path, mode: PermissionMode) -> None:
    before = contents(root)
    patch = envelope(update("ok.txt"), add(".git/hooks/pre-commit", "#!/bin/sh"))
    result = run_patch(make_gate(root, mode), root, patch)
    assert result.is_error and "needs the user's approval" in result.content
    assert "`apply_patch ok.txt, .git/hooks/pre-commit`" in result.content
    if mode != "default":  # there ok.txt asks too, and gives the reason as the first part
        assert ".git and .tether are protected" in result.content
    hook = decide_patch(root, patch, mode).parts[1]
    assert hook.verdict == "ask" and ".git and .tether are protected" in hook.reason
    assert contents(root) == before
    tether_dir = run_patch(make_gate(root, mode), root, envelope(add(".tether/config.toml")))
    assert tether_dir.is_error and "protected" in tether_dir.content
    assert not (root / ".tether").exists()


@pytest.mark.parametrize("mode", ["default", "accept-edits", "auto"])
def test_a_path_outside_the_workspace_is_refused_in_every_mode(
    root: Path, mode: PermissionMode
) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    before = contents(root)
    for raw in ("../outside.txt", "link/x.txt", str(outside / "y.txt")):
        result = run_patch(make_gate(root, mode), root, envelope(update("ok.txt"), add(raw)))
        assert result.is_error and result.content.startswith("Error: Not allowed:"), raw
        assert "outside the workspace" in result.content and raw in result.content
    assert contents(root) == before and list(outside.iterdir()) == []
    assert not (root.parent / "outside.txt").exists()


def test_a_deny_rule_blocks_the_patch_although_the_other_file_is_fine(root: Path) -> None:
    (root / "secret").mkdir()
    (root / "secret/x").write_text("old\n")
    before = contents(root)
    deny = [RuleSpec("Edit(secret/**)", "deny", "--deny")]
    seen: list[Decision] = []
    gate = make_gate(root, "accept-edits", deny, decisions=seen)
    result = run_patch(gate, root, envelope(update("ok.txt"), update("secret/x")))
    assert result.is_error and "Not allowed: rule Edit(secret/**) (--deny)" in result.content
    assert contents(root) == before
    [decision] = seen
    assert [p.verdict for p in decision.parts] == ["allow", "deny"]
    assert decision.matched_rules == ("deny Edit(secret/**) (--deny)",)


def test_an_unparseable_patch_is_left_to_the_tool_which_changes_nothing(root: Path) -> None:
    before = contents(root)
    gate = make_gate(root, "plan")  # even plan mode: there is nothing to judge
    for text in ("not a patch at all", "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n"):
        assert gate.check("apply_patch", {"patch": text}) is None
        result = run_patch(gate, root, text)
        assert result.is_error and "no file changed" in result.content, result.content
    assert contents(root) == before


def test_a_move_is_judged_at_its_source_and_its_destination(root: Path) -> None:
    (root / "keep").mkdir()
    (root / "keep/a.txt").write_text("old\n")
    before = contents(root)
    move_out = envelope("*** Update File: keep/a.txt\n*** Move to: moved.txt\n")
    move_in = envelope("*** Update File: a.txt\n*** Move to: keep/b.txt\n")
    for patch in (move_out, move_in):
        gate = make_gate(root, "accept-edits", [RuleSpec("Edit(keep/**)", "deny", "test")])
        result = run_patch(gate, root, patch)
        assert result.is_error and "Edit(keep/**)" in result.content
    assert contents(root) == before
    decision = decide_patch(root, move_out)
    assert [(p.text, p.access) for p in decision.parts] == [
        (str(root / "keep/a.txt"), "Write"),
        (str(root / "moved.txt"), "Write"),
    ]
    assert not run_patch(make_gate(root, "accept-edits"), root, move_out).is_error
    assert (root / "moved.txt").read_text() == "old\n" and not (root / "keep/a.txt").exists()


def test_unified_diffs_are_judged_by_their_real_paths(root: Path) -> None:
    diff = (
        "diff --git a/a.txt b/.git/config\nsimilarity index 100%\n"
        "rename from a.txt\nrename to .git/config\n"
        "diff --git a/new.txt b/new.txt\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+x\n"
        "diff --git a/ok.txt b/ok.txt\ndeleted file mode 100644\n"
        "--- a/ok.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
        "--- a/src/b.py\n+++ b/src/b.py\n@@ -1 +1 @@\n-old\n+new\n"
    )
    decision = decide_patch(root, diff, "accept-edits")
    assert decision.verdict == "ask" and ".git and .tether are protected" in decision.reason
    assert [(p.path, p.access, p.verdict) for p in decision.parts] == [
        (str(root / "a.txt"), "Write", "allow"),
        (str(root / ".git/config"), "Write", "ask"),
        (str(root / "new.txt"), "Write", "allow"),
        (str(root / "ok.txt"), "Write", "allow"),
        (str(root / "src/b.py"), "Edit", "allow"),
    ]


def test_other_tools_are_judged_as_before(root: Path) -> None:
    gate = make_gate(root, "accept-edits")
    edit = gate.action("str_replace", {"path": "a.txt", "old_str": "o", "new_str": "n"})
    assert edit == WriteAction(root / "a.txt", "str_replace", "edit")
    assert gate.action("str_replace", {"old_str": "o"}) is None  # the tool refuses it
    assert gate.check("write_file", {"path": "x.txt", "content": ""}) is None
    assert gate.check("bash", {"command": "rm -rf src"}) is not None


def test_a_file_the_rules_forbid_reading_cannot_be_edited_in_place(root: Path) -> None:
    """A hunk that does not match shows the file's lines: that would read it."""
    (root / "secret.txt").write_text("API_KEY=sk-live-123456\n")
    deny = [RuleSpec("Read(secret.txt)", "deny", "--deny")]
    gate = make_gate(root, "auto", deny)
    result = run_patch(gate, root, envelope(update("secret.txt", old="nope")))
    assert result.is_error and "sk-live" not in result.content
    assert "Not allowed" in result.content
    refusal = gate.check("str_replace", {"path": "secret.txt", "old_str": "x", "new_str": "y"})
    assert refusal is not None and "Not allowed" in refusal
    # Replacing the file whole shows nothing of it, and other files are unaffected.
    assert gate.check("write_file", {"path": "secret.txt", "content": "x"}) is None
    assert gate.check("str_replace", {"path": "ok.txt", "old_str": "o", "new_str": "n"}) is None

"""`.git` and `.tether` stay protected from broad allow rules: one "always" answer to an
ordinary edit (which proposes `Edit(**)`) must not let the model plant a hook or a rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.config import PermissionMode
from tether.policy.actions import ShellAction, WriteAction
from tether.policy.decide import decide
from tether.policy.rules import RuleSpec, compile_rules

WS = Path("/work/project")
HOME = Path("/home/u")


def verdict(rule: str, path: str, mode: PermissionMode = "auto", tool: str = "write_file") -> str:
    rules = compile_rules([RuleSpec(rule, "allow", "test")], builtin=False)
    action = WriteAction(WS / path, tool, "write")
    return decide(action, rules, mode, workspace=WS, home=HOME).verdict


@pytest.mark.parametrize("rule", ["Edit(**)", "Edit", "Edit(*)", "Write(**)", "write_file"])
@pytest.mark.parametrize(
    "path", [".git/hooks/pre-commit", ".tether/config.toml", "sub/.git/config"]
)
def test_a_broad_allow_does_not_unlock_protected_paths(rule: str, path: str) -> None:
    assert verdict(rule, path) == "ask"
    assert verdict(rule, path, "accept-edits") == "ask"
    assert verdict(rule, "src/app.py", "default") == "allow"  # the rule works elsewhere


@pytest.mark.parametrize(
    ("rule", "path"),
    [
        ("Edit(.git/hooks/**)", ".git/hooks/pre-commit"),
        ("Edit(.tether/**)", ".tether/config.toml"),
        ("Edit(/work/project/.git/info/**)", ".git/info/exclude"),
    ],
)
def test_a_rule_that_names_the_protected_place_may_allow_it(rule: str, path: str) -> None:
    assert verdict(rule, path) == "allow"


def test_plan_mode_refuses_even_a_named_rule() -> None:
    assert verdict("Edit(.git/hooks/**)", ".git/hooks/x", "plan") == "deny"


def test_a_shell_write_into_git_is_not_unlocked_by_a_broad_rule() -> None:
    rules = compile_rules(
        [RuleSpec("Edit(**)", "allow", "t"), RuleSpec("Bash(cp:*)", "allow", "t")], builtin=False
    )
    action = ShellAction("cp evil .git/hooks/pre-commit")
    assert decide(action, rules, "auto", workspace=WS, home=HOME).verdict == "ask"

"""The command corpus through the real `decide`, then the same machinery in other modes
and with user rules.

`fixtures/commands.toml` holds hundreds of shell commands, each labelled with what
`decide` must answer in `default` mode with only the built-in rules: `allow` (plain
read-only work), `not-allow` (ask or deny) or `deny`. Every entry is its own test; the
summary tests then count false allows (must be 0) and the share of read-only work
that runs without asking.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether.config import PermissionMode
from tether.policy.actions import Decision, ShellAction
from tether.policy.decide import decide
from tether.policy.rules import RuleSet, RuleSpec, compile_rules

CORPUS = Path(__file__).parent / "fixtures" / "commands.toml"
WORKSPACE = Path("/work/ws")
HOME = Path("/home/u")
LABELS = ("allow", "not-allow", "deny")
ALLOW_SHARE_FLOOR = 0.9


@dataclass(frozen=True)
class Entry:
    section: str
    command: str
    want: str
    note: str = ""

    def accepts(self, verdict: str) -> bool:
        if self.want == "not-allow":
            return verdict in ("ask", "deny")
        return verdict == self.want


def load_corpus(path: Path = CORPUS) -> list[Entry]:
    """Every entry of the corpus file; a case is a string or {cmd, want?, note?}."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries: list[Entry] = []
    for section in data["section"]:
        for case in section["cases"]:
            if isinstance(case, str):
                case = {"cmd": case}
            entries.append(
                Entry(
                    section["title"],
                    case["cmd"],
                    case.get("want", section["want"]),
                    case.get("note", ""),
                )
            )
    return entries


ENTRIES = load_corpus()
BUILTIN = compile_rules([])


def judge(command: str, mode: PermissionMode = "default", rules: RuleSet = BUILTIN) -> Decision:
    return decide(ShellAction(command), rules, mode, workspace=WORKSPACE, home=HOME)


@functools.cache
def default_decision(command: str) -> Decision:
    return judge(command)


def explain(entry: Entry, decision: Decision) -> str:
    parts = "\n".join(f"    {p.verdict:5} {p.text!r}: {p.reason}" for p in decision.parts)
    note = f"  ({entry.note})" if entry.note else ""
    return (
        f"[{entry.section}] {entry.command!r}{note}\n"
        f"  want {entry.want}, got {decision.verdict}: {decision.reason}\n{parts}"
    )


def _id(entry: Entry) -> str:
    text = entry.command if len(entry.command) <= 48 else entry.command[:45] + "..."
    return f"{entry.want}:{text!r}"


# --- the corpus itself ------------------------------------------------------------


def test_the_corpus_is_well_formed() -> None:
    assert len(ENTRIES) >= 300
    assert {e.want for e in ENTRIES} <= set(LABELS)
    commands = [e.command for e in ENTRIES]
    duplicates = sorted({c for c in commands if commands.count(c) > 1})
    assert not duplicates, duplicates
    for label in LABELS:
        assert any(e.want == label for e in ENTRIES), label


@pytest.mark.parametrize("entry", ENTRIES, ids=[_id(e) for e in ENTRIES])
def test_entry(entry: Entry) -> None:
    decision = default_decision(entry.command)
    assert entry.accepts(decision.verdict), explain(entry, decision)


def test_no_false_allows() -> None:
    wrong = [
        explain(e, d)
        for e in ENTRIES
        if e.want != "allow" and (d := default_decision(e.command)).verdict == "allow"
    ]
    print(f"\nfalse allows: {len(wrong)}")
    assert not wrong, "\n".join(wrong)


def test_read_only_work_runs_without_asking() -> None:
    wanted = [e for e in ENTRIES if e.want == "allow"]
    missed = [e for e in wanted if default_decision(e.command).verdict != "allow"]
    share = 1 - len(missed) / len(wanted)
    print(f"\nread-only allowed: {len(wanted) - len(missed)}/{len(wanted)} = {share:.1%}")
    for e in missed:
        print(explain(e, default_decision(e.command)))
    assert share >= ALLOW_SHARE_FLOOR


def test_privilege_is_denied_not_merely_asked() -> None:
    for e in ENTRIES:
        if e.want == "deny":
            decision = default_decision(e.command)
            assert decision.verdict == "deny", explain(e, decision)
            assert any("built-in" in label for label in decision.matched_rules), decision


# --- other modes ------------------------------------------------------------------

READ_ONLY = ["ls", "git status", "cat README.md", "grep -rn TODO src", "sed -n '1,5p' f"]


@pytest.mark.parametrize("command", READ_ONLY)
def test_plan_mode_runs_read_only_work(command: str) -> None:
    assert judge(command, "plan").verdict == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "rm x",
        "echo x > f",
        "ls; rm x",
        "make",
        "python -c 1",
        "sed -i s/a/b/ f",
        "git commit -m x",
        "eval ls",
        "echo x > src/out.txt",
    ],
)
def test_plan_mode_refuses_everything_else_and_says_why(command: str) -> None:
    decision = judge(command, "plan")
    assert decision.verdict == "deny"
    assert "plan mode" in decision.reason


def test_plan_mode_keeps_privilege_denied() -> None:
    assert judge("sudo ls", "plan").verdict == "deny"


def test_accept_edits_allows_writes_inside_the_workspace() -> None:
    assert judge("echo x > src/out.txt", "accept-edits").verdict == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "echo x > .git/hooks/pre-commit",
        "echo x > .git/config",
        "echo x > .tether/config.toml",
        "echo x > src/../.git/hooks/pre-commit",
        "echo x > ./.git/./hooks/pre-commit",
        "echo x > /work/ws/.git/hooks/pre-commit",
        "echo x | tee .git/hooks/pre-commit",
        "cp evil .git/hooks/pre-commit",
        "sed -i s/a/b/ .git/config",
        "mv x .tether/config.toml",
        "cd .git && echo x > hooks/pre-commit",
        "cd .tether; echo x > config.toml",
        "rm x",
        "echo x > /tmp/out",
        "echo x > ~/.bashrc",
        "make",
    ],
)
def test_accept_edits_still_asks_for_the_rest(command: str) -> None:
    assert judge(command, "accept-edits").verdict == "ask", judge(command, "accept-edits")


@pytest.mark.parametrize("command", ["rm x", "make", "echo x > f", "python -c 1"])
def test_auto_mode_runs_what_is_not_denied(command: str) -> None:
    assert judge(command, "auto").verdict == "allow"


@pytest.mark.parametrize("command", ["sudo ls", "timeout 5 sudo ls", "bash -c 'sudo ls'"])
def test_auto_mode_keeps_deny(command: str) -> None:
    assert judge(command, "auto").verdict == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "echo x > .tether/config.toml",
        "echo x > .git/hooks/pre-commit",
        "ls; echo x >> .tether/config.toml",
        "cd .git/hooks && echo x > pre-commit",
    ],
)
def test_auto_mode_still_asks_for_protected_writes(command: str) -> None:
    assert judge(command, "auto").verdict == "ask"


# --- user rules -------------------------------------------------------------------


def rules(*specs: tuple[str, str]) -> RuleSet:
    return compile_rules([RuleSpec(text, verdict, f"--{verdict}") for verdict, text in specs])


def test_an_allow_rule_covers_its_prefix_only() -> None:
    npm = rules(("allow", "Bash(npm run test:*)"))
    assert judge("npm run test -- -x", rules=npm).verdict == "allow"
    assert judge("npm run test", rules=npm).verdict == "allow"
    assert judge("npm run build", rules=npm).verdict == "ask"
    assert judge("npm run testx", rules=npm).verdict == "ask"
    assert judge("npm run test; rm x", rules=npm).verdict == "ask"
    assert judge("npm run test && sudo ls", rules=npm).verdict == "deny"


def test_a_deny_rule_beats_an_allow_rule() -> None:
    both = rules(("allow", "Bash(git push:*)"), ("deny", "Bash(git push --force:*)"))
    assert judge("git push origin main", rules=both).verdict == "allow"
    decision = judge("git push --force origin main", rules=both)
    assert decision.verdict == "deny"
    assert any("git push --force" in label for label in decision.matched_rules)
    overlap = rules(("allow", "Bash(rm:*)"), ("deny", "Bash(rm:*)"))
    assert judge("rm x", rules=overlap).verdict == "deny"


@pytest.mark.parametrize(
    "command",
    ["rm x", "/bin/rm x", "\\rm x", "r''m x", "timeout 5 rm x", "bash -c 'rm x'", "ls; rm x"],
)
def test_a_deny_rule_sees_through_spelling_and_wrappers(command: str) -> None:
    deny_rm = rules(("deny", "Bash(rm:*)"))
    for mode in ("default", "accept-edits", "auto", "plan"):
        assert judge(command, mode, deny_rm).verdict == "deny", (mode, command)


def test_a_read_rule_opens_one_place_outside_the_workspace() -> None:
    notes = rules(("allow", "Read(~/notes/**)"))
    assert judge("cat ~/notes/a.md", rules=notes).verdict == "allow"
    assert judge("grep -rn x ~/notes", rules=notes).verdict == "allow"
    assert judge("cat ~/.ssh/x", rules=notes).verdict == "ask"
    assert judge("cat ~/notes/../.ssh/x", rules=notes).verdict == "ask"
    assert judge("cat ~/notes/a.md ~/.ssh/x", rules=notes).verdict == "ask"


def test_an_allow_rule_cannot_lift_what_cannot_be_proven_plain() -> None:
    lax = rules(("allow", "Bash(eval:*)"), ("allow", "Bash(ls:*)"))
    assert judge("eval ls", rules=lax).verdict == "ask"
    assert judge("ls; rm x", rules=lax).verdict == "ask"
    assert judge("LD_PRELOAD=x ls", rules=lax).verdict == "ask"


def test_a_command_rule_does_not_excuse_its_writes() -> None:
    diff = rules(("allow", "Bash(git diff:*)"))
    assert judge("git diff HEAD", rules=diff).verdict == "allow"
    assert judge("git diff > /etc/x", rules=diff).verdict == "ask"

"""Rule syntax, matching, loading from TOML with positions, and self-testing examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.policy.gate import generalise
from tether.policy.ruleload import flag_specs, toml_specs
from tether.policy.rules import Rule, RuleError, RuleSpec, compile_rules, parse_rule

WS = Path("/work/ws")
HOME = Path("/home/u")


def rule(text: str, verdict: str = "allow") -> Rule:
    return parse_rule(RuleSpec(text, verdict, "test"))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "argv", "matches"),
    [
        ("Bash(git diff:*)", ("git", "diff"), True),
        ("Bash(git diff:*)", ("git", "diff", "HEAD~1", "--stat"), True),
        ("Bash(git diff:*)", ("git", "difftool"), False),
        ("Bash(git diff:*)", ("git",), False),
        ("Bash(npm run test)", ("npm", "run", "test"), True),
        ("Bash(npm run test)", ("npm", "run", "test", "--", "-x"), False),
        ("Bash(npm run test:*)", ("npm", "run", "test", "--", "-x"), True),
        ("Bash(npm run *)", ("npm", "run", "build"), True),
        ("Bash(npm run *)", ("npm", "install"), False),
        ("Bash(pytest tests/*.py:*)", ("pytest", "tests/a.py", "-x"), True),
        ("Bash('rm' -rf:*)", ("rm", "-rf", "x"), True),
        ("Bash", ("anything", "at", "all"), True),
        ("Bash(*)", ("rm",), True),
        ("Read(src/**)", ("cat",), False),
    ],
)
def test_command_patterns(text: str, argv: tuple[str, ...], matches: bool) -> None:
    assert rule(text).matches_command(argv) is matches


@pytest.mark.parametrize(
    ("text", "path", "kind", "matches"),
    [
        ("Edit(src/**)", WS / "src/a/b.py", "Edit", True),
        ("Edit(src/**)", WS / "srcx/b.py", "Edit", False),
        ("Edit(src/**)", WS / "src/a.py", "Write", True),  # Edit covers whole writes
        ("Write(src/**)", WS / "src/a.py", "Edit", False),
        ("Write(*.lock)", WS / "deep/dir/poetry.lock", "Write", True),
        ("Write(*.lock)", WS / "lock.txt", "Write", False),
        ("Read(~/notes/**)", HOME / "notes/x/y.md", "Read", True),
        ("Read(~/notes/**)", HOME / ".ssh/id_rsa", "Read", False),
        ("Read(~/notes/**)", WS / "notes/a.md", "Read", False),
        ("Read(/etc/**)", Path("/etc/hosts"), "Read", True),
        ("Read(/etc/*.conf)", Path("/etc/a/b.conf"), "Read", False),
        ("Read(~/.bashrc)", HOME / ".bashrc", "Read", True),
        ("Read(~/.bashrc)", HOME / "x/.bashrc", "Read", False),
        ("Read", Path("/anything"), "Read", True),
        ("Edit(src/**)", WS / "src/a.py", "Read", False),
    ],
)
def test_path_patterns(text: str, path: Path, kind: str, matches: bool) -> None:
    assert rule(text).matches_path(path, kind=kind, workspace=WS, home=HOME) is matches


def test_bare_names_cover_their_tools() -> None:
    assert rule("Read").matches_tool("search_files")
    assert rule("Edit").matches_tool("str_replace")
    assert not rule("Write").matches_tool("str_replace")
    assert rule("WebFetch").matches_tool("WebFetch")
    assert rule("read_file").matches_tool("read_file")
    assert not rule("Bash(ls:*)").matches_tool("bash")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty"),
        ("Bash(git diff", "Kind(pattern)"),
        ("Fetch(x)", "unknown kind"),
        ("Bash(:*)x", "Kind(pattern)"),
        ("Bash('unterminated:*)", "quotation"),
        ("Edit()", "empty"),
        ("Edit(src/{a)", "{"),
        ("rm -rf", "not a tool name"),
    ],
)
def test_bad_rules_say_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(RuleError) as info:
        parse_rule(RuleSpec(text, "allow", "x.toml:3"))
    assert words in str(info.value)


def test_builtin_rules_deny_privilege_escalation() -> None:
    rules = compile_rules([])
    denied = [r for r in rules.rules if r.matches_command(("sudo", "ls"))]
    assert [r.verdict for r in denied] == ["deny"] and denied[0].origin == "built-in"


def test_toml_specs_carry_file_and_line(tmp_path: Path) -> None:
    text = (
        "[permissions]\n"
        'allow = ["Bash(npm run test:*)",\n  "Edit(src/**)"]\n'
        'deny = ["Bash(git push:*)"]\n'
        "\n[[permissions.rules]]\n"
        'rule = "Read(~/notes/**)"\n'
        'verdict = "allow"\n'
        'examples = ["~/notes/a.md"]\n'
    )
    import tomllib

    path = tmp_path / "config.toml"
    specs = toml_specs(path, text, tomllib.loads(text)["permissions"])
    assert [(s.text, s.verdict, s.origin) for s in specs] == [
        ("Bash(npm run test:*)", "allow", f"{path}:2"),
        ("Edit(src/**)", "allow", f"{path}:3"),
        ("Bash(git push:*)", "deny", f"{path}:4"),
        ("Read(~/notes/**)", "allow", f"{path}:7"),
    ]
    assert specs[-1].examples == ("~/notes/a.md",)


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"allow": "Bash(ls)"}, "must be a list"),
        ({"alow": []}, "unknown key 'alow'"),
        ({"rules": [{"rule": "Bash(ls)", "verdict": "maybe"}]}, "verdict must be"),
        ({"rules": [{"rule": "Bash(ls)", "exmples": []}]}, "unknown key(s) exmples"),
        ({"rules": [{"verdict": "allow"}]}, "needs rule"),
    ],
)
def test_bad_permission_tables(table: dict[str, object], words: str) -> None:
    with pytest.raises(RuleError) as info:
        toml_specs(Path("c.toml"), "", table)
    assert words in str(info.value)


def test_path_examples_are_checked_when_loading() -> None:
    from tether.policy.ruleload import check_rules

    good = RuleSpec("Read(~/notes/**)", "allow", "c.toml:2", ("~/notes/a.md",), ("~/x",))
    check_rules([good], workspace=WS, home=HOME)
    bad = RuleSpec("Edit(src/**)", "allow", "c.toml:9", ("lib/a.py",))
    with pytest.raises(RuleError) as info:
        check_rules([bad], workspace=WS, home=HOME)
    assert "c.toml:9" in str(info.value) and "lib/a.py" in str(info.value)


def test_flag_rules_say_which_flag() -> None:
    specs = flag_specs(["Bash(ls:*)"], ["Bash(rm:*)"])
    assert [(s.verdict, s.origin) for s in specs] == [("allow", "--allow"), ("deny", "--deny")]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("npm", "run", "test", "--", "-x"), "npm run test"),
        (("git", "commit", "-m", "msg"), "git commit"),
        (("git", "-C", "x", "push"), "git push"),
        (("rm", "-rf", "build"), "rm"),
        (("python", "-m", "pytest", "-x"), "python -m pytest"),
        (("./scripts/test.sh", "--fast"), "./scripts/test.sh"),
        (("cargo", "build", "--release"), "cargo build"),
    ],
)
def test_generalised_rule_is_program_and_subcommand(argv: tuple[str, ...], expected: str) -> None:
    assert generalise(argv) == expected

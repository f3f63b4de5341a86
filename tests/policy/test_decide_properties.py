"""Properties of `decide` over the corpus and beyond it (hypothesis).

- Adding a destructive part to a command, before or after it and with any separator,
  never makes the answer more permissive; neither does wrapping the command in
  `$(...)` or `bash -c '...'`.
- The same action gives the same decision, also with freshly compiled rules.
- Arbitrary text never makes `decide` raise, and the verdict is always the strictest
  of the decision's parts.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tether.policy.actions import VERDICTS, Decision, ShellAction, strictest
from tether.policy.decide import decide
from tether.policy.rules import RuleSet, RuleSpec, compile_rules
from tether.policy.shellparse import parse


def _load_corpus_module() -> ModuleType:
    """The sibling test module (tests are not a package, so it cannot be imported)."""
    name = "tether_policy_test_corpus"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("test_corpus.py")
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


corpus = _load_corpus_module()
WORKSPACE, HOME = corpus.WORKSPACE, corpus.HOME
ENTRIES = corpus.ENTRIES
USER_RULES = [
    RuleSpec("Bash(npm run test:*)", "allow", "--allow"),
    RuleSpec("Bash(git push:*)", "ask", "test"),
    RuleSpec("Bash(rm -rf:*)", "deny", "--deny"),
    RuleSpec("Read(~/notes/**)", "allow", "--allow"),
    RuleSpec("Edit(src/**)", "allow", "--allow"),
]
RULES = compile_rules(USER_RULES)

SEPARATORS = [";", " ; ", "&&", " && ", "||", " || ", "|", " | ", "\n"]
UNPARSEABLE = "unparseable"


def _joinable(command: str) -> bool:
    """Well-formed, and still so with a separator after it (`x &;` is a syntax error,
    and two halves of a broken quote can close each other into one harmless string)."""
    return not command.rstrip().endswith(("\\", "&"))


EVERYTHING = sorted(e.command for e in ENTRIES)
JOINABLE = sorted(
    e.command for e in ENTRIES if UNPARSEABLE not in e.section and _joinable(e.command)
)
DESTRUCTIVE = sorted(
    e.command
    for e in ENTRIES
    if e.want != "allow" and e.command in JOINABLE and "<<" not in e.command
)
# Commands whose text cannot swallow what follows them (comments, heredocs) and that
# change no directory (which would move a later relative path).
PLAIN = sorted(c for c in JOINABLE if not any(t in c for t in ("#", "<<", "cd ", "pushd")))


def strictness(decision: Decision) -> int:
    return VERDICTS.index(decision.verdict)


def judge(command: str, rules: RuleSet = RULES) -> Decision:
    return decide(ShellAction(command), rules, "default", workspace=WORKSPACE, home=HOME)


destructive = st.sampled_from(DESTRUCTIVE)
separators = st.sampled_from(SEPARATORS)
# Chains of corpus commands: whatever a command gives alone, it can be part of more.
chains = st.lists(st.tuples(st.sampled_from(JOINABLE), separators), min_size=2, max_size=3).map(
    lambda items: "".join(c + s for c, s in items[:-1]) + items[-1][0]
)
subjects = st.one_of(st.sampled_from(EVERYTHING), chains)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _why(*commands: str) -> str:
    return "\n".join(f"{c!r} -> {(d := judge(c)).verdict}: {d.reason}" for c in commands)


@SETTINGS
@given(subjects, separators, destructive)
def test_appending_a_destructive_part_never_lowers_strictness(
    command: str, sep: str, bad: str
) -> None:
    combined = command + sep + bad
    assert strictness(judge(combined)) >= strictness(judge(command)), _why(command, combined)


@SETTINGS
@given(subjects, separators, destructive)
def test_prefixing_a_destructive_part_never_lowers_strictness(
    command: str, sep: str, bad: str
) -> None:
    combined = bad + sep + command
    assert strictness(judge(combined)) >= strictness(judge(command)), _why(command, combined)


@SETTINGS
@given(st.sampled_from(PLAIN), separators, st.sampled_from(sorted(set(DESTRUCTIVE) & set(PLAIN))))
@example("case $(rm x) in *) ;; esac", "||", "{ sudo ls; }")  # tree-sitter loses the `{ }`
def test_a_destructive_part_keeps_its_own_strictness_among_plain_commands(
    command: str, sep: str, bad: str
) -> None:
    """`ls; sudo ls` is as strict as `sudo ls`, whichever side the plain command is on."""
    alone = strictness(judge(bad))
    for combined in (command + sep + bad, bad + sep + command):
        assert strictness(judge(combined)) >= alone, _why(bad, combined)


@SETTINGS
@given(subjects)
def test_wrapping_in_a_substitution_never_lowers_strictness(command: str) -> None:
    # The newline keeps a trailing comment or heredoc from swallowing the `)`; the
    # space keeps `$((` from reading as arithmetic. A command that does not parse on
    # its own (`ls )`) means something else once wrapped, for bash too: skip those.
    assume(not parse(command).problems)
    wrapped = f'echo "$( {command}\n)"'
    assert strictness(judge(wrapped)) >= strictness(judge(command)), _why(command, wrapped)


@SETTINGS
@given(subjects, st.sampled_from(["bash -c", "sh -c", "bash -lc", "timeout 5 bash -c"]))
def test_wrapping_in_a_shell_never_lowers_strictness(command: str, shell: str) -> None:
    wrapped = f"{shell} {shlex.quote(command)}"
    assert strictness(judge(wrapped)) >= strictness(judge(command)), _why(command, wrapped)


@SETTINGS
@given(subjects)
def test_decide_is_deterministic(command: str) -> None:
    first = judge(command)
    assert judge(command) == first
    assert judge(command, compile_rules(list(USER_RULES))) == first


PIECES = st.one_of(
    st.sampled_from(list("'\"`$(){}[]<>|&;!#*?~\\=\n\t -/.0aAzZ")),
    st.sampled_from(["rm", "ls", "sudo", "$(", "<<EOF", "EOF", "\x00", "é", "\r", "bash -c "]),
    st.characters(),
)
SHELLISH = st.lists(PIECES, max_size=40).map("".join)


@SETTINGS
@given(st.one_of(SHELLISH, st.text(max_size=80)))
def test_decide_never_raises_and_answers_with_its_strictest_part(text: str) -> None:
    for mode in ("default", "plan", "accept-edits", "auto"):
        decision = decide(ShellAction(text), RULES, mode, workspace=WORKSPACE, home=HOME)
        assert decision.verdict in VERDICTS
        assert decision.parts, decision
        assert decision.verdict == strictest([p.verdict for p in decision.parts])
        assert all(p.verdict in VERDICTS for p in decision.parts)
        assert isinstance(decision.reason, str) and decision.reason

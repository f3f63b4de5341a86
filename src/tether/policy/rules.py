"""Permission rules: their syntax, where they come from, and what they match.

A rule is written like `Bash(git diff:*)`, `Bash(npm run test)`, `Read(~/notes/**)`,
`Edit(src/**)`, `Write(*.lock)`, `WebFetch` or a bare tool name, and sits in an
`allow`, `ask` or `deny` list. Every rule remembers where it was written, so a
decision can say which rule produced it and a bad rule fails loading with its file
and line. A rule may carry examples it must and must not match; they are checked
when the rule is loaded, so a rules file tests itself.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from tether.policy.actions import Verdict

__all__ = [
    "BUILTIN_RULES",
    "PATH_KINDS",
    "Rule",
    "RuleError",
    "RuleSet",
    "RuleSpec",
    "compile_rules",
    "parse_rule",
]

# Rule kinds that take a path pattern, and which actions they cover.
PATH_KINDS = ("Read", "Edit", "Write")
_TOOLS_OF_KIND = {
    "Bash": frozenset({"bash"}),
    "Read": frozenset({"read_file", "list_files", "search_files"}),
    "Edit": frozenset({"write_file", "str_replace", "apply_patch"}),
    "Write": frozenset({"write_file"}),
}


class RuleError(ValueError):
    """A rule that cannot be understood, or whose examples do not hold."""


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """A rule as written somewhere, before it is understood."""

    text: str
    verdict: Verdict
    origin: str
    examples: tuple[str, ...] = ()
    counterexamples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """One understood rule. `pattern` is None for a bare kind or tool name."""

    text: str
    verdict: Verdict
    kind: str
    pattern: str | None
    origin: str
    _tokens: tuple[str, ...] = field(default=(), compare=False)
    _prefix: bool = field(default=False, compare=False)

    @property
    def label(self) -> str:
        """How decisions name the rule: its text, verdict and origin."""
        return f"{self.verdict} {self.text} ({self.origin})"

    def matches_command(self, argv: tuple[str, ...]) -> bool:
        """For `Bash(...)` rules: the command's words against the pattern's words."""
        if self.kind != "Bash":
            return False
        if self.pattern is None:
            return True
        tokens = self._tokens
        if self._prefix:
            return len(argv) >= len(tokens) and all(
                fnmatchcase(a, t) for a, t in zip(argv, tokens, strict=False)
            )
        return len(argv) == len(tokens) and all(
            fnmatchcase(a, t) for a, t in zip(argv, tokens, strict=True)
        )

    def matches_path(self, path: Path, *, kind: str, workspace: Path, home: Path) -> bool:
        """For path rules: does `path` (absolute) fall under the pattern?

        `kind` is what happens to the path: "Read", "Edit" or "Write"; an `Edit` rule
        covers writes too, since writing a file whole is an edit of it.
        """
        if self.kind not in PATH_KINDS or not _covers(self.kind, kind):
            return False
        if self.pattern is None:
            return True
        return _path_matcher(self.pattern, workspace, home)(path)

    def matches_tool(self, tool: str) -> bool:
        """Bare names: a kind (`Read`, `Bash`, ...) covers its tools; others name a tool."""
        if self.pattern is not None:
            return False
        return tool in _TOOLS_OF_KIND.get(self.kind, frozenset({self.kind}))


def _covers(rule_kind: str, action_kind: str) -> bool:
    return rule_kind == action_kind or (rule_kind == "Edit" and action_kind == "Write")


def parse_rule(spec: RuleSpec) -> Rule:
    """Understand one rule, or raise `RuleError` saying what is wrong with it."""
    text = spec.text.strip()
    if not text:
        raise RuleError("the rule is empty")
    if "(" not in text:
        if not text.replace("_", "").replace("-", "").isalnum():
            raise RuleError(f"{text!r} is not a tool name or Kind(pattern)")
        return Rule(text, spec.verdict, text, None, spec.origin)
    kind, _, rest = text.partition("(")
    if not rest.endswith(")") or not kind.isidentifier():
        raise RuleError(f"{text!r}: write rules as Kind(pattern), e.g. Bash(git diff:*)")
    pattern = rest[:-1].strip()
    if kind == "Bash":
        return _bash_rule(text, spec, pattern)
    if kind in PATH_KINDS:
        if not pattern:
            raise RuleError(f"{text!r}: the path pattern is empty")
        try:
            _path_matcher(pattern, Path("/"), Path("/"))
        except ValueError as exc:
            raise RuleError(f"{text!r}: {exc}") from None
        return Rule(text, spec.verdict, kind, pattern, spec.origin)
    raise RuleError(
        f"{text!r}: unknown kind {kind!r}; patterns work with Bash, Read, Edit and Write, "
        "other tools are named bare (e.g. WebFetch)"
    )


def _bash_rule(text: str, spec: RuleSpec, pattern: str) -> Rule:
    if pattern in ("", "*", ":*"):
        return Rule(text, spec.verdict, "Bash", None, spec.origin)
    prefix = pattern.endswith(":*")
    body = pattern[:-2] if prefix else pattern
    try:
        tokens = tuple(shlex.split(body))
    except ValueError as exc:
        raise RuleError(f"{text!r}: {exc}") from None
    if tokens and tokens[-1] == "*":  # `Bash(npm run *)` means the same as `npm run:*`
        tokens, prefix = tokens[:-1], True
    if not tokens:
        raise RuleError(f"{text!r}: name a command, e.g. Bash(git diff:*)")
    return Rule(text, spec.verdict, "Bash", pattern, spec.origin, tokens, prefix)


def _path_matcher(pattern: str, workspace: Path, home: Path) -> Callable[[Path], bool]:
    """Where a path pattern points: `~/` is home, `/` absolute, else the workspace.

    A pattern without a slash (`*.lock`) matches the file name at any depth of the
    workspace, as in .gitignore.
    """
    from tether.tools.ignore import compile_glob

    if pattern.startswith("~/") or pattern == "~":
        base, rest = home, pattern[2:]
    elif pattern.startswith("/"):
        base, rest = Path("/"), pattern[1:]
    else:
        base, rest = workspace, pattern
    if not rest or rest in ("**", "**/*"):
        return lambda path: path == base or base in path.parents
    test = compile_glob(rest)
    if base != workspace and "/" not in rest:
        # `~/notes` names one place, not every `notes` below home.
        return lambda path: path.parent == base and test(path.name)

    # `notes/**` covers the folder itself too: `grep -r x ~/notes` reads under it.
    folder = rest[:-3] if rest.endswith("/**") else None

    def matches(path: Path) -> bool:
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            return False
        return rel != "." and (test(rel) or rel == folder)

    return matches


@dataclass(frozen=True, slots=True)
class RuleSet:
    """All rules in force, built-in ones first."""

    rules: tuple[Rule, ...] = ()

    def with_rules(self, more: Iterable[Rule]) -> RuleSet:
        return RuleSet((*self.rules, *more))


BUILTIN_RULES: tuple[RuleSpec, ...] = tuple(
    RuleSpec(f"Bash({name}:*)", "deny", "built-in")
    for name in ("sudo", "doas", "su", "pkexec", "runuser")
)


def compile_rules(
    specs: Iterable[RuleSpec],
    *,
    check_examples: Callable[[Rule, str], bool] | None = None,
    builtin: bool = True,
) -> RuleSet:
    """Parse every rule and check its examples; the first problem raises `RuleError`.

    `check_examples(rule, example)` says whether the rule matches an example (for
    `Bash` rules the example is a command line, judged like a real one). The
    built-in rules come first unless `builtin` is False.
    """
    rules: list[Rule] = []
    for spec in (*(BUILTIN_RULES if builtin else ()), *specs):
        try:
            rule = parse_rule(spec)
        except RuleError as exc:
            raise RuleError(f"{spec.origin}: {exc}") from None
        if check_examples is not None:
            for example in spec.examples:
                if not check_examples(rule, example):
                    raise RuleError(
                        f"{spec.origin}: {rule.text} should match its example {example!r} "
                        "but does not"
                    )
            for example in spec.counterexamples:
                if check_examples(rule, example):
                    raise RuleError(
                        f"{spec.origin}: {rule.text} should not match {example!r} but does"
                    )
        rules.append(rule)
    return RuleSet(tuple(rules))

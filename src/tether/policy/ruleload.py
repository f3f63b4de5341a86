"""Reading permission rules from config files and flags, and checking them at load.

In TOML, rules sit in a `[permissions]` table:

    [permissions]
    allow = ["Bash(npm run test:*)", "Edit(src/**)"]
    ask = ["Bash(git push:*)"]
    deny = ["Read(~/.ssh/**)"]

    [[permissions.rules]]          # a rule that tests itself when loaded
    rule = "Bash(git push:*)"
    verdict = "deny"
    examples = ["git push origin main", "git push --force"]
    counterexamples = ["git pull"]

Every rule keeps its origin (`file:line`, or the flag), so a bad rule is reported
where it was written and a decision can name the rule that made it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tether.policy.actions import VERDICTS, Verdict
from tether.policy.rules import PATH_KINDS, Rule, RuleError, RuleSet, RuleSpec, compile_rules

__all__ = ["check_rules", "flag_specs", "toml_specs"]

_RULE_KEYS = frozenset({"rule", "verdict", "examples", "counterexamples"})


def toml_specs(path: Path, text: str, table: Any) -> list[RuleSpec]:
    """The rules of one file's `[permissions]` table; `RuleError` names file and line."""
    if not isinstance(table, Mapping):
        raise RuleError(f"{path}: [permissions] must be a table")
    specs: list[RuleSpec] = []
    for key, value in table.items():
        if key in VERDICTS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise RuleError(f"{_where(path, text, key)}: {key} must be a list of strings")
            specs += [RuleSpec(v, key, _where(path, text, v)) for v in value]
        elif key == "rules":
            if not isinstance(value, list):
                raise RuleError(f"{path}: [[permissions.rules]] must be an array of tables")
            specs += [_table_spec(path, text, entry) for entry in value]
        else:
            raise RuleError(
                f"{_where(path, text, key)}: unknown key {key!r} in [permissions]; "
                "known: allow, ask, deny, rules"
            )
    return specs


def _table_spec(path: Path, text: str, entry: Any) -> RuleSpec:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("rule"), str):
        raise RuleError(f'{path}: each [[permissions.rules]] needs rule = "Kind(pattern)"')
    rule = entry["rule"]
    where = _where(path, text, rule)
    unknown = sorted(set(entry) - _RULE_KEYS)
    if unknown:
        raise RuleError(f"{where}: unknown key(s) {', '.join(unknown)} in [[permissions.rules]]")
    verdict = entry.get("verdict", "allow")
    if verdict not in VERDICTS:
        raise RuleError(f"{where}: verdict must be allow, ask or deny, not {verdict!r}")
    lists = {}
    for name in ("examples", "counterexamples"):
        items = entry.get(name, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise RuleError(f"{where}: {name} must be a list of strings")
        lists[name] = tuple(items)
    return RuleSpec(rule, verdict, where, lists["examples"], lists["counterexamples"])


def flag_specs(allow: Iterable[str], deny: Iterable[str]) -> list[RuleSpec]:
    verdicts: list[tuple[Verdict, Iterable[str]]] = [("allow", allow), ("deny", deny)]
    return [
        RuleSpec(text, verdict, f"--{verdict}") for verdict, texts in verdicts for text in texts
    ]


def check_rules(specs: Iterable[RuleSpec], *, workspace: Path, home: Path) -> RuleSet:
    """Understand every rule and check its examples; `RuleError` on the first problem."""
    return compile_rules(specs, check_examples=_example_checker(workspace, home))


def _example_checker(workspace: Path, home: Path) -> Any:
    def matches(rule: Rule, example: str) -> bool:
        if rule.kind == "Bash":
            from tether.policy.knowledge import judge_script

            judgements, _ = judge_script(example)
            return any(rule.matches_command(j.argv) for j in judgements)
        if rule.kind in PATH_KINDS:
            if example == "~" or example.startswith("~/"):
                path = home / example[2:]
            else:
                path = Path(example)
                path = path if path.is_absolute() else workspace / path
            return rule.matches_path(path, kind=rule.kind, workspace=workspace, home=home)
        return rule.matches_tool(example)

    return matches


def _where(path: Path, text: str, needle: str) -> str:
    """`file:line` of the first line that mentions `needle` (TOML keeps no positions)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return f"{path}:{number}"
    return str(path)

"""Bash source -> the simple commands that would run (via tree-sitter-bash).

Pure syntax, no judgement: every simple command anywhere in the script — in
pipelines, lists, subshells, command and process substitutions (also inside double
quotes, `${x:=...}` and heredocs), function bodies, loops and conditionals — comes
out as a `SimpleCommand` with its words unquoted, its leading assignments and its
redirections. What cannot be proven to be plain words is marked, not guessed.

The work is split by concern: `shelltypes` holds the result shapes (re-exported
here), `shellwalk` walks one tree-sitter tree, `shellread` turns nodes into words,
`shellwords` unquotes word text and `shellfix` makes up for what tree-sitter-bash
reads differently from bash. This module is the entry point: one call, the fallback
readings of a script tree-sitter could not read, and never an exception.
"""

from __future__ import annotations

import re

from tether.policy.shelltypes import ParsedScript, Redirect, SimpleCommand, Word
from tether.policy.shellwalk import Walker

__all__ = ["ParsedScript", "Redirect", "SimpleCommand", "Word", "parse"]


def parse(source: str) -> ParsedScript:
    """Every simple command `source` could run, in source order, plus its problems.

    Never raises: input is untrusted model output, so an internal failure becomes
    a problem (which makes the verdict at least "ask") instead of a traceback.
    """
    commands, problems = _parse_once(source)
    dangling = _DANGLING.search(source)
    if dangling:
        problems.append(f"could not parse: the line ends with {dangling[1]!r} (bash would wait)")
    if problems:
        # Where tree-sitter went wrong, bash may still run commands it lost. Read the
        # text again in simpler pieces and judge whatever they show as well: extra
        # commands can only make the verdict stricter, and it is at least "ask" already.
        seen = set(commands)
        for variant in _fallback_variants(source):
            for command in _parse_once(variant)[0]:
                if command not in seen:
                    seen.add(command)
                    commands.append(command)
    return ParsedScript(tuple(commands), tuple(dict.fromkeys(problems)))


def _parse_once(source: str) -> tuple[list[SimpleCommand], list[str]]:
    out: list[tuple[int, SimpleCommand]] = []
    problems: list[str] = []
    try:
        Walker(source.encode("utf-8", "surrogatepass"), 0, out, problems, 0).run(())
    except Exception as exc:  # pragma: no cover - defensive; tests assert it never happens
        problems.append(f"could not parse: internal error ({type(exc).__name__})")
    out.sort(key=lambda item: item[0])
    return [cmd for _, cmd in out], problems


_LIST_OPERATORS = re.compile(r"\|\||&&")
_DANGLING = re.compile(r"(?<!\\)(\|\||&&|\|&|\|)\s*\Z")


def _fallback_variants(source: str) -> list[str]:
    """Simpler readings of a script tree-sitter could not read: each line on its own
    (`echo hi⏎\\sudo ls` is two commands to bash), `$((` read as `$( (`, a command
    substitution holding a subshell, as bash reads it when it is no arithmetic, and
    the pieces between `||` and `&&` (`case … esac||{ sudo ls; }` hides `sudo ls`
    from tree-sitter). A piece cut inside quotes may read as a command it is not,
    which can only make the verdict stricter."""
    variants = [line for line in source.split("\n") if line.strip()] if "\n" in source else []
    if "$((" in source:
        variants.append(source.replace("$((", "$( ("))
    variants += [piece for piece in _LIST_OPERATORS.split(source) if piece.strip()]
    return [v for v in variants if v != source][:50]

"""The shapes `shellparse.parse` returns: words, redirects, simple commands, scripts.

Plain frozen data, kept apart from the parser so that the tree walk which builds
them (`shellwalk`) and `shellparse`, which re-exports them, need not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ParsedScript", "Redirect", "SimpleCommand", "Word"]


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word.

    `text` is the value after quote removal and escape processing (`r''m`, `"rm"`,
    `\\rm` and `$'\\x72m'` all give "rm"). `literal` is False when the value is not
    known before running: it contains a parameter expansion, a command or process
    substitution, arithmetic, or a brace/tilde expansion the parser did not resolve.
    `glob` is True when it has unquoted `*`, `?` or `[` (a pattern for paths).
    """

    text: str
    literal: bool = True
    glob: bool = False
    raw: str = ""


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirection: `op` as written (">", ">>", "<", "2>", "&>", ">|", "<<", "<<<",
    ">&", "<&", ...), `fd` the explicit descriptor number if any, `target` the file
    word (None when it duplicates a descriptor like `2>&1`, or for heredocs)."""

    op: str
    target: Word | None
    fd: int | None = None


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command that would run: `words[0]` is the command name.

    `assignments` are the leading `NAME=value` pairs. `opaque` lists reasons the
    command cannot be proven to be plain words (e.g. "the command name comes from
    a variable"); an empty tuple means it is fully known. `source` is its text.
    """

    words: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()
    redirects: tuple[Redirect, ...] = ()
    source: str = ""
    opaque: tuple[str, ...] = ()

    @property
    def argv(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.words)


@dataclass(frozen=True, slots=True)
class ParsedScript:
    """All simple commands of a script, plus script-level problems.

    `problems` are reasons the script as a whole cannot be proven plain: a parse
    error, a function definition, an alias, `trap`, ... (each at least "ask").
    """

    commands: tuple[SimpleCommand, ...]
    problems: tuple[str, ...] = ()

"""What one program does with its arguments, before it becomes a `Judgement`.

The command tables (`readonly`, `filecmds`, `gitcmds`, ...) answer with an `Effect`;
`knowledge` adds what the shell does around the program (assignments, redirections)
and judges the commands an `Effect` says it runs (`runs`), so the tables never need
to call back into `knowledge`.

Paths: a literal word is given as written; a word known only at run time (`$x`,
`$(cmd)`) is given as its raw source text, so `decide` sees a location it cannot
place and asks. Process substitutions (`<(cmd)`) are pipes, not files: they are
read and written as `/dev/fd/63`, which is harmless.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from tether.policy.shellparse import SimpleCommand, Word

__all__ = [
    "Effect",
    "Run",
    "dynamic",
    "known",
    "names",
    "path_of",
    "paths_of",
    "quoted",
    "read_paths",
    "unknown",
    "wild",
    "write_paths",
]


@dataclass(frozen=True, slots=True)
class Run:
    """A command that the judged one runs (`timeout 5 CMD`, `find -exec CMD ;`).

    `extra_args` is True when it gets more arguments only known at run time
    (`xargs`): then it stays read-only only if it is read-only whatever its
    arguments are.
    """

    command: SimpleCommand
    extra_args: bool = False


@dataclass(frozen=True, slots=True)
class Effect:
    """What a program does: see `Judgement` for the meaning of the fields."""

    known: bool
    reason: str
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    ask: str | None = None
    runs: tuple[Run, ...] = ()


def names(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps tables short)."""
    return frozenset(text.split())


def known(reason: str, reads: tuple[str, ...] = (), writes: tuple[str, ...] = ()) -> Effect:
    """Reading `reads` and writing `writes` is all it does."""
    return Effect(True, reason, _dedup(reads), _dedup(writes))


def unknown(reason: str) -> Effect:
    """It may do anything."""
    return Effect(False, reason)


_DEV_FD = re.compile(r"/dev/fd/\d+")
_HARMLESS_READS = frozenset(
    {"-", "/dev/null", "/dev/stdin", "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom"}
)
_HARMLESS_WRITES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def _procsub(word: Word) -> bool:
    raw = word.raw or word.text
    return not word.literal and raw[:2] in ("<(", ">(") and raw.endswith(")")


def dynamic(word: Word) -> bool:
    """Known only at run time (and not a process substitution, which is a pipe)."""
    return not word.literal and not _procsub(word)


def quoted(word: Word) -> bool:
    """A double-quoted word: its value is one word, never split or globbed."""
    raw = word.raw
    return (
        len(raw) >= 2
        and raw[0] == '"'
        and raw[-1] == '"'
        and '"' not in raw[1:-1].replace('\\"', "")
    )


def wild(word: Word) -> bool:
    """A glob that may expand to a name starting with `-` (so: to an option)."""
    return word.glob and word.text[:1] in ("*", "?", "[", "-")


def path_of(word: Word) -> str:
    """The path a word names, as `decide` should see it (raw text when dynamic)."""
    if word.literal:
        return word.text
    if _procsub(word):
        return "/dev/fd/63"
    return word.raw or word.text


def paths_of(word: Word) -> tuple[str, ...]:
    """Every path a word names: brace expansions (`{/etc/passwd,x}`) are expanded,
    since their raw text would look like one harmless relative path, and a glob
    whose component can match `..` (`.*`, `.?`: older bash) is also given with `..`
    there, so that `cat .*/secret` is seen reaching the parent directory."""
    if word.glob:
        parts = word.text.split("/")
        up = ["..." if p.startswith(".") and fnmatchcase("..", p) else p for p in parts]
        if up != parts:
            return (word.text, "/".join(".." if p == "..." else p for p in up))
    if word.literal or "{" not in word.text or "$" in word.text or "`" in word.text:
        return (path_of(word),)
    try:
        return tuple(_braces(word.text, 0))
    except _TooMany:  # too many to list: mark it as known only at run time
        return ("$" + word.text,)


def read_paths(words: tuple[Word, ...] | list[Word]) -> tuple[str, ...]:
    """The paths read through these words, without stdin and harmless devices."""
    out = (p for w in words for p in paths_of(w))
    return tuple(p for p in out if p not in _HARMLESS_READS and not _DEV_FD.fullmatch(p))


def write_paths(words: tuple[Word, ...] | list[Word]) -> tuple[str, ...]:
    """The paths written through these words, without the standard streams."""
    out = (p for w in words for p in paths_of(w))
    return tuple(p for p in out if p not in _HARMLESS_WRITES and not _DEV_FD.fullmatch(p))


_MAX_EXPANSION = 64
_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


class _TooMany(Exception):
    """A brace expansion that makes more words than we list."""


def _braces(text: str, depth: int) -> list[str]:
    """Bash brace expansion of `text`."""
    if depth > 8:
        raise _TooMany
    for start in range(len(text)):
        if text[start] != "{":
            continue
        parts, end = _brace_parts(text, start)
        if parts is None:
            continue
        out: list[str] = []
        for part in parts:
            out.extend(_braces(text[:start] + part + text[end + 1 :], depth + 1))
            if len(out) > _MAX_EXPANSION:
                raise _TooMany
        return out
    return [text]


def _brace_parts(text: str, start: int) -> tuple[list[str] | None, int]:
    """The alternatives of the brace group at `start` and where it ends."""
    level, last = 0, start + 1
    parts: list[str] = []
    for i in range(start, len(text)):
        c = text[i]
        if c == "{":
            level += 1
        elif c == "}":
            level -= 1
            if level == 0:
                inner = text[start + 1 : i]
                if parts:
                    return [*parts, text[last:i]], i
                return _sequence(inner), i
        elif c == "," and level == 1:
            parts.append(text[last:i])
            last = i + 1
    return None, start


def _sequence(inner: str) -> list[str] | None:
    m = _SEQUENCE.fullmatch(inner)
    if m is None:
        return None
    a, b, step = m.group(1), m.group(2), abs(int(m.group(3) or 1)) or 1
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        lo, hi = int(a), int(b)
        seq = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        if len(seq) > _MAX_EXPANSION:
            raise _TooMany
        return [str(n) for n in seq]
    if a.isalpha() and b.isalpha():
        lo, hi = ord(a), ord(b)
        seq = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [chr(n) for n in seq]
    return None


def _dedup(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))

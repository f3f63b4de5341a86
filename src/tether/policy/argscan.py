"""Reading a program's options the way getopt does, to find the risky ones.

Short options may be combined (`-uo out`, `-ofile`), long ones take `=value` or the
next word, and (like GNU getopt) may be abbreviated: `--outp` counts as `--output`
whenever it is a prefix of a risky option. Options are recognised anywhere before
`--` (GNU permutes them). A word known only at run time, or a glob that may expand
to a name starting with `-`, could be any option: `Spec.judge` then refuses to call
a program with risky options known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from tether.policy.effects import Effect, dynamic, known, read_paths, unknown, wild
from tether.policy.effects import write_paths as _write_paths
from tether.policy.shellparse import Word

__all__ = ["Opt", "Scan", "Spec", "scan"]

_NO_ARGS: Mapping[str, int] = MappingProxyType({})
_NO_REASONS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Spec:
    """How one program reads its arguments and which of them are paths.

    `reads`, `writes` and `unknown` name options (a letter or a long name) whose
    argument is read, whose argument is written, or that make the program able to
    do anything (with the reason). `operands` says what the other words are:
    paths read, nothing, or a pattern first (unless `pattern_opts` gave one).
    """

    short_arg: str = ""
    short_optarg: str = ""
    long_arg: Mapping[str, int] = field(default_factory=lambda: _NO_ARGS)
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    unknown: Mapping[str, str] = field(default_factory=lambda: _NO_REASONS)
    operands: Literal["reads", "none", "pattern"] = "reads"
    pattern_opts: frozenset[str] = frozenset()
    default_read: str | None = None
    default_read_if: frozenset[str] | None = None
    any_args_safe: bool = False

    @property
    def risky(self) -> bool:
        """Some option writes or runs things: a hidden option could be one of them."""
        return bool(self.writes or self.unknown)

    def judge(self, name: str, args: tuple[Word, ...]) -> Effect:
        """The generic verdict: option arguments and operands as reads and writes."""
        s = scan(self, args)
        if s.problem:
            return unknown(f"{name}: {s.problem}")
        if self.risky and s.hidden:
            return unknown(f"{name}: an argument known only at run time could be an option")
        reads: list[Word] = []
        writes: list[Word] = []
        for o in s.opts:
            if o.name in self.unknown:
                return unknown(self.unknown[o.name])
            if o.args and o.name in self.writes:
                writes.append(o.args[-1])
            if o.args and o.name in self.reads:
                reads.append(o.args[-1])
        operands = s.operands
        if self.operands == "pattern" and not s.has(self.pattern_opts) and operands:
            operands = operands[1:]
        if self.operands != "none":
            reads.extend(operands)
            wanted = self.default_read_if is None or s.has(self.default_read_if)
            if not operands and self.default_read is not None and wanted:
                reads.append(Word(self.default_read))
            reads.extend(w for w in s.hidden if dynamic(w))
        if any(dynamic(w) for w in writes):
            return unknown(f"{name} writes a path known only at run time")
        return effect_of(name, tuple(reads), tuple(writes))


def effect_of(name: str, reads: tuple[Word, ...], writes: tuple[Word, ...]) -> Effect:
    """A known effect with a reason naming what is written."""
    w = _write_paths(writes)
    if w:
        return known(f"{name} writes {', '.join(w)}", read_paths(reads), w)
    return known(f"{name} only reads", read_paths(reads))


@dataclass(frozen=True, slots=True)
class Opt:
    """One option as given: `name` is its letter or canonical long name."""

    name: str
    args: tuple[Word, ...] = ()


@dataclass(frozen=True, slots=True)
class Scan:
    """A program's arguments sorted into options and operands.

    `hidden` are words where an option could be (before `--`) whose value is not
    known now: dynamic words and globs that may expand to `-something`.
    """

    opts: tuple[Opt, ...]
    operands: tuple[Word, ...]
    hidden: tuple[Word, ...] = ()
    problem: str | None = None
    rest: tuple[Word, ...] = ()

    def has(self, names: frozenset[str]) -> bool:
        return any(o.name in names for o in self.opts)


def _resolve_long(spec: Spec, name: str) -> tuple[str, int, bool]:
    """(canonical name, arguments it takes, abbreviated?) for a long option."""
    if name in spec.long_arg:
        return name, spec.long_arg[name], False
    if len(name) > 1 and (name in spec.unknown or name in spec.writes or name in spec.reads):
        return name, 0, False
    for risky in (*spec.unknown, *spec.writes):  # GNU takes any unique prefix, even `--o`
        if len(risky) > 1 and risky.startswith(name):
            return risky, spec.long_arg.get(risky, 0), True
    for long, nargs in spec.long_arg.items():
        if long.startswith(name):
            return long, nargs, True
    return name, 0, False


def scan(spec: Spec, args: tuple[Word, ...], *, stop_at_operand: bool = False) -> Scan:
    """Sort `args` into options and operands (see `Scan`).

    With `stop_at_operand` the first operand ends the options and it and all that
    follow are returned in `rest` (for wrappers: `timeout 5 CMD ARGS`).
    """
    opts: list[Opt] = []
    operands: list[Word] = []
    hidden: list[Word] = []
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        t = w.text
        if dynamic(w) or wild(w):
            hidden.append(w)
        if t == "--" and w.literal:
            return Scan(
                tuple(opts), (*operands, *args[i + 1 :]), tuple(hidden), None, args[i + 1 :]
            )
        if t.startswith("--") and w.literal and not w.glob:
            name, eq, value = t[2:].partition("=")
            canon, nargs, abbreviated = _resolve_long(spec, name)
            if eq:
                opts.append(Opt(canon, (Word(value),)))
            elif nargs:
                taken = args[i + 1 : i + 1 + nargs]
                if len(taken) < nargs:
                    return Scan((), (), (), f"option --{name} is missing its argument")
                if abbreviated and any(a.text.startswith("-") for a in taken):
                    return Scan((), (), (), f"option --{name} is ambiguous")
                hidden.extend(a for a in taken if dynamic(a) or wild(a))
                opts.append(Opt(canon, taken))
                i += nargs
            else:
                opts.append(Opt(canon))
            i += 1
            continue
        if t.startswith("-") and t != "-" and w.literal and not w.glob:
            j = 1
            while j < len(t):
                c = t[j]
                j += 1
                if c in spec.short_optarg:
                    opts.append(Opt(c, (Word(t[j:]),) if j < len(t) else ()))
                    break
                if c in spec.short_arg:
                    if j < len(t):
                        opts.append(Opt(c, (Word(t[j:]),)))
                    elif i + 1 < n:
                        i += 1
                        a = args[i]
                        if dynamic(a) or wild(a):
                            hidden.append(a)
                        opts.append(Opt(c, (a,)))
                    else:
                        return Scan((), (), (), f"option -{c} is missing its argument")
                    break
                opts.append(Opt(c))
            i += 1
            continue
        if stop_at_operand:
            return Scan(tuple(opts), tuple(operands), tuple(hidden), None, args[i:])
        operands.append(w)
        i += 1
    return Scan(tuple(opts), tuple(operands), tuple(hidden))

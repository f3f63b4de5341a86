"""Programs that print information but have a risky corner: date, hostname, uniq,
xxd, less/more, man, test, strings.

`date -s` and `date MMDDhhmm` set the clock, `hostname NAME` sets the host name,
`uniq IN OUT` and `xxd IN OUT` write their second operand, `less -o` writes a log
and `+cmd` runs a pager command, `man -P`/`-H` run other programs, `test -v`
evaluates array subscripts (which can run commands), `strings @FILE` reads FILE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType

from tether.policy.argscan import Spec, effect_of, scan
from tether.policy.effects import Effect, known, names, quoted, unknown
from tether.policy.readonly import SPECS, spec_of
from tether.policy.shellparse import Word

__all__ = ["HANDLERS"]

Handler = Callable[[str, tuple[Word, ...]], Effect]


_DATE = spec_of("dfrs", long_arg="date file reference set", reads="f r file reference")


def _date(name: str, args: tuple[Word, ...]) -> Effect:
    s = scan(_DATE, args)
    if s.problem or s.hidden:
        return unknown(f"{name}: arguments known only at run time")
    if s.has(names("s set")):
        return unknown("date -s sets the clock")
    if any(not w.text.startswith("+") for w in s.operands):
        return unknown("date with an operand that is not +FORMAT sets the clock")
    return _without(_DATE.judge(name, args), s.operands)


def _without(effect: Effect, words: tuple[Word, ...]) -> Effect:
    """The effect without these words among its reads (they are not paths)."""
    drop = {w.text for w in words}
    return replace(effect, reads=tuple(r for r in effect.reads if r not in drop))


_HOSTNAME_SAFE = names(
    "a A d f i I s y V h alias all-fqdns domain fqdn long ip-address all-ip-addresses short "
    "version help nis yp"
)


def _hostname(_name: str, args: tuple[Word, ...]) -> Effect:
    s = scan(Spec(), args)
    if s.operands or s.hidden or not all(o.name in _HOSTNAME_SAFE for o in s.opts):
        return unknown("hostname with an argument sets the host name")
    return known("hostname only prints")


def _positional_out(spec: Spec, max_in: int) -> Handler:
    """Programs whose operand after `max_in` inputs is an output file (uniq, xxd)."""

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        s = scan(spec, args)
        if s.problem or s.hidden:
            return unknown(f"{name}: {s.problem or 'an argument known only at run time'}")
        if len(s.operands) > max_in + 1:
            return unknown(f"{name}: more operands than it takes")
        ins, outs = s.operands[:max_in], s.operands[max_in:]
        return effect_of(name, ins, outs)

    return handler


_PLUS_SAFE = re.compile(r"\+(\d+|/.*)", re.S)


def _pager(spec: Spec) -> Handler:
    """less/more: read-only here (stdin is closed), but not with log files or `+cmd`."""

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        s = scan(spec, args)
        plus = tuple(w for w in s.operands if w.text.startswith("+"))
        for w in plus:
            if not (w.literal and _PLUS_SAFE.fullmatch(w.text)):
                return unknown(f"{name} {w.text}: an initial command may run programs")
        return _without(spec.judge(name, args), plus)

    return handler


_LESS = spec_of(
    "bhjkoOpPtTxyz#",
    long_arg="log-file LOG-FILE lesskey-file lesskey-src tag",
    reads="T",
    writes="o O log-file LOG-FILE",
    unknown={
        "k": "less -k reads a lesskey file, which can run programs",
        "lesskey-file": "a lesskey file can run programs",
        "lesskey-src": "a lesskey file can run programs",
        "lesskey-content": "a lesskey file can run programs",
    },
)
_MAN_OPTS = names("k f a w W s S apropos whatis all where sections")


def _man(_name: str, args: tuple[Word, ...]) -> Effect:
    s = scan(spec_of("sS", long_arg="sections"), args)
    if s.problem or s.hidden or not all(o.name in _MAN_OPTS for o in s.opts):
        return unknown("man with these options may run a pager or a browser")
    return known("man only reads manual pages", tuple(w.text for w in s.operands if "/" in w.text))


def _test(name: str, args: tuple[Word, ...]) -> Effect:
    """`test`/`[`: `-v NAME` evaluates `a[$(cmd)]` subscripts, so a word known only
    at run time is accepted only where the grammar cannot make it an operator."""
    if name == "[" and args and args[-1].text == "]" and args[-1].literal:
        args = args[:-1]
    n = len(args)
    for i, a in enumerate(args):
        if a.literal:
            if a.text == "-v":
                return unknown(f"{name} -v evaluates array subscripts, which can run commands")
            continue
        binary_left = i == 0 and n == 3 and args[1].literal
        if not quoted(a) or not (i == n - 1 or binary_left):
            return unknown(f"{name}: an argument known only at run time could be an operator")
    return known(f"{name} only tests")


def _response_files(spec: Spec) -> Handler:
    """binutils read more arguments from `@FILE`: that file is read."""

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        effect = spec.judge(name, args)
        extra = tuple(a.text[1:] for a in args if a.literal and a.text.startswith("@"))
        return replace(effect, reads=effect.reads + extra) if effect.known else effect

    return handler


HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        "date": _date,
        "hostname": _hostname,
        "uniq": _positional_out(spec_of("fsw", long_arg="skip-fields skip-chars check-chars"), 1),
        "xxd": _positional_out(spec_of("cglosnR"), 1),
        "less": _pager(_LESS),
        "more": _pager(_LESS),  # on macOS `more` is less
        "most": _pager(_LESS),
        "man": _man,
        "test": _test,
        "[": _test,
        "strings": _response_files(SPECS["strings"]),
    }
)

"""Shell builtins: the ones that change the shell itself, and the harmless ones.

`eval`, `source`, `exec`, `trap`, `alias` and friends change what later commands
mean, so they always ask. Builtins that set variables (`export`, `read`,
`printf -v`, ...) ask when the variable changes what runs (`PATH`, `LD_PRELOAD`)
or carries an array subscript, which bash evaluates as arithmetic, and arithmetic
can run commands (`a[$(cmd)]`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from tether.policy.argscan import Spec, scan
from tether.policy.effects import Effect, Run, dynamic, known, names, read_paths, unknown
from tether.policy.envnames import risky_name
from tether.policy.shellparse import SimpleCommand, Word

__all__ = ["HANDLERS"]

Handler = Callable[[str, tuple[Word, ...]], Effect]

_ALWAYS_ASK = MappingProxyType(
    {
        "eval": "eval runs a string as shell code",
        "source": "source runs a file as shell code",
        ".": ". runs a file as shell code",
        "trap": "trap sets code to run later",
        "alias": "alias changes what later commands mean",
        "unalias": "unalias changes what later commands mean",
        "enable": "enable can load builtins from a shared library",
        "shopt": "shopt changes how the shell reads commands",
        "fc": "fc runs commands from the history",
    }
)


def _ask(reason: str) -> Effect:
    return Effect(False, reason, ask=reason)


def _variable(word: Word, what: str) -> str | None:
    """Why assigning to the variable named by `word` must ask, if it must."""
    if dynamic(word):
        return f"{what} a variable named only at run time"
    name = word.text.split("=", 1)[0]
    if "[" in name:
        return (
            f"{what} {name}: array subscripts are evaluated as arithmetic, which can run commands"
        )
    return risky_name(name)


def _cd(name: str, args: tuple[Word, ...]) -> Effect:
    s = scan(Spec(), args)
    if s.hidden and not s.operands:
        return unknown(f"{name}: an argument known only at run time")
    dirs = s.operands or (Word("~"),)
    if len(dirs) > 1 or dirs[0].text == "-" or (name == "pushd" and dirs[0].text[:1] in "+-"):
        return unknown(f"{name} goes to a directory not known here")
    return known(f"{name} changes the directory later commands run in", read_paths(dirs[:1]))


def _popd(name: str, args: tuple[Word, ...]) -> Effect:
    if args:
        return unknown(f"{name} with arguments edits the directory stack")
    return known("popd returns to a directory entered earlier")


_SET_FLAGS = frozenset("euxvfCn")
_SET_OPTIONS = names("errexit nounset xtrace verbose noglob noclobber noexec pipefail")


def _set(_name: str, args: tuple[Word, ...]) -> Effect:
    """`set -euo pipefail` is fine; options that change how commands are read ask."""
    i = 0
    while i < len(args):
        a = args[i]
        t = a.text
        if dynamic(a):
            return _ask("set with an argument known only at run time")
        if t in ("--", "-"):
            break
        if t[:1] not in ("-", "+"):
            break
        for j, c in enumerate(t[1:]):
            if c == "o" and j == len(t) - 2:
                i += 1
                if i >= len(args):
                    return known("set -o only prints the options")
                if args[i].text not in _SET_OPTIONS or dynamic(args[i]):
                    return _ask(f"set -o {args[i].text} changes how the shell reads commands")
            elif c not in _SET_FLAGS:
                return _ask(f"set {t} changes how the shell reads commands")
        i += 1
    return known("set only changes shell options that do not hide commands")


_DECLARE = Spec(short_arg="")


def _declare(name: str, args: tuple[Word, ...]) -> Effect:
    """export/declare/typeset/local/readonly: each NAME or NAME=value is checked."""
    for a in args:
        t = a.text
        if a.literal and t[:1] in ("-", "+") and "=" not in t:
            if "n" in t[1:] and name != "export":
                return _ask(f"{name} -n makes a name refer to another variable")
            continue
        why = _variable(a, f"{name} sets")
        if why:
            return _ask(why)
        if a.text.partition("=")[2].startswith("("):
            return _ask(f"{name}: array subscripts in a compound assignment can run commands")
    return known(f"{name} only sets or prints variables")


def _reader(spec: Spec, var_opts: frozenset[str], ask_opts: Mapping[str, str]) -> Handler:
    """Builtins whose operands (or some options) name variables they assign.

    Bash builtins stop reading options at the first operand, so only words before
    it could be options; one known only at run time could be `-v PATH`.
    """

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        s = scan(spec, args, stop_at_operand=True)
        if s.problem:
            return unknown(f"{name}: {s.problem}")
        if s.rest and dynamic(s.rest[0]):
            return unknown(f"{name}: an argument known only at run time could be an option")
        for o in s.opts:
            if o.name in ask_opts:
                return _ask(ask_opts[o.name])
        targets = [o.args[0] for o in s.opts if o.name in var_opts and o.args]
        if name == "getopts":
            targets.extend(s.rest[1:2])
        elif name != "printf":
            targets.extend(s.rest)
        for t in targets:
            why = _variable(t, f"{name} sets")
            if why:
                return _ask(why)
        return known(f"{name} only reads input into variables or prints")

    return handler


def _hash(_name: str, args: tuple[Word, ...]) -> Effect:
    if any(a.text.startswith("-") and "p" in a.text for a in args) or any(map(dynamic, args)):
        return _ask("hash -p sets where a command name points")
    return known("hash only looks up or forgets command paths")


def _umask(_name: str, args: tuple[Word, ...]) -> Effect:
    if all(a.literal and a.text in ("-S", "-p") for a in args):
        return known("umask only prints")
    return unknown("umask changes the permissions of files created later")


def _exec(_name: str, args: tuple[Word, ...]) -> Effect:
    """exec: replaces the shell (or, without a command, reopens its descriptors)."""
    s = scan(Spec(short_arg="a"), args, stop_at_operand=True)
    runs = (Run(SimpleCommand(s.rest)),) if s.rest else ()
    reason = "exec replaces the shell" if s.rest else "exec reopens the shell's descriptors"
    return Effect(False, reason, ask=reason, runs=runs)


def _unset(_name: str, args: tuple[Word, ...]) -> Effect:
    for a in args:
        if dynamic(a) or "[" in a.text:
            return _ask(f"unset {a.text}: array subscripts are evaluated as arithmetic")
    return known("unset only removes variables or functions")


def _none(reason: str) -> Handler:
    def handler(_name: str, _args: tuple[Word, ...]) -> Effect:
        return known(reason)

    return handler


HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        **{n: (lambda why: lambda _name, _args: _ask(why))(r) for n, r in _ALWAYS_ASK.items()},
        "cd": _cd,
        "pushd": _cd,
        "popd": _popd,
        "set": _set,
        **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), _declare),
        "read": _reader(Spec(short_arg="adnNptui"), frozenset("a"), {}),
        "mapfile": _reader(
            Spec(short_arg="dnOsuCc"), frozenset(), {"C": "mapfile -C runs a callback"}
        ),
        "readarray": _reader(
            Spec(short_arg="dnOsuCc"), frozenset(), {"C": "readarray -C runs a callback"}
        ),
        "printf": _reader(Spec(short_arg="v"), frozenset("v"), {}),
        "getopts": _reader(Spec(), frozenset(), {}),
        "hash": _hash,
        "umask": _umask,
        "exec": _exec,
        "unset": _unset,
        "wait": _reader(Spec(short_arg="p"), names("p"), {}),
        "let": lambda _name, _args: unknown("let evaluates arithmetic, which can run commands"),
        **dict.fromkeys(
            ("exit", "return", "shift", "break", "continue", "caller"),
            _none("only changes the flow of the script"),
        ),
    }
)

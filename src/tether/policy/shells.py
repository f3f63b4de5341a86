"""Shells given a command string, and programs that run commands as another user.

`sh -c 'ls; rm x'` is judged by parsing the string (with the same parser as the
command line) and judging each command in it. A string known only at run time
asks; a script file, stdin, a login or interactive shell (startup files) are not
known. `sudo`, `doas`, `su`, `runuser`, `pkexec` are never known (the policy
denies them by name), but the command they run is judged too, so rules on it
still apply.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType

from tether.policy import shellparse
from tether.policy.argscan import Spec, scan
from tether.policy.effects import Effect, Run, dynamic, names, unknown
from tether.policy.shellparse import SimpleCommand, Word

__all__ = ["HANDLERS", "shell_script"]

Handler = Callable[[str, tuple[Word, ...]], Effect]

_SHELL_LONG = names("--norc --noprofile --posix --noediting --restricted --verbose")
_SHELL_FLAGS = frozenset("euxvfnCrah")
_SET_OPTIONS = names("errexit nounset xtrace verbose noglob noclobber noexec pipefail posix")


def shell_script(name: str, text: str) -> Effect:
    """The commands in a literal script string, as runs; its problems ask."""
    try:
        parsed = shellparse.parse(text)
    except Exception:  # an unparsable string is a question, never a crash
        why = f"{name} -c: the command string could not be parsed"
        return Effect(False, why, ask=why)
    ask = "; ".join(f"{name} -c: {p}" for p in parsed.problems) or None
    runs = tuple(Run(c) for c in parsed.commands)
    return Effect(True, f"{name} -c runs the commands in its string", ask=ask, runs=runs)


def _shell(name: str, args: tuple[Word, ...]) -> Effect:
    """`bash [options] -c 'string' [name [args]]`.

    Options that make the shell itself unknown (startup files, `-O`, unknown ones)
    do not stop the reading: the string's commands are still judged, so that
    `bash -lc 'sudo ls'` is denied like `sudo ls`.
    """
    command_string = False
    doubt: str | None = None
    if name in _NOT_BASH:  # e.g. zsh `${(e)x}` evaluates, `*(e:cmd:)` runs code
        doubt = f"{name} reads some words differently from bash (they can run code)"
    i, n = 0, len(args)
    while i < n:
        a = args[i]
        t = a.text
        if dynamic(a):
            break
        if t in ("--", "-"):
            i += 1
            break
        if t.startswith("--"):
            if t not in _SHELL_LONG:
                doubt = doubt or f"{name} {t} is not known (startup files, debugger, ...)"
            if t in ("--rcfile", "--init-file"):
                i += 1
            i += 1
            continue
        if t[:1] not in ("-", "+") or len(t) < 2:
            break
        for c in t[1:]:
            if c == "c":
                command_string = True
            elif c in "oO":
                i += 1
                if c == "O" or i >= n or args[i].text not in _SET_OPTIONS or dynamic(args[i]):
                    doubt = doubt or f"{name} -{c} with this option changes how it reads commands"
            elif c in "li":
                doubt = doubt or f"a login or interactive {name} runs startup files"
            elif c == "s":
                return unknown(f"{name} -s reads commands from stdin")
            elif c not in _SHELL_FLAGS:
                doubt = doubt or f"{name} -{c} is not known"
        i += 1
    operands = args[i:]
    if not command_string:
        if operands:
            return unknown(doubt or f"{name} runs a script file")
        return unknown(doubt or f"{name} reads commands from stdin")
    if not operands:
        return unknown(f"{name} -c without a command string")
    if not operands[0].literal:
        why = f"{name} -c with a command string known only at run time"
        return Effect(False, why, ask=why)
    effect = shell_script(name, operands[0].text)
    return replace(effect, known=False, reason=doubt) if doubt else effect


def _as_user(spec: Spec) -> Handler:
    """sudo/doas/pkexec [options] [NAME=value]... COMMAND: never known; COMMAND judged."""

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        why = f"{name} runs a command as another user"
        s = scan(spec, args, stop_at_operand=True)
        if s.problem or s.hidden:
            return unknown(why)
        rest = s.rest
        assignments: list[tuple[str, Word]] = []
        while rest and rest[0].literal and "=" in rest[0].text and name == "sudo":
            key, _, value = rest[0].text.partition("=")
            assignments.append((key, Word(value)))
            rest = rest[1:]
        runs = (Run(SimpleCommand(rest, tuple(assignments))),) if rest else ()
        return Effect(False, why, runs=runs)

    return handler


_SU = Spec(
    short_arg="cgGswu",
    long_arg=MappingProxyType(
        dict.fromkeys(("command", "session-command", "group", "supp-group", "shell", "user"), 1)
    ),
)


def _su(name: str, args: tuple[Word, ...]) -> Effect:
    """su/runuser: `-c 'string'` is parsed; `runuser -u USER CMD` runs CMD."""
    why = f"{name} runs commands as another user"
    s = scan(_SU, args)
    if s.problem or s.hidden:
        return unknown(why)
    if name == "runuser" and s.has(frozenset({"u", "user"})):
        return Effect(False, why, runs=(Run(SimpleCommand(s.operands)),) if s.operands else ())
    strings = [o.args[0] for o in s.opts if o.name in ("c", "command", "session-command")]
    if not strings:
        return unknown(why)
    if not strings[-1].literal:
        return Effect(False, why, ask=f"{name} -c with a command string known only at run time")
    inner = shell_script(name, strings[-1].text)
    return Effect(False, why, ask=inner.ask, runs=inner.runs)


_SHELL_NAMES = ("sh", "bash", "dash", "ksh", "mksh", "zsh", "ash", "yash", "posh")
_NOT_BASH = frozenset({"zsh", "ksh", "mksh", "yash"})
_FOREIGN = ("fish", "csh", "tcsh", "nu", "pwsh", "xonsh", "elvish", "rc", "es")

HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        **dict.fromkeys(_SHELL_NAMES, _shell),
        **dict.fromkeys(
            _FOREIGN, lambda name, _args: unknown(f"{name} is a shell whose language is not read")
        ),
        "sudo": _as_user(
            Spec(
                short_arg="CDgpRrtTUu",
                long_arg=MappingProxyType(
                    dict.fromkeys(
                        names(
                            "user group chdir chroot prompt role type command-timeout other-user "
                            "close-from"
                        ),
                        1,
                    )
                ),
            )
        ),
        "doas": _as_user(Spec(short_arg="Cu")),
        "pkexec": _as_user(Spec(long_arg=MappingProxyType({"user": 1}))),
        "su": _su,
        "runuser": _su,
    }
)

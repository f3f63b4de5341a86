"""Programs that run another command: judged by what they run.

The wrapper's own verdict covers only its options (`time -o FILE` writes FILE);
the command it runs comes back as a `Run` and is judged on its own, so `timeout 5
rm x` is as strict as `rm x`. `xargs` gives its command more arguments from stdin
(`Run.extra_args`); `env NAME=value` passes its assignments on, so the usual
checks (`LD_PRELOAD`, `PATH`) apply. A wrapper whose own arguments are known only
at run time could be running anything: not known.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType

from tether.policy.argscan import Spec, scan
from tether.policy.effects import (
    Effect,
    Run,
    dynamic,
    known,
    names,
    read_paths,
    unknown,
    write_paths,
)
from tether.policy.envnames import risky_name
from tether.policy.shellparse import SimpleCommand, Word

__all__ = ["HANDLERS"]

Handler = Callable[[str, tuple[Word, ...]], Effect]


def _runs(
    name: str,
    words: tuple[Word, ...],
    *,
    reads: tuple[Word, ...] = (),
    writes: tuple[Word, ...] = (),
    assignments: tuple[tuple[str, Word], ...] = (),
    extra_args: bool = False,
) -> Effect:
    """The wrapper's own effect, plus the command it runs (if any)."""
    runs = (Run(SimpleCommand(words, assignments), extra_args),) if words else ()
    w = write_paths(writes)
    if any(map(dynamic, writes)):
        return unknown(f"{name} writes a path known only at run time")
    reason = f"{name} runs the command after it" if words else f"{name} alone runs nothing"
    if w:
        reason += f" and writes {', '.join(w)}"
    return Effect(True, reason, read_paths(reads), w, runs=runs)


def _options_then_command(spec: Spec, *, skip: int = 0) -> Handler:
    """`NAME [options] [skip words] COMMAND [ARGS]`, options before the command."""

    def handler(name: str, args: tuple[Word, ...]) -> Effect:
        s = scan(spec, args, stop_at_operand=True)
        if s.problem or s.hidden:
            return unknown(f"{name}: {s.problem or 'an argument known only at run time'}")
        for o in s.opts:
            if o.name in spec.unknown:
                return unknown(spec.unknown[o.name])
        reads = tuple(o.args[-1] for o in s.opts if o.name in spec.reads and o.args)
        writes = tuple(o.args[-1] for o in s.opts if o.name in spec.writes and o.args)
        rest = s.rest[skip:]
        if len(s.rest) < skip:
            return known(f"{name} without a command runs nothing")
        if any(map(dynamic, s.rest[:skip])):
            return unknown(f"{name}: an argument known only at run time")
        return _runs(name, rest, reads=reads, writes=writes)

    return handler


def _nice(name: str, args: tuple[Word, ...]) -> Effect:
    """`nice [-n N | -N | --adjustment=N] [COMMAND]`."""
    i = 0
    while i < len(args):
        a = args[i]
        t = a.text
        if dynamic(a):
            return unknown("nice: an argument known only at run time")
        if t == "--":
            i += 1
            break
        if re.fullmatch(r"--?[+-]?\d+|-n[+-]?\d+|--adjustment=\S*", t):
            i += 1
        elif t in ("-n", "--adjustment"):
            i += 2
        elif t.startswith("-"):
            return unknown(f"nice option {t} is not known")
        else:
            break
    return _runs(name, args[i:])


_ENV_FLAGS = names("-i - --ignore-environment -0 --null -v --debug --list-signal-handling")


def _env(name: str, args: tuple[Word, ...]) -> Effect:
    """`env [-i] [-u NAME] [NAME=value]... [COMMAND [ARGS]]`; alone it prints."""
    assignments: list[tuple[str, Word]] = []
    i = 0
    while i < len(args):
        a = args[i]
        t = a.text
        if dynamic(a):
            break  # taken as the command name, which asks (it is known only at run time)
        if t == "--":
            i += 1
            continue
        if t in _ENV_FLAGS or re.match(r"--(default|ignore|block)-signal(=|$)", t):
            i += 1
        elif t in ("-u", "--unset"):
            i += 2
        elif t.startswith(("-u", "--unset=")):
            i += 1
        elif t.startswith(("-C", "--chdir")):
            return unknown("env -C runs the command in another directory")
        elif t.startswith(("-S", "--split-string")):
            return unknown("env -S splits a string into a command")
        elif t.startswith("-"):
            return unknown(f"env option {t} is not known")
        elif "=" in t:
            key, _, value = t.partition("=")
            assignments.append((key, Word(value)))
            i += 1
        else:
            break
    if i >= len(args):
        return known("env only prints the environment")
    return _runs(name, args[i:], assignments=tuple(assignments))


def _command(name: str, args: tuple[Word, ...]) -> Effect:
    """`command -v/-V NAME` only looks up; `command [-p] CMD` runs CMD."""
    i = 0
    lookup = False
    while i < len(args) and args[i].literal and args[i].text.startswith("-"):
        t = args[i].text
        i += 1
        if t == "--":
            break
        if not set(t[1:]) <= set("pvV"):
            return unknown(f"command {t} is not known")
        lookup = lookup or "v" in t or "V" in t
    if lookup:
        return known("command -v only looks a name up")
    if i < len(args) and dynamic(args[i]) and args[i].text.startswith("-"):
        return unknown("command: an argument known only at run time")
    return _runs(name, args[i:])


def _builtin(name: str, args: tuple[Word, ...]) -> Effect:
    if not args:
        return Effect(False, "builtin without a command", ask="builtin without a command")
    return _runs(name, args)


def _xargs(name: str, args: tuple[Word, ...]) -> Effect:
    """xargs COMMAND gets more arguments from stdin: `Run.extra_args`."""
    s = scan(_XARGS, args, stop_at_operand=True)
    if s.problem or s.hidden:
        return unknown(f"xargs: {s.problem or 'an argument known only at run time'}")
    marks = [o.args[0].text if o.args else "{}" for o in s.opts if o.name in ("I", "i")]
    marks += [o.args[0].text if o.args else "{}" for o in s.opts if o.name == "replace"]
    command = s.rest or (Word("echo"),)
    if marks and marks[-1] and marks[-1] in command[0].text:
        return unknown("xargs takes the command name itself from stdin")
    reads = tuple(o.args[-1] for o in s.opts if o.name in ("a", "arg-file") and o.args)
    effect = _runs(name, command, reads=reads, extra_args=True)
    for o in s.opts:
        why = risky_name(o.args[0].text) if o.name == "process-slot-var" and o.args else None
        if why:
            return replace(effect, ask=why)
    return effect


_XARGS = Spec(
    short_arg="aEdILnPs",
    short_optarg="eil",
    long_arg=MappingProxyType(
        dict.fromkeys(
            ("arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"), 1
        )
    ),
)

HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        "timeout": _options_then_command(
            Spec(short_arg="sk", long_arg=MappingProxyType({"signal": 1, "kill-after": 1})),
            skip=1,
        ),
        "nice": _nice,
        "nohup": lambda name, args: _runs(
            name,
            args[1:] if args[:1] and args[0].text == "--" else args,
            writes=(Word("nohup.out"),),
        ),
        "env": _env,
        "command": _command,
        "builtin": _builtin,
        "time": _options_then_command(
            Spec(
                short_arg="of",
                long_arg=MappingProxyType({"output": 1, "format": 1}),
                writes=frozenset({"o", "output"}),
            )
        ),
        "stdbuf": _options_then_command(
            Spec(
                short_arg="ioe",
                long_arg=MappingProxyType(dict.fromkeys(("input", "output", "error"), 1)),
            )
        ),
        "ionice": _options_then_command(
            Spec(
                short_arg="cnpPu",
                long_arg=MappingProxyType(
                    dict.fromkeys(("class", "classdata", "pid", "pgid", "uid"), 1)
                ),
                unknown=MappingProxyType(
                    dict.fromkeys(
                        ("p", "P", "u", "pid", "pgid", "uid"), "ionice changes other processes"
                    )
                ),
            )
        ),
        "xargs": _xargs,
    }
)

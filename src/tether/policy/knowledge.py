"""What commands do: built-in knowledge of read-only programs and risky flags.

`judge` takes one parsed simple command and says what it would do, as far as
tether knows: wrappers (`timeout`, `env`, `xargs`, `find -exec`, `sh -c '...'`, ...)
are looked through, so the command they run is judged too; redirections become
reads and writes of their targets. No I/O, no rules, no modes: `decide` adds those.

The knowledge itself lives in one module per family (`readonly`, `infocmds`, `filecmds`,
`builtins`, `wrappers`, `shells`, `findcmd`, `gitcmds`, `sedscript`, `awkprog`,
`programs`); each answers with an `effects.Effect`, and this module adds what the
shell does around the program and judges what the program runs.

Paths in `reads`/`writes` are as written (`~/x`, `../y`, `src/*.py`): a glob is a
pattern for paths; a word known only at run time (`$HOME/x`, `$(cmd)`) is given as
its raw source text, so `decide` sees a location it cannot place and asks.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from tether.policy import (
    awkprog,
    builtins,
    filecmds,
    findcmd,
    gitcmds,
    infocmds,
    programs,
    readonly,
    sedscript,
    shellparse,
    shells,
    wrappers,
)
from tether.policy.effects import Effect, dynamic, names, path_of, read_paths, write_paths
from tether.policy.envnames import risky_name
from tether.policy.shellparse import Redirect, SimpleCommand, Word

__all__ = ["Judgement", "is_read_only_script", "judge", "judge_script"]


@dataclass(frozen=True, slots=True)
class Judgement:
    """What one command does.

    `argv` is the command as judged (name normalised: `/bin/rm` -> `rm`), which rules
    match against. `effects_known` is True when reading `reads` and writing
    `writes` is *all* it does (so with no writes it is read-only); False means it may
    do anything (`rm`, `make`, `python -c`, an unknown program). Paths are as
    written; `decide` resolves them against the workspace. `ask` is a reason the
    command must be at least "ask" whatever the rules say (it cannot be proven
    plain: `eval`, a variable as command name, `LD_PRELOAD=...`). `source` is the
    text of the simple command it came from.
    """

    argv: tuple[str, ...]
    effects_known: bool
    reason: str
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    ask: str | None = None
    source: str = ""

    @property
    def read_only(self) -> bool:
        return self.effects_known and not self.writes and self.ask is None


Handler = Callable[[str, tuple[Word, ...]], Effect]

_HANDLERS: Mapping[str, Handler] = MappingProxyType(
    {
        **programs.HANDLERS,
        **readonly.HANDLERS,
        **infocmds.HANDLERS,
        **filecmds.HANDLERS,
        **builtins.HANDLERS,
        **wrappers.HANDLERS,
        **shells.HANDLERS,
        "find": findcmd.judge_find,
        "git": gitcmds.judge_git,
        "sed": sedscript.judge_sed,
        "gsed": sedscript.judge_sed,
        **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), awkprog.judge_awk),
    }
)
_BIN_DIRS = names(
    "/bin /usr/bin /usr/local/bin /sbin /usr/sbin /usr/local/sbin /opt/homebrew/bin "
    "/opt/homebrew/sbin"
)
_MAX_DEPTH = 10
_OUTPUT = frozenset({">", ">>", ">|", "&>", "&>>"})
_NOTHING = frozenset({"<<", "<<-", "<<<"})


def judge(command: SimpleCommand) -> list[Judgement]:
    """The command's own judgement first, then those of the commands it runs."""
    return _judge(command, "", 0)


def judge_script(source: str) -> tuple[list[Judgement], tuple[str, ...]]:
    """Parse `source` and judge every simple command; also the script's problems."""
    parsed = shellparse.parse(source)
    return [j for c in parsed.commands for j in judge(c)], parsed.problems


def is_read_only_script(source: str) -> bool:
    """True only when every command of `source` is known to change nothing: the test
    for skipping a checkpoint, so anything unsure counts as a change."""
    judgements, problems = judge_script(source)
    return not problems and all(j.read_only for j in judgements)


def program_name(text: str) -> str:
    """`/usr/bin/git` -> `git`; other paths (`./x.sh`, `bin/x`) stay as they are."""
    if not text.startswith("/"):
        return text
    path = "/" + posixpath.normpath(text).lstrip("/")
    head, base = posixpath.split(path)
    return base if head in _BIN_DIRS and base else text


def _judge(command: SimpleCommand, outer_source: str, depth: int) -> list[Judgement]:
    source = command.source or outer_source
    words = command.words
    argv = tuple(w.text for w in words)
    if words and words[0].literal:
        argv = (program_name(argv[0]), *argv[1:])
    if command.opaque:
        why = "; ".join(command.opaque)
        return [Judgement(argv, False, why, ask=why, source=source)]
    if depth > _MAX_DEPTH:
        why = "commands nested too deeply to judge"
        return [Judgement(argv, False, why, ask=why, source=source)]
    asks: list[str] = [w for w in (risky_name(n) for n, _ in command.assignments) if w]
    reads, writes, redirect_asks = _redirects(command.redirects)
    asks.extend(redirect_asks)
    if not words:
        effect = Effect(True, "only sets variables")
    elif dynamic(words[0]) or words[0].glob:
        why = "the command name is known only at run time"
        effect = Effect(False, why, ask=why)
    else:
        effect = _dispatch(argv[0], words[1:])
    if effect.ask:
        asks.append(effect.ask)
    reason = effect.reason
    if writes:
        reason += f"; output goes to {', '.join(writes)}"
    own = Judgement(
        argv=argv,
        effects_known=effect.known,
        reason=reason,
        reads=tuple(dict.fromkeys((*reads, *effect.reads))),
        writes=tuple(dict.fromkeys((*writes, *effect.writes))),
        ask="; ".join(dict.fromkeys(asks)) or None,
        source=source,
    )
    out = [own]
    for run in effect.runs:
        inner = _judge(run.command, source, depth + 1)
        out.extend(_with_stdin_args(inner) if run.extra_args else inner)
    return out


def _dispatch(name: str, args: tuple[Word, ...]) -> Effect:
    if "/" in name:
        return Effect(False, f"runs a program by path: {name}")
    handler = _HANDLERS.get(name, programs.judge_other)
    try:
        return handler(name, args)
    except Exception as e:  # a gap in our knowledge must be a question, never a crash
        return Effect(False, f"{name}: could not be judged ({type(e).__name__})")


def _with_stdin_args(inner: list[Judgement]) -> list[Judgement]:
    """xargs: more arguments come from stdin; only a program read-only with any
    arguments stays read-only (its further reads are paths known only then)."""
    first = inner[0]
    if first.read_only and first.argv and readonly.any_args_safe(first.argv[0]):
        return [replace(first, reason=first.reason + " (and reads paths from stdin)"), *inner[1:]]
    why = "xargs gives it more arguments from stdin"
    return [replace(j, effects_known=False, reason=f"{j.reason}; {why}") for j in inner]


def _redirects(
    redirects: tuple[Redirect, ...],
) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """(reads, writes, asks) of a command's redirections."""
    reads: list[Word] = []
    writes: list[Word] = []
    asks: list[str] = []
    for r in redirects:
        op = r.op.lstrip("0123456789")
        target = r.target
        if target is None or op in _NOTHING:
            continue
        if op in (">&", "<&") and target.literal and (target.text.isdigit() or target.text == "-"):
            continue
        if dynamic(target) or target.glob:
            asks.append(f"redirects to a path known only at run time: {path_of(target)}")
        elif op in _OUTPUT or op == ">&":
            writes.append(target)
        elif op in ("<", "<&"):
            reads.append(target)
        elif op == "<>":
            reads.append(target)
            writes.append(target)
        else:
            asks.append(f"an unknown redirection {r.op}")
    return read_paths(reads), write_paths(writes), asks

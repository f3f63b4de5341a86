"""What commands do: built-in knowledge of read-only programs and risky flags.

`judge` takes one parsed simple command and says what it would do, as far as
tether knows: wrappers (`timeout`, `env`, `xargs`, `find -exec`, `sh -c '...'`, ...)
are looked through, so the command they run is judged too; redirections become
reads and writes of their targets. No I/O, no rules, no modes: `decide` adds those.
"""

from __future__ import annotations

from dataclasses import dataclass

from tether.policy.shellparse import SimpleCommand

__all__ = ["Judgement", "judge", "judge_script"]


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


def judge(command: SimpleCommand) -> list[Judgement]:  # pragma: no cover - to be implemented
    raise NotImplementedError


def judge_script(source: str) -> tuple[list[Judgement], tuple[str, ...]]:  # pragma: no cover
    """Parse `source` and judge every simple command; also the script's problems."""
    raise NotImplementedError

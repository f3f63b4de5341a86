"""Permission decisions per second over a mixed corpus of shell commands.

The corpus is the test fixture `tests/policy/fixtures/commands.toml` (read-only work,
destructive commands hidden every way, privilege, unparseable text) plus generated
combinations of its commands: chains joined by `;`, `&&`, `||`, `|` and newlines, and
commands wrapped in `$(...)`, `bash -c '...'` and `timeout`. Each command goes
through the real `decide` in `default` mode with the built-in rules and a few user
rules, one call at a time, as the gate makes them. Beside it, in the same run and over
the same commands: `shlex.split` of each command, the cheapest possible "parse", for
scale. Target: median ≤ 1 ms per command.

    python bench/policy.py [--commands 4000] [--rounds 3] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import shlex
import statistics
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tether.policy.actions import ShellAction
from tether.policy.decide import decide
from tether.policy.rules import RuleSpec, compile_rules

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "policy" / "fixtures" / "commands.toml"
WORKSPACE = Path("/work/ws")
HOME = Path("/home/u")
SEPARATORS = ["; ", " && ", " || ", " | ", "\n"]
USER_RULES = [
    RuleSpec("Bash(npm run test:*)", "allow", "--allow"),
    RuleSpec("Bash(git push:*)", "ask", "bench"),
    RuleSpec("Bash(rm -rf:*)", "deny", "--deny"),
    RuleSpec("Read(~/notes/**)", "allow", "--allow"),
    RuleSpec("Edit(src/**)", "allow", "--allow"),
]


def corpus_commands() -> list[str]:
    data = tomllib.loads(CORPUS.read_text(encoding="utf-8"))
    return [
        case if isinstance(case, str) else case["cmd"]
        for section in data["section"]
        for case in section["cases"]
    ]


def mixed(base: list[str], total: int, seed: int) -> list[str]:
    """The corpus once, then generated combinations of it up to `total` commands."""
    rng = random.Random(seed)
    commands = list(base)
    while len(commands) < total:
        shape = rng.random()
        if shape < 0.6:
            parts = rng.sample(base, rng.randint(2, 4))
            line = parts[0]
            for part in parts[1:]:
                line += rng.choice(SEPARATORS) + part
        elif shape < 0.75:
            line = f'echo "$({rng.choice(base)}\n)"'
        elif shape < 0.9:
            line = f"bash -c {shlex.quote(rng.choice(base))}"
        else:
            line = f"timeout 5 {rng.choice(base)}"
        commands.append(line)
    return commands


def timed(fn: Callable[[str], object], commands: list[str]) -> list[float]:
    """Seconds per command, one call at a time."""
    clock = time.perf_counter
    times: list[float] = []
    for command in commands:
        start = clock()
        fn(command)
        times.append(clock() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    base = corpus_commands()
    commands = mixed(base, args.commands, args.seed)
    rules = compile_rules(USER_RULES)

    def judge(command: str) -> str:
        return decide(
            ShellAction(command), rules, "default", workspace=WORKSPACE, home=HOME
        ).verdict

    def split(command: str) -> object:
        try:
            return shlex.split(command, comments=True)
        except ValueError:
            return None

    verdicts = Counter(judge(c) for c in commands)  # warm-up, and what the corpus holds
    rows: dict[str, list[float]] = {"shlex.split (baseline)": [], "decide": []}
    for _ in range(args.rounds):  # interleaved rounds, so both see the same noise
        rows["shlex.split (baseline)"] += timed(split, commands)
        rows["decide"] += timed(judge, commands)

    print(
        f"commands: {len(commands)} ({len(base)} from the corpus, the rest generated)"
        f" x {args.rounds} rounds   python: {sys.version.split()[0]}"
    )
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
    print(f"{'':24} {'total':>9} {'per second':>11} {'median':>9} {'p99':>9} {'max':>9}")
    for name, times in rows.items():
        q = statistics.quantiles(times, n=100)
        print(
            f"{name:24} {sum(times):8.2f}s {len(times) / sum(times):11,.0f} "
            f"{statistics.median(times) * 1000:7.3f}ms {q[98] * 1000:7.3f}ms "
            f"{max(times) * 1000:7.2f}ms"
        )
    ours = statistics.median(rows["decide"])
    ratio = ours / statistics.median(rows["shlex.split (baseline)"])
    verdict = "meets" if ours <= 0.001 else "MISSES"
    print(f"decide / shlex.split: {ratio:.1f}x   target median 1 ms: {verdict}")


if __name__ == "__main__":
    main()

"""Crash trials: kill -9 a scripted session at random moments, `--continue` it, check it.

Runs the trial of `tests/e2e/test_resume.py` many times and says, for each kill, where
it landed (read from the transcript: the last entry written before the `resume`
entry) and whether the resumed session finished with every recorded step intact and
no call run twice.

    python bench/crash_trials.py [--trials 30] [--how random|model|tool]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tests.e2e.test_resume import WRITES, trial


def landed(state: Path) -> str:
    """Where the kill hit, from the entries before the first resume."""
    path = next((state / "sessions").glob("*.jsonl"))
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    resumes = [i for i, e in enumerate(entries) if e["type"] == "resume"]
    if not resumes:
        return "before the session's transcript existed (a fresh start finished it)"
    before = entries[: resumes[0]]
    last = before[-1]
    kind = last["type"]
    if kind == "message":
        role = last["message"]["role"]
        if role == "assistant" and last["message"].get("tool_calls"):
            return "after the reply, before or during the command"
        return "during the model call" if role in ("user", "tool") else f"after a {role} entry"
    if kind == "checkpoint":
        return f"during a step (checkpoint {last.get('phase')} written)"
    return f"after a {kind} entry"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--how", default="random", choices=("random", "model", "tool"))
    args = parser.parse_args()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TETHER_", "OPENAI_", "ANTHROPIC_", "XDG_"))
    }
    places: collections.Counter[str] = collections.Counter()
    failures = 0
    for seed in range(args.trials):
        with tempfile.TemporaryDirectory() as name:
            root = Path(name)
            (root / "home").mkdir()
            env.update(HOME=str(root / "home"), TETHER_MODEL="scripted", NO_COLOR="1")
            got: dict[str, Any] = trial(env, root, args.how, 1000 + seed)
            lines = got["lines"]
            ok = (
                len(lines) == len(set(lines))
                and all(f"wrote {t}" in got["last"] for t in got["recorded"])
                and {int(t.split("-")[0]) for t in lines} == set(range(1, WRITES + 1))
            )
            failures += not ok
            places[landed(got["state"])] += 1
    print(f"{args.trials} trials ({args.how}); failures: {failures}")
    for place, count in places.most_common():
        print(f"  {count:3}  killed {place}")


if __name__ == "__main__":
    main()

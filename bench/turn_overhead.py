"""Harness overhead per turn in a 200-turn scripted episode, through the real CLI.

For each turn, the overhead is the time between two consecutive requests arriving at
the endpoint minus the tool's own run time (from tether's stream-json events). That
includes the HTTP round trip, so beside it runs a baseline in the same process: a bare
httpx loop sending the same growing conversations with no harness at all.
Target: tether's median ≤ 3 ms.

    python bench/turn_overhead.py [--turns 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    arrivals: list[float] = []

    def step(_request: dict[str, Any]) -> Turn:
        arrivals.append(time.perf_counter())
        n = len(arrivals)
        if n >= args.turns:
            return Turn(text="done")
        return Turn(
            text=f"Step {n}.",
            tool_calls=(ScriptedCall("read_file", {"path": "notes.txt", "limit": n % 7 + 1}),),
        )

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "notes.txt").write_text("".join(f"note {i}\n" for i in range(20)))
        with ScriptedEndpoint([step] * (args.turns + 5)) as ep:
            env = {
                **os.environ,
                "TETHER_BASE_URL": ep.url,
                "TETHER_MODEL": "bench",
                "TETHER_HOME": os.path.join(tmp, "state"),
                "HOME": tmp,
            }
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "tether",
                    "-p",
                    "go",
                    "--max-turns",
                    str(args.turns + 1),
                    "--output-format",
                    "stream-json",
                ],
                env=env,
                cwd=ws,
                capture_output=True,
                text=True,
                check=True,
            )
            events = [json.loads(line) for line in proc.stdout.splitlines()]
            tool_s = [e["duration_s"] for e in events if e["type"] == "tool_finished"]
            gaps = [b - a for a, b in pairwise(arrivals)]
            overhead = [g - t for g, t in zip(gaps, tool_s, strict=False)]

            # Baseline: the same conversations replayed with a bare HTTP loop.
            bodies = [r.body for r in ep.requests]
            arrivals.clear()
            with httpx.Client(base_url=ep.url) as client:
                for body in bodies[: args.turns]:
                    with client.stream("POST", "/chat/completions", json=body) as response:
                        for _ in response.iter_lines():
                            pass
            bare = [b - a for a, b in pairwise(arrivals)]

    def row(name: str, values: list[float]) -> None:
        q = statistics.quantiles(values, n=10)
        print(
            f"{name:44} {statistics.median(values) * 1000:7.2f}ms {q[-1] * 1000:7.2f}ms "
            f"{max(values) * 1000:7.2f}ms"
        )

    print(f"turns: {len(overhead)}   final request: {len(bodies[-1]['messages'])} messages")
    print(f"{'':44} {'median':>9} {'p90':>9} {'max':>9}")
    row("bare httpx loop: gap between requests", bare)
    row("tool run time (read_file, in tether)", tool_s)
    row("tether: gap between requests - tool time", overhead)
    med = statistics.median(overhead)
    print(
        f"tether overhead beyond the bare loop: {(med - statistics.median(bare)) * 1000:.2f} ms; "
        f"target median ≤ 3 ms: {'meets' if med <= 0.003 else 'MISSES'}"
    )


if __name__ == "__main__":
    main()

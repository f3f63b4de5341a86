"""Harness overhead per turn in a 200-turn scripted episode, through the real CLI.

The scripted endpoint stamps when it wrote the last byte of each answer and when the
next request's headers arrived. The gap between them, minus the tool's run time as
the loop measured it around the dispatcher (recorded in tether's transcript; it
includes the dispatcher's thread hand-off), is what tether spends per turn: reading the
answer, dispatching, writing the transcript, building and sending the next request.
Beside it, in the same run, a baseline: a bare httpx loop sending the very same
requests with no harness at all (so its gap is the HTTP client's own cost).
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
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

from tether.models.scripted import RecordedRequest, ScriptedCall, ScriptedEndpoint, Turn


def gaps(requests: list[RecordedRequest]) -> list[float]:
    """Time from each answer's last byte to the next request's arrival."""
    return [
        b.received_at - a.answered_at for a, b in pairwise(requests) if a.answered_at is not None
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()

    def step(request: dict[str, Any]) -> Turn:
        n = len(request["messages"]) // 2
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
            cmd = [sys.executable, "-m", "tether", "-p", "go", "--max-turns", str(args.turns + 1)]
            subprocess.run(cmd, env=env, cwd=ws, capture_output=True, check=True)
            (transcript,) = (Path(tmp) / "state" / "sessions").glob("*.jsonl")
            entries = [json.loads(line) for line in transcript.read_text().splitlines()]
            tool_s = [
                e["duration_s"] for e in entries if "duration_s" in e and e["type"] == "message"
            ]
            whole = gaps(ep.requests)
            ours = [g - t for g, t in zip(whole, tool_s, strict=True)]
            first_bare = len(ep.requests)
            with httpx.Client(base_url=ep.url) as client:
                for recorded in ep.requests[:first_bare]:
                    with client.stream("POST", "/chat/completions", json=recorded.body) as reply:
                        for _ in reply.iter_lines():
                            pass
            bare = gaps(ep.requests[first_bare:])
            messages = len(ep.requests[first_bare - 1].body["messages"])

    def row(name: str, values: list[float]) -> None:
        q = statistics.quantiles(values, n=10)
        print(
            f"{name:46} {statistics.median(values) * 1000:7.2f}ms {q[-1] * 1000:7.2f}ms "
            f"{max(values) * 1000:7.2f}ms"
        )

    print(f"turns: {len(ours) + 1}   last request: {messages} messages")
    print(f"{'':46} {'median':>9} {'p90':>9} {'max':>9}")
    row("baseline: bare httpx loop, answer -> request", bare)
    row("tether: answer -> next request, all included", whole)
    row("  of which tool time (dispatcher + read_file)", tool_s)
    row("tether: answer -> next request, minus tool", ours)
    med = statistics.median(ours)
    print(f"target median ≤ 3 ms: {'meets' if med <= 0.003 else 'MISSES'}")


if __name__ == "__main__":
    main()

"""Persistence is O(1) per turn: appending to the transcript does not slow down as it grows.

Measures the cost of writing one turn (assistant message + tool result + fsync) early
in a session and after 2,000 turns, beside a naive baseline that rewrites the whole
history as one JSON file each turn.

    python bench/persistence.py [--turns 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from tether.memory.sessions import Transcript
from tether.messages import Message, ToolCall, ToolResult
from tether.observe.redact import Redactor


def turn(i: int) -> tuple[Message, Message]:
    call = ToolCall(f"call_{i}", "read_file", json.dumps({"path": f"src/mod{i}.py"}))
    body = "".join(f"{n:6}\tline {n} of module {i}\n" for n in range(40))
    return (
        Message(role="assistant", content=f"Reading module {i}.", tool_calls=(call,)),
        Message.tool(ToolResult(call.id, call.name, body)),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Transcript.create(Path(tmp), "bench", {"model": "m"}, Redactor(["sk-bench-key-123"]))
        ours: list[float] = []
        for i in range(args.turns):
            start = time.perf_counter()
            for message in turn(i):
                t.message(message)
            t.sync()
            ours.append(time.perf_counter() - start)
        t.close()

        naive_path = Path(tmp) / "naive.json"
        history: list[dict[str, object]] = []
        naive: list[float] = []
        for i in range(args.turns):
            start = time.perf_counter()
            history.extend(m.to_dict() for m in turn(i))
            with naive_path.open("w") as handle:
                json.dump(history, handle)
                handle.flush()
                os.fsync(handle.fileno())
            naive.append(time.perf_counter() - start)

    window = 100
    print(f"turns: {args.turns}; median ms per turn over the first and last {window} turns")
    print(f"{'':38} {'first':>8} {'last':>8} {'last/first':>11}")
    for name, times in (
        ("tether transcript (append + fsync)", ours),
        ("baseline: rewrite whole file", naive),
    ):
        first = statistics.median(times[:window])
        last = statistics.median(times[-window:])
        print(f"{name:38} {first * 1000:7.3f} {last * 1000:7.3f} {last / first:10.2f}x")


if __name__ == "__main__":
    main()

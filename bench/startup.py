"""Time from process start to the first request on the endpoint.

Runs `tether -p` against a local scripted endpoint many times and reports the median
time from just before the process is spawned to the moment the endpoint holds the
first request. Beside it, measured the same way and interleaved run by run (so that
both see the same noise on a busy machine): `python -c pass` (the interpreter alone)
and `python -c "import httpx"`, start to exit. Target: tether ≤ 250 ms here.

`pip install .` byte-compiles the package; an editable install under
PYTHONDONTWRITEBYTECODE=1 (as on the dev machines) never does, and would then pay
~45 ms of compiling on every start. So the benchmark compiles tether first, as an
install would, and measures that.

    python bench/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tether
from tether.models.scripted import ScriptedEndpoint, Turn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    compileall.compile_dir(Path(tether.__file__).parent, quiet=1)
    arrivals: list[float] = []

    def first(_request: dict[str, Any]) -> Turn:
        arrivals.append(time.perf_counter())
        return Turn(text="ok")

    def wall(argv: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        return time.perf_counter() - start

    rows: dict[str, list[float]] = {
        "python -c pass (process start to exit)": [],
        'python -c "import httpx" (start to exit)': [],
        "tether -p: process start to first request": [],
    }
    baseline, with_httpx, ours = rows.values()
    with tempfile.TemporaryDirectory() as tmp, ScriptedEndpoint([first] * (args.runs + 2)) as ep:
        env = {
            **os.environ,
            "TETHER_BASE_URL": ep.url,
            "TETHER_MODEL": "bench",
            "TETHER_HOME": os.path.join(tmp, "state"),
            "HOME": tmp,
        }
        env.pop("TETHER_API_KEY", None)
        cmd = [sys.executable, "-m", "tether", "-p", "hi"]
        subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, check=True)  # warm caches
        for _ in range(args.runs):
            baseline.append(wall([sys.executable, "-c", "pass"]))
            with_httpx.append(wall([sys.executable, "-c", "import httpx"]))
            start = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, check=True)
            ours.append(arrivals[-1] - start)

    print(f"runs: {args.runs} each, interleaved   python: {sys.version.split()[0]}")
    print(f"{'':46} {'median':>8} {'p90':>8} {'min':>8}")
    for name, times in rows.items():
        q = statistics.quantiles(times, n=10)
        print(
            f"{name:46} {statistics.median(times) * 1000:7.1f}ms {q[-1] * 1000:7.1f}ms "
            f"{min(times) * 1000:7.1f}ms"
        )
    ratio = statistics.median(ours) / statistics.median(baseline)
    verdict = "meets" if statistics.median(ours) <= 0.250 else "MISSES"
    print(f"tether / python -c pass: {ratio:.2f}x   target 250 ms: {verdict}")


if __name__ == "__main__":
    main()

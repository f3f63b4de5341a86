"""Time from process start to the first request on the endpoint.

Runs `tether -p` against a local scripted endpoint many times and reports the median
time from just before the process is spawned to the moment the endpoint holds the
first request, beside baselines measured the same way in the same run:
`python -c pass` (the interpreter alone) and `python -c "import httpx"`.
Target: tether ≤ 250 ms here.

`pip install .` byte-compiles the package; an editable install under
PYTHONDONTWRITEBYTECODE=1 (as on the dev machines) never does, and would then pay
~45 ms of compiling on every start. So the benchmark compiles tether first, as an
install would, and measures that.

    python bench/startup.py [--runs 20]
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
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    compileall.compile_dir(Path(tether.__file__).parent, quiet=1)

    arrivals: list[float] = []

    def first(_request: dict[str, Any]) -> Turn:
        arrivals.append(time.perf_counter())
        return Turn(text="ok")

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
        arrivals.clear()
        ours: list[float] = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, check=True)
            ours.append(arrivals[-1] - start)

    def wall(argv: list[str]) -> list[float]:
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            times.append(time.perf_counter() - start)
        return times

    python_pass = wall([sys.executable, "-c", "pass"])
    httpx_import = wall([sys.executable, "-c", "import httpx"])
    rows = [
        ("python -c pass (process start to exit)", python_pass),
        ('python -c "import httpx" (start to exit)', httpx_import),
        ("tether -p: process start to first request", ours),
    ]
    print(f"runs: {args.runs}   python: {sys.version.split()[0]}")
    print(f"{'':46} {'median':>8} {'p90':>8} {'min':>8}")
    for name, times in rows:
        q = statistics.quantiles(times, n=10)
        print(
            f"{name:46} {statistics.median(times) * 1000:7.1f}ms {q[-1] * 1000:7.1f}ms "
            f"{min(times) * 1000:7.1f}ms"
        )
    ratio = statistics.median(ours) / statistics.median(python_pass)
    verdict = "meets" if statistics.median(ours) <= 0.250 else "MISSES"
    print(f"tether / python -c pass: {ratio:.2f}x   target 250 ms: {verdict}")


if __name__ == "__main__":
    main()

"""Time from process start to the first request on the endpoint.

Runs `tether -p` against a local scripted endpoint many times and reports the median
time from just before the process is spawned to the moment the endpoint holds the
first request. Beside it, measured the same way and interleaved run by run (so that
both see the same noise on a busy machine): `python -c pass` (the interpreter alone)
and `python -c "import httpx"`, start to exit. Target: tether ≤ 250 ms here, over
each wire protocol: OpenAI chat completions, Anthropic Messages, and the text tool
protocol (on the OpenAI wire).

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
    }
    variants = {
        "tether -p, openai: start to first request": ({}, []),
        "tether -p, anthropic: start to first request": ({"TETHER_PROVIDER": "anthropic"}, []),
        "tether -p, text protocol: start to first req.": ({}, ["--tool-protocol", "text"]),
    }
    baseline, with_httpx = rows.values()
    runs = args.runs * len(variants) + 2 * len(variants)
    with tempfile.TemporaryDirectory() as tmp, ScriptedEndpoint([first] * runs) as ep:
        env = {
            **os.environ,
            "TETHER_MODEL": "bench",
            "TETHER_HOME": os.path.join(tmp, "state"),
            "HOME": tmp,
        }
        env.pop("TETHER_API_KEY", None)
        commands = []
        for name, (extra_env, flags) in variants.items():
            url = ep.root if extra_env.get("TETHER_PROVIDER") == "anthropic" else ep.url
            run_env = {**env, **extra_env, "TETHER_BASE_URL": url}
            cmd = [sys.executable, "-m", "tether", "-p", "hi", *flags]
            subprocess.run(cmd, env=run_env, cwd=tmp, capture_output=True, check=True)  # warm
            commands.append((rows.setdefault(name, []), cmd, run_env))
        for _ in range(args.runs):
            baseline.append(wall([sys.executable, "-c", "pass"]))
            with_httpx.append(wall([sys.executable, "-c", "import httpx"]))
            for times, cmd, run_env in commands:
                start = time.perf_counter()
                subprocess.run(cmd, env=run_env, cwd=tmp, capture_output=True, check=True)
                times.append(arrivals[-1] - start)

    print(f"runs: {args.runs} each, interleaved   python: {sys.version.split()[0]}")
    print(f"{'':48} {'median':>8} {'p90':>8} {'min':>8}")
    for name, times in rows.items():
        q = statistics.quantiles(times, n=10)
        print(
            f"{name:48} {statistics.median(times) * 1000:7.1f}ms {q[-1] * 1000:7.1f}ms "
            f"{min(times) * 1000:7.1f}ms"
        )
    for times, _, _ in commands:
        ratio = statistics.median(times) / statistics.median(baseline)
        verdict = "meets" if statistics.median(times) <= 0.250 else "MISSES"
        name = next(n for n, t in rows.items() if t is times)
        print(f"{name.split(':')[0]:46} / python -c pass: {ratio:.2f}x   250 ms: {verdict}")


if __name__ == "__main__":
    main()

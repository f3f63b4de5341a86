"""Added cost per command of each sandbox backend, against a plain subprocess.

Runs a trivial command (`true`) many times exactly as the agent's bash tool does
(`run_command`: bash -c, own process group, output captured), once unconfined and
once through each backend that works here, interleaved so that all see the same
noise. Target: ≤ 5 ms median added per command.

For scale it also times bwrap alone, outside tether (`bwrap <the same options> bash -c
true` against `bash -c true` through plain subprocess.run): what the kernel and bwrap
cost before tether adds anything (the cgroup per command, the joining shell).

    python bench/sandbox.py [--runs 100]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path

from tether.sandbox.base import SandboxPolicy, protected_paths
from tether.sandbox.choose import backend
from tether.tools.shell import run_command


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    # a workspace outside /tmp, as real ones are (bwrap then mounts nothing extra)
    with (
        tempfile.TemporaryDirectory(dir="/var/tmp") as ws_dir,
        tempfile.TemporaryDirectory() as tmp,
    ):
        ws = Path(ws_dir)
        policy = SandboxPolicy(workspace=ws, tmp=Path(tmp), readonly=protected_paths(ws))
        launchers = {"plain subprocess (baseline)": None}
        skipped = {}
        boxes = []
        for name in ("bwrap", "landlock"):
            box = backend(name)
            boxes.append(box)
            reason = box.probe()
            if reason is None:
                launchers[name] = partial(box.launch, policy=policy)
            else:
                skipped[name] = reason
        times: dict[str, list[float]] = {name: [] for name in launchers}
        raw: dict[str, list[float]] = {"bash -c true": [], "bwrap alone": []}
        bwrap = backend("bwrap")
        bwrap_argv = None
        if "bwrap" in launchers:
            launch = bwrap.launch(["bash", "-c", "true"], policy)
            bwrap_argv = launch.argv[launch.argv.index(shutil.which("bwrap") or "bwrap") :]
            if launch.cleanup is not None:
                launch.cleanup()
        bwrap.close()
        for _ in range(args.runs):
            for name, launcher in launchers.items():
                start = time.perf_counter()
                result = run_command("true", cwd=ws, env=env, timeout=30, launcher=launcher)
                times[name].append(time.perf_counter() - start)
                assert result.exit_code == 0, (name, result.output)
            if bwrap_argv is not None:
                for name, argv in (
                    ("bash -c true", ["bash", "-c", "true"]),
                    ("bwrap alone", bwrap_argv),
                ):
                    start = time.perf_counter()
                    subprocess.run(argv, cwd=ws, check=True)
                    raw[name].append(time.perf_counter() - start)
        for box in boxes:
            box.close()
    base = statistics.median(times["plain subprocess (baseline)"])
    print(f"runs: {args.runs} each, interleaved; command: true (through bash -c)")
    print(f"{'':30} {'median':>9} {'p90':>9} {'added':>9}")
    for name, values in times.items():
        q = statistics.quantiles(values, n=10)
        med = statistics.median(values)
        added = "" if name.startswith("plain") else f"{(med - base) * 1000:+8.2f}ms"
        print(f"{name:30} {med * 1000:8.2f}ms {q[-1] * 1000:8.2f}ms {added:>9}")
    for name, reason in skipped.items():
        print(f"{name:30} not run: {reason}")
    if raw["bwrap alone"]:
        alone = statistics.median(raw["bwrap alone"]) - statistics.median(raw["bash -c true"])
        print(f"for scale: bwrap alone (no tether, no cgroup) adds {alone * 1000:+.2f}ms")
    worst = max(
        (statistics.median(v) - base for n, v in times.items() if n in ("bwrap", "landlock")),
        default=0.0,
    )
    print(f"target ≤ 5 ms added (median): {'meets' if worst <= 0.005 else 'MISSES'}")


if __name__ == "__main__":
    main()

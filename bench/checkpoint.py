"""A checkpoint after a small step costs ≤ 150 ms on a 5,000-file workspace.

Generates a git repository of 5,000 files (sizes from a few hundred bytes to ~60 KB,
up to four directories deep, committed) plus an ignored `build/` directory of 1,500
files, takes a first checkpoint, then repeats: modify 3 files, checkpoint. The private
index is the stat cache, so only the changed files are hashed. Also timed: a checkpoint
with nothing changed (no commit is made) and, once, the first checkpoint and a restore
of the step before.

    python bench/checkpoint.py [--files 5000] [--steps 40] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tether.memory.checkpoints import CheckpointStore

TARGET_MS = 150.0
DIRS = ["src", "tests", "docs", "lib", "tools"]
SUBDIRS = ["core", "util", "io", "net", "model", "ui", "cli", "db"]


def generate(root: Path, files: int, rng: random.Random) -> list[Path]:
    """A committed repository with realistic sizes and an ignored build directory."""
    paths: list[Path] = []
    for i in range(files):
        depth = rng.choice([1, 2, 2, 3, 3, 4])
        parts = [rng.choice(DIRS)] + [rng.choice(SUBDIRS) for _ in range(depth - 1)]
        path = root.joinpath(*parts, f"mod_{i}.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        size = int(rng.lognormvariate(8, 1.0)) % 60_000 + 200
        line = f"def f_{i}(x):  # generated for the checkpoint benchmark\n"
        path.write_text((line * (size // len(line) + 1))[:size])
        paths.append(path)
    (root / ".gitignore").write_text("build/\n*.pyc\n__pycache__/\n")
    build = root / "build"
    for i in range(1500):
        out = build / f"obj{i % 30}" / f"unit_{i}.o"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(rng.randbytes(2_000))
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "generated"], cwd=root, check=True)
    return paths


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        paths = generate(workspace, args.files, rng)
        time.sleep(1.1)  # let the generated files age out of git's racy-clean window
        start = time.perf_counter()
        store = CheckpointStore(Path(tmp) / "home", workspace)
        store.create(session="bench", turn=0, tool="start", summary="first")
        first = ms(start)
        store.create(session="bench", turn=0, tool="warm", summary="warm the stat cache")

        steps: list[float] = []
        for turn in range(1, args.steps + 1):
            for path in rng.sample(paths, 3):
                with path.open("a") as handle:
                    handle.write(f"# edited in step {turn}\n")
            start = time.perf_counter()
            cp = store.create(session="bench", turn=turn, tool="edit", summary="3 files")
            steps.append(ms(start))
            assert not cp.unchanged and len(cp.changed) == 3, cp

        idle: list[float] = []
        for turn in range(10):
            start = time.perf_counter()
            store.create(session="bench", turn=turn, tool="read", summary="nothing")
            idle.append(ms(start))

        before = store.list()[-2].id
        start = time.perf_counter()
        store.restore(before)
        restore = ms(start)

    def p90(times: list[float]) -> float:
        return statistics.quantiles(times, n=10)[-1]

    median = statistics.median(steps)
    print(f"workspace: {args.files} files + 1500 ignored; {args.steps} steps of 3 edited files")
    print(f"{'':36} {'median':>8} {'p90':>8}")
    print(f"{'checkpoint after 3 edits (ms)':36} {median:8.1f} {p90(steps):8.1f}")
    print(
        f"{'checkpoint, nothing changed (ms)':36} {statistics.median(idle):8.1f} {p90(idle):8.1f}"
    )
    print(f"first checkpoint: {first:.0f} ms; restore of one step: {restore:.0f} ms")
    verdict = "ok" if median <= TARGET_MS else "MISSED"
    print(f"target: median ≤ {TARGET_MS:.0f} ms per checkpoint — {verdict}")


if __name__ == "__main__":
    main()

"""Time to apply a 20-hunk patch to a 10,000-line file, in both patch formats.

Generates a Python-like file of 10,000 lines and a patch with 20 hunks spread
evenly over it (3 context lines each side, one line replaced and one added),
once in the `*** Begin Patch` envelope with `@@ def` anchors and once as a
unified diff whose line numbers are stale by 7 lines (so the offset search runs).
Each run restores the file first (untimed), then times `apply_patch_text`: parse,
plan in memory, write atomically (fsync included). `--check` times are the same
without the write. Target: ≤ 20 ms median.

    python bench/patch.py [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tether.patch import apply_patch_text

LINES = 10_000
HUNKS = 20
STALE = 7


def source() -> list[str]:
    lines: list[str] = []
    while len(lines) < LINES:
        n = len(lines) // 5
        lines += [f"def func_{n}(x):", f"    y = x * {n}", f"    z = y + {n}", "    return z", ""]
    return lines[:LINES]


def targets() -> list[int]:
    """0-based index of each replaced line: a `y = ...` line, spread over the file."""
    step = LINES // HUNKS
    return [(i * step + step // 2) // 5 * 5 + 1 for i in range(HUNKS)]


def envelope(lines: list[str]) -> str:
    out = ["*** Begin Patch", "*** Update File: big.py"]
    for at in targets():
        out.append(f"@@ {lines[at - 1]}")
        out += [f"-{lines[at]}", f"+{lines[at]}  # changed", "+    w = 0"]
        out += [f" {line}" for line in lines[at + 1 : at + 4]]
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def unified(lines: list[str]) -> str:
    out = ["diff --git a/big.py b/big.py", "--- a/big.py", "+++ b/big.py"]
    for shift, at in enumerate(targets()):
        start = at - 3
        out.append(f"@@ -{start + 1 + STALE},7 +{start + 1 + shift + STALE},8 @@")
        out += [f" {line}" for line in lines[start:at]]
        out += [f"-{lines[at]}", f"+{lines[at]}  # changed", "+    w = 0"]
        out += [f" {line}" for line in lines[at + 1 : at + 4]]
    return "\n".join(out) + "\n"


def timed(root: Path, original: bytes, patch: str, *, check: bool) -> float:
    (root / "big.py").write_bytes(original)
    start = time.perf_counter()
    apply_patch_text(patch, root, check=check)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    lines = source()
    original = ("\n".join(lines) + "\n").encode()
    patches = {"envelope": envelope(lines), "unified diff": unified(lines)}
    times: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        root = Path(tmp)
        results = {}
        for name, patch in patches.items():
            (root / "big.py").write_bytes(original)
            apply_patch_text(patch, root)
            results[name] = (root / "big.py").read_bytes()
        assert results["envelope"] == results["unified diff"], "the two formats disagree"
        for _ in range(args.runs):
            for name, patch in patches.items():
                for check in (False, True):
                    key = f"{name}{' --check' if check else ''}"
                    times.setdefault(key, []).append(timed(root, original, patch, check=check))
    print(f"runs: {args.runs} each, interleaved; file: {LINES:,} lines, {len(original):,} bytes")
    print(f"patch: {HUNKS} hunks; unified line numbers stale by {STALE}")
    print(f"{'':26} {'median':>9} {'p90':>9}")
    for name, values in times.items():
        q = statistics.quantiles(values, n=10)
        print(f"{name:26} {statistics.median(values) * 1000:8.2f}ms {q[-1] * 1000:8.2f}ms")
    worst = max(statistics.median(v) for n, v in times.items() if "check" not in n)
    print(f"target ≤ 20 ms median: {'meets' if worst <= 0.020 else 'MISSES'}")


if __name__ == "__main__":
    main()

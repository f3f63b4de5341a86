"""Reading tool calls out of text stays linear in the reply's length.

For each reply shape that once made the text protocol's parser rescan the reply
(quadratic or worse), `parse_reply` is timed at 100 KB and at 1 MB. Linear work
grows about 10x from one to the other; quadratic work would grow about 100x. The
stream filter that hides call JSON from the user is timed the same way, fed in
3-character deltas. Beside each, the baseline: `str.count` over the same text (one
pass of C code), for scale.

    python bench/text_parse.py
    PYTHONPATH=<older checkout>/src python bench/text_parse.py --small   # 100 KB only
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from tether.models.text_protocol import _HoldBack
from tether.models.text_tools import parse_reply
from tether.observe.events import TextDelta

NAMES = frozenset({"bash", "read_file", "list_files"})
CALL = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'


def shapes(size: int) -> dict[str, str]:
    return {
        "unclosed thinking": "<think>" * (size // 7),
        "thinking pairs": "<think></think>" * (size // 15) + CALL,
        "fence marks without newlines": "bash " + "```" * (size // 3),
        "many empty fences": "bash\n" + "```x\n```\n" * (size // 9),
        "many valid blocks": CALL * (size // len(CALL)),
        "unclosed named objects": '{"name": "bash", "arguments": ' * (size // 30),
        "spaces after a tag": "<tool_call>" + " " * size,
        "pythonic candidates": " " * size + "bash",
        "nested lists": "bash " + "[" * (size // 2) + "]" * (size // 2),
        "ReAct lines": "Action: bash\n" * (size // 13),
        "stream filter, 3-char deltas": "word " * (size // 5) + CALL,
    }


def timed(fn: Callable[[], object], runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(name: str, text: str) -> float:
    if name.startswith("stream filter"):

        def feed() -> None:
            hold = _HoldBack(lambda _event: None)
            for i in range(0, len(text), 3):
                hold(TextDelta(text[i : i + 3]))

        return timed(feed)
    counter = iter(range(10**9))
    return timed(lambda: parse_reply(text, NAMES, lambda: f"c{next(counter)}"))


def main() -> None:
    small = shapes(100_000)
    if "--small" in sys.argv:  # an older checkout, where 1 MB could take minutes
        for name, text in small.items():
            print(f"{name:32} {run(name, text) * 1000:9.1f}ms at 100 KB")
        return
    large = shapes(1_000_000)
    print(f"{'shape':32} {'100 KB':>9} {'1 MB':>9} {'growth':>7} {'str.count 1 MB':>15}")
    worst = 0.0
    for name in small:
        a, b = run(name, small[name]), run(name, large[name])
        base = timed(lambda text=large[name]: text.count("<"))
        worst = max(worst, b / a)
        print(f"{name:32} {a * 1000:7.1f}ms {b * 1000:7.1f}ms {b / a:6.1f}x {base * 1000:13.2f}ms")
    verdict = "linear" if worst < 25 else "GROWS FASTER THAN LINEAR"
    print(f"largest growth 100 KB -> 1 MB: {worst:.1f}x (linear ~10x, quadratic ~100x): {verdict}")


if __name__ == "__main__":
    main()

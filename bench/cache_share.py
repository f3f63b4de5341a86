"""Cache-read share per wire protocol: how much of each request the provider's cache serves.

One scripted session — a bug hunt of `--turns` turns reading files one at a time, with
a "wide" turn of 18 parallel reads every 10 turns — runs for real (`Session` against
the local scripted endpoint) over each way of talking to a model:

- openai native: OpenAI chat completions; the endpoint caches any shared prefix
  (from 1,024 tokens, in 128-token blocks), as OpenAI does;
- anthropic native: Messages with tether's `cache_control` breakpoints; the endpoint
  caches only at breakpoints and finds an earlier write only within 20 blocks, as
  Anthropic does;
- anthropic, moving breakpoint only (baseline): the same, without tether's extra
  breakpoint where the previous request ended, so a wide turn loses the cache;
- text protocol on each wire.

Share = cached input tokens / input tokens over the session, from the usage the
endpoint reports. Cost is at claude-sonnet-4-5's list prices for every row (the same
prices, so rows compare; cache writes at 1.25x input, reads at 0.1x).

    python bench/cache_share.py [--turns 40]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tether.models.anthropic_request as anthropic_request
from tether.config import CliOverrides, load_settings
from tether.messages import Usage
from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn
from tether.session import Session

MODEL = "claude-sonnet-4-5"


def workspace(root: Path, files: int) -> None:
    for n in range(files):
        body = "".join(
            f"def handler_{n}_{i}(request):\n    return respond(request, code={i + n})\n\n"
            for i in range(40 + (n * 7) % 60)
        )
        (root / f"mod_{n:03d}.py").write_text(body)


def script(turns: int) -> list[Turn]:
    out: list[Turn] = []
    for t in range(turns - 1):
        if t % 10 == 9:
            calls = tuple(
                ScriptedCall("read_file", {"path": f"mod_{(t + i) % 60:03d}.py"}) for i in range(18)
            )
            out.append(Turn(text=f"Reading 18 modules at once ({t}).", tool_calls=calls))
        else:
            call = ScriptedCall("read_file", {"path": f"mod_{t % 60:03d}.py"})
            out.append(Turn(text=f"Looking at module {t}.", tool_calls=(call,)))
    out.append(Turn(text="Found it: handler_7_3 returns the wrong code."))
    return out


@contextmanager
def moving_breakpoint_only() -> Iterator[None]:
    saved = anthropic_request.LOOKBACK_MARGIN
    anthropic_request.LOOKBACK_MARGIN = 10**9  # never add the extra breakpoint
    try:
        yield
    finally:
        anthropic_request.LOOKBACK_MARGIN = saved


def run(provider: str, protocol: str, turns: int, tmp: Path) -> tuple[Usage, float | None]:
    root = tmp / f"{provider}-{protocol}"
    root.mkdir()
    workspace(root, 60)
    steps: list[Any] = script(turns)
    if protocol == "text":
        steps = [as_text(t) for t in steps]
    with ScriptedEndpoint(steps) as endpoint:
        env = {
            "HOME": str(tmp),
            "TETHER_HOME": str(tmp / f"state-{provider}-{protocol}"),
            "TETHER_PROVIDER": provider,
            "TETHER_BASE_URL": endpoint.root if provider == "anthropic" else endpoint.url,
            "TETHER_MODEL": MODEL,
            "TETHER_API_KEY": "bench-key-0123456789",
            "PATH": os.environ.get("PATH", ""),
        }
        overrides = CliOverrides(
            workspace=root,
            permission_mode="auto",
            max_turns=turns + 1,
            tool_protocol="native" if protocol != "text" else "text",
            checkpoints=False,
        )
        settings = load_settings(overrides, environ=env)
        with Session(settings, environ=env) as session:
            result = session.run("Find the handler that returns the wrong code.")
    assert result.stop_reason == "completed", result
    return result.usage, result.cost_usd


def as_text(turn: Turn) -> Turn:
    import json

    blocks = [
        "<tool_call>\n" + json.dumps({"name": c.name, "arguments": c.arguments}) + "\n</tool_call>"
        for c in turn.tool_calls
    ]
    return Turn(text="\n".join([turn.text, *blocks]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    rows: list[tuple[str, Usage, float | None]] = []
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        rows.append(("openai native", *run("openai", "native", args.turns, tmp)))
        rows.append(("openai, text protocol", *run("openai", "text", args.turns, tmp)))
        rows.append(("anthropic native (tether)", *run("anthropic", "native", args.turns, tmp)))
        with moving_breakpoint_only():
            tmp2 = tmp / "baseline"
            tmp2.mkdir()
            usage, cost = run("anthropic", "native", args.turns, tmp2)
        rows.append(("anthropic, moving breakpoint only", usage, cost))
        rows.append(("anthropic, text protocol", *run("anthropic", "text", args.turns, tmp)))
    print(f"{args.turns} turns, a wide turn of 18 reads every 10; prices: {MODEL}")
    print(f"{'':36} {'input':>9} {'cached':>9} {'written':>9} {'share':>7} {'cost $':>8}")
    for name, u, cost in rows:
        share = u.cached_tokens / u.input_tokens if u.input_tokens else 0.0
        shown = f"{cost:8.4f}" if cost is not None else "       -"
        print(
            f"{name:36} {u.input_tokens:9,} {u.cached_tokens:9,} {u.cache_write_tokens:9,} "
            f"{share:7.1%} {shown}"
        )
    ours = next(c for n, _, c in rows if n.startswith("anthropic native"))
    base = next(c for n, _, c in rows if n.startswith("anthropic, moving"))
    if ours is not None and base:
        print(f"anthropic cost, tether / moving breakpoint only: {ours / base:.2f}x")


if __name__ == "__main__":
    main()

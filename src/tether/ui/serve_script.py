"""`python -m tether.models.scripted SCRIPT.json`: serve a scripted model by hand.

The endpoint itself lives in the core and prints nothing; this front end says where
it listens and waits for Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from tether.models.scripted import ScriptedEndpoint

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tether.models.scripted")
    parser.add_argument("script", type=Path, help="JSON script: a list of turns")
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--api-key", default=None)
    args = parser.parse_args(argv)
    endpoint = ScriptedEndpoint.from_file(args.script, api_key=args.api_key, model=args.model)
    with endpoint:
        sys.stdout.write(f"serving {args.script} as model {args.model!r} at {endpoint.url}\n")
        sys.stdout.write(f"try: TETHER_BASE_URL={endpoint.url} TETHER_MODEL={args.model}\n")
        sys.stdout.write(
            f"  or: TETHER_PROVIDER=anthropic TETHER_BASE_URL={endpoint.root} "
            f"TETHER_MODEL={args.model}\n"
        )
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0

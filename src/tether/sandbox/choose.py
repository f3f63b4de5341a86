"""Which sandbox runs the commands: probed once, cached, chosen strongest-first.

Probing runs a real sandboxed command, which costs milliseconds; doing it at every
start would slow every start. The result is cached in the state directory, keyed
by what could change it: the kernel release, the bwrap binary, tether's version.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tether import __version__
from tether.errors import ConfigError
from tether.sandbox.base import Sandbox

__all__ = ["Choice", "backend", "choose", "for_run", "probe_all"]

_STRONGEST_FIRST = ("bwrap", "landlock")
_CACHE = "sandbox-probe.json"


def backend(name: str) -> Sandbox:
    """The backend called `name`; imported only when wanted."""
    if name == "bwrap":
        from tether.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox()
    if name == "landlock":
        from tether.sandbox.landlock import LandlockSandbox

        return LandlockSandbox()
    if name == "none":
        from tether.sandbox.none import NoSandbox

        return NoSandbox()
    raise ConfigError(f"Unknown sandbox {name!r}; use one of auto, bwrap, landlock, none.")


@dataclass(frozen=True, slots=True)
class Choice:
    """The backend that will run commands (None: none works), and why each did or not."""

    sandbox: Sandbox | None
    probes: dict[str, str | None] = field(default_factory=dict)
    cached: bool = False

    @property
    def name(self) -> str:
        return self.sandbox.name if self.sandbox is not None else "none"


def choose(wanted: str, state: Path, *, refresh: bool = False) -> Choice:
    """`wanted` is auto | bwrap | landlock | none; "none" is taken only when asked for."""
    if wanted == "none":
        return Choice(backend("none"), {"none": None})
    probes, cached = _probes(state, refresh=refresh)
    order = _STRONGEST_FIRST if wanted == "auto" else (wanted,)
    for name in order:
        if probes.get(name) is None and name in probes:
            return Choice(backend(name), probes, cached)
    return Choice(None, probes, cached)


def probe_all() -> dict[str, str | None]:
    """Run each backend's probe now: None where it works, else the reason."""
    results: dict[str, str | None] = {}
    for name in _STRONGEST_FIRST:
        try:
            results[name] = backend(name).probe()
        except Exception as exc:  # a probe must report, never crash the start
            results[name] = f"probe failed: {type(exc).__name__}: {exc}"
    return results


def _probes(state: Path, *, refresh: bool) -> tuple[dict[str, str | None], bool]:
    key = _cache_key()
    path = state / _CACHE
    if not refresh:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("key") == key and isinstance(data.get("probes"), dict):
                return dict(data["probes"]), True
        except (OSError, ValueError):
            pass
    probes = probe_all()
    try:
        state.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps({"key": key, "probes": probes}), encoding="utf-8")
        temp.replace(path)
    except OSError:
        pass  # no cache: probe again next time
    return probes, False


def _cache_key() -> dict[str, object]:
    """What a probe's answer depends on; any change means probing again."""
    bwrap = shutil.which("bwrap")
    stat = Path(bwrap).stat() if bwrap else None
    return {
        "tether": __version__,
        "kernel": os.uname().release,
        "bwrap": [bwrap, stat.st_size, int(stat.st_mtime)] if stat else None,
        "uid": os.getuid(),
    }


def for_run(
    wanted: str, state: Path, *, permission_mode: str, skip: bool
) -> tuple[Sandbox | None, list[str]]:
    """The sandbox a run uses, and what the user must be told about it.

    `auto` permission mode runs everything not denied, which is only safe inside a
    sandbox: without one it refuses to start, unless the user said
    --dangerously-skip-sandbox. No silent downgrade: every weaker outcome is said.
    """
    if skip:
        return None, [
            "SANDBOX OFF (--dangerously-skip-sandbox): commands run with all your rights."
        ]
    choice = choose(wanted, state)
    if choice.name == "none" and choice.sandbox is not None:
        if permission_mode == "auto":
            raise ConfigError(
                "auto permission mode runs commands without asking, so it needs a sandbox, "
                "and --sandbox none turns it off. Pick a sandbox, or pass "
                "--dangerously-skip-sandbox if you really mean it."
            )
        return choice.sandbox, ["SANDBOX OFF (--sandbox none): commands run with all your rights."]
    if choice.sandbox is not None:
        caveat = choice.sandbox.caveat
        return choice.sandbox, [f"Sandbox {choice.name}: {caveat}."] if caveat else []
    why = "; ".join(f"{name}: {reason}" for name, reason in choice.probes.items() if reason)
    if permission_mode == "auto":
        raise ConfigError(
            f"auto permission mode needs a sandbox, and none works here ({why}). Install "
            "bubblewrap (e.g. `apt-get install bubblewrap`), or use a kernel with Landlock, "
            "or run without --permission-mode auto. To run unconfined anyway, pass "
            "--dangerously-skip-sandbox."
        )
    return None, [
        f"No sandbox works here ({why}): commands run unconfined. Commands that are not "
        "read-only still need approval. Install bubblewrap to confine them."
    ]

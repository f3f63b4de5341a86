"""`tether doctor` and `tether sandbox exec`: see what tether sees, try what it does.

Doctor reports each sandbox backend (works, or why not), the one a run would use,
the endpoint configuration without secrets, the paths in use, and the project
instructions and skills a session would load (with what is wrong with them).
`sandbox exec` runs one command exactly as the agent's `bash` tool would, to try the
sandbox by hand.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TextIO

from tether import __version__
from tether.config import Settings, public_endpoint
from tether.errors import ConfigError
from tether.memory.instructions import config_home, load_instructions
from tether.memory.skills import discover_skills, skill_search_paths
from tether.sandbox.base import SandboxPolicy, protected_paths
from tether.sandbox.choose import backend, choose
from tether.sandbox.environment import tool_environment
from tether.sandbox.landlock import abi_version
from tether.sandbox.limits import ProcessLimits

__all__ = ["doctor", "sandbox_exec"]


def doctor(settings: Settings, out: TextIO, *, environ: Mapping[str, str] | None = None) -> int:
    """`environ`: where to find the user's config home (default: this process's)."""
    choice = choose(settings.sandbox, settings.home, refresh=True)
    w = out.write
    w(f"tether {__version__} · python {sys.version.split()[0]} at {sys.executable}\n\n")
    w("sandbox\n")
    for name, reason in choice.probes.items():
        w(f"  {name:9} {'works' if reason is None else 'does not work: ' + reason}")
        if name == "landlock":
            w(f" (kernel ABI {abi_version()})")
        caveat = backend(name).caveat if reason is None else None
        w(f"; but {caveat}\n" if caveat else "\n")
    if settings.skip_sandbox:
        chosen = "none (--dangerously-skip-sandbox)"
    elif choice.sandbox is None:
        chosen = "none works here: commands would run unconfined"
    else:
        chosen = choice.name + (" (asked for: none)" if choice.name == "none" else "")
    w(f"  {'chosen':9} {chosen}   [setting: {settings.sandbox}]\n")
    w(f"  {'network':9} {'on' if settings.sandbox_network else 'off'} for commands\n")
    limit = ProcessLimits().describe()
    w(f"  {'processes':9} at most {settings.max_processes} per command; enforced by {limit}\n\n")
    w("endpoint\n")
    w(f"  protocol  {settings.provider}\n")
    w(f"  base url  {public_endpoint(settings.base_url)}\n")
    w(f"  model     {settings.model or '(not set: TETHER_MODEL, MODEL= in ~/.agents/env)'}\n")
    if settings.model:
        from tether.models.catalogue import lookup
        from tether.models.choose import tool_protocol

        info = lookup(settings.model, settings.models)
        prices = (
            f"${info.input:g} in / ${info.output:g} out per million tokens"
            if info.input is not None and info.output is not None
            else "prices unknown"
        )
        known = "catalogue" if info.known else "not in the catalogue: defaults"
        window = settings.context_window or info.context_window
        w(f"  window    {window:,} tokens; {prices} ({known})\n")
        w(f"  tools     {tool_protocol(settings, info)} protocol\n")
    key = "set" if settings.api_key else "not set (TETHER_API_KEY)"
    w(f"  api key   {key}\n\n")
    w("paths\n")
    w(f"  workspace {settings.workspace}\n")
    sessions = settings.home / "sessions"
    count = len(list(sessions.glob("*.jsonl"))) if sessions.is_dir() else 0
    w(f"  state     {settings.home} ({count} sessions)\n")
    for path in settings.config_files or ():
        w(f"  config    {path}\n")
    if not settings.config_files:
        w("  config    (none: ~/.config/tether/config.toml, .tether/config.toml)\n")
    w(f"  mode      {settings.permission_mode}; {len(settings.rules.rules)} permission rules\n")
    home = config_home(os.environ if environ is None else environ)
    _instructions(settings, home, w)
    _skills(settings, home, w)
    return 0


def _instructions(settings: Settings, home: Path, w: Callable[[str], object]) -> None:
    loaded = load_instructions(
        settings.workspace, config_home=home, max_bytes=settings.instructions_max_bytes
    )
    w(f"\ninstructions (at most {settings.instructions_max_bytes:,} bytes)\n")
    for f in loaded.files:
        state = "" if not f.cut else "  not loaded" if f.used == 0 else f"  cut to {f.used:,}"
        w(f"  {f.path} ({f.size:,} bytes){state}\n")
    if not loaded.files:
        w("  (none: AGENTS.md or CLAUDE.md in the repository, ~/.config/tether/AGENTS.md)\n")
    for note in loaded.notes:
        w(f"  note: {note}\n")


def _skills(settings: Settings, home: Path, w: Callable[[str], object]) -> None:
    index = discover_skills(settings.workspace, config_home=home)
    w("\nskills\n")
    width = max((len(s.name) for s in index.skills), default=0)
    for skill in index.skills:
        w(f"  {skill.name:{width}}  {skill.path}\n")
    if not index.skills:
        where = ", ".join(
            str(p) + "/*/SKILL.md" for p in skill_search_paths(settings.workspace, home)
        )
        w(f"  (none: {where})\n")
    for problem in index.problems:
        w(f"  problem: {problem}\n")


def sandbox_exec(
    settings: Settings,
    command: str,
    *,
    backend_name: str | None,
    allow_write: tuple[Path, ...],
    network: bool,
    timeout: float,
    out: TextIO,
) -> int:
    """Run `command` as the bash tool would; the exit code is the command's."""
    from tether.tools.shell import run_command

    if backend_name is None or backend_name == "auto":
        chosen = choose(settings.sandbox, settings.home).sandbox
        if chosen is None:
            raise ConfigError("no sandbox works here; see `tether doctor`")
    else:
        chosen = backend(backend_name)
        reason = chosen.probe()
        if reason is not None:
            raise ConfigError(f"the {backend_name} sandbox does not work here: {reason}")
    with tempfile.TemporaryDirectory(prefix="tether-tmp-") as tmp:
        policy = SandboxPolicy(
            workspace=settings.workspace,
            tmp=Path(tmp),
            writable=allow_write,
            readonly=protected_paths(settings.workspace, state=settings.home, writable=allow_write),
            network=network,
            max_processes=settings.max_processes,
        )
        env = tool_environment(
            os.environ, secrets=[settings.api_key or ""], pass_env=settings.pass_env
        )
        try:
            result = run_command(
                command,
                cwd=settings.workspace,
                env=env,
                timeout=timeout,
                launcher=partial(chosen.launch, policy=policy),
            )
        finally:
            chosen.close()
    out.write(result.output)
    if result.timed_out:
        sys.stderr.write(f"tether: timed out after {timeout:g} s; process tree killed\n")
        return 124
    if result.exit_code is None:
        return 1
    return result.exit_code if result.exit_code >= 0 else 128 - result.exit_code

"""Settings, merged once from defaults, TOML files, the environment and flags.

Endpoint and credentials: flags, then `TETHER_*` / `OPENAI_*` environment variables,
then `~/.agents/env`. Everything else (limits, tool timeouts): defaults, then the
user's `~/.config/tether/config.toml`, then the project's `.tether/config.toml`, then
flags. The result is one frozen `Settings`; nothing reads the environment later.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tether.config_endpoint import DEFAULT_BASE_URLS, Provider, public_endpoint, resolve_endpoint
from tether.config_files import read_env_file, read_toml
from tether.errors import ConfigError
from tether.policy.ruleload import check_rules, flag_specs
from tether.policy.rules import RuleError, RuleSet, RuleSpec

__all__ = [
    "PERMISSION_MODES",
    "CliOverrides",
    "PermissionMode",
    "Settings",
    "load_settings",
    "public_endpoint",
    "state_home",
]

PermissionMode = Literal["default", "accept-edits", "plan", "auto"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("default", "accept-edits", "plan", "auto")
DEFAULT_BASE_URL = DEFAULT_BASE_URLS["openai"]
TOOL_PROTOCOLS = ("auto", "native", "text")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a run needs to know, decided before it starts."""

    model: str
    provider: Provider = "openai"
    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = field(default=None, repr=False)
    workspace: Path = field(default_factory=Path.cwd)
    home: Path = field(default_factory=lambda: Path.home() / ".local/state/tether")
    permission_mode: PermissionMode = "default"
    # Limits of one run (one user request); max_tokens counts input + output.
    max_turns: int = 100
    max_tokens: int | None = None
    timeout: float | None = None
    max_cost: float | None = None  # USD per run, at the model catalogue's prices
    # The model wire.
    stream: bool = True
    request_timeout: float = 600.0
    max_attempts: int = 6
    retry_base_delay: float = 1.0
    # How tools reach the model: native tool calls, a text format in the prompt, or
    # auto (native, falling back to text when the endpoint refuses tools). None: auto,
    # unless the model's catalogue entry says otherwise.
    tool_protocol: str | None = None
    thinking_budget: int | None = None  # Anthropic extended thinking, in tokens
    # Tools.
    bash_timeout: float = 120.0
    tool_timeout: float = 600.0
    output_limit: int = 30_000
    loop_guard: int = 3
    config_files: tuple[Path, ...] = ()
    rules: RuleSet = field(default_factory=RuleSet)
    # The sandbox for commands: auto | bwrap | landlock | none.
    sandbox: str = "auto"
    skip_sandbox: bool = False  # --dangerously-skip-sandbox
    sandbox_network: bool = False
    allow_write: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    max_processes: int = 512
    # Checkpoints of the workspace before and after each mutating step (for undo).
    checkpoints: bool = True
    checkpoint_max_file_bytes: int = 10 * 1024 * 1024
    # The context window (tokens) and when to shrink: soft drops old tool output,
    # compact_at (hard) compacts; fractions of the window, or token counts when > 1.
    context_window: int | None = None  # None: the model catalogue's, else 128,000
    context_soft: float = 0.6
    compact_at: float = 0.85
    keep_turns: int = 4
    # Project instructions (AGENTS.md / CLAUDE.md): at most this many bytes in all.
    instructions_max_bytes: int = 32_768
    # The project's test command for run_tests (None: detected from the project).
    test_command: str | None = None
    # Subagents (the task tool): how many run at once, and each one's turn limit.
    subagent_concurrency: int = 4
    subagent_max_turns: int = 30
    # Extra or overriding model catalogue entries, from [models."name"] in config.
    models: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """The settings as they may be written to a transcript: no secrets."""
        return {
            "model": self.model,
            "provider": self.provider,
            "endpoint": public_endpoint(self.base_url),
            "workspace": str(self.workspace),
            "permission_mode": self.permission_mode,
            "max_turns": self.max_turns,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "max_cost": self.max_cost,
            "stream": self.stream,
            "request_timeout": self.request_timeout,
            "tool_protocol": self.tool_protocol,
            "thinking_budget": self.thinking_budget,
            "max_attempts": self.max_attempts,
            "bash_timeout": self.bash_timeout,
            "tool_timeout": self.tool_timeout,
            "output_limit": self.output_limit,
            "loop_guard": self.loop_guard,
            "config_files": [str(p) for p in self.config_files],
            "rules": [r.label for r in self.rules.rules],
            "sandbox": self.sandbox,
            "skip_sandbox": self.skip_sandbox,
            "sandbox_network": self.sandbox_network,
            "allow_write": list(self.allow_write),
            "pass_env": list(self.pass_env),
            "max_processes": self.max_processes,
            "checkpoints": self.checkpoints,
            "checkpoint_max_file_bytes": self.checkpoint_max_file_bytes,
            "context_window": self.context_window,
            "context_soft": self.context_soft,
            "compact_at": self.compact_at,
            "keep_turns": self.keep_turns,
            "instructions_max_bytes": self.instructions_max_bytes,
            "test_command": self.test_command,
            "subagent_concurrency": self.subagent_concurrency,
            "subagent_max_turns": self.subagent_max_turns,
            "models": {k: dict(v) for k, v in self.models.items()},
        }


@dataclass(frozen=True, slots=True)
class CliOverrides:
    """What the command line said; None means "not given"."""

    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    workspace: Path | None = None
    permission_mode: PermissionMode | None = None
    max_turns: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    max_cost: float | None = None
    stream: bool | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    sandbox: str | None = None
    skip_sandbox: bool | None = None
    checkpoints: bool | None = None
    context_window: int | None = None
    compact_at: float | None = None
    tool_protocol: str | None = None
    thinking_budget: int | None = None


# TOML keys: section -> key -> (Settings field, type)
def load_settings(
    overrides: CliOverrides,
    *,
    environ: Mapping[str, str] | None = None,
    require_model: bool = True,
) -> Settings:
    """Merge every source into one `Settings`, or raise `ConfigError` saying what to fix."""
    env = os.environ if environ is None else environ
    home_dir = Path(env.get("HOME") or Path.home())
    workspace = (overrides.workspace or Path.cwd()).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"The workspace {workspace} is not a directory.")

    values: dict[str, Any] = {}
    config_home = Path(env.get("XDG_CONFIG_HOME") or home_dir / ".config")
    used: list[Path] = []
    specs: list[RuleSpec] = []
    project = workspace / ".tether/config.toml"
    for path in (config_home / "tether/config.toml", project):
        if path.is_file():
            file_values, file_specs = read_toml(path)
            if path == project:
                _refuse_loosening(path, file_values)
            values.update(file_values)
            specs += file_specs
            used.append(path)
    specs += flag_specs(overrides.allow, overrides.deny)
    try:
        values["rules"] = check_rules(specs, workspace=workspace, home=home_dir)
    except RuleError as exc:
        raise ConfigError(f"Bad permission rule: {exc}.") from None

    endpoint = resolve_endpoint(
        provider=overrides.provider,
        base_url=overrides.base_url,
        model=overrides.model,
        env=env,
        agents_env=read_env_file(home_dir / ".agents/env"),
        require_model=require_model,
    )

    for name in (
        "max_turns",
        "max_tokens",
        "timeout",
        "max_cost",
        "stream",
        "permission_mode",
        "sandbox",
        "skip_sandbox",
        "checkpoints",
        "context_window",
        "compact_at",
        "tool_protocol",
        "thinking_budget",
    ):
        given = getattr(overrides, name)
        if given is not None:
            values[name] = given
    values["home"] = state_home(env)

    settings = Settings(
        model=endpoint.model,
        provider=endpoint.provider,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        workspace=workspace,
        config_files=tuple(used),
        **values,
    )
    _validate(settings)
    return settings


def state_home(environ: Mapping[str, str]) -> Path:
    """Where transcripts live: $TETHER_HOME, else $XDG_STATE_HOME/tether."""
    if environ.get("TETHER_HOME"):
        return Path(environ["TETHER_HOME"]).expanduser()
    home_dir = Path(environ.get("HOME") or Path.home())
    return Path(environ.get("XDG_STATE_HOME") or home_dir / ".local/state") / "tether"


def _refuse_loosening(path: Path, values: Mapping[str, Any]) -> None:
    """A repository's own config must not open the sandbox it is confined by: a cloned
    project could otherwise turn the network on or make your home writable."""
    loose = [
        key
        for key, bad in (
            ('backend = "none"', values.get("sandbox") == "none"),
            ("network = true", values.get("sandbox_network") is True),
            ("allow_write", bool(values.get("allow_write"))),
            ("pass_env", bool(values.get("pass_env"))),
        )
        if bad
    ]
    if loose:
        raise ConfigError(
            f"{path}: a project's config may not loosen the sandbox ([sandbox] "
            + ", ".join(loose)
            + "). Put these in your own ~/.config/tether/config.toml."
        )


def _validate(s: Settings) -> None:
    if s.sandbox not in ("auto", "bwrap", "landlock", "none"):
        raise ConfigError(f"Unknown sandbox {s.sandbox!r}; use one of auto, bwrap, landlock, none.")
    if s.tool_protocol is not None and s.tool_protocol not in TOOL_PROTOCOLS:
        raise ConfigError(
            f"Unknown tool protocol {s.tool_protocol!r}; use one of {', '.join(TOOL_PROTOCOLS)}."
        )
    if s.permission_mode not in PERMISSION_MODES:
        raise ConfigError(
            f"Unknown permission mode {s.permission_mode!r}; use one of "
            + ", ".join(PERMISSION_MODES)
            + "."
        )
    positive = {
        "max_turns": s.max_turns,
        "max_tokens": s.max_tokens,
        "timeout": s.timeout,
        "max_cost": s.max_cost,
        "request_timeout": s.request_timeout,
        "max_attempts": s.max_attempts,
        "bash_timeout": s.bash_timeout,
        "tool timeout": s.tool_timeout,
        "output_limit": s.output_limit,
        "loop_guard": s.loop_guard,
        "max_processes": s.max_processes,
        "checkpoint max_file_bytes": s.checkpoint_max_file_bytes,
        "context window": s.context_window,
        "context soft": s.context_soft,
        "compact_at": s.compact_at,
        "keep_turns": s.keep_turns,
        "thinking_budget": s.thinking_budget,
        "[instructions] max_bytes": s.instructions_max_bytes,
        "[subagents] concurrency": s.subagent_concurrency,
        "[subagents] max_turns": s.subagent_max_turns,
    }
    for name, value in positive.items():
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigError(f"{name} must be a positive number, got {value}.")
    for name, value in (("soft", s.context_soft), ("compact_at", s.compact_at)):
        if s.context_window is not None and value > 1 and value >= s.context_window:
            raise ConfigError(
                f"[context] {name} = {value:g} tokens is not below the window "
                f"({s.context_window:,} tokens)."
            )
    if s.thinking_budget is not None and s.thinking_budget < 1024:
        raise ConfigError(
            f"The thinking budget must be at least 1024 tokens (Anthropic's minimum), "
            f"not {s.thinking_budget}."
        )
    if not (math.isfinite(s.retry_base_delay) and s.retry_base_delay >= 0):
        raise ConfigError(f"retry_base_delay must not be negative, got {s.retry_base_delay}.")

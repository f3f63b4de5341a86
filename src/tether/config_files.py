"""Reading tether's files: the TOML settings and the shared `~/.agents/env`.

Only known keys are accepted: a typo in a settings file is an error naming the file
and the key, not a setting silently ignored.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tether.errors import ConfigError
from tether.policy.ruleload import toml_specs
from tether.policy.rules import RuleError, RuleSpec

__all__ = ["read_env_file", "read_toml"]

_TOML_SCHEMA: dict[str, dict[str, tuple[str, type]]] = {
    "limits": {
        "max_turns": ("max_turns", int),
        "max_tokens": ("max_tokens", int),
        "timeout": ("timeout", float),
        "max_cost": ("max_cost", float),
    },
    "model": {
        "stream": ("stream", bool),
        "request_timeout": ("request_timeout", float),
        "max_attempts": ("max_attempts", int),
        "retry_base_delay": ("retry_base_delay", float),
        "tool_protocol": ("tool_protocol", str),
        "thinking_budget": ("thinking_budget", int),
    },
    "tools": {
        "bash_timeout": ("bash_timeout", float),
        "timeout": ("tool_timeout", float),
        "output_limit": ("output_limit", int),
        "loop_guard": ("loop_guard", int),
    },
    "sandbox": {
        "backend": ("sandbox", str),
        "network": ("sandbox_network", bool),
        "allow_write": ("allow_write", list),
        "pass_env": ("pass_env", list),
        "max_processes": ("max_processes", int),
    },
    "context": {
        "window": ("context_window", int),
        "soft": ("context_soft", float),
        "compact_at": ("compact_at", float),
        "keep_turns": ("keep_turns", int),
    },
    "instructions": {"max_bytes": ("instructions_max_bytes", int)},
    "tests": {"command": ("test_command", str)},
    "subagents": {
        "concurrency": ("subagent_concurrency", int),
        "max_turns": ("subagent_max_turns", int),
    },
    "checkpoints": {
        "enabled": ("checkpoints", bool),
        "max_file_bytes": ("checkpoint_max_file_bytes", int),
    },
}
_TOP_LEVEL: dict[str, tuple[str, type]] = {"permission_mode": ("permission_mode", str)}


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines; `#` comments, `export ` prefixes and quotes allowed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"Cannot read {path}: {exc.strerror}.") from None
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if not sep:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        result[key.strip()] = value
    return result


def read_toml(path: Path) -> tuple[dict[str, Any], list[RuleSpec]]:
    """Known keys only: a typo in a config file is an error, not silently ignored."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}.") from None
    values: dict[str, Any] = {}
    specs: list[RuleSpec] = []
    for key, value in data.items():
        if key == "permissions":
            try:
                specs += toml_specs(path, text, value)
            except RuleError as exc:
                raise ConfigError(f"Bad permission rule: {exc}.") from None
            continue
        if key == "models":
            values["models"] = _models(path, value)
            continue
        if key in _TOP_LEVEL:
            target, kind = _TOP_LEVEL[key]
            values[target] = _typed(path, key, value, kind)
            continue
        section = _TOML_SCHEMA.get(key)
        if section is None or not isinstance(value, dict):
            known = ", ".join(sorted([*_TOML_SCHEMA, *_TOP_LEVEL, "permissions", "models"]))
            raise ConfigError(f"{path}: unknown setting {key!r}; known: {known}.")
        for sub, sub_value in value.items():
            if sub not in section:
                known = ", ".join(sorted(section))
                raise ConfigError(f"{path}: unknown setting [{key}] {sub!r}; known: {known}.")
            target, kind = section[sub]
            values[target] = _typed(path, f"[{key}] {sub}", sub_value, kind)
    return values, specs


def _models(path: Path, value: Any) -> dict[str, dict[str, Any]]:
    """`[models."name"]` tables: entries for the model catalogue, checked key by key."""
    from tether.models.catalogue import MODEL_KEYS

    if not isinstance(value, dict):
        raise ConfigError(f'{path}: [models] must hold tables like [models."my-model"].')
    result: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        if not isinstance(entry, dict):
            raise ConfigError(f'{path}: [models."{name}"] must be a table.')
        checked: dict[str, Any] = {}
        for key, item in entry.items():
            if key not in MODEL_KEYS:
                known = ", ".join(MODEL_KEYS)
                raise ConfigError(
                    f'{path}: unknown key {key!r} in [models."{name}"]; known: {known}.'
                )
            checked[key] = _typed(path, f'[models."{name}"] {key}', item, MODEL_KEYS[key])
            if MODEL_KEYS[key] in (int, float) and checked[key] < 0:
                raise ConfigError(f'{path}: [models."{name}"] {key} must not be negative.')
            if key == "tool_protocol" and checked[key] not in ("native", "text"):
                raise ConfigError(
                    f'{path}: [models."{name}"] tool_protocol must be "native" or "text".'
                )
        result[str(name)] = checked
    return result


def _typed(path: Path, name: str, value: Any, kind: type) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: {name} must be a list of strings, got {value!r}.")
        return tuple(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(
            f"{path}: {name} must be {kind.__name__}, got {type(value).__name__} {value!r}."
        )
    return value

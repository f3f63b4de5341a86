"""Tools are plain typed functions; `@tool` turns one into a schema the model reads.

A tool function takes a `ToolContext` first, then keyword arguments with type hints.
Its docstring's first paragraph is the description; an `Args:` section describes
each argument. Returning a string is success; raising `ToolError` is a failure the
model caused and can fix.
"""

from __future__ import annotations

import inspect
import json
import math
import threading
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from tether.errors import ToolError
from tether.models.base import ToolSpec
from tether.sandbox.base import Launch
from tether.sandbox.workspace import Workspace

__all__ = ["Param", "Registry", "Tool", "ToolContext", "tool"]


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may use: the workspace, a cancel flag, the child environment, and
    the sandbox every command goes through (None: commands run unconfined).

    `overflow_dir`: where the full text of an output over `output_limit` is saved
    (None: it is only cut). The read-only tools may read it (it joins the
    workspace's readable roots), so the model can page through what was cut.
    """

    workspace: Workspace
    env: Mapping[str, str]
    cancel: threading.Event = field(default_factory=threading.Event)
    bash_timeout: float = 120.0
    output_limit: int = 30_000
    max_timeout: float = 600.0  # the most a model may ask one bash command to run
    sandbox: Callable[[Sequence[str]], Launch] | None = None
    overflow_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.overflow_dir is not None:
            readable = self.workspace.with_readable(self.overflow_dir)
            object.__setattr__(self, "workspace", readable)  # frozen: set once, here


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    kind: Any
    required: bool
    default: Any
    description: str

    def schema(self) -> dict[str, Any]:
        schema = _json_schema(self.kind)
        if self.description:
            schema["description"] = self.description
        return schema


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    params: tuple[Param, ...]
    fn: Callable[..., str]

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description=self.description,
            parameters={
                "type": "object",
                "properties": {p.name: p.schema() for p in self.params},
                "required": [p.name for p in self.params if p.required],
                "additionalProperties": False,
            },
        )

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check and coerce model-supplied arguments; every problem in one message."""
        known = {p.name: p for p in self.params}
        problems: list[str] = []
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            problems.append(f"unknown argument(s): {', '.join(map(repr, unknown))}")
        missing = [p.name for p in self.params if p.required and p.name not in arguments]
        if missing:
            problems.append(f"missing required argument(s): {', '.join(map(repr, missing))}")
        bound: dict[str, Any] = {}
        for name, value in arguments.items():
            param = known.get(name)
            if param is None:
                continue
            try:
                bound[name] = _coerce(value, param.kind)
            except (TypeError, ValueError) as exc:
                problems.append(f"argument {name!r}: {exc}")
        if problems:
            raise ToolError(
                f"Invalid arguments for tool {self.name!r}: "
                + "; ".join(problems)
                + f". Expected: {self.signature()}."
            )
        return bound

    def signature(self) -> str:
        parts = []
        for p in self.params:
            text = f"{p.name}: {_type_name(p.kind)}"
            parts.append(text if p.required else f"{text} (optional)")
        return f"{self.name}({', '.join(parts)})"


def tool(fn: Callable[..., str]) -> Tool:
    """Build a `Tool` from a function whose first parameter is the `ToolContext`."""
    hints = typing.get_type_hints(fn)
    description, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
    params: list[Param] = []
    for index, (name, parameter) in enumerate(inspect.signature(fn).parameters.items()):
        if index == 0:
            continue  # the ToolContext
        kind = hints.get(name, str)
        required = parameter.default is inspect.Parameter.empty
        params.append(
            Param(
                name=name,
                kind=kind,
                required=required,
                default=None if required else parameter.default,
                description=arg_docs.get(name, ""),
            )
        )
    return Tool(name=fn.__name__, description=description, params=tuple(params), fn=fn)


class Registry:
    """The tools a run offers, in a fixed order (the order is part of the prompt)."""

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"tool {t.name!r} registered twice")
        self._tools[t.name] = t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument text."""
    head, _, args_block = doc.partition("\nArgs:\n")
    description = " ".join(head.split("\n\n")[0].split())
    rest = head.split("\n\n", 1)[1].strip() if "\n\n" in head else ""
    if rest:
        description = description + "\n\n" + rest
    arg_docs: dict[str, str] = {}
    current: str | None = None
    for line in args_block.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not line.startswith(" " * 8) and ":" in stripped:
            current, _, text = stripped.partition(":")
            current = current.split(" ")[0]
            arg_docs[current] = text.strip()
        elif current is not None:
            arg_docs[current] += " " + stripped
    return description, arg_docs


def _strip_optional(kind: Any) -> Any:
    if get_origin(kind) in (Union, types.UnionType):
        args = [a for a in get_args(kind) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return kind


def _json_schema(kind: Any) -> dict[str, Any]:
    kind = _strip_optional(kind)
    if kind is str:
        return {"type": "string"}
    if kind is bool:
        return {"type": "boolean"}
    if kind is int:
        return {"type": "integer"}
    if kind is float:
        return {"type": "number"}
    origin = get_origin(kind)
    if origin is Literal:
        return {"type": "string", "enum": list(get_args(kind))}
    if origin is list:
        (item,) = get_args(kind) or (str,)
        return {"type": "array", "items": _json_schema(item)}
    if typing.is_typeddict(kind):
        hints = typing.get_type_hints(kind)
        return {
            "type": "object",
            "properties": {key: _json_schema(hint) for key, hint in hints.items()},
            "required": sorted(kind.__required_keys__),
            "additionalProperties": False,
        }
    if kind is dict or origin is dict:
        return {"type": "object"}
    raise TypeError(f"tool parameter type {kind!r} has no JSON schema")


def _type_name(kind: Any) -> str:
    schema = _json_schema(kind)
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if schema["type"] == "array":
        return f"array of {schema['items']['type']}"
    return str(schema["type"])


def _coerce(value: Any, kind: Any) -> Any:
    """Accept what a model plausibly meant (`"5"` for 5), reject everything else."""
    if value is None:
        if _strip_optional(kind) is not kind:
            return None
        raise TypeError(f"expected {_type_name(kind)}, got null")
    kind = _strip_optional(kind)
    origin = get_origin(kind)
    if kind is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise TypeError(f"expected string, got {_json_type(value)}")
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise TypeError(f"expected boolean, got {_json_type(value)}")
    if kind is int:
        if isinstance(value, bool):
            raise TypeError("expected integer, got boolean")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise TypeError(f"expected integer, got string {value[:40]!r}") from None
        raise TypeError(f"expected integer, got {_json_type(value)}")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError(f"expected number, got {_json_type(value)}")
        try:
            number = float(value.strip() if isinstance(value, str) else value)
        except (ValueError, OverflowError):
            raise TypeError(f"expected number, got string {str(value)[:40]!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"expected a finite number, got {number}")
        return number
    if origin is Literal:
        choices = get_args(kind)
        if value in choices:
            return value
        raise ValueError(f"expected one of {', '.join(map(json.dumps, choices))}")
    if origin is list:
        (item,) = get_args(kind) or (str,)
        if not isinstance(value, list):
            raise TypeError(f"expected array, got {_json_type(value)}")
        return [_coerce(v, item) for v in value]
    if typing.is_typeddict(kind):
        return _coerce_typeddict(value, kind)
    if kind is dict or origin is dict:
        if isinstance(value, dict):
            return value
        raise TypeError(f"expected object, got {_json_type(value)}")
    raise TypeError(f"unsupported parameter type {kind!r}")


def _coerce_typeddict(value: Any, kind: Any) -> dict[str, Any]:
    """An object with exactly the keys a TypedDict names, each coerced to its type."""
    if not isinstance(value, dict):
        raise TypeError(f"expected object, got {_json_type(value)}")
    hints = typing.get_type_hints(kind)
    unknown = sorted(set(value) - set(hints))
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))}")
    missing = sorted(set(kind.__required_keys__) - set(value))
    if missing:
        raise ValueError(f"missing key(s) {', '.join(map(repr, missing))}")
    result = {}
    for key, item in value.items():
        try:
            result[key] = _coerce(item, hints[key])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"key {key!r}: {exc}") from None
    return result


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__

"""Skills: folders of task instructions the model loads only when it needs them.

A skill is a folder holding a `SKILL.md`: YAML front matter with `name` and
`description`, then the instructions; other files (scripts, references) may sit
beside it. The system prompt lists only each skill's name and description; the
model calls `read_skill` to load the rest. That keeps the prompt small however many
skills are installed.

Names follow the Agent Skills format: 1-64 lowercase letters, digits and single
hyphens, not starting or ending with a hyphen. A skill that breaks the format is
reported and skipped, never fatal. PyYAML costs ~11 ms to import, so it is imported
only once a SKILL.md has been found.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tether.memory.instructions import repository_root
from tether.safe_read import NotReadable, read_regular

__all__ = [
    "MAX_SKILL_BYTES",
    "Skill",
    "SkillIndex",
    "discover_skills",
    "index_text",
    "skill_search_paths",
    "split_front_matter",
]

MAX_SKILL_BYTES = 256 * 1024
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MAX_NAME = 64
_MAX_FOLDERS = 1000  # per skills directory: more is a mistake, not a library


@dataclass(frozen=True, slots=True)
class Skill:
    """One usable skill. `real`: where SKILL.md resolved to when it was found;
    `read_skill` refuses the file if it resolves elsewhere later."""

    name: str
    description: str
    path: Path
    directory: Path
    real: Path


@dataclass(frozen=True, slots=True)
class SkillIndex:
    """The skills found (sorted by name) and what was wrong with the ones skipped."""

    skills: tuple[Skill, ...] = ()
    problems: tuple[str, ...] = ()
    workspace: Path | None = None

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The skills' folders (resolved) that lie outside the workspace: read_file must
        be allowed to read them for a skill's other files to be usable."""
        inside = Path(os.path.realpath(self.workspace)) if self.workspace else None
        result: list[Path] = []
        for skill in self.skills:
            real = Path(os.path.realpath(skill.directory))
            if inside is None or not real.is_relative_to(inside):
                result.append(real)
        return tuple(dict.fromkeys(result))


def skill_search_paths(workspace: Path, config_home: Path) -> tuple[Path, ...]:
    """Where skills are looked for, first wins: the workspace's, then (for a workspace
    inside a repository) the repository root's, then the user's."""
    places = [workspace]
    root = repository_root(workspace)
    if root is not None and root != workspace:
        places.append(root)
    folders = [p / sub / "skills" for p in places for sub in (".tether", ".agents", ".claude")]
    return (*folders, config_home / "tether" / "skills")


def discover_skills(workspace: Path, *, config_home: Path) -> SkillIndex:
    """Every `<root>/<folder>/SKILL.md` under the skill roots, checked and indexed."""
    found = [p for root in skill_search_paths(workspace, config_home) for p in _skill_files(root)]
    problems: list[str] = []
    by_name: dict[str, Skill] = {}
    project = repository_root(workspace) or workspace
    inside = Path(os.path.realpath(project))
    for path in found:
        if path.is_relative_to(project) and not _within(path, inside):
            # A cloned repository's SKILL.md may not point at the user's own files.
            problems.append(f"{path}: leads outside the project; not read")
            continue
        skill = _load(path, problems)
        if skill is None:
            continue
        first = by_name.get(skill.name)
        if first is not None:
            problems.append(f"{path}: skill {skill.name!r} is shadowed by {first.path}")
            continue
        by_name[skill.name] = skill
    skills = tuple(sorted(by_name.values(), key=lambda s: s.name))
    return SkillIndex(skills=skills, problems=tuple(problems), workspace=workspace)


def _within(path: Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(root)


def index_text(index: SkillIndex) -> str:
    """The system-prompt section naming the skills; "" when there are none."""
    if not index.skills:
        return ""
    lines = [
        "Skills (instructions for particular tasks; call read_skill with a skill's name "
        "to load it before you use it):"
    ]
    lines += [f"- {s.name}: {' '.join(s.description.split())}" for s in index.skills]
    return "\n".join(lines)


def split_front_matter(text: str) -> tuple[str, str] | None:
    """(front matter, body) of a SKILL.md, or None when it opens with no `---` block."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return None
    for i, line in enumerate(lines[1:], start=1):
        if line.rstrip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :]).lstrip("\r\n")
    return None


def _skill_files(root: Path) -> list[Path]:
    """The SKILL.md files one level below `root`, sorted by folder name."""
    try:
        with os.scandir(root) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith("."))
    except OSError:  # missing, not a directory, unreadable: no skills here
        return []
    return [
        root / name / "SKILL.md"
        for name in names[:_MAX_FOLDERS]
        if os.path.lexists(root / name / "SKILL.md")
    ]


def _load(path: Path, problems: list[str]) -> Skill | None:
    """The skill in `path`, or None with what is wrong appended to `problems`."""
    try:
        data, size = read_regular(path, MAX_SKILL_BYTES)
    except NotReadable as exc:
        problems.append(f"{path}: not read: {exc}")
        return None
    if size > MAX_SKILL_BYTES:
        problems.append(f"{path}: {size:,} bytes, over the {MAX_SKILL_BYTES:,}-byte limit")
        return None
    parts = split_front_matter(data.decode("utf-8", "replace"))
    if parts is None:
        problems.append(f"{path}: no front matter (a block between '---' lines at the top)")
        return None
    meta = _parse_yaml(parts[0])
    if isinstance(meta, str):
        problems.append(f"{path}: {meta}")
        return None
    fields = _fields(meta.get("name"), meta.get("description"))
    if isinstance(fields, str):
        problems.append(f"{path}: {fields}")
        return None
    name, description = fields
    if name != path.parent.name:
        problems.append(f"{path}: name {name!r} differs from its folder's (loaded anyway)")
    return Skill(
        name=name,
        description=description.strip(),
        path=path,
        directory=path.parent,
        real=Path(os.path.realpath(path)),
    )


def _parse_yaml(source: str) -> dict[str, Any] | str:
    """The front matter as a mapping, or what is wrong with it. Aliases are refused:
    a few hundred bytes of nested aliases expand to gigabytes (a "billion laughs")."""
    import yaml  # ~11 ms: only once a SKILL.md exists

    try:
        meta = yaml.load(source, Loader=_no_alias_loader())  # a SafeLoader, minus aliases
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""  # +1 for the '---'
        problem = getattr(exc, "problem", None) or type(exc).__name__
        return f"bad YAML in the front matter{where}: {problem}"
    except (ValueError, RecursionError) as exc:  # e.g. an impossible date; deep nesting
        return f"bad YAML in the front matter: {type(exc).__name__}"
    if not isinstance(meta, dict):
        return "the front matter is not a mapping of fields (name: ..., description: ...)"
    return meta


@cache
def _no_alias_loader() -> Any:
    """yaml's SafeLoader, refusing aliases (made once; yaml loads on first use)."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not allowed in front matter", mark
                )
            return super().compose_node(parent, index)

    return NoAliases


def _fields(name: object, description: object) -> tuple[str, str] | str:
    """The name and description if they follow the format, else what is wrong."""
    if name is None or name == "":
        return "missing name"
    if not isinstance(name, str):
        return f"name must be text, got {type(name).__name__}"
    if len(name) > _MAX_NAME or not _NAME.fullmatch(name):
        return (
            f"bad name {name[:80]!r}: use 1-{_MAX_NAME} lowercase letters, digits and "
            "single hyphens, not starting or ending with a hyphen"
        )
    if description is None or (isinstance(description, str) and not description.strip()):
        return "missing description"
    if not isinstance(description, str):
        return "description must be text"
    if len(description) > MAX_DESCRIPTION:
        return f"description is {len(description):,} characters, over {MAX_DESCRIPTION:,}"
    return name, description

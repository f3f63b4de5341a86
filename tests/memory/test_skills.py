"""Skill discovery: where skills are found, which one wins a name, and what is refused."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.memory.skills import SkillIndex, discover_skills, index_text


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def conf(isolated_home: Path) -> Path:
    return isolated_home / ".config"


def skill(
    folder: Path, name: str, description: str = "Does a thing.", body: str = "Do it."
) -> Path:
    path = folder / "SKILL.md"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    return path


def test_found_in_every_root_and_listed_by_name(ws: Path, conf: Path) -> None:
    skill(ws / ".tether/skills/zeta", "zeta", "Last by name.")
    skill(ws / ".agents/skills/alpha", "alpha", "First by name.")
    skill(ws / ".claude/skills/mid", "mid", "In between.")
    skill(conf / "tether/skills/mine", "mine", "The user's own.")

    index = discover_skills(ws, config_home=conf)

    assert [s.name for s in index.skills] == ["alpha", "mid", "mine", "zeta"]
    assert index.problems == ()
    alpha = index.get("alpha")
    assert alpha is not None
    assert alpha.path == ws / ".agents/skills/alpha/SKILL.md"
    assert alpha.directory == ws / ".agents/skills/alpha"
    assert index_text(index) == (
        "Skills (instructions for particular tasks; call read_skill with a skill's name "
        "to load it before you use it):\n"
        "- alpha: First by name.\n"
        "- mid: In between.\n"
        "- mine: The user's own.\n"
        "- zeta: Last by name."
    )


def test_the_first_root_wins_a_name_and_the_shadowed_one_is_noted(ws: Path, conf: Path) -> None:
    first = skill(ws / ".tether/skills/deploy", "deploy", "Project deploy.")
    second = skill(ws / ".claude/skills/deploy", "deploy", "Claude deploy.")
    third = skill(conf / "tether/skills/deploy", "deploy", "User deploy.")

    index = discover_skills(ws, config_home=conf)

    assert [(s.name, s.description) for s in index.skills] == [("deploy", "Project deploy.")]
    assert index.problems == (
        f"{second}: skill 'deploy' is shadowed by {first}",
        f"{third}: skill 'deploy' is shadowed by {first}",
    )


def test_bad_skills_are_reported_by_file_and_skipped(ws: Path, conf: Path) -> None:
    base = ws / ".tether/skills"
    skill(base / "good", "good")
    (base / "plain").mkdir(parents=True)
    (base / "plain/SKILL.md").write_text("# no front matter\n")
    (base / "broken").mkdir()
    (base / "broken/SKILL.md").write_text("---\nname: broken\ndescription: [unclosed\n---\n")
    (base / "list").mkdir()
    (base / "list/SKILL.md").write_text("---\n- just\n- a list\n---\n")
    skill(base / "noname", "''")
    skill(base / "nodesc", "nodesc", "''")
    skill(base / "upper", "Upper_Case")
    skill(base / "hyphen", "-leading")
    skill(base / "long", "a" * 65)
    skill(base / "number", "42")
    (base / "date").mkdir()
    (base / "date/SKILL.md").write_text("---\nname: date\ndescription: x\nwhen: 2024-13-45\n---\n")
    (base / "unclosed").mkdir()
    (base / "unclosed/SKILL.md").write_text("---\nname: unclosed\ndescription: x\n")
    (base / "huge").mkdir()
    (base / "huge/SKILL.md").write_text("---\nname: huge\ndescription: x\n---\n" + "x" * 300_000)

    index = discover_skills(ws, config_home=conf)

    assert [s.name for s in index.skills] == ["good"]
    problems = dict(p.split(": ", 1) for p in index.problems)
    assert problems == {
        f"{base}/broken/SKILL.md": "bad YAML in the front matter at line 4: "
        "expected ',' or ']', but got '<stream end>'",
        f"{base}/date/SKILL.md": "bad YAML in the front matter: ValueError",
        f"{base}/huge/SKILL.md": "300,034 bytes, over the 262,144-byte limit",
        f"{base}/hyphen/SKILL.md": "bad name '-leading': use 1-64 lowercase letters, digits and "
        "single hyphens, not starting or ending with a hyphen",
        f"{base}/list/SKILL.md": "the front matter is not a mapping of fields "
        "(name: ..., description: ...)",
        f"{base}/long/SKILL.md": f"bad name {'a' * 65!r}: use 1-64 lowercase letters, digits "
        "and single hyphens, not starting or ending with a hyphen",
        f"{base}/nodesc/SKILL.md": "missing description",
        f"{base}/noname/SKILL.md": "missing name",
        f"{base}/number/SKILL.md": "name must be text, got int",
        f"{base}/plain/SKILL.md": "no front matter (a block between '---' lines at the top)",
        f"{base}/unclosed/SKILL.md": "no front matter (a block between '---' lines at the top)",
        f"{base}/upper/SKILL.md": "bad name 'Upper_Case': use 1-64 lowercase letters, digits "
        "and single hyphens, not starting or ending with a hyphen",
    }


def test_a_bad_skill_does_not_shadow_a_good_one(ws: Path, conf: Path) -> None:
    (ws / ".tether/skills/tool").mkdir(parents=True)
    (ws / ".tether/skills/tool/SKILL.md").write_text("---\nname: tool\n---\n")
    skill(conf / "tether/skills/tool", "tool", "The user's.")
    index = discover_skills(ws, config_home=conf)
    assert [s.description for s in index.skills] == ["The user's."]
    assert index.problems == (f"{ws}/.tether/skills/tool/SKILL.md: missing description",)


def test_a_name_unlike_its_folder_is_loaded_with_a_note(ws: Path, conf: Path) -> None:
    path = skill(ws / ".tether/skills/folder", "other-name")
    index = discover_skills(ws, config_home=conf)
    assert [s.name for s in index.skills] == ["other-name"]
    assert index.problems == (
        f"{path}: name 'other-name' differs from its folder's (loaded anyway)",
    )


def test_a_fifo_skill_file_is_refused_without_hanging(ws: Path, conf: Path) -> None:
    (ws / ".tether/skills/pipe").mkdir(parents=True)
    os.mkfifo(ws / ".tether/skills/pipe/SKILL.md")
    index = discover_skills(ws, config_home=conf)
    assert index.skills == ()
    assert index.problems == (
        f"{ws}/.tether/skills/pipe/SKILL.md: not read: not a regular file (a FIFO)",
    )


def test_multiline_descriptions_become_one_line(ws: Path, conf: Path) -> None:
    (ws / ".tether/skills/pdf").mkdir(parents=True)
    (ws / ".tether/skills/pdf/SKILL.md").write_text(
        "---\nname: pdf\ndescription: >\n  Fill PDF forms.\n  Use for any .pdf form.\n---\nBody\n"
    )
    text = index_text(discover_skills(ws, config_home=conf))
    assert text.endswith("\n- pdf: Fill PDF forms. Use for any .pdf form.")


def test_roots_are_the_skill_folders_outside_the_workspace(
    ws: Path, conf: Path, tmp_path: Path
) -> None:
    skill(ws / ".tether/skills/inside", "inside")
    skill(conf / "tether/skills/mine", "mine")
    skill(tmp_path / "shared/linked", "linked")
    (ws / ".agents/skills").mkdir(parents=True)
    (ws / ".agents/skills/linked").symlink_to(tmp_path / "shared/linked")
    index = discover_skills(ws, config_home=conf)
    # A workspace's skill may not lead out of it (a cloned repository could point at
    # the user's files); shared skills belong in ~/.config/tether/skills.
    assert index.roots == (conf / "tether/skills/mine",)
    assert any("linked/SKILL.md: leads outside the project" in p for p in index.problems)


def test_none_found_no_text_and_no_yaml_import(ws: Path, conf: Path) -> None:
    assert index_text(discover_skills(ws, config_home=conf)) == ""
    assert index_text(SkillIndex()) == ""
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from tether.memory.skills import discover_skills\n"
        "import tether.tools.skills\n"
        f"discover_skills(Path({str(ws)!r}), config_home=Path({str(conf)!r}))\n"
        "print('yaml' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.stdout.strip() == "False", proc.stderr


def test_yaml_aliases_are_refused_before_they_can_expand(ws: Path, conf: Path) -> None:
    folder = ws / ".tether/skills/bomb"
    folder.mkdir(parents=True)
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    levels += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in itertools.pairwise("abcdefgh")]
    (folder / "SKILL.md").write_text("---\n" + "\n".join(levels) + "\nname: *h\n---\nbody\n")
    index = discover_skills(ws, config_home=conf)
    assert index.skills == ()
    assert any("aliases (*name) are not allowed" in p for p in index.problems)


def test_a_workspace_inside_a_repository_also_finds_the_roots_skills(
    tmp_path: Path, conf: Path
) -> None:
    repo = tmp_path / "mono"
    (repo / ".git").mkdir(parents=True)
    work = repo / "services" / "api"
    work.mkdir(parents=True)
    skill(repo / ".claude/skills/deploy", "deploy")
    skill(repo / ".tether/skills/shared", "shared")
    skill(work / ".tether/skills/shared", "shared")  # nearer: wins
    index = discover_skills(work, config_home=conf)
    assert [s.name for s in index.skills] == ["deploy", "shared"]
    assert index.get("shared").path == work / ".tether/skills/shared/SKILL.md"  # type: ignore[union-attr]
    assert any("is shadowed by" in p for p in index.problems)

"""read_skill: the body as the file is now, the files beside it, and clear errors."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tether.errors import ToolError
from tether.memory.skills import SkillIndex, discover_skills
from tether.tools.files import read_file
from tether.tools.skills import MAX_SKILL_FILES, read_skill_tool

if TYPE_CHECKING:
    from conftest import Harness


def make_skill(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\nname: {name}\ndescription: Fills forms.\n---\n\n{body}\n")
    return path


def index_for(ws: Harness, tmp_path: Path) -> SkillIndex:
    return discover_skills(ws.root, config_home=tmp_path / "config")


def test_returns_the_body_and_lists_the_other_files(ws: Harness, tmp_path: Path) -> None:
    folder = ws.root / ".tether/skills/pdf-forms"
    make_skill(folder, "pdf-forms", "# Filling forms\n\nRun `scripts/fill.py`.")
    ws.write(".tether/skills/pdf-forms/scripts/fill.py", "print()\n")
    ws.write(".tether/skills/pdf-forms/reference.md", "ref\n")
    ws.write(".tether/skills/pdf-forms/.secret", "hidden\n")
    ws.write(".tether/skills/pdf-forms/.git/config", "hidden\n")

    out = ws.call(read_skill_tool(index_for(ws, tmp_path)), name="pdf-forms")

    assert out == (
        f'Skill "pdf-forms" ({folder}/SKILL.md)\n\n'
        "# Filling forms\n\nRun `scripts/fill.py`.\n\n"
        f"Files in the skill's folder {folder} (read them with read_file):\n"
        "- reference.md\n"
        "- scripts/fill.py"
    )


def test_the_tool_is_named_read_skill_with_one_argument(tmp_path: Path) -> None:
    spec = read_skill_tool(SkillIndex()).spec
    assert spec.name == "read_skill"
    assert spec.parameters["required"] == ["name"]
    assert list(spec.parameters["properties"]) == ["name"]
    assert "read_skill" not in spec.description and "skill" in spec.description


def test_a_skill_alone_in_its_folder(ws: Harness, tmp_path: Path) -> None:
    make_skill(ws.root / ".agents/skills/solo", "solo", "Only this.")
    out = ws.call(read_skill_tool(index_for(ws, tmp_path)), name="solo")
    assert out.endswith(
        f"Only this.\n\nThe skill's folder {ws.root}/.agents/skills/solo holds no other files."
    )


def test_the_body_is_read_again_at_each_call(ws: Harness, tmp_path: Path) -> None:
    path = make_skill(ws.root / ".tether/skills/deploy", "deploy", "Old steps.")
    tool = read_skill_tool(index_for(ws, tmp_path))
    path.write_text("---\nname: deploy\ndescription: x\n---\nNew steps.\n")
    out = ws.call(tool, name="deploy")
    assert "New steps." in out and "Old steps." not in out
    path.write_text("No front matter any more.\n")
    assert "\n\nNo front matter any more.\n\n" in ws.call(tool, name="deploy")


def test_an_unknown_name_lists_the_known_ones(ws: Harness, tmp_path: Path) -> None:
    make_skill(ws.root / ".tether/skills/beta", "beta", "b")
    make_skill(ws.root / ".tether/skills/alpha", "alpha", "a")
    tool = read_skill_tool(index_for(ws, tmp_path))
    with pytest.raises(ToolError, match=r"no skill named 'gamma'\. Known skills: alpha, beta\."):
        ws.call(tool, name="gamma")
    with pytest.raises(ToolError, match=r"Known skills: \(none\)\."):
        ws.call(read_skill_tool(SkillIndex()), name="gamma")


def test_a_skill_removed_after_discovery(ws: Harness, tmp_path: Path) -> None:
    path = make_skill(ws.root / ".tether/skills/gone", "gone", "Soon gone.")
    tool = read_skill_tool(index_for(ws, tmp_path))
    path.unlink()
    with pytest.raises(ToolError, match=r"The skill 'gone' is gone: .*SKILL.md was removed"):
        ws.call(tool, name="gone")


def test_a_skill_file_swapped_for_a_symlink_is_refused(ws: Harness, tmp_path: Path) -> None:
    path = make_skill(ws.root / ".tether/skills/swap", "swap", "Fine.")
    tool = read_skill_tool(index_for(ws, tmp_path))
    secret = tmp_path / "secret.txt"
    secret.write_text("---\nname: swap\ndescription: x\n---\nthe user's secret\n")
    path.unlink()
    path.symlink_to(secret)
    with pytest.raises(ToolError, match=r"now leads to .*secret\.txt") as caught:
        ws.call(tool, name="swap")
    assert "the user's secret" not in str(caught.value)


def test_a_fifo_swapped_in_does_not_hang(ws: Harness, tmp_path: Path) -> None:
    path = make_skill(ws.root / ".tether/skills/pipe", "pipe", "Fine.")
    tool = read_skill_tool(index_for(ws, tmp_path))
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ToolError, match=r"cannot be read .*not a regular file \(a FIFO\)"):
        ws.call(tool, name="pipe")


def test_the_file_list_is_bounded(ws: Harness, tmp_path: Path) -> None:
    folder = ws.root / ".tether/skills/many"
    make_skill(folder, "many", "Lots of files.")
    for n in range(MAX_SKILL_FILES + 5):
        ws.write(f".tether/skills/many/data/{n:03}.txt", "x")
    out = ws.call(read_skill_tool(index_for(ws, tmp_path)), name="many")
    listed = [line for line in out.splitlines() if line.startswith("- data/")]
    assert len(listed) == MAX_SKILL_FILES and listed[-1] == "- data/099.txt"
    assert out.endswith(f"[only the first {MAX_SKILL_FILES} files are listed]")


def test_user_skill_files_are_readable_once_roots_are_added(ws: Harness, tmp_path: Path) -> None:
    config = tmp_path / "config"
    folder = config / "tether/skills/mine"
    make_skill(folder, "mine", "See notes.md.")
    (folder / "notes.md").write_text("the notes\n")
    index = discover_skills(ws.root, config_home=config)
    assert index.roots == (folder,)
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.call(read_file, path=str(folder / "notes.md"))
    readable = replace(ws.ctx, workspace=ws.ctx.workspace.with_readable(*index.roots))
    out = read_file.fn(readable, path=str(folder / "notes.md"))
    assert "the notes" in out

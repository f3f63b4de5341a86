"""Project instructions and skills reach the model: through the real CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tether.models.scripted import ScriptedCall, ScriptedEndpoint, Turn

SKILL = """---
name: release-notes
description: How this project writes release notes.
---
Write release notes as a bulleted list, newest first. See template.md.
"""


def test_nested_instructions_in_order_and_a_skill_listed_then_loaded(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    work = repo / "pkg" / "sub"
    work.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    user = Path(cli_env["HOME"]) / ".config" / "tether"
    user.mkdir(parents=True)
    (user / "AGENTS.md").write_text("USER: answer in English.\n")
    (repo / "AGENTS.md").write_text("ROOT: run the tests with make test.\n")
    (repo / "pkg" / "CLAUDE.md").write_text("PKG: this package is pure Python.\n")
    (work / "AGENTS.md").write_text("SUB: never edit generated files.\n")
    (work / "CLAUDE.md").write_text("IGNORED: an AGENTS.md stands beside me.\n")
    skill = work / ".tether" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    (skill / "template.md").write_text("- change\n")
    broken = work / ".tether" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter here\n")
    script = [
        Turn(text="Loading.", tool_calls=(ScriptedCall("read_skill", {"name": "release-notes"}),)),
        Turn(text="Done."),
    ]
    with ScriptedEndpoint(script) as endpoint:
        env = {**cli_env, "TETHER_BASE_URL": endpoint.url}
        proc = run_cli(["-p", "write release notes"], cwd=work, env=env)
        first, last = endpoint.requests[0].body, endpoint.requests[-1].body
    assert proc.returncode == 0, proc.stderr
    system = first["messages"][0]["content"]
    order = [system.index(tag) for tag in ("USER:", "ROOT:", "PKG:", "SUB:")]
    assert order == sorted(order)  # user-level first, then the root down to here
    assert "IGNORED" not in system
    assert "release-notes: How this project writes release notes." in system
    assert "Write release notes as a bulleted list" not in system  # the body loads on demand
    assert "read_skill" in {t["function"]["name"] for t in first["tools"]}
    (loaded,) = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert "Write release notes as a bulleted list" in loaded and "template.md" in loaded
    # The broken skill is reported, not fatal.
    doctor = run_cli(["doctor"], cwd=work, env=env)
    assert "broken" in doctor.stdout and "SUB" not in doctor.stdout
    assert str(work / "AGENTS.md") in doctor.stdout or "pkg/sub/AGENTS.md" in doctor.stdout

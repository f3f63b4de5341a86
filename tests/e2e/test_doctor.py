"""`tether doctor` lists the instruction files and skills a session would load."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def doctor(run_cli: Any, cli_env: dict[str, str], cwd: Path, xdg: Path | None = None) -> str:
    env = {**cli_env, "TETHER_BASE_URL": "http://127.0.0.1:9/v1"}
    if xdg is not None:
        env["XDG_CONFIG_HOME"] = str(xdg)
    proc = run_cli(["doctor"], cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    return str(proc.stdout)


def test_doctor_lists_instructions_and_skills(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    xdg = tmp_path / "xdg"
    repo = tmp_path / "repo"
    ws = repo / "pkg"
    (repo / ".git").mkdir(parents=True)
    ws.mkdir()
    (xdg / "tether/skills/mine").mkdir(parents=True)
    (xdg / "tether/AGENTS.md").write_text("user rules\n")
    (repo / "AGENTS.md").write_text("root rules\n" * 10)
    (ws / "CLAUDE.md").write_text("pkg rules\n")
    (xdg / "tether/skills/mine/SKILL.md").write_text("---\nname: mine\ndescription: m\n---\n")
    (ws / ".claude/skills/bad").mkdir(parents=True)
    (ws / ".claude/skills/bad/SKILL.md").write_text("no front matter\n")

    out = doctor(run_cli, cli_env, ws, xdg)

    section = out[out.index("\ninstructions") :]
    assert section == (
        "\ninstructions (at most 32,768 bytes)\n"
        f"  {xdg}/tether/AGENTS.md (11 bytes)\n"
        f"  {repo}/AGENTS.md (110 bytes)\n"
        f"  {ws}/CLAUDE.md (10 bytes)\n"
        "\nskills\n"
        f"  mine  {xdg}/tether/skills/mine/SKILL.md\n"
        f"  problem: {ws}/.claude/skills/bad/SKILL.md: no front matter "
        "(a block between '---' lines at the top)\n"
    )


def test_doctor_shows_cuts_and_where_it_looked(
    run_cli: Any, cli_env: dict[str, str], tmp_path: Path
) -> None:
    home = Path(cli_env["HOME"])
    ws = tmp_path / "ws"
    (ws / ".tether").mkdir(parents=True)
    (ws / ".tether/config.toml").write_text("[instructions]\nmax_bytes = 20\n")
    (ws / "AGENTS.md").write_text("line one is long\nline two\n")

    out = doctor(run_cli, cli_env, ws)

    config = home / ".config"
    assert out[out.index("\ninstructions") :] == (
        "\ninstructions (at most 20 bytes)\n"
        f"  {ws}/AGENTS.md (26 bytes)  cut to 17\n"
        "  note: AGENTS.md: cut to 17 of 26 bytes ([instructions] max_bytes = 20)\n"
        "\nskills\n"
        f"  (none: {ws}/.tether/skills/*/SKILL.md, {ws}/.agents/skills/*/SKILL.md, "
        f"{ws}/.claude/skills/*/SKILL.md, {config}/tether/skills/*/SKILL.md)\n"
    )

"""What hostile or large inputs cost: a YAML alias bomb in a skill, a 100 MB session.

- A SKILL.md of a few hundred bytes whose front matter nests YAML aliases 8 deep
  (9**8 references): how long discovering skills takes and the peak memory. Run it
  against an older checkout (`PYTHONPATH=<checkout>/src`) to compare.
- A session transcript of about 100 MB (tool results of 20 KB): how long
  `tether sessions`' listing and a resume's rebuild take, and the peak memory.

    python bench/robustness.py
"""

from __future__ import annotations

import itertools
import json
import resource
import tempfile
import time
from pathlib import Path


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def alias_bomb(root: Path) -> None:
    from tether.memory.skills import discover_skills

    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    letters = "abcdefgh"
    for p, c in itertools.pairwise(letters):
        levels.append(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]")
    folder = root / "ws/.tether/skills/bomb"
    folder.mkdir(parents=True)
    text = "---\n" + "\n".join(levels) + "\nname: *h\ndescription: d\n---\nbody\n"
    (folder / "SKILL.md").write_text(text)
    start = time.perf_counter()
    index = discover_skills(root / "ws", config_home=root / "conf")
    took = time.perf_counter() - start
    print(
        f"alias bomb ({len(text.encode())} bytes): {took:.2f} s, peak RSS {peak_mb():.0f} MB, "
        f"{len(index.skills)} skills, {len(index.problems)} problem(s)"
    )


def big_session(root: Path) -> None:
    from tether.memory.resume import resume_state
    from tether.memory.session_index import list_sessions
    from tether.memory.sessions import read_transcript

    home, workspace = root / "state", root / "work"
    (home / "sessions").mkdir(parents=True)
    workspace.mkdir()
    path = home / "sessions" / "20260101-000000-abcdef.jsonl"
    output = "x" * 20_000
    with path.open("w") as out:
        out.write(
            json.dumps({"type": "header", "session_id": path.stem, "workspace": str(workspace)})
            + "\n"
        )
        out.write(
            json.dumps({"type": "message", "message": {"role": "user", "content": "go"}}) + "\n"
        )
        for n in range(5_000):
            call = {"id": f"c{n}", "name": "bash", "arguments": "{}"}
            for entry in (
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "content": output, "tool_call_id": f"c{n}", "name": "bash"},
            ):
                out.write(json.dumps({"type": "message", "message": entry}) + "\n")
    size = path.stat().st_size / 1e6
    before = peak_mb()
    start = time.perf_counter()
    (info,) = list_sessions(home, workspace)
    listed = time.perf_counter() - start
    start = time.perf_counter()
    state = resume_state(list(read_transcript(path)))
    rebuilt = time.perf_counter() - start
    print(
        f"session of {size:.0f} MB: listing {listed:.2f} s ({info.turns} turns), "
        f"resume rebuild {rebuilt:.2f} s ({len(state.messages):,} messages), "
        f"peak RSS {peak_mb():.0f} MB (was {before:.0f} MB before)"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        alias_bomb(Path(name))
    with tempfile.TemporaryDirectory() as name:
        try:
            big_session(Path(name))
        except ImportError as exc:  # an older checkout without sessions that resume
            print(f"session: not measured ({exc})")


if __name__ == "__main__":
    main()

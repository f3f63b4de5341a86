"""`tether demo`: a scripted agent session a newcomer can watch without an API key.

The model is scripted and says so; everything else is the real thing: the loop,
the tools, a copy of a small project with a failing test, the transcript, and a
local HTTP endpoint speaking the OpenAI wire format.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TextIO

__all__ = ["run_demo"]

_SAMPLE = Path(__file__).with_name("sample")


def run_demo(keep: bool = False, *, out: TextIO | None = None, pause_s: float = 0.6) -> int:
    """Run the demo session; returns the exit code of the run."""
    from tether.config import Settings, state_home
    from tether.demo.script import demo_script, test_rule
    from tether.models.scripted import ScriptedEndpoint
    from tether.observe.events import EventBus
    from tether.policy.rules import RuleSpec, compile_rules
    from tether.session import Session
    from tether.ui.terminal import TerminalRenderer

    stream = out or sys.stdout
    workdir = Path(tempfile.mkdtemp(prefix="tether-demo-"))
    project = workdir / "mathutils"
    shutil.copytree(_SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    task = "The tests fail. Find the bug and fix it."
    try:
        with ScriptedEndpoint(demo_script(pause_s), model="scripted-demo") as endpoint:
            # Built directly: the user's key, endpoint and limits have no part in the demo.
            # Edits in the workspace are allowed, and so is running the tests; anything
            # else would be refused, as in any headless run.
            rule = test_rule()
            settings = Settings(
                model="scripted-demo",
                base_url=endpoint.url,
                workspace=project,
                home=state_home(os.environ),
                permission_mode="accept-edits",
                rules=compile_rules([RuleSpec(rule, "allow", "tether demo")]),
            )
            stream.write(
                "tether demo: the MODEL IS SCRIPTED. Its replies were written in advance and\n"
                f"are served by a local endpoint at {endpoint.url}. The agent loop, the tools\n"
                f"and the files are real: a copy of a small project in {project}.\n"
                f"Permissions: accept-edits mode, plus the rule {rule}.\n\n"
                f"Task: {task}\n\n"
            )
            bus = EventBus()
            bus.subscribe(TerminalRenderer(stream))
            with Session(settings, bus=bus) as session:
                result = session.run(task)
                stream.write(f"\nThe transcript of this session: {session.transcript.path}\n")
    finally:
        if keep:
            stream.write(f"The project copy is kept in {project}\n")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    stream.write(
        "To run tether for real, set TETHER_BASE_URL, TETHER_API_KEY and TETHER_MODEL, then:\n"
        '  tether -p "Fix the failing test"\n'
    )
    stream.flush()
    return result.exit_code

"""The plain interactive loop: a prompt, the streamed answer, Ctrl-D to leave.

Ctrl-C at the prompt clears the line; during a step it stops that step (the agent
closes every open tool call) and brings the prompt back.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import TextIO

from tether import __version__
from tether.config import Settings, public_endpoint
from tether.errors import EXIT_INTERRUPTED, EXIT_OK
from tether.observe.events import EventBus
from tether.observe.redact import Redactor
from tether.session import Session
from tether.ui.approve import terminal_approver
from tether.ui.terminal import TerminalRenderer

__all__ = ["interactive"]

_HELP = (
    "Type a request and press Enter. /exit or Ctrl-D leaves; Ctrl-C stops a step.\n"
    "/checkpoints lists what the agent changed; /undo [ID] [--force] goes back a step "
    "(or to checkpoint ID).\n/compact replaces the conversation so far with a summary."
)


def interactive(
    settings: Settings,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    resume: str | None = None,
) -> int:
    """Read requests until end of input; each one is a run of the same session.

    `should_stop` says the process was asked to end (SIGTERM, SIGHUP): the step in
    flight is stopped as by Ctrl-C, and then the loop ends instead of prompting again.
    With requests piped in (no terminal) there is no prompt, and the exit code is
    that of the last request, so a script can tell whether it worked.
    """
    inp = stdin or sys.stdin
    out = stdout or sys.stdout
    if isinstance(inp, io.TextIOWrapper):
        inp.reconfigure(errors="replace")  # bytes that are not UTF-8 must not end the session
    if inp.isatty():
        import readline  # noqa: F401  (line editing and history for input())
    bus = EventBus()
    bus.subscribe(TerminalRenderer(out, redact=Redactor([settings.api_key])))
    out.write(
        f"tether {__version__} · {settings.model} at {public_endpoint(settings.base_url)}\n"
        f"workspace {settings.workspace}\n{_HELP}\n"
    )
    exit_code = EXIT_OK
    approver = terminal_approver(lambda prompt: _read(inp, out, prompt), out)
    with Session(settings, bus=bus, approver=approver, resume=resume) as session:
        out.write(f"transcript {session.transcript.path}\n")
        if session.resumed is not None:
            turns = session.resumed.turns
            out.write(f"resumed session {session.session_id} ({turns} turns so far)\n")
        while not should_stop():
            line = _read(inp, out)
            if line is None or should_stop():
                break
            request = line.strip()
            if not request:
                continue
            if request in ("/exit", "/quit"):
                break
            if request == "/help":
                out.write(_HELP + "\n")
                continue
            if request == "/compact":
                try:
                    out.write((session.compact() or "Nothing to compact yet.") + "\n")
                except KeyboardInterrupt:
                    out.write("\n(compaction interrupted; nothing changed)\n")
                continue
            if request.split(" ", 1)[0] in ("/checkpoints", "/undo"):
                from tether.ui.checkpoints import list_checkpoints, session_undo

            if request == "/checkpoints" or request.startswith("/checkpoints "):
                list_checkpoints(settings, out, session=session.session_id)
                continue
            if request == "/undo" or request.startswith("/undo "):
                session_undo(session, request.removeprefix("/undo"), out)
                continue
            try:
                exit_code = session.run(request).exit_code
            except KeyboardInterrupt:
                out.write("\n(interrupted)\n")
                exit_code = EXIT_INTERRUPTED
    out.write("\n")
    if should_stop():
        return EXIT_INTERRUPTED
    return EXIT_OK if inp.isatty() else exit_code


def _read(inp: TextIO, out: TextIO, prompt: str = "\n› ") -> str | None:
    """One line of input, or None at end of input; Ctrl-C gives an empty line."""
    try:
        if inp.isatty():
            if inp is sys.stdin:
                return input(prompt)
            out.write(prompt)
            out.flush()
        line = inp.readline()
        return line if line else None
    except EOFError:
        return None
    except KeyboardInterrupt:
        out.write("\n")
        return ""

"""`tether sessions`: this workspace's sessions, as a table or as JSON."""

from __future__ import annotations

import json
from typing import TextIO

from tether.config import Settings
from tether.memory.session_index import list_sessions

__all__ = ["print_sessions"]


def print_sessions(settings: Settings, out: TextIO, *, as_json: bool) -> int:
    sessions = list_sessions(settings.home, settings.workspace)
    if as_json:
        out.write(json.dumps([s.to_dict() for s in sessions], ensure_ascii=False) + "\n")
        return 0
    if not sessions:
        out.write(f"no sessions in {settings.workspace} yet\n")
        return 0
    out.write(f"{'id':23} {'started':19} {'turns':>5}  {'status':12} first request\n")
    for s in sessions:
        started = s.created[:19].replace("T", " ")
        text = "".join(c if c.isprintable() else "?" for c in s.first_request)
        first = text if len(text) <= 60 else text[:59] + "…"
        out.write(f"{s.session_id:23} {started:19} {s.turns:5}  {s.status:12} {first}\n")
    out.write("tether --continue resumes the latest; tether --resume ID a given one\n")
    return 0

"""The transcript: append-only, one line per entry, secrets redacted, torn tails ignored."""

from __future__ import annotations

from pathlib import Path

from tether.memory.sessions import Transcript, new_session_id, read_transcript
from tether.messages import Message, ToolCall
from tether.observe.redact import Redactor


def test_header_then_messages_appended(tmp_path: Path) -> None:
    sid = new_session_id()
    t = Transcript.create(tmp_path, sid, {"model": "m"}, Redactor(["sk-secret-123456"]))
    t.message(Message.user("use key sk-secret-123456 please"))
    call = ToolCall("c1", "bash", '{"command": "ls"}')
    t.message(Message(role="assistant", tool_calls=(call,)))
    t.sync()
    size = t.path.stat().st_size
    t.append({"type": "run_end"})
    t.close()
    raw = t.path.read_text()
    assert raw.startswith('{"type":"header","version":1,"model":"m"}\n')
    assert "sk-secret-123456" not in raw and "[REDACTED]" in raw
    assert t.path.stat().st_size > size  # appended, earlier bytes untouched
    entries = list(read_transcript(t.path))
    assert [e["type"] for e in entries] == ["header", "message", "message", "run_end"]
    assert Message.from_dict(entries[2]["message"]).tool_calls == (call,)


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    t = Transcript.create(tmp_path, "s1", {}, Redactor())
    t.message(Message.user("hi"))
    t.close()
    with t.path.open("a") as handle:
        handle.write('{"type": "message", "mess')
    assert [e["type"] for e in read_transcript(t.path)] == ["header", "message"]


def test_session_ids_sort_by_time_and_differ() -> None:
    ids = {new_session_id() for _ in range(50)}
    assert len(ids) == 50

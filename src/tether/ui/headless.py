"""Headless output: the final answer (text), one object (json), or every event (stream-json).

What headless output prints is a contract for scripts, so the shapes are built in
one place: `result_object` is the json object and the last stream-json line.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO

from tether.messages import StopReason
from tether.observe.events import Event, Notice
from tether.observe.redact import Redactor, StreamRedactor

if TYPE_CHECKING:
    from tether.agent import RunResult
    from tether.config import Settings

__all__ = ["StreamJsonWriter", "result_object", "run_headless", "write_json_line"]


def result_object(result: RunResult, *, transcript: str | None = None) -> dict[str, Any]:
    """The summary of a run that `--output-format json` prints.

    `context` (window, last_request_tokens, compactions, stubbed) says how close the
    run came to the window and what keeping inside it did; keys are only ever added.
    """
    u = result.usage
    data: dict[str, Any] = {
        "type": "result",
        "result": result.result,
        "stop_reason": str(result.stop_reason),
        "is_error": result.error is not None,
        "turns": result.turns,
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cached_tokens": u.cached_tokens,
            "cache_write_tokens": u.cache_write_tokens,
        },
        "session_id": result.session_id,
        "duration_s": round(result.duration_s, 3),
    }
    if result.context is not None:
        data["context"] = result.context.to_dict()
    data["cost_usd"] = None if result.cost_usd is None else round(result.cost_usd, 6)
    if result.error is not None:
        data["error"] = result.error
    if transcript is not None:
        data["transcript"] = transcript
    return data


def write_json_line(out: TextIO, data: dict[str, Any], redact: Redactor) -> None:
    out.write(redact(json.dumps(data, ensure_ascii=False)) + "\n")
    out.flush()


class StreamJsonWriter:
    """Writes each event as one JSON line; a closed pipe stops output, not the run.

    Streamed pieces (text, reasoning, tool-call arguments) pass through a
    `StreamRedactor` each, so a secret split across two pieces is still caught; what
    it holds back is written before the next event of any other kind.
    """

    def __init__(self, out: TextIO, redact: Redactor) -> None:
        self._out = out
        self._redact = redact
        self._closed = False
        self._streams: dict[tuple[str, int], tuple[StreamRedactor, dict[str, Any]]] = {}

    def __call__(self, event: Event) -> None:
        if self._closed:
            return
        data = event.to_dict()
        field = _STREAMED.get(event.type)
        if field is None:
            self._flush_streams()
            self._write(data)
            return
        key = (event.type, int(data.get("index") or 0))
        entry = self._streams.get(key)
        stream = entry[0] if entry else self._redact.stream()
        self._streams[key] = (stream, data)
        data[field] = stream.feed(data[field])
        if data[field] or data.get("id") or data.get("name"):
            self._write(data)

    def _flush_streams(self) -> None:
        streams, self._streams = self._streams, {}
        for (kind, _), (stream, last) in streams.items():
            rest = stream.flush()
            if rest:
                self._write({**last, _STREAMED[kind]: rest})

    def _write(self, data: dict[str, Any]) -> None:
        try:
            write_json_line(self._out, data, self._redact)
        except (BrokenPipeError, ValueError):
            self._closed = True


_STREAMED = {"text_delta": "text", "reasoning_delta": "text", "tool_call_delta": "arguments"}


def _warn(err: TextIO, redact: Redactor, event: Event) -> None:
    """Without -v, warnings still reach stderr: a run without undo or with a weaker
    sandbox must not look like any other."""
    if isinstance(event, Notice) and event.level in ("warning", "error"):
        err.write(redact(f"tether: {event.level}: {event.text}\n"))
        err.flush()


def run_headless(
    settings: Settings,
    task: str,
    *,
    output_format: str = "text",
    verbose: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    resume: str | None = None,
) -> int:
    """Run one task without a prompt and print it in the chosen format; the exit code.

    `resume` continues that session: the task is its next request."""
    from tether.observe.events import EventBus
    from tether.session import Session

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    redact = Redactor([settings.api_key])
    bus = EventBus()
    if output_format == "stream-json":
        bus.subscribe(StreamJsonWriter(out, redact))
    if verbose:
        from tether.ui.terminal import TerminalRenderer

        bus.subscribe(TerminalRenderer(err, redact=redact))
    else:
        bus.subscribe(partial(_warn, err, redact))
    with Session(settings, bus=bus, resume=resume) as session:
        result = session.run(task)
        transcript = str(session.transcript.path)
    summary = result_object(result, transcript=transcript)
    if output_format == "text":
        if result.result:
            out.write(redact(result.result).rstrip("\n") + "\n")
            out.flush()
    else:
        write_json_line(out, summary, redact)
    if result.stop_reason is not StopReason.COMPLETED:
        detail = f": {result.error}" if result.error else ""
        err.write(redact(f"tether: stopped ({result.stop_reason}){detail}\n"))
        err.write(f"tether: transcript: {transcript}\n")
        err.flush()
    return result.exit_code

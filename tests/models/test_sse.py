"""The SSE parser: the event-stream rules model APIs rely on, and chunking that splits anything."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tether.models.sse import SSEEvent, events_from_lines, iter_sse, split_lines


def events(*chunks: str | bytes) -> list[SSEEvent]:
    return list(iter_sse(chunks))


def test_data_lines_dispatch_on_blank_line() -> None:
    assert events('data: {"a": 1}\n\ndata: two\n\n') == [
        SSEEvent('{"a": 1}'),
        SSEEvent("two"),
    ]


def test_multi_line_data_is_joined_with_newlines() -> None:
    assert events("data: first\ndata: second\ndata:\n\n") == [SSEEvent("first\nsecond\n")]


def test_event_names_apply_to_one_event_only() -> None:
    got = events("event: error\ndata: {}\n\ndata: next\n\n")
    assert [(e.event, e.data) for e in got] == [("error", "{}"), ("message", "next")]


def test_comments_are_ignored() -> None:
    got = events(": keep-alive\n\n: OPENROUTER PROCESSING\n\ndata: x\n: inside\n\n")
    assert got == [SSEEvent("x")]


def test_done_sentinel() -> None:
    got = events("data: [DONE]\n\n")
    assert got == [SSEEvent("[DONE]")] and got[0].is_done
    assert not SSEEvent('{"content": "[DONE]"}').is_done


def test_crlf_and_cr_line_endings() -> None:
    assert events("data: a\r\n\r\ndata: b\r\rdata: c\n\n") == [
        SSEEvent("a"),
        SSEEvent("b"),
        SSEEvent("c"),
    ]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    assert events("data: a\r", "\n\r", "\n", "data: b\r\n\r\n") == [SSEEvent("a"), SSEEvent("b")]


def test_multibyte_utf8_split_between_byte_chunks() -> None:
    raw = "data: héllo → 世界\n\n".encode()
    assert events(*(raw[i : i + 1] for i in range(len(raw)))) == [SSEEvent("héllo → 世界")]


def test_unicode_line_separators_inside_data_do_not_split() -> None:
    assert events("data: a\u2028b\x85c\x0cd\n\n") == [SSEEvent("a\u2028b\x85c\x0cd")]


def test_last_event_without_blank_line_is_delivered() -> None:
    assert events("data: one\n\ndata: [DONE]") == [SSEEvent("one"), SSEEvent("[DONE]")]
    assert events("data: [DONE]\r") == [SSEEvent("[DONE]")]


def test_field_parsing_details() -> None:
    got = events("data:no-space\n\ndata:  two spaces\n\ndata\n\nid: 7\nretry: 1500\ndata: x\n\n")
    assert [e.data for e in got] == ["no-space", " two spaces", "", "x"]
    assert got[-1].id == "7" and got[-1].retry == 1500
    assert events("retry: soon\ndata: x\n\n")[0].retry is None


def test_unknown_fields_and_empty_events_are_ignored() -> None:
    assert events("foo: bar\n\n\n\nevent: ping\n\ndata: x\n\n") == [SSEEvent("x")]


def test_byte_order_mark_is_dropped() -> None:
    assert events("\ufeffdata: x\n\n") == [SSEEvent("x")]


def test_lines_already_split_as_httpx_gives_them() -> None:
    lines = ["data: a", "data: b", "", ": ping", "data: [DONE]", ""]
    assert list(events_from_lines(lines)) == [SSEEvent("a\nb"), SSEEvent("[DONE]")]


def test_split_lines_keeps_a_final_unterminated_line() -> None:
    assert list(split_lines(["a\nb", "c\r\n", "d"])) == ["a", "bc", "d"]
    assert list(split_lines([b"", "", "x\n"])) == ["x"]


STREAM = (
    ": OPENROUTER PROCESSING\r\n\r\n"
    'data: {"choices": [{"delta": {"content": "héllo"}}]}\r\n\r\n'
    "event: note\ndata: line one\ndata: line two\n\n"
    "data: [DONE]\n\n"
)


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM.encode())), max_size=12))
def test_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    raw = STREAM.encode()
    bounds = [0, *sorted(cuts), len(raw)]
    chunks = [raw[a:b] for a, b in itertools.pairwise(bounds)]
    assert events(*chunks) == events(STREAM)
    assert [e.data for e in events(STREAM)] == [
        '{"choices": [{"delta": {"content": "héllo"}}]}',
        "line one\nline two",
        "[DONE]",
    ]

"""Stubbing stale output and compaction, on real message lists (pure functions)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tether.context.compact import (
    COMPACTED_PREFIX,
    build_compacted,
    user_requests,
)
from tether.context.stale import STUB_PREFIX, stub_stale
from tether.messages import Message, ToolCall, ToolResult


def chars(messages: Sequence[Message]) -> int:
    return (
        sum(len(m.content) + len(json.dumps([c.to_dict() for c in m.tool_calls])) for m in messages)
        // 4
    )


def turn(
    n: int, name: str = "bash", args: dict[str, object] | None = None, size: int = 2000
) -> list[Message]:
    call = ToolCall(
        f"c{n}", name, json.dumps(args if args is not None else {"command": f"run {n}"})
    )
    return [
        Message(role="assistant", content=f"step {n}", tool_calls=(call,)),
        Message.tool(ToolResult(call.id, name, f"output {n} " + "x" * size)),
    ]


def session(turns: int, request: str = "Fix the bug in shop.py please") -> list[Message]:
    messages = [Message.user(request)]
    for n in range(turns):
        messages += turn(n)
    return messages


def pairs_intact(messages: Sequence[Message]) -> bool:
    """Every tool result follows the assistant message that called it, in order."""
    open_calls: list[str] = []
    for message in messages:
        if message.role == "assistant":
            if open_calls:
                return False
            open_calls = [c.id for c in message.tool_calls]
        elif message.role == "tool":
            if not open_calls or open_calls.pop(0) != message.tool_call_id:
                return False
        elif open_calls:
            return False
    return not open_calls


def test_old_results_become_stubs_in_one_batch_and_recent_ones_stay(tmp_path: Path) -> None:
    messages = session(10)
    spilled: list[str] = []

    def spill(text: str, tool: str) -> Path:
        spilled.append(text)
        path = tmp_path / f"{len(spilled):04d}-{tool}.txt"
        path.write_text(text)
        return path

    result, stubs = stub_stale(messages, keep_turns=3, spill=spill)
    assert len(stubs) == 7 and len(result) == len(messages)
    assert all(result[i].content.startswith(STUB_PREFIX) for i in range(2, 15, 2))
    assert all(result[i] == messages[i] for i in range(15, 21))  # the last 3 turns
    first = result[2].content
    assert 'bash({"command": "run 0"})' in first and "2,009 characters" in first
    path = first.split("Full text: ")[1].split(" (")[0]
    assert Path(path).read_text() == messages[2].content  # nothing is lost
    again, more = stub_stale(result, keep_turns=3, spill=spill)
    assert again == result and more == {}  # stubs are not stubbed again
    assert pairs_intact(result)


def test_files_still_being_edited_keep_their_latest_read() -> None:
    messages = [Message.user("edit")]
    messages += turn(0, "read_file", {"path": "./shop.py"})
    messages += turn(1, "read_file", {"path": "shop.py"})
    messages += turn(2, "read_file", {"path": "other.py"})
    messages += turn(3, "str_replace", {"path": "shop.py", "old_str": "a", "new_str": "b"})
    messages += [turn(n)[i] for n in range(4, 9) for i in (0, 1)]
    result, stubs = stub_stale(messages, keep_turns=2)
    assert result[4] == messages[4]  # the latest read of shop.py, which is being edited
    assert result[2].content.startswith(STUB_PREFIX)  # an older read of it
    assert result[6].content.startswith(STUB_PREFIX)  # other.py is not being edited
    assert "4" not in stubs and "2" in stubs  # keyed by position


def test_compaction_keeps_requests_verbatim_and_whole_turns() -> None:
    messages = session(12, request="First: fix shop.py.\n  Keep the API stable!  ")
    messages += [Message.user("Second request: also add tests")]
    for n in range(12, 20):
        messages += turn(n)
    compacted = build_compacted(
        messages, "## Goal\nfix it", estimate=chars, tail_budget=1600, requests_budget=1000
    )
    head = compacted.messages[0]
    assert head.role == "user" and head.content.startswith(COMPACTED_PREFIX)
    assert "## Goal\nfix it" in head.content
    assert "First: fix shop.py.\n  Keep the API stable!  " in head.content
    assert head.content.endswith("Second request: also add tests")
    tail = compacted.messages[1:]
    assert tail and tail[0].role == "assistant" and pairs_intact(tail)
    assert tail == messages[compacted.tail_from :]
    assert user_requests(compacted.messages) == [
        "First: fix shop.py.\n  Keep the API stable!  ",
        "Second request: also add tests",
    ]
    # A second compaction carries the requests over again, verbatim.
    again = build_compacted(
        [*compacted.messages, *turn(99)],
        "later",
        estimate=chars,
        tail_budget=10,
        requests_budget=1000,
    )
    assert user_requests(again.messages) == user_requests(compacted.messages)
    assert again.messages[1:] == turn(99)  # at least the last whole turn


def test_old_requests_give_way_to_the_latest_when_space_is_short() -> None:
    messages = [
        Message.user("old " + "r" * 4000),
        *turn(0),
        Message.user("latest request"),
        *turn(1),
    ]
    compacted = build_compacted(messages, "s", estimate=chars, tail_budget=5000, requests_budget=50)
    assert compacted.requests_kept == 1 and compacted.requests_total == 2
    assert "1 older request(s) left out" in compacted.messages[0].content
    assert compacted.messages[0].content.endswith("latest request")


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3), min_size=1, max_size=12),
    keep=st.integers(0, 6),
    budget=st.integers(1, 4000),
)
def test_no_tool_call_is_ever_split_from_its_result(
    sizes: list[int], keep: int, budget: int
) -> None:
    messages: list[Message] = [Message.user("go")]
    n = 0
    for calls in sizes:
        batch = [ToolCall(f"c{n + i}", "bash", "{}") for i in range(calls)]
        messages.append(Message(role="assistant", content="", tool_calls=tuple(batch)))
        messages += [Message.tool(ToolResult(c.id, "bash", "y" * 900)) for c in batch]
        n += calls
    stubbed, _ = stub_stale(messages, keep_turns=keep)
    assert pairs_intact(stubbed) and [m.tool_call_id for m in stubbed] == [
        m.tool_call_id for m in messages
    ]
    compacted = build_compacted(
        messages, "s", estimate=chars, tail_budget=budget, requests_budget=100
    )
    assert pairs_intact(compacted.messages)
    assert compacted.messages[1:] == messages[compacted.tail_from :]


def test_a_big_output_is_stubbed_when_it_ages_out_if_that_pays() -> None:
    from tether.context.stale import stub_spilled

    messages = [Message.user("go"), *turn(0, size=40_000)]
    for n in range(1, 5):  # turn 0 has just left the 4 recent turns
        messages += turn(n, size=300)
    early, stubs = stub_spilled(messages, keep_turns=4, estimate=chars)
    assert list(stubs) == ["2"] and early[2].content.startswith(STUB_PREFIX)
    assert early[3:] == messages[3:]  # nothing after it changes
    # Once more turns follow it, changing it would cost more than it saves: left alone.
    later = [Message.user("go"), *turn(0, size=40_000)]
    for n in range(1, 40):
        later += turn(n, size=3000)
    assert stub_spilled(later, keep_turns=38, estimate=chars)[1] == {}
    # Small outputs never pay.
    small = [Message.user("go"), *[m for n in range(8) for m in turn(n, size=500)]]
    assert stub_spilled(small, keep_turns=4, estimate=chars)[1] == {}

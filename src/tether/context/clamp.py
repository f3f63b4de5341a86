"""Keep tool output within what the model should read at once.

Head and tail survive (errors tend to be at the end, context at the start); the
marker says exactly how much was cut so the model can ask for the rest.
"""

from __future__ import annotations

__all__ = ["clamp"]


def clamp(text: str, limit: int) -> str:
    """`text` itself if it fits in `limit` characters, else head + marker + tail."""
    if limit <= 0 or len(text) <= limit:
        return text
    keep = max(limit - 120, 2)
    head_len = keep * 2 // 5
    tail_len = keep - head_len
    head, tail = text[:head_len], text[len(text) - tail_len :]
    cut = text[head_len : len(text) - tail_len]
    lines = cut.count("\n")
    marker = (
        f"\n[... {len(cut):,} characters ({lines:,} lines) cut from the middle of "
        f"{len(text):,}; read a narrower range to see them ...]\n"
    )
    return head + marker + tail

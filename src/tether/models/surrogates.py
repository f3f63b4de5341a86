"""Text that UTF-8 can carry: surrogate halves joined, lone ones replaced.

Both directions of the wire need it: request encoding (`openai_request.py`) must
turn any text into UTF-8 bytes, and response assembly (`openai_response.py`) must
join the halves of a character that a server split across two chunks.
"""

from __future__ import annotations

import re

__all__ = ["mend_surrogates"]

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def mend_surrogates(text: str) -> str:
    """`text` with surrogate pairs joined into their characters and lone ones as U+FFFD.

    A server may send half of a character as a `\\ud83d` escape, and the other half
    in the next chunk: valid JSON, but no valid text until the halves are joined.
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")

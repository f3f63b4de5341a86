"""What the scripted endpoint remembers between requests, safe to share across threads.

`ScriptState` holds the script, the requests received so far, the faults still to
inject and how far through the script the answers have got. The handler threads
of `scripted_server.py` consult it for every request; `ScriptedEndpoint` (in
`scripted.py`) owns it and shows it to tests.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.models.scripted_anthropic import cache_usage, prompt_blocks
from tether.models.scripted_wire import (
    END_OF_SCRIPT,
    Fault,
    ScriptStep,
    Turn,
    estimate_usage,
    output_chars,
    prompt_text,
)

__all__ = ["RecordedRequest", "ScriptState"]


@dataclass(slots=True)
class RecordedRequest:
    """One request as received; header names are lower-case, `body` is None unless JSON.

    `received_at` (headers parsed, body not yet read) and `answered_at` (last byte of
    the answer written) are `time.perf_counter()` readings, for benchmarks.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float = 0.0
    answered_at: float | None = None


class ScriptState:
    """The script's progress and the requests seen; every method takes the lock.

    A faulted request does not use up a turn, nor does an answer that could not be
    delivered (`give_back`). With `api_key` set, only that bearer token is
    `authorized` (and only that `x-api-key` on the Anthropic side); `model` and
    `strict_model` are the endpoint's (see there). Both protocols share the script;
    the Anthropic side also keeps the prompt-cache prefixes written so far.
    """

    def __init__(
        self,
        script: Sequence[ScriptStep],
        *,
        faults: Mapping[int, Fault] | None = None,
        api_key: str | None = None,
        model: str = "scripted",
        strict_model: bool = False,
    ) -> None:
        self.model = model
        self.strict_model = strict_model
        self._script = list(script)
        self._faults = dict(faults or {})
        self._api_key = api_key
        self._lock = threading.Lock()
        self._next_faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._turns_served = 0
        self._previous_prompt: str | None = None
        self._cached_prefixes: set[str] = set()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, faulted ones included (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def turns_served(self) -> int:
        with self._lock:
            return self._turns_served

    def add_fault(self, fault: Fault) -> None:
        """Give the next request (not yet received) this fault; several queue up."""
        with self._lock:
            self._next_faults.append(fault)

    def record(self, request: RecordedRequest) -> Fault | None:
        """Store the request and say which fault, if any, it gets."""
        with self._lock:
            index = len(self._requests)
            self._requests.append(request)
            if index in self._faults:
                return self._faults[index]
            return self._next_faults.popleft() if self._next_faults else None

    def authorized(self, headers: Mapping[str, str]) -> bool:
        return self._api_key is None or headers.get("authorization") == f"Bearer {self._api_key}"

    def anthropic_authorized(self, headers: Mapping[str, str]) -> bool:
        return self._api_key is None or headers.get("x-api-key") == self._api_key

    def answer(self, body: dict[str, Any]) -> tuple[Turn, dict[str, Any], int]:
        """The next turn, its OpenAI usage and its number; consumes one script step."""
        turn, number = self._next_turn(body)
        prompt = prompt_text(body)
        with self._lock:
            usage = estimate_usage(prompt, self._previous_prompt, output_chars(turn))
            self._previous_prompt = prompt
        return turn, usage, number

    def answer_messages(self, body: dict[str, Any]) -> tuple[Turn, dict[str, int], int]:
        """The next turn, its Anthropic usage and its number, for a valid Messages request.

        The prompt reads and writes the cache model (`scripted_anthropic.cache_usage`).
        """
        turn, number = self._next_turn(body)
        blocks = prompt_blocks(body)
        model = str(body.get("model"))
        with self._lock:
            usage, writes = cache_usage(blocks, self._cached_prefixes, model=model)
            self._cached_prefixes |= writes
        usage["output_tokens"] = math.ceil(output_chars(turn) / 4)
        return turn, usage, number

    def _next_turn(self, body: dict[str, Any]) -> tuple[Turn, int]:
        """The next turn and its number.

        A callable step runs outside the lock: the demo's steps sleep to pace it.
        A step that raises is not used up, so a retry meets the same error again.
        """
        with self._lock:
            number = self._turns_served
            self._turns_served += 1
            step = self._script[number] if number < len(self._script) else END_OF_SCRIPT
        try:
            turn = step if isinstance(step, Turn) else step(body)
        except Exception:
            with self._lock:
                self._turns_served = number
            raise
        return turn, number

    def give_back(self, number: int) -> None:
        """Turn `number` was not delivered: the next request gets it again."""
        with self._lock:
            if self._turns_served == number + 1:
                self._turns_served = number

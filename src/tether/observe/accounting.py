"""Per-run context accounting: the numbers `--output-format json` and `run_end` report.

Token counts themselves travel as `Usage`; this holds what context management did
in one run, so a script can see how close a run came to the window and what it cost
in stubs and compactions, without reading the transcript.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

__all__ = ["ContextStats"]


@dataclass(frozen=True, slots=True)
class ContextStats:
    """What context management did in one run.

    `last_request_tokens` is the provider's input count for the run's last request,
    or tether's estimate when the provider did not report one. `stubbed` counts stub
    batches, including the fallback when a compaction failed.
    """

    window: int | None = None
    last_request_tokens: int = 0
    compactions: int = 0
    stubbed: int = 0

    def fitted(self, action: str) -> ContextStats:
        """The stats after `ContextManager.fit` did `action`."""
        if action == "compact":
            return replace(self, compactions=self.compactions + 1)
        if action in ("stub", "compact-failed"):
            return replace(self, stubbed=self.stubbed + 1)
        return self

    def to_dict(self) -> dict[str, int | None]:
        return asdict(self)

"""No sandbox: commands run with the user's full rights. Only on explicit request."""

from __future__ import annotations

from collections.abc import Sequence

from tether.sandbox.base import Launch, SandboxPolicy

__all__ = ["NoSandbox"]


class NoSandbox:
    """Runs the command as it is; the private temp dir is still offered as $TMPDIR."""

    name = "none"
    caveat = None

    def probe(self) -> str | None:
        return None

    def close(self) -> None:
        pass

    def launch(self, argv: Sequence[str], policy: SandboxPolicy) -> Launch:
        return Launch(tuple(argv), env={"TMPDIR": str(policy.tmp)})

"""Path confinement for the file tools: every path resolves inside the workspace.

This is the file tools' own fence, not the OS sandbox: it follows symlinks and `..`
to where they really lead and refuses anything that ends up outside the root.
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.errors import ToolError

__all__ = ["Workspace"]


class Workspace:
    """The directory the agent works in."""

    __slots__ = ("reserved", "root")

    def __init__(self, root: Path | str, *, reserved: tuple[Path, ...] = ()) -> None:
        """`reserved`: directories inside the root that belong to tether itself (its state
        directory, when the workspace is the home directory); no tool may touch them."""
        self.root = Path(os.path.realpath(root))
        self.reserved = tuple(Path(os.path.realpath(p)) for p in reserved)

    def resolve(self, path: str) -> Path:
        """The real location of `path` (relative to the root), refused if outside it."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("The path is empty; give a path relative to the workspace root.")
        if "\x00" in path:
            raise ToolError("The path contains a NUL byte.")
        candidate = Path(path.strip()).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        if real != self.root and self.root not in real.parents:
            via = " (through a symlink)" if self._lexically_inside(candidate) else ""
            raise ToolError(
                f"Path {path!r} resolves to {real}, outside the workspace {self.root}{via}. "
                "Tools may only touch files inside the workspace."
            )
        for own in self.reserved:
            if real == own or own in real.parents:
                raise ToolError(
                    f"Path {path!r} is inside {own}, tether's own state (transcripts and "
                    "checkpoints); tools may not touch it."
                )
        return real

    def relative(self, path: Path) -> str:
        """How to show `path` to the model: relative to the root where possible."""
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return str(path)
        return rel.as_posix() or "."

    def _lexically_inside(self, candidate: Path) -> bool:
        normal = Path(os.path.normpath(candidate))
        return normal == self.root or self.root in normal.parents

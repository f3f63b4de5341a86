"""Path confinement for the file tools: every path resolves inside the workspace.

This is the file tools' own fence, not the OS sandbox: it follows symlinks and `..`
to where they really lead and refuses anything that ends up outside the root.
Read-only tools may also reach a few `readable` roots: tether's own overflow files,
which keep the full text of tool outputs too long to show. Nothing writes there.
"""

from __future__ import annotations

import os
from pathlib import Path

from tether.errors import ToolError

__all__ = ["Workspace"]


class Workspace:
    """The directory the agent works in."""

    __slots__ = ("readable", "reserved", "root")

    def __init__(
        self,
        root: Path | str,
        *,
        reserved: tuple[Path, ...] = (),
        readable: tuple[Path, ...] = (),
    ) -> None:
        """`reserved`: directories inside the root that belong to tether itself (its state
        directory, when the workspace is the home directory); no tool may touch them.
        `readable`: directories of tether's own output (overflow files), wherever they
        are, that read-only tools may read (`resolve(..., reading=True)`) and no tool
        may write, even when they lie inside the root."""
        self.root = Path(os.path.realpath(root))
        self.reserved = tuple(Path(os.path.realpath(p)) for p in reserved)
        self.readable = tuple(Path(os.path.realpath(p)) for p in readable)

    def with_readable(self, *roots: Path) -> Workspace:
        """This workspace with `roots` added to its readable roots (same object if known)."""
        new = tuple(Path(os.path.realpath(p)) for p in roots)
        if all(p in self.readable for p in new):
            return self
        return Workspace(self.root, reserved=self.reserved, readable=self.readable + new)

    def resolve(self, path: str, *, reading: bool = False) -> Path:
        """The real location of `path` (relative to the root), refused if outside it.

        `reading=True` (read_file, list_files, search_files only) also admits paths
        that really lie under a readable root; symlinks are followed first, so a link
        into one opens nothing a direct path would not, and writes stay refused.
        """
        if not isinstance(path, str) or not path.strip():
            raise ToolError("The path is empty; give a path relative to the workspace root.")
        if "\x00" in path:
            raise ToolError("The path contains a NUL byte.")
        candidate = Path(path.strip()).expanduser()
        if not candidate.is_absolute():
            candidate = self.root / candidate
        real = Path(os.path.realpath(candidate))
        own_output = self.readable_root(real)
        if own_output is not None:
            if reading:
                return real
            raise ToolError(
                f"Path {path!r} is inside {own_output}, where tether keeps the full text of "
                "long tool outputs; it can be read (read_file, search_files), not changed."
            )
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

    def readable_root(self, real: Path) -> Path | None:
        """The readable root that `real` (an already resolved path) lies in, if any."""
        for root in self.readable:
            if real == root or root in real.parents:
                return root
        return None

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

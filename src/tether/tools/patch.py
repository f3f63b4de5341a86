"""`apply_patch`: change many files in one call, validated whole before any write.

A thin wrapper over `tether.patch`: the engine does the work and says what went
wrong in words the model can act on; this turns those into `ToolError`s and makes
sure nothing else escapes.
"""

from __future__ import annotations

from tether.errors import ToolError
from tether.tools.registry import ToolContext, tool
from tether.tools.textio import check_text

__all__ = ["apply_patch"]


@tool
def apply_patch(ctx: ToolContext, patch: str) -> str:
    """Apply a patch that adds, deletes, updates or moves files, all or nothing.

    The whole patch is checked before anything is written: if any part fails,
    no file changes and the error shows the file's real lines so you can fix the
    patch. Two formats are accepted. The envelope format:

    *** Begin Patch
    *** Update File: src/app.py
    @@ def main
     context line (starts with a space)
    -line to remove
    +line to add
    *** Add File: notes.txt
    +every line of a new file starts with +
    *** Delete File: old.py
    *** Update File: a.py
    *** Move to: b.py
    *** End Patch

    `@@` may be followed by a line to find first (e.g. `@@ def main`); give about 3
    lines of context around each change, enough to match one place only. Put
    `*** End of File` after a hunk that must match the end of the file. Or send a
    unified diff as `git diff` prints it (`--- a/x`, `+++ b/x`, `@@ -l,n +l,n @@`);
    slightly stale line numbers are tolerated. Paths are relative to the workspace
    root. Line endings, encoding and file mode are kept.

    Args:
        patch: The patch text, in the envelope format or as a unified diff.
    """
    from tether.patch import PatchError, apply_patch_text  # loads at the first patch, not at start

    check_text(patch, "The patch", allow_nul=True)
    if not patch.strip():
        raise ToolError("The patch is empty; send '*** Begin Patch' ... '*** End Patch'.")
    try:
        return apply_patch_text(patch, ctx.workspace.root).text
    except PatchError as exc:
        raise ToolError(f"The patch was not applied (no file changed). {exc}") from None
    except (OSError, ValueError, UnicodeError) as exc:
        raise ToolError(f"The patch was not applied: {exc}.") from None

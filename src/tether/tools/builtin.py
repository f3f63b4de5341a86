"""The tools every run offers, in the order the model sees them.

The order is part of the request prefix (and so of the prompt cache): change it
only on purpose.
"""

from __future__ import annotations

from tether.tools.edit import str_replace
from tether.tools.files import list_files, read_file, write_file
from tether.tools.patch import apply_patch
from tether.tools.registry import Tool
from tether.tools.search import search_files
from tether.tools.shell import bash

__all__ = ["builtin_tools"]


def builtin_tools() -> tuple[Tool, ...]:
    """bash, read_file, write_file, str_replace, apply_patch, list_files, search_files.

    apply_patch sits with the other edit tools: a model looking for a way to change
    several files at once (or to move one) finds it next to str_replace.
    """
    return (bash, read_file, write_file, str_replace, apply_patch, list_files, search_files)

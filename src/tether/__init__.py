"""tether: a coding-agent harness that turns a language model into an agent.

Nothing happens at import time; the library surface is imported on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

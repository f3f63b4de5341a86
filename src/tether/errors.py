"""The one exception tree of tether.

Program-caused failures are raised as one of these and translated once, at the CLI
boundary, into a message and an exit code. Model-caused failures inside a tool are
`ToolError`s: the dispatcher turns them into a tool result the model can read.

    TetherError                 exit 1 (a bug or an unexpected state)
    ├── UsageError              exit 2 (bad command line)
    ├── ConfigError             exit 3 (missing key/model, bad config file)
    ├── ProviderError           exit 4 (the model endpoint failed)
    │   ├── AuthenticationError     401/403: not retried
    │   ├── ModelNotFoundError      404: not retried
    │   ├── ContextLengthError      prompt too long: not retried
    │   ├── BadRequestError         other 4xx: not retried
    │   ├── ToolFormatError         tool calls written as text stayed unreadable after restates
    │   └── TransientError          429, 5xx, timeouts, resets, broken streams: retried
    └── ToolError               returned to the model, never raised past the dispatcher
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "EXIT_CONFIG",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_LIMIT",
    "EXIT_OK",
    "EXIT_PROVIDER",
    "EXIT_UNDO_CONFLICT",
    "EXIT_USAGE",
    "AuthenticationError",
    "BadRequestError",
    "ConfigError",
    "ContextLengthError",
    "ModelNotFoundError",
    "ProviderError",
    "TetherError",
    "ToolError",
    "ToolFormatError",
    "TransientError",
    "UsageError",
]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_PROVIDER = 4
EXIT_LIMIT = 5
EXIT_PATCH_FAILED = 6
EXIT_UNDO_CONFLICT = 7
EXIT_INTERRUPTED = 130


class TetherError(Exception):
    """Root of every error tether raises on purpose."""

    exit_code: int = EXIT_INTERNAL


class UsageError(TetherError):
    """The command line asks for something that does not make sense."""

    exit_code = EXIT_USAGE


class ConfigError(TetherError):
    """Settings are missing or invalid; the message says what to set."""

    exit_code = EXIT_CONFIG


class ProviderError(TetherError):
    """The model endpoint failed in a way the run cannot continue from."""

    exit_code = EXIT_PROVIDER

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AuthenticationError(ProviderError):
    """The endpoint refused the credentials (401/403)."""


class ModelNotFoundError(ProviderError):
    """The endpoint does not know the model (404)."""


class ContextLengthError(ProviderError):
    """The conversation no longer fits the model's context window."""


class BadRequestError(ProviderError):
    """The endpoint rejected the request as malformed (a 4xx other than the above)."""


class ToolFormatError(ProviderError):
    """A model without native tools kept writing tool calls that could not be read.

    Raised by the text protocol after its requests to restate the call ran out; the
    message says what was wrong and how many replies were tried. `usage` is what
    those replies cost (a `messages.Usage`), so the run's totals still count it.
    """

    def __init__(self, message: str, *, usage: Any = None) -> None:
        super().__init__(message)
        self.usage = usage


class TransientError(ProviderError):
    """A failure worth retrying: rate limits, server errors, network trouble."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ToolError(TetherError):
    """A tool was called wrongly or hit a condition the model should fix itself."""

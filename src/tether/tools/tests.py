"""`run_tests`: run the project's test command and report the outcome in one line.

Running tests through bash costs the model a long log to read for two numbers. This
tool runs the configured (`[tests] command`) or detected command (test_command.py)
exactly as bash runs a command (sandbox, process group, timeout, Ctrl-C, git's setup
put back), then shows the exit code, the counts from the runner's summary
(test_summary.py) and only the last lines of the output; when lines were left out
the whole log is in an overflow file the model can page through.

The timeout is the longest a user lets one command run (`max_timeout`, 600 s by
default), or `bash_timeout` if that is larger: a whole suite is the longest thing an
agent routinely runs, and a run cut short reports nothing useful.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tether.tools.registry import Tool, ToolContext, tool

__all__ = ["gate_view", "run_tests_tool"]


def gate_view(
    workspace: Path,
    configured: str | None,
    path: str | None,
    sandboxed: bool,
    arguments: Mapping[str, object],
) -> tuple[str, bool]:
    """What a run_tests call would run, for the permission gate, and whether it may run
    unasked: exactly the configured command, and only inside a sandbox (a cloned
    project's own config could name it)."""
    from tether.tools.test_command import resolve_test_command

    args = arguments.get("args")
    found = resolve_test_command(
        workspace, configured, args if isinstance(args, str) else None, path=path
    )
    return found.command, found.exact and sandboxed


def run_tests_tool(configured: str | None) -> Tool:
    """The run_tests tool, running `configured` (None: the detected command)."""

    @tool
    def run_tests(ctx: ToolContext, args: str | None = None) -> str:
        """Run the project's tests; returns the exit code, counts and the end of the output.

        Prefer this to bash for running tests. It runs the project's test command
        (configured by the user, or detected: pytest, unittest, npm, cargo or go
        test) in the workspace root, sandboxed like bash, with the longest timeout
        bash allows. The first line gives the outcome and counts, the second the
        command that ran, then the last lines of the output; when output was left
        out, the whole log is saved in a file named there (page it with read_file,
        search it with search_files).

        Args:
            args: Arguments appended to the test command to narrow the run, e.g.
                "tests/test_api.py -k login" for pytest or a test name for cargo
                test. Each word is passed literally (no shell syntax). Omit to run
                the whole suite.
        """
        from tether.tools.test_run import run

        return run(ctx, configured, args)

    return run_tests

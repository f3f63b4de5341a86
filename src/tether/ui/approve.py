"""Asking the user about a call the policy will not allow on its own.

Shows the command (or path), each part with its verdict and reason, and takes
yes / no / always. "Always" shows the general rule it would add — the program and
its subcommand, never the verbatim line — and asks whether to keep it for this
session or save it in the project's .tether/config.toml.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from tether.policy.gate import Approval, ApprovalRequest, Approver

__all__ = ["terminal_approver"]


def terminal_approver(read_line: Callable[[str], str | None], out: TextIO) -> Approver:
    """An approver that talks to the user through `read_line(prompt)` and `out`."""

    def _ask(question: str) -> str:
        # Written here, not as the input prompt: it must show without a terminal too.
        out.write(question)
        out.flush()
        answer = read_line("")
        if answer is None:
            out.write("\n")
        return answer or ""

    def approve(request: ApprovalRequest) -> Approval:
        decision = request.decision
        out.write(f"\n? {request.tool} wants to run: {request.subject}\n")
        for part in decision.parts:
            if part.verdict != "allow":
                out.write(f"    {part.verdict:5} {part.text}\n          {part.reason}\n")
        choices = "[y]es / [n]o" + (" / [a]lways" if request.proposals else "")
        answer = _ask(f"  Allow? {choices}: ").strip().lower()
        if answer in ("y", "yes"):
            return Approval("yes")
        if answer in ("a", "always") and request.proposals:
            out.write("  Always allow: " + ", ".join(request.proposals) + "\n")
            scope = read_line("  Keep it for this [s]ession or save it in the [p]roject? ") or ""
            if scope.strip().lower() in ("p", "project"):
                return Approval("always", "project")
            return Approval("always", "session")
        return Approval("no")

    return approve

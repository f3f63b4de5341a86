"""Approval questions from other threads, asked on the main thread.

Subagents run on threads, but only the main thread may read the terminal: Ctrl-C
reaches only it, and a question left open on another thread after Ctrl-C would
swallow the user's next line. So a thread's question waits in a queue; the main
thread asks it while it waits for that thread's work (`serving`), and answers "no"
to whatever is still queued when it stops waiting. A question asked while nobody
is serving (its task was abandoned) is declined at once.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from tether.policy.gate import Approval, ApprovalRequest, Approver

__all__ = ["ApprovalRelay"]

_NO = Approval("no")
_START_S = 2.0  # how long a thread's question waits for the main thread to begin serving


@dataclass(slots=True)
class _Question:
    request: ApprovalRequest
    answer: Approval = _NO
    done: threading.Event = field(default_factory=threading.Event)


class ApprovalRelay:
    """An `Approver` any thread may call; the main thread's waits call `serve`."""

    def __init__(self, approver: Approver, *, start_s: float = _START_S) -> None:
        self._approver = approver
        self._start_s = start_s
        self._queue: queue.SimpleQueue[_Question] = queue.SimpleQueue()
        self._serving = threading.Event()

    def __call__(self, request: ApprovalRequest) -> Approval:
        if threading.current_thread() is threading.main_thread():
            return self._approver(request)
        if not self._serving.wait(self._start_s):
            return _NO  # nobody waits on this work any more
        question = _Question(request)
        self._queue.put(question)
        while not question.done.wait(0.1):
            if not self._serving.is_set():  # the main thread stopped waiting meanwhile
                self._settle()
        return question.answer

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """While the main thread waits for other threads' work; queued questions are
        declined when it ends (Ctrl-C, or the work finished)."""
        self._serving.set()
        try:
            yield
        finally:
            self._serving.clear()
            self._settle()

    def serve(self) -> None:
        """Ask the queued questions (main thread only). Ctrl-C while asking declines
        that question and propagates, as Ctrl-C during any wait does."""
        while True:
            try:
                question = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                question.answer = self._approver(question.request)
            finally:
                question.done.set()

    def _settle(self) -> None:
        while True:
            try:
                question = self._queue.get_nowait()
            except queue.Empty:
                return
            question.answer = _NO
            question.done.set()

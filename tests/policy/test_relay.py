"""The approval relay: threads' questions are asked on the main thread, or declined."""

from __future__ import annotations

import threading

from tether.policy.actions import Decision
from tether.policy.gate import Approval, ApprovalRequest
from tether.policy.relay import ApprovalRelay

REQUEST = ApprovalRequest("bash", "touch x", Decision.of([]), ())


def ask_from_thread(relay: ApprovalRelay) -> tuple[threading.Thread, list[Approval]]:
    answers: list[Approval] = []
    thread = threading.Thread(target=lambda: answers.append(relay(REQUEST)))
    thread.start()
    return thread, answers


def test_a_thread_is_answered_by_the_main_thread_while_it_serves() -> None:
    asked_on: list[str] = []

    def approver(request: ApprovalRequest) -> Approval:
        asked_on.append(threading.current_thread().name)
        return Approval("yes")

    relay = ApprovalRelay(approver)
    with relay.serving():
        thread, answers = ask_from_thread(relay)
        while thread.is_alive():
            relay.serve()
            thread.join(0.01)
    assert answers == [Approval("yes")] and asked_on == ["MainThread"]


def test_nobody_serving_means_no_and_ending_the_wait_declines_what_is_queued() -> None:
    relay = ApprovalRelay(lambda request: Approval("yes"), start_s=0.1)
    thread, answers = ask_from_thread(relay)
    thread.join(5)
    assert answers == [Approval("no")]
    with relay.serving():
        thread, answers = ask_from_thread(relay)
        threading.Event().wait(0.2)  # queued, never served
    thread.join(5)
    assert answers == [Approval("no")]

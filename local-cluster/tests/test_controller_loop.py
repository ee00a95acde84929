"""The loop the three controllers share (controller/loop.py): what a worker does with a key's outcome."""

from __future__ import annotations

import threading
import time
from typing import Any

from airflow_trainjob_local.controller.loop import REQUEUE_SLACK, ControllerLoop, RetryLater
from airflow_trainjob_local.kube import ApiException


class Scripted(ControllerLoop):
    """Answers each key's reconciles from a script: a value to return, or an exception to raise."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        super().__init__(workers=1, thread_prefix="test-loop")
        self.script = script
        self.seen: list[tuple[str, float]] = []
        self.finished = threading.Event()

    def process(self, key: Any) -> float | None:
        self.seen.append((key, time.monotonic()))
        outcome = self.script[key].pop(0)
        if not any(self.script.values()):
            self.finished.set()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def run(script: dict[str, list[Any]]) -> list[tuple[str, float]]:
    loop = Scripted(script)
    loop.start()
    for key in script:
        loop.queue.add(key)
    assert loop.finished.wait(15), loop.seen
    loop.stop()
    return loop.seen


def test_a_key_that_asks_for_another_look_is_queued_again_after_that_time_and_the_slack():
    seen = run({"deadline": [0.2, None]})
    assert [k for k, _ in seen] == ["deadline", "deadline"]
    assert seen[1][1] - seen[0][1] >= 0.2 + REQUEUE_SLACK - 0.05


def test_refusals_and_retry_later_are_retried_with_the_keys_backoff_and_the_loop_goes_on(caplog):
    caplog.set_level("INFO", logger="airflow_trainjob_local.controller.loop")
    seen = run(
        {
            "missing-runtime": [RetryLater("runtime torch-distributed not found"), None],
            "conflict": [ApiException(status=409, reason="Conflict"), None],
            "bug": [ValueError("boom"), None],
        }
    )
    assert sorted(k for k, _ in seen) == ["bug", "bug", "conflict", "conflict", "missing-runtime", "missing-runtime"]
    said = caplog.text
    assert "missing-runtime: runtime torch-distributed not found; retrying in 0.5s" in said
    assert "conflict: the object changed meanwhile (409); retrying in 0.5s" in said
    assert "bug: reconcile failed; retrying in 0.5s" in said

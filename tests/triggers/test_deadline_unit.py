"""When the trigger looks again with no change of its job (``_seconds_to_deadline``, after ``_judge_seen``), pure:
just past the nearest deadline as it stands after the last state judged, from the same decision as the synchronous
wait's (:meth:`~airflow_trainjob.domain.lifecycle.JobWait.next_look`). No cluster: the trigger's fire times against the
apiserver are in ``tests/operators/test_deadline_timing.py``."""

from __future__ import annotations

import time

import pytest

from airflow_trainjob.domain.deadlines import LOOK_MARGIN
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from airflow_trainjob.watching.stream_source import WATCH_SECONDS


def job(suspend: bool, *true: str) -> dict:
    conditions = [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"} for t in true]
    return {
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "uid": "u-1"},
        "spec": {"runPolicy": {"suspend": suspend}},
        "status": {"conditions": conditions},
    }


def trigger(**deadlines) -> TrainingJobTrigger:
    return TrainingJobTrigger(kind="PyTorchJob", name="train", namespace="ml", started_at=time.time(), **deadlines)


def test_a_suspension_after_creation_brings_the_next_look_to_queue_timeout():
    waiting = trigger(startup_timeout=600, queue_timeout=8)
    waiting._judge_seen(job(False, "Created"))
    assert waiting._seconds_to_deadline() == pytest.approx(min(600 + LOOK_MARGIN, WATCH_SECONDS), abs=0.5)
    waiting._judge_seen(job(True, "Created", "Suspended"))
    assert waiting._seconds_to_deadline() == pytest.approx(8 + LOOK_MARGIN, abs=0.5)


def test_an_admission_starts_startup_timeout_and_running_stops_it():
    waiting = trigger(startup_timeout=20)
    waiting._judge_seen(job(True, "Created", "Suspended"))
    # Queued: startup_timeout waits for the admission; the next look is the next queue line (or the longest wait).
    assert waiting._seconds_to_deadline() == pytest.approx(min(300, WATCH_SECONDS), abs=0.5)
    waiting._judge_seen(job(False, "Created"))  # admitted (Suspended no longer true)
    assert waiting._seconds_to_deadline() == pytest.approx(20 + LOOK_MARGIN, abs=0.5)
    waiting._judge_seen(job(False, "Created", "Running"))
    assert waiting._seconds_to_deadline() == WATCH_SECONDS  # no deadline runs: the stream's changes wake it

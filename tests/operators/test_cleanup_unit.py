"""The end of the task's cleanup on an in-memory fake hook: the pods it removes are gone when the task ends — those it
deleted once stopped, a pod created after it listed them deleted too — within a bound, except when Airflow stopped
the task; a LIST that fails while it waits is a warning, never the verdict. (Against the real apiserver:
``tests/operators/test_output_survives_cleanup.py``.)"""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest

from airflow_trainjob.exceptions import TrainingJobTimeoutError
from airflow_trainjob.operators import ending
from airflow_trainjob.triggers.training_job import FINISHED, TIMED_OUT
from tests.operators.test_run_unit import NAME, NS, REF, RUNNING, SUCCEEDED, _event, make_run
from tests.support.fake_hook import FakeTrainingJobHook, api_error

DELETION_ASKED = "2026-01-01T00:02:00Z"


class PodsStopSlowly(FakeTrainingJobHook):
    """A DELETE of a pod asks it to stop (``deletionTimestamp``); it is gone after ``lists`` more LISTs of the pods,
    as a pod is once the kubelet has stopped its containers. ``gc=False``: deleting the job leaves its pods (the
    garbage collector has not got to them yet)."""

    def __init__(self, lists: int, gc: bool = True) -> None:
        super().__init__(namespace=NS)
        self.lists, self.gc = lists, gc
        self.stopping: dict[tuple[str, str], int] = {}

    def _remove_pod(self, key: tuple[str, str]) -> None:
        self.pods[key]["metadata"].setdefault("deletionTimestamp", DELETION_ASKED)
        self.stopping.setdefault(key, self.lists)

    def list_job_pods(self, name: str, namespace: str, kind: str | None = None) -> list[dict[str, Any]]:
        for key in list(self.stopping):
            self.stopping[key] -= 1
            if self.stopping[key] < 0:
                del self.stopping[key], self.pods[key]
        return super().list_job_pods(name, namespace, kind)

    def delete_job(self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"):
        if self.gc:
            return super().delete_job(kind, name, namespace, uid, propagation)
        self._call("delete_job", kind, namespace, name, uid, propagation)
        return self.jobs.pop((namespace, name), None) is not None


class Clock:
    """``time`` for the cleanup: monotonic seconds that only ``sleep`` moves on."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(ending, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep, time=time.time))
    return clock


@pytest.fixture
def log_text(caplog):
    caplog.set_level(logging.INFO, logger="tests.run_unit")
    return lambda: "\n".join(r.getMessage() for r in caplog.records)


def finished_with_a_running_worker(hook: FakeTrainingJobHook, **settings: Any):
    """A run whose job succeeded while its Worker still runs (cleanPodPolicy All), and the trigger's event."""
    run = make_run(hook, run_policy={"cleanPodPolicy": "All"}, **settings)
    job = run.create_or_attach()
    hook.add_pod(NAME, "Master", phase="Succeeded", exit_code=0)
    hook.add_pod(NAME, "Worker")
    hook.set_status(NAME, SUCCEEDED)
    return run, _event(FINISHED, f"{REF} finished", {**job, "status": SUCCEEDED})


def lists(hook: FakeTrainingJobHook) -> int:
    return len(hook.called("list_job_pods"))


def test_the_task_ends_once_the_pods_it_deleted_are_gone(clock, log_text):
    hook = PodsStopSlowly(lists=2)
    run, event = finished_with_a_running_worker(hook, on_finish="keep_job")
    run.complete(event)
    assert hook.pods == {}  # the Worker stopped, and the finished Master (All) went too
    assert clock.sleeps == [0.2, 0.4]  # LISTs after 0.2 s, then twice as long each time
    assert f"Pods of {REF} stopped and gone after 0.6 s: {NAME}-master-0, {NAME}-worker-0" in log_text()
    assert f"Keeping Succeeded {REF} for inspection" in log_text()


def test_the_wait_lists_at_most_every_second(clock):
    hook = PodsStopSlowly(lists=6)
    run, event = finished_with_a_running_worker(hook, on_finish="keep_job")
    run.complete(event)
    assert hook.pods == {}
    assert clock.sleeps == [0.2, 0.4, 0.8, 1.0, 1.0, 1.0]


def test_a_deleted_jobs_pods_are_deleted_by_the_task_and_waited_for(clock, log_text):
    """Deleting the job leaves its pods to the garbage collector, which may not have got to them: the task deletes
    them itself (it deleted the job first: none is restarted) and waits until they are gone."""
    hook = PodsStopSlowly(lists=1, gc=False)
    run = make_run(hook, timeout=30)
    job = run.create_or_attach()
    hook.set_status(NAME, RUNNING)
    master = hook.add_pod(NAME, "Master")
    with pytest.raises(TrainingJobTimeoutError):
        run.complete(_event(TIMED_OUT, "timed out", {**job, "status": RUNNING}, which="timeout"))
    assert hook.jobs == {} and hook.pods == {}
    assert hook.called("delete_pod") == [("delete_pod", NS, f"{NAME}-master-0", master["metadata"]["uid"])]
    assert f"Deleting {REF} (not finished)" in log_text()
    assert clock.sleeps == [0.2, 0.4]  # deleted at the first LIST, gone at the third
    assert f"Pods of {REF} stopped and gone after 0.6 s: {NAME}-master-0" in log_text()


def test_a_pod_created_after_the_cleanup_listed_the_pods_is_deleted_too(clock, log_text):
    hook = PodsStopSlowly(lists=0)
    run, event = finished_with_a_running_worker(hook, on_finish="keep_job")
    delete_pod = hook.delete_pod

    def delete_after_a_late_create(name: str, namespace: str, uid: str | None = None) -> bool:
        if (NS, f"{NAME}-worker-1") not in hook.pods and not hook.called("delete_pod"):
            hook.add_pod(NAME, "Worker", 1)  # the controller, its cache behind, made the replica's pod just now
        return delete_pod(name, namespace, uid)

    hook.delete_pod = delete_after_a_late_create
    run.complete(event)
    assert hook.pods == {}
    assert f"Deleting {NAME}-worker-1 of {REF} too: created after the cleanup listed the job's pods" in log_text()


def test_pods_still_stopping_after_the_bound_are_named_and_the_verdict_stands(clock, log_text):
    hook = PodsStopSlowly(lists=10**6)  # a container that ignores SIGTERM, with a long terminationGracePeriodSeconds
    run, event = finished_with_a_running_worker(hook, on_finish="keep_job")
    assert run.complete(event)["conditions"] == SUCCEEDED["conditions"]
    assert sum(clock.sleeps) == pytest.approx(ending.PODS_GONE_SECONDS)
    assert lists(hook) <= ending.PODS_GONE_SECONDS + 5  # about one LIST a second
    assert (
        f"Pods of {REF} still stopping 60 s after the task deleted them: {NAME}-master-0, {NAME}-worker-0; their "
        "deletion stands"
    ) in log_text()


def test_a_list_that_fails_while_waiting_is_a_warning(clock, log_text):
    hook = PodsStopSlowly(lists=3)
    run, event = finished_with_a_running_worker(hook, on_finish="keep_job")
    list_job_pods = hook.list_job_pods

    def fails_once_pods_are_deleted(name: str, namespace: str, kind: str) -> list[dict[str, Any]]:
        if hook.called("delete_pod"):
            raise api_error(500)
        return list_job_pods(name, namespace, kind=kind)

    hook.list_job_pods = fails_once_pods_are_deleted
    assert run.complete(event)["conditions"] == SUCCEEDED["conditions"]  # the success stands
    assert f"Could not make sure the pods of {REF} are gone (" in log_text()
    assert f"Keeping Succeeded {REF} for inspection" in log_text()


def test_stopped_by_airflow_the_deletions_are_asked_and_not_waited_for(clock, log_text):
    """``on_kill`` has seconds before Airflow kills the task's process: it asks, it does not wait."""
    hook = PodsStopSlowly(lists=5)
    run, _ = finished_with_a_running_worker(hook, on_finish="keep_job")
    run.kill()
    assert clock.sleeps == [] and lists(hook) == 1
    assert all(p["metadata"].get("deletionTimestamp") == DELETION_ASKED for p in hook.pods.values())
    assert len(hook.pods) == 2

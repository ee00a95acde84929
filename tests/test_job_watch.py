"""The pure parts of the synchronous wait's watches (job_watch) and of the lead log follower's looks (log_stream):
what an event makes of the pods and of the job, and when a follow stream is opened again. No cluster: the
watches themselves run against the real apiserver in tests/operators/test_sync_wait_watches.py."""

from __future__ import annotations

import logging
import time
from itertools import pairwise

import pytest

from airflow_trainjob.domain.deadlines import Deadlines
from airflow_trainjob.families import family_of
from airflow_trainjob.watching import list_watch
from airflow_trainjob.watching.job_watch import (
    NEARER_LOOK_SLACK,
    WATCH_SECONDS,
    JobWatch,
    PodWatch,
    Seen,
    outlasts_next_look,
)
from airflow_trainjob.watching.lead_log_follower import LOOK_INTERVAL, REOPEN_MAX, LeadLogFollower, reopen_delay
from tests.support.fake_hook import FakeTrainingJobHook

LOG = logging.getLogger("tests.job_watch")
JOB = {"kind": "PyTorchJob", "metadata": {"name": "train", "namespace": "ml", "uid": "u1", "resourceVersion": "5"}}


def pod(name: str, phase: str = "Running") -> dict:
    return {"metadata": {"name": name, "resourceVersion": "9"}, "status": {"phase": phase}}


def test_pod_events_keep_every_pod_as_last_seen_and_forget_deleted_ones():
    watch = PodWatch(hook=None, job=JOB, poll_interval=60, log=LOG)
    assert watch._event("ADDED", pod("train-master-0", "Pending")) == [pod("train-master-0", "Pending")]
    assert watch._event("ADDED", pod("train-worker-0")) == [pod("train-master-0", "Pending"), pod("train-worker-0")]
    assert watch._event("MODIFIED", pod("train-master-0")) == [pod("train-master-0"), pod("train-worker-0")]
    assert watch._event("DELETED", pod("train-worker-0")) == [pod("train-master-0")]


def test_a_job_event_of_another_uid_is_a_replacement_and_a_deletion_carries_the_final_object():
    watch = JobWatch(None, JOB, poll_interval=10, outage_tolerance=300, log=LOG)
    final = {**JOB, "status": {"conditions": [{"type": "Succeeded", "status": "True"}]}}
    assert watch._event("DELETED", final) == Seen(final, deleted=True)
    successor = {**JOB, "metadata": {**JOB["metadata"], "uid": "u2"}}
    assert watch._event("ADDED", successor) == Seen(final, deleted=True, replaced=True)
    assert watch._idle() == Seen(final, changed=False)


def test_a_stream_that_keeps_ending_is_opened_again_later_each_time():
    waits = [reopen_delay(n) for n in range(1, 12)]
    assert waits[0] == LOOK_INTERVAL
    assert all(later == min(REOPEN_MAX, 2 * earlier) for earlier, later in pairwise(waits))
    assert waits[-1] == REOPEN_MAX


def test_the_follower_reads_the_pods_the_wait_saw_and_lists_only_to_drain():
    hook = FakeTrainingJobHook(namespace="ml")
    hook.put_job({"apiVersion": "kubeflow.org/v1", **JOB, "spec": {}})
    done = hook.add_pod("train", "Master", phase="Succeeded", exit_code=0, log="one\ntwo")
    follower = LeadLogFollower(hook, family_of("PyTorchJob"), "train", "ml", LOG, pods=lambda: [done])
    follower.start()
    follower.finish()
    assert not follower.is_alive()
    assert len(hook.called("open_pod_log_stream")) == 1  # the finished run's log, once
    assert len(hook.called("list_job_pods")) <= 1  # the drain's own look, none while following


# ---- a watch never outlasts the caller's next look -------------------------------------------------------------


class ScriptedJobWatch(JobWatch):
    """A JobWatch whose watch requests deliver scripted job states, then end as the server ends one at its
    ``timeoutSeconds`` (``end N`` in :attr:`log`); records the window each was asked for, and when each was
    opened and closed, in place of the apiserver."""

    def __init__(self, *scripts: list[dict]) -> None:
        super().__init__(None, JOB, poll_interval=10, outage_tolerance=300, log=LOG)
        self.scripts = list(scripts)
        self.windows: list[float] = []
        self.log: list[str] = []

    def _watch(self, window):
        self.windows.append(window)
        self.log.append(f"open {len(self.windows)}")
        try:
            for job in self.scripts.pop(0) if self.scripts else []:
                yield self._event("MODIFIED", job)
            self.log.append(f"end {len(self.windows)}")
        finally:
            self.log.append(f"close {len(self.windows)}")


def follow_until(watch: ScriptedJobWatch, deadlines: Deadlines, requests: int) -> list[Seen]:
    """Follow as the synchronous wait does (each state fed to the deadlines, the next look asked of them) until
    ``requests`` watch requests were made."""
    seen = []
    for item in watch.follow(lambda: deadlines.next_look(time.time())):
        seen.append(item)
        deadlines.observe(item.job, time.time())
        if len(watch.windows) >= requests:
            break
    return seen


def state(suspend: bool, *true: str) -> dict:
    conditions = [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"} for t in true]
    return {**JOB, "spec": {"runPolicy": {"suspend": suspend}}, "status": {"conditions": conditions}}


def test_outlasts_next_look():
    assert outlasts_next_look(600, 8)
    assert not outlasts_next_look(600, None)  # nothing but a change calls for a look
    assert not outlasts_next_look(8.9, 8.05)  # the watch ends on the whole second after the look: kept
    assert outlasts_next_look(9.0, 8.0 - NEARER_LOOK_SLACK)


def test_a_change_that_brings_a_deadline_nearer_ends_the_watch_for_one_that_ends_at_it():
    # Created (startup_timeout 600 s runs), then suspended by a queue (queue_timeout 8 s runs), then nothing.
    deadlines = Deadlines(family=family_of("PyTorchJob"), started_at=time.time(), startup_timeout=600, queue_timeout=8)
    watch = ScriptedJobWatch([state(True, "Created")], [state(True, "Created", "Suspended")])
    follow_until(watch, deadlines, requests=2)
    assert watch.windows[0] == pytest.approx(600.05, abs=0.5)
    assert watch.windows[1] == pytest.approx(8.05, abs=0.5)
    # Closed right after the suspension, not run to its end (600 s); one watch of the job at a time.
    assert watch.log[:3] == ["open 1", "close 1", "open 2"]


def test_a_change_that_moves_no_deadline_nearer_keeps_the_watch_and_a_quiet_job_costs_no_more(monkeypatch):
    monkeypatch.setattr(list_watch, "SHORTEST_HEALTHY_WATCH", 0.0)  # the scripted watches end at once
    # Running with a 6 h timeout: each watch lasts WATCH_SECONDS; an event (Running) ends none early.
    deadlines = Deadlines(family=family_of("PyTorchJob"), started_at=time.time(), timeout=6 * 3600)
    watch = ScriptedJobWatch([state(False, "Created", "Running")], [], [])
    seen = follow_until(watch, deadlines, requests=3)
    assert watch.windows == [WATCH_SECONDS] * 3
    assert watch.log[:6] == ["open 1", "end 1", "close 1", "open 2", "end 2", "close 2"]
    assert [s.changed for s in seen][:2] == [True, True] and not any(s.changed for s in seen[2:])

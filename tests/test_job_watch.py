"""The pure parts of the synchronous wait's watches (job_watch) and of the lead log follower's looks (log_stream):
what an event makes of the pods and of the job, and when a follow stream is opened again. No cluster: the
watches themselves run against the real apiserver in tests/operators/test_sync_wait_watches.py."""

from __future__ import annotations

import logging
from itertools import pairwise

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.job_watch import JobWatch, PodWatch, Seen
from airflow_trainjob.log_stream import LOOK_INTERVAL, REOPEN_MAX, LeadLogFollower, reopen_delay
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
    follower = LeadLogFollower(hook, JOB_KINDS["PyTorchJob"], "train", "ml", LOG, pods=lambda: [done])
    follower.start()
    follower.finish()
    assert not follower.is_alive()
    assert len(hook.called("open_pod_log_stream")) == 1  # the finished run's log, once
    assert len(hook.called("list_job_pods")) <= 1  # the drain's own look, none while following

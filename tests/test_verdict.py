"""``domain/verdict.py``: a failed job's verdict from the evidence already read, and ``exceptions.exception_for``, the
one place a verdict's retry class becomes the exception Airflow sees. Pure: no cluster, no hook (the reads are
``hooks/evidence.py``'s, covered against the apiserver by tests/operators/test_init_container_failure.py,
tests/test_init_containers.py and tests/sensors/)."""

from __future__ import annotations

from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.domain.failures import ExitClass
from airflow_trainjob.domain.verdict import Verdict, event_line, failure_ends, job_ref, judge_failure
from airflow_trainjob.exceptions import TrainingJobError, exception_for
from airflow_trainjob.families import family_of

FAILED = {
    "conditions": [
        {"type": "Created", "status": "True", "lastTransitionTime": "2026-12-02T05:00:01Z"},
        {
            "type": "Failed",
            "status": "True",
            "reason": "PyTorchJobFailed",
            "message": "1 Master replica(s) failed.",
            "lastTransitionTime": "2026-12-02T05:02:00Z",
        },
    ]
}


def job() -> dict[str, Any]:
    container = {"name": "pytorch", "image": "python:3.11"}
    sidecar = {"name": "sidecar", "image": "busybox"}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "uid": "u-1"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [sidecar, container]}},
                }
            }
        },
        "status": FAILED,
    }


def pod(code: int, reason: str = "Error") -> dict[str, Any]:
    terminated = {"exitCode": code, "reason": reason, "finishedAt": "2026-12-02T05:01:58Z"}
    return {
        "metadata": {
            "name": "train-master-0",
            "labels": {"training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0"},
        },
        "status": {"phase": "Failed", "containerStatuses": [{"name": "pytorch", "state": {"terminated": terminated}}]},
    }


EVENT = {
    "type": "Warning",
    "reason": "PyTorchJobFailed",
    "message": "PyTorchJob train is failed because 1 Master replica(s) failed.",
    "involvedObject": {"kind": "PyTorchJob", "name": "train"},
}


@pytest.mark.parametrize(
    ("code", "reason", "permanent", "line"),
    [
        (1, "Error", True, "First failure (permanent: not retried): Master-0"),
        (137, "Error", False, "First failure (retryable): Master-0"),
        (137, "OOMKilled", False, "First failure (retryable): Master-0"),
    ],
)
def test_the_verdict_on_a_failed_job_is_its_message_and_whether_retrying_can_help(code, reason, permanent, line):
    tails = {"Master-0": "Traceback (most recent call last):\nValueError: bad batch"}
    verdict = judge_failure(job(), [pod(code, reason)], [EVENT], tails, family_of("PyTorchJob"))
    assert verdict.permanent is permanent
    lines = verdict.message.splitlines()
    assert lines[0] == "PyTorchJob ml/train failed: PyTorchJobFailed: 1 Master replica(s) failed."
    assert lines[1].startswith(line) and f"exit code {code}" in lines[1]
    assert "Recent events:" in lines and f"  {event_line(EVENT)}" in lines
    assert "ValueError: bad batch" in verdict.message
    assert [(e.replica, e.exit_code, e.container) for e in verdict.ends] == [("Master-0", code, "pytorch")]


def test_without_the_pods_the_job_is_judged_by_the_operators_exit_events_and_its_template():
    """The pods are gone (cleanPodPolicy All): the exits come from the training operator's ``ExitedWithCode``
    events, each container named from the job's pod template (the one that speaks for the replica, not the first)."""
    exited = {
        "type": "Normal",
        "reason": "ExitedWithCode",
        "message": "Pod: ml.train-master-0 exited with code 2",
        "lastTimestamp": "2026-12-02T05:01:58Z",
        "involvedObject": {"kind": "PyTorchJob", "name": "train"},
    }
    verdict = judge_failure(job(), [], [exited, EVENT], {}, family_of("PyTorchJob"))
    assert [(e.pod, e.replica, e.exit_code, e.exit_class, e.container) for e in verdict.ends] == [
        ("train-master-0", "Master-0", 2, ExitClass.PERMANENT, "pytorch")
    ]
    assert list(verdict.ends) == failure_ends(job(), [], [exited, EVENT], family_of("PyTorchJob"))
    assert verdict.permanent and "First failure (permanent: not retried): Master-0" in verdict.message


def test_a_replica_known_only_from_the_operators_events_is_named_beside_the_pods_seen_failing():
    """Worker-0's pod was seen failing (exit 137, retryable); Master-0's went before anyone saw it (a wait that started
    after the failure), and only the operator's ``ExitedWithCode`` says it exited 1, earlier: both are judged, oldest
    first, and the permanent one decides. An event about a pod seen failing adds nothing (the pod tells it better)."""
    spec = job()
    spec["spec"]["pytorchReplicaSpecs"]["Worker"] = spec["spec"]["pytorchReplicaSpecs"]["Master"]
    worker = pod(137)
    worker["metadata"] = {
        "name": "train-worker-0",
        "labels": {"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"},
    }

    def exited(pod_name: str, code: int, when: str) -> dict[str, Any]:
        message = f"Pod: ml.{pod_name} exited with code {code}"
        about = {"kind": "PyTorchJob", "name": "train"}
        return {
            "type": "Normal",
            "reason": "ExitedWithCode",
            "message": message,
            "lastTimestamp": when,
            "involvedObject": about,
        }

    events = [
        exited("train-master-0", 1, "2026-12-02T05:01:50Z"),
        exited("train-worker-0", 137, "2026-12-02T05:01:58Z"),
    ]
    verdict = judge_failure(spec, [worker], events, {}, family_of("PyTorchJob"))
    assert [(e.replica, e.exit_code) for e in verdict.ends] == [("Master-0", 1), ("Worker-0", 137)]
    assert verdict.permanent and "First failure (permanent: not retried): Master-0" in verdict.message
    assert "also failed: Worker-0" in verdict.message, verdict.message
    # Without the events, the pods alone decide, as before.
    assert [e.replica for e in judge_failure(spec, [worker], [], {}, family_of("PyTorchJob")).ends] == ["Worker-0"]


@pytest.mark.parametrize(("permanent", "cls"), [(True, AirflowFailException), (False, TrainingJobError)])
def test_a_verdict_becomes_the_exception_of_its_retry_class_with_its_message(permanent, cls):
    message = "PyTorchJob ml/train failed: PyTorchJobFailed\nFirst failure ..."
    error = exception_for(Verdict(permanent, message, ()))
    assert type(error) is cls and str(error) == message
    # Never both: a retryable error is no AirflowFailException (Airflow would not retry it).
    assert isinstance(error, AirflowFailException) is permanent


def test_job_ref():
    assert job_ref(job()) == "PyTorchJob ml/train"


def test_events_a_same_named_job_or_pod_deleted_before_left_are_not_quoted_nor_judged_by():
    """Events are listed by name: those of a predecessor name its uid, not this job's (or this pod's)."""
    ours = {**EVENT, "involvedObject": {"kind": "PyTorchJob", "name": "train", "uid": "u-1"}}
    theirs_exit = {
        "type": "Normal",
        "reason": "ExitedWithCode",
        "message": "Pod: ml.train-master-0 exited with code 137",
        "involvedObject": {"kind": "PyTorchJob", "name": "train", "uid": "u-old"},
    }
    theirs_pod = {
        "type": "Warning",
        "reason": "BackOff",
        "message": "Back-off restarting failed container of the old pod",
        "involvedObject": {"kind": "Pod", "name": "train-master-0", "uid": "p-old"},
    }
    unknown_uid = {**EVENT, "reason": "SomethingElse", "involvedObject": {"kind": "Job", "name": "train-node-0"}}
    failed_pod = pod(2)
    failed_pod["metadata"]["uid"] = "p-1"
    verdict = judge_failure(
        job(), [failed_pod], [theirs_exit, theirs_pod, ours, unknown_uid], {}, family_of("PyTorchJob")
    )
    assert "old pod" not in verdict.message and "code 137" not in verdict.message
    assert event_line(ours) in verdict.message and event_line(unknown_uid) in verdict.message
    assert [(e.exit_code, e.exit_class) for e in verdict.ends] == [(2, ExitClass.PERMANENT)]
    # Without this pod (cleanPodPolicy All), the predecessor's exit event is still not taken for this job's.
    gone = judge_failure(job(), [], [theirs_exit, ours], {}, family_of("PyTorchJob"))
    assert all(e.exit_code != 137 for e in gone.ends)

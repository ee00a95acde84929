"""pods.py over API JSON dicts: cleanup, the lead pod; and the container ends failures.py reads from them, with their
class. No cluster needed."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import JOB_KINDS, CleanPodPolicy, PodPhase
from airflow_trainjob.domain.failures import ExitClass, container_ends, ends_from_events
from airflow_trainjob.domain.pods import (
    is_active,
    is_being_deleted,
    is_finished,
    lead_pod,
    phase_of,
    pods_to_clean,
)

PYTORCH, TF, JAX = JOB_KINDS["PyTorchJob"], JOB_KINDS["TFJob"], JOB_KINDS["JAXJob"]


def pod(name, replica_type, index=0, phase="Running", **status):
    return {
        "metadata": {
            "name": name,
            "labels": {
                "training.kubeflow.org/replica-type": replica_type.lower(),
                "training.kubeflow.org/replica-index": str(index),
            },
        },
        "status": {"phase": phase, **status},
    }


def terminated(code, reason, at, last=None):
    status = {"name": "pytorch", "state": {"terminated": {"exitCode": code, "reason": reason, "finishedAt": at}}}
    if last:
        status["lastState"] = {"terminated": last}
    return status


def test_container_ends_carry_their_class():
    pods = [
        pod(
            "j-master-0",
            "Master",
            phase="Failed",
            containerStatuses=[
                terminated(1, "Error", "t3", last={"exitCode": 137, "reason": "OOMKilled", "finishedAt": "t1"})
            ],
        ),
        pod("j-worker-0", "Worker", phase="Succeeded", containerStatuses=[terminated(0, "Completed", "t2")]),
        pod("j-worker-1", "Worker", 1, phase="Failed", reason="Evicted", message="low on memory"),
    ]
    ends = container_ends(pods, PYTORCH)
    assert [(e.replica, e.exit_class, e.failed, e.restarted) for e in ends] == [
        ("Worker-1", ExitClass.EVICTED, True, False),  # no finishedAt: sorts first
        ("Master-0", ExitClass.OOM_KILLED, True, True),
        ("Worker-0", ExitClass.SUCCEEDED, False, False),
        ("Master-0", ExitClass.PERMANENT, True, False),
    ]


def test_ends_from_the_operators_events():
    events = [
        {"reason": "ExitedWithCode", "message": "Pod: ns.j-worker-1 exited with code 139", "lastTimestamp": "t2"},
        {"reason": "ExitedWithCode", "message": "Pod: ns.j-master-0 exited with code 0", "lastTimestamp": "t1"},
        {"reason": "PyTorchJobFailed", "message": "Pod: ns.j-master-0 exited with code 1"},
    ]
    ends = ends_from_events(events, "j", PYTORCH)
    assert [(e.pod, e.replica, e.exit_code, e.exit_class) for e in ends] == [
        ("j-master-0", "Master-0", 0, ExitClass.SUCCEEDED),
        ("j-worker-1", "Worker-1", 139, ExitClass.RETRYABLE),
    ]


@pytest.mark.parametrize(
    ("policy", "cleaned"),
    [
        (CleanPodPolicy.ALL, ["a", "b", "c"]),
        ("All", ["a", "b", "c"]),
        (CleanPodPolicy.RUNNING, ["a", "b"]),
        ("Running", ["a", "b"]),
        (CleanPodPolicy.NONE, []),
        ("None", []),
        (CleanPodPolicy.UNDEFINED, []),
    ],
)
def test_pods_to_clean(policy, cleaned):
    pods = [pod("a", "Worker", phase="Pending"), pod("b", "Worker", 1), pod("c", "Worker", 2, phase="Succeeded")]
    assert [p["metadata"]["name"] for p in pods_to_clean(pods, policy)] == cleaned


def test_lead_pod_follows_the_tables_lead_order():
    chief, master, worker = pod("c", "Chief"), pod("m", "Master"), pod("w", "Worker")
    assert lead_pod([worker, master, chief], TF) is chief
    assert lead_pod([worker, master], TF) is master
    assert lead_pod([pod("w1", "Worker", 1), worker], JAX) is worker
    assert lead_pod([pod("w1", "Worker", 1)], PYTORCH) is None


@pytest.mark.parametrize(
    ("status", "phase", "active", "finished"),
    [
        (None, PodPhase.PENDING, True, False),  # not reported on by a kubelet yet
        ({}, PodPhase.PENDING, True, False),
        ({"phase": "Pending"}, PodPhase.PENDING, True, False),
        ({"phase": "Running"}, PodPhase.RUNNING, True, False),
        ({"phase": "Succeeded"}, PodPhase.SUCCEEDED, False, True),
        ({"phase": "Failed"}, PodPhase.FAILED, False, True),
        ({"phase": "Unknown"}, PodPhase.UNKNOWN, False, False),  # node lost: neither deleted as running nor done
    ],
)
def test_pod_phase_classes(status, phase, active, finished):
    pod = {"metadata": {"name": "p"}, "status": status}
    assert phase_of(pod) == phase
    assert (is_active(pod), is_finished(pod)) == (active, finished)


@pytest.mark.parametrize(
    ("metadata", "being_deleted"),
    [
        ({"name": "p"}, False),
        ({"name": "p", "deletionTimestamp": None}, False),
        ({"name": "p", "deletionTimestamp": "2026-01-01T00:00:30Z"}, True),  # asked to stop, not gone yet
        ({}, False),
    ],
)
def test_is_being_deleted_reads_the_deletion_timestamp(metadata, being_deleted):
    assert is_being_deleted({"metadata": metadata, "status": {"phase": "Running"}}) is being_deleted

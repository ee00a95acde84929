"""conditions.py: the one verdict on a job's status, shared by operator, sensor and trigger."""

from __future__ import annotations

import pytest

from airflow_trainjob.domain import conditions
from airflow_trainjob.models import JobStatus


def cond(type_, status="True", **extra):
    return {"type": type_, "status": status, **extra}


RUNNING = {
    "conditions": [cond("Created", reason="PyTorchJobCreated"), cond("Running", reason="PyTorchJobRunning")],
    "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 2}},
}
SUCCEEDED = {
    "conditions": [
        cond("Created"),
        cond("Running", "False"),
        cond("Succeeded", reason="PyTorchJobSucceeded", message="PyTorchJob ml/train successfully completed."),
    ],
    "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}},
}
FAILED = {
    "conditions": [
        cond("Created"),
        cond("Running", "False"),
        cond(
            "Failed",
            reason="PyTorchJobFailed",
            message="PyTorchJob ml/train has failed because 1 Worker replica(s) failed.",
        ),
    ],
    "replicaStatuses": {"Master": {"active": 0}, "Worker": {"active": 1, "failed": 1}},
}


@pytest.mark.parametrize(
    "status",
    [None, {}, {"conditions": None}, {"conditions": []}, {"replicaStatuses": None}, "garbage", {"conditions": "x"}],
)
def test_missing_or_empty_status_means_not_started(status):
    assert conditions.phase(status) == conditions.NOT_STARTED
    assert not conditions.is_terminal(status)
    assert not conditions.has_started(status)
    assert conditions.summary(status) == "NotStarted"


@pytest.mark.parametrize(
    ("status", "phase"),
    [
        (RUNNING, "Running"),
        (SUCCEEDED, "Succeeded"),
        (FAILED, "Failed"),
        ({"conditions": [cond("Created")]}, "Created"),
        ({"conditions": [cond("Created"), cond("Running", "False"), cond("Restarting")]}, "Restarting"),
    ],
)
def test_phase(status, phase):
    assert conditions.phase(status) == phase
    assert conditions.phase(JobStatus.model_validate(status)) == phase


def test_only_the_string_true_counts():
    for not_true in ("False", "Unknown", "true", True, "TRUE", None):
        status = {"conditions": [cond("Created"), cond("Succeeded", not_true)]}
        assert not conditions.is_succeeded(status), not_true
        assert conditions.phase(status) == "Created"


def test_position_in_the_list_does_not_matter():
    status = {"conditions": [cond("Succeeded"), cond("Created"), cond("Running", "False")]}
    assert conditions.is_succeeded(status) and conditions.is_terminal(status)


def test_unknown_condition_types_are_tolerated():
    status = {"conditions": [cond("Created"), cond("QuotaReserved", reason="Kueue")]}
    assert conditions.phase(status) == "QuotaReserved"
    assert not conditions.is_terminal(status)
    status["conditions"].append(cond("Running"))
    assert conditions.phase(status) == "Running"


def test_suspended_outranks_running_but_not_an_end():
    status = {"conditions": [cond("Created"), cond("Suspended", reason="PyTorchJobSuspended")]}
    assert conditions.phase(status) == "Suspended" and conditions.is_suspended(status)
    assert not conditions.is_terminal(status)
    status["conditions"].append(cond("Running"))  # stale: the operator turns Running False on suspension
    assert conditions.phase(status) == "Suspended"
    status["conditions"].append(cond("Failed"))
    assert conditions.phase(status) == "Failed" and not conditions.is_suspended(status)
    resumed = {"conditions": [cond("Created"), cond("Suspended", "False", reason="PyTorchJobResumed")]}
    assert conditions.phase(resumed) == "Created"


def test_failed_outranks_succeeded_unless_succeeded_came_later():
    both = [
        cond("Failed", lastTransitionTime="2026-01-01T10:00:00Z"),
        cond("Succeeded", lastTransitionTime="2026-01-01T09:00:00Z"),
    ]
    assert conditions.phase({"conditions": both}) == "Failed"
    both[1]["lastTransitionTime"] = "2026-01-01T11:00:00Z"
    assert conditions.phase({"conditions": both}) == "Succeeded"
    assert conditions.phase({"conditions": [cond("Succeeded"), cond("Failed")]}) == "Failed"


def test_predicates():
    assert conditions.is_running(RUNNING) and not conditions.is_terminal(RUNNING)
    assert conditions.is_succeeded(SUCCEEDED) and conditions.is_terminal(SUCCEEDED)
    assert conditions.is_failed(FAILED) and not conditions.is_succeeded(FAILED)
    assert conditions.has_started(RUNNING) and conditions.has_started(FAILED)
    assert conditions.has_started({"conditions": [cond("Running", "False"), cond("Restarting")]})
    assert not conditions.has_started({"conditions": [cond("Created")]})
    assert conditions.is_restarting({"conditions": [cond("Restarting")]})


def test_summary_lines():
    assert conditions.summary(RUNNING, {"Master": 1, "Worker": 2}) == (
        "Running (PyTorchJobRunning) — Master 1/1 active, Worker 2/2 active"
    )
    assert conditions.summary(FAILED, {"Master": 1, "Worker": 2}) == (
        "Failed (PyTorchJobFailed: PyTorchJob ml/train has failed because 1 Worker replica(s) failed.)"
        " — Master none finished, Worker 1 failed"  # terminal: no claim that stopped replicas are active
    )
    assert conditions.summary(SUCCEEDED) == (
        "Succeeded (PyTorchJobSucceeded: PyTorchJob ml/train successfully completed.)"
        " — Master 1 succeeded, Worker 2 succeeded"
    )
    assert conditions.deciding_condition(FAILED)["reason"] == "PyTorchJobFailed"

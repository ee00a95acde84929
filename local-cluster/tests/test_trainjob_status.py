"""The TrainJob status as the local trainer writes it, pure, no cluster (``trainer/status.py``, after kubeflow/trainer
v2.3.0 ``pkg/controller/trainjob_controller.go`` and ``pkg/runtime/framework/plugins/jobset/jobset.go`` ``Status``),
from JobSets in the shapes kubernetes-sigs/jobset v0.12.0 writes them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from airflow_trainjob_local.kube import parse_time
from airflow_trainjob_local.trainer import status as st

T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def jobset(*conditions: dict[str, Any], jobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": list(conditions)}
    if jobs is not None:
        status["replicatedJobsStatus"] = jobs
    return {"status": status}


def cond(type_: str, status: str, reason: str, message: str, when: str = T0) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": when}


def test_completed_jobset_makes_the_trainjob_complete_with_its_reason_and_message() -> None:
    status: dict[str, Any] = {}
    completed = cond("Completed", "True", "AllJobsCompleted", "jobset completed successfully", T1)
    st.apply_jobset_status(
        status,
        jobset(
            completed,
            jobs=[{"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}],
        ),
        T2,
    )
    assert status == {
        "conditions": [
            {
                "type": "Complete",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobset completed successfully",
                "lastTransitionTime": T1,
            }
        ],
        "jobsStatus": [{"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}],
    }
    assert st.is_finished(status)


def test_failed_jobset_makes_the_trainjob_failed() -> None:
    status: dict[str, Any] = {}
    failed = cond("Failed", "True", "FailedJobs", 'jobset failed due to job "tj-node-0" failing')
    st.apply_jobset_status(status, jobset(failed), T2)
    assert st.find_condition(status, "Failed") == failed
    assert "jobsStatus" not in status


def test_running_jobset_adds_no_running_and_no_created_condition() -> None:
    status: dict[str, Any] = {}
    counts = {"name": "node", "ready": 2, "succeeded": 0, "failed": 0, "active": 1, "suspended": 0}
    st.apply_jobset_status(status, jobset(cond("Completed", "False", "x", "y"), jobs=[counts]), T2)
    assert status == {"jobsStatus": [counts]}


def test_jobs_status_counts_default_to_zero_and_go_away_with_the_jobs() -> None:
    status: dict[str, Any] = {}
    st.apply_jobset_status(status, jobset(jobs=[{"name": "node"}]), T2)
    assert status["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    ]
    st.apply_jobset_status(status, jobset(), T2)
    assert "jobsStatus" not in status


def test_suspend_and_resume() -> None:
    status: dict[str, Any] = {}
    st.set_suspended_condition(status, False, T0)
    assert status == {}  # never suspended: no condition
    st.set_suspended_condition(status, True, T0)
    assert status["conditions"] == [cond("Suspended", "True", "Suspended", "TrainJob is suspended")]
    st.set_suspended_condition(status, True, T1)
    assert status["conditions"][0]["lastTransitionTime"] == T0  # unchanged status keeps its time
    st.set_suspended_condition(status, False, T2)
    assert status["conditions"] == [cond("Suspended", "False", "Resumed", "TrainJob is resumed", T2)]


def test_failed_condition_is_dropped_unless_deadline_exceeded() -> None:
    status: dict[str, Any] = {"conditions": [cond("Failed", "True", "FailedJobs", "m")]}
    st.remove_failed_condition(status)
    assert status["conditions"] == []
    deadline = cond("Failed", "True", "DeadlineExceeded", "TrainJob exceeded its active deadline")
    status = {"conditions": [deadline]}
    st.remove_failed_condition(status)
    assert status["conditions"] == [deadline]


def test_deadline_exceeded_survives_the_jobset_status() -> None:
    deadline = cond("Failed", "True", "DeadlineExceeded", "TrainJob exceeded its active deadline")
    status: dict[str, Any] = {"conditions": [dict(deadline)]}
    st.apply_jobset_status(status, jobset(cond("Failed", "True", "FailedJobs", "other", T2)), T2)
    assert st.find_condition(status, "Failed") == deadline


def test_deadline_counts_from_creation_or_resumption() -> None:
    created = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert st.deadline(None, created, {}, parse_time) is None
    assert st.deadline(60, created, {}, parse_time) == created + dt.timedelta(seconds=60)
    resumed = {"conditions": [cond("Suspended", "False", "Resumed", "TrainJob is resumed", T2)]}
    assert st.deadline(60, created, resumed, parse_time) == created + dt.timedelta(seconds=180)
    suspended = {"conditions": [cond("Suspended", "True", "Suspended", "TrainJob is suspended", T2)]}
    assert st.deadline(60, created, suspended, parse_time) == created + dt.timedelta(seconds=60)


def test_set_condition_changes_the_time_only_when_the_status_changes() -> None:
    status: dict[str, Any] = {}
    st.set_failed(status, "A", "one", T0)
    st.set_failed(status, "B", "two", T1)
    assert status["conditions"] == [cond("Failed", "True", "B", "two", T0)]


def test_a_condition_set_again_keeps_its_transition_time() -> None:
    old = {"conditions": [cond("Failed", "True", "FailedValidation", "m", T0)]}
    new: dict[str, Any] = {}
    st.set_failed(new, "FailedValidation", "m", T2)
    st.carry_transition_times(new, old)
    assert new == old
    flipped = {"conditions": [cond("Suspended", "False", "Resumed", "TrainJob is resumed", T2)]}
    st.carry_transition_times(flipped, {"conditions": [cond("Suspended", "True", "Suspended", "x", T0)]})
    assert flipped["conditions"][0]["lastTransitionTime"] == T2

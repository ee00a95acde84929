"""What one sync of an Indexed batch Job does, decided from the Job and its pods: the Kubernetes Job
controller's ``syncJob`` (``pkg/controller/job/job_controller.go``, ``indexed_job_utils.go``, ``backoff_utils.go``)
for the Jobs a JobSet owns. Pure: :func:`plan_job` makes no API calls.

- a finished Job (Complete or Failed) keeps no active pod;
- a suspended Job (``spec.suspend``) has no active pod, Suspended True (JobSuspended); resumed: Suspended False
  (JobResumed) and a new ``startTime``;
- past ``backoffLimit`` (Never: failed pods > limit; OnFailure: container restarts of active pods >= limit, > 0
  for limit 0) the Job fails with BackoffLimitExceeded, past ``activeDeadlineSeconds`` from ``startTime`` with
  DeadlineExceeded: FailureTarget and Failed, active pods deleted (and counted failed);
- every completion index that succeeded counts once; all of them: SuccessCriteriaMet and Complete
  (CompletionsReached), ``completionTime``;
- otherwise each index with neither a succeeded nor an active pod gets one, lowest first, while active pods
  stay within ``parallelism``; a failed pod stays (and counts in ``failed``), its index gets a new pod.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.conditions import (
    FALSE,
    TRUE,
    is_true,
    job_finished_type,
    job_suspended,
    set_job_condition,
)
from airflow_trainjob_local.jobset.pods import pod_index
from airflow_trainjob_local.kube import format_time, parse_time

__all__ = ["JobPlan", "format_indexes", "normalized_status", "plan_job"]

NORMAL = "Normal"
WARNING = "Warning"


@dataclass
class JobPlan:
    """What to write for one Job.

    :ivar status: the Job's new status (without ``ready`` and ``completedIndexes``, which the 1.20 apiserver
        drops: they are :attr:`ready` and :attr:`completed_indexes`, kept in annotations).
    :ivar create_indexes: completion indexes to create a pod for.
    :ivar delete_pods: pods to delete.
    :ivar events: ``(type, reason, message)`` Events about the Job.
    :ivar requeue_after: seconds until ``activeDeadlineSeconds`` passes.
    """

    status: dict[str, Any]
    ready: int = 0
    completed_indexes: str = ""
    create_indexes: list[int] = field(default_factory=list)
    delete_pods: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    requeue_after: float | None = None


def format_indexes(indexes: list[int]) -> str:
    """``completedIndexes``' format: sorted, runs as ``first-last``, e.g. ``0-2,5``."""
    runs: list[list[int]] = []
    for index in sorted(set(indexes)):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def normalized_status(status: dict[str, Any]) -> dict[str, Any]:
    """``status`` without the zero counts the API omits (``omitempty``), so that it compares equal to what is
    read back."""
    return {k: v for k, v in status.items() if not (k in ("active", "succeeded", "failed") and not v)}


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _is_active(pod: dict[str, Any]) -> bool:
    return _phase(pod) not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def _is_ready(pod: dict[str, Any]) -> bool:
    return any(
        x.get("type") == "Ready" and x.get("status") == TRUE for x in (pod.get("status") or {}).get("conditions") or []
    )


def _restarts(pods: list[dict[str, Any]]) -> int:
    total = 0
    for pod in pods:
        status = pod.get("status") or {}
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            total += int(cs.get("restartCount") or 0)
    return total


def _sizes(job: dict[str, Any]) -> tuple[int, int]:
    spec = job.get("spec") or {}
    parallelism = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
    completions = int(spec["completions"]) if spec.get("completions") is not None else parallelism
    return parallelism, completions


def plan_job(job: dict[str, Any], pods: list[dict[str, Any]], now: dt.datetime) -> JobPlan:
    """Decide one sync of ``job`` whose pods (owned by it) are ``pods``, at ``now`` (aware)."""
    stamp = format_time(now)
    plan = JobPlan(status=copy.deepcopy(job.get("status") or {}))
    parallelism, completions = _sizes(job)
    active = [p for p in pods if _is_active(p)]
    succeeded = sorted(
        {i for p in pods if _phase(p) == "Succeeded" and (i := pod_index(p)) is not None and i < completions}
    )
    failed = sum(1 for p in pods if _phase(p) == "Failed")
    if job_finished_type(job):
        # A finished Job's counts stay as they were (its pods may be gone since); only active pods go.
        annotations = (job.get("metadata") or {}).get("annotations") or {}
        plan.completed_indexes = str(annotations.get(c.ANNOTATION_JOB_COMPLETED_INDEXES) or "")
        plan.delete_pods = active
        plan.status["active"] = 0
        return plan
    plan.completed_indexes = format_indexes(succeeded)
    plan.status["succeeded"] = len(succeeded)
    plan.status["failed"] = max(failed, int(plan.status.get("failed") or 0))
    if job_suspended(job):
        _suspend(plan, active, stamp)
        return plan
    if is_true(plan.status, c.JOB_CONDITION_SUSPENDED):
        set_job_condition(
            plan.status, c.JOB_CONDITION_SUSPENDED, FALSE, c.JOB_REASON_RESUMED, c.JOB_MESSAGE_RESUMED, stamp
        )
        plan.events.append((NORMAL, c.JOB_EVENT_RESUMED, c.JOB_MESSAGE_RESUMED))
        plan.status["startTime"] = stamp
    plan.status.setdefault("startTime", stamp)

    failure = _failure(job, active, failed, plan.status, now)
    if failure is not None:
        reason, message = failure
        plan.delete_pods = active
        plan.status["failed"] = failed + len(active)
        plan.status["active"] = 0
        set_job_condition(plan.status, c.JOB_CONDITION_FAILURE_TARGET, TRUE, reason, message, stamp)
        set_job_condition(plan.status, c.JOB_CONDITION_FAILED, TRUE, reason, message, stamp)
        plan.events.append((WARNING, reason, message))
        return plan
    if len(succeeded) >= completions:
        plan.delete_pods = active
        plan.status["active"] = 0
        plan.status["completionTime"] = stamp
        for condition_type in (c.JOB_CONDITION_SUCCESS_CRITERIA_MET, c.JOB_CONDITION_COMPLETE):
            set_job_condition(
                plan.status,
                condition_type,
                TRUE,
                c.JOB_REASON_COMPLETIONS_REACHED,
                c.JOB_MESSAGE_COMPLETIONS_REACHED,
                stamp,
            )
        plan.events.append((NORMAL, c.JOB_EVENT_COMPLETED, "Job completed"))
        return plan
    _manage_pods(plan, active, set(succeeded), parallelism, completions)
    plan.ready = sum(1 for p in active if p not in plan.delete_pods and _is_ready(p))
    plan.requeue_after = _seconds_to_deadline(job, plan.status, now)
    return plan


def _suspend(plan: JobPlan, active: list[dict[str, Any]], stamp: str) -> None:
    plan.delete_pods = active
    plan.status["active"] = 0
    if set_job_condition(
        plan.status, c.JOB_CONDITION_SUSPENDED, TRUE, c.JOB_REASON_SUSPENDED, c.JOB_MESSAGE_SUSPENDED, stamp
    ):
        plan.events.append((NORMAL, c.JOB_EVENT_SUSPENDED, c.JOB_MESSAGE_SUSPENDED))


def _failure(
    job: dict[str, Any], active: list[dict[str, Any]], failed: int, status: dict[str, Any], now: dt.datetime
) -> tuple[str, str] | None:
    """``(reason, message)`` when the Job is past its backoffLimit or its activeDeadlineSeconds."""
    spec = job.get("spec") or {}
    limit = int(spec["backoffLimit"]) if spec.get("backoffLimit") is not None else c.DEFAULT_BACKOFF_LIMIT
    on_failure = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") == "OnFailure"
    restarts = _restarts(active) if on_failure else 0
    if failed > limit or (on_failure and (restarts > 0 if limit == 0 else restarts >= limit)):
        return c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED, c.JOB_MESSAGE_BACKOFF_LIMIT_EXCEEDED
    remaining = _seconds_to_deadline(job, status, now)
    if remaining is not None and remaining <= 0:
        return c.JOB_REASON_DEADLINE_EXCEEDED, c.JOB_MESSAGE_DEADLINE_EXCEEDED
    return None


def _seconds_to_deadline(job: dict[str, Any], status: dict[str, Any], now: dt.datetime) -> float | None:
    deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
    started = parse_time(status.get("startTime"))
    if deadline is None or started is None:
        return None
    return (started + dt.timedelta(seconds=int(deadline)) - now).total_seconds()


def _manage_pods(
    plan: JobPlan, active: list[dict[str, Any]], succeeded: set[int], parallelism: int, completions: int
) -> None:
    """Indexed ``manageJob``: delete active pods of a succeeded, out-of-range, unknown or doubled index, then
    create pods for the indexes that need one, lowest first, within ``parallelism``."""
    kept: dict[int, dict[str, Any]] = {}
    for pod in sorted(active, key=lambda p: str(p["metadata"].get("creationTimestamp") or "")):
        index = pod_index(pod)
        if index is None or index >= completions or index in succeeded or index in kept:
            plan.delete_pods.append(pod)
        else:
            kept[index] = pod
    budget = parallelism - len(kept)
    wanted = [i for i in range(completions) if i not in succeeded and i not in kept]
    plan.create_indexes = wanted[: max(0, budget)]
    plan.status["active"] = len(kept) + len(plan.create_indexes)

"""Conditions of JobSets (``metav1.Condition``) and of Jobs (``batchv1.JobCondition``), and what a Job's
status says: finished, failed when, suspended, ready. Pure.
"""

from __future__ import annotations

from typing import Any

from airflow_trainjob_local.jobset import constants as c

__all__ = [
    "find_condition",
    "is_true",
    "job_failure_condition",
    "job_finished_type",
    "job_ready",
    "job_suspended",
    "set_job_condition",
    "update_jobset_condition",
]

TRUE = "True"
FALSE = "False"

#: Condition types of which only one may be True (upstream ``exclusiveConditions``).
_EXCLUSIVE = {
    c.CONDITION_STARTUP_POLICY_IN_PROGRESS: c.CONDITION_STARTUP_POLICY_COMPLETED,
    c.CONDITION_STARTUP_POLICY_COMPLETED: c.CONDITION_STARTUP_POLICY_IN_PROGRESS,
}


def find_condition(status: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    """The condition of that type in ``status.conditions``, or ``None``."""
    return next((x for x in status.get("conditions") or [] if x.get("type") == condition_type), None)


def is_true(status: dict[str, Any], condition_type: str) -> bool:
    """Whether ``status`` has that condition with status True."""
    found = find_condition(status, condition_type)
    return found is not None and found.get("status") == TRUE


def update_jobset_condition(
    status: dict[str, Any], condition_type: str, value: str, reason: str, message: str, now: str
) -> bool:
    """Upstream ``updateCondition``: change or add (only when True) one condition; return whether anything
    changed. A new status gets ``lastTransitionTime`` now; a new reason or message alone keeps it. Setting one
    of two exclusive conditions True turns the other False.

    :param status: the JobSet's status, changed in place.
    :param value: ``True`` or ``False``.
    :param now: the time, as the API writes it.
    """
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    new = {"type": condition_type, "status": value, "reason": reason, "message": message, "lastTransitionTime": now}
    changed = found = False
    for i, current in enumerate(conditions):
        if current.get("type") == condition_type:
            found = True
            if current.get("status") != value:
                conditions[i] = new
                changed = True
            elif current.get("reason") != reason or current.get("message") != message:
                conditions[i] = {**new, "lastTransitionTime": current.get("lastTransitionTime", now)}
                changed = True
        elif _EXCLUSIVE.get(current.get("type", "")) == condition_type and current.get("status") == TRUE == value:
            current["status"] = FALSE
            changed = True
    if not found and value == TRUE:
        conditions.append(new)
        changed = True
    if not conditions:
        status.pop("conditions")
    return changed


def set_job_condition(
    status: dict[str, Any], condition_type: str, value: str, reason: str, message: str, now: str
) -> bool:
    """Set a Job condition (the Job controller's ``ensureJobConditionStatus``): add it when missing (unless
    False), or change it when its status, reason or message differ; return whether anything changed."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    new = {
        "type": condition_type,
        "status": value,
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }
    for i, current in enumerate(conditions):
        if current.get("type") != condition_type:
            continue
        if current.get("status") == value and current.get("reason") == reason and current.get("message") == message:
            return False
        if current.get("status") == value:
            new["lastTransitionTime"] = current.get("lastTransitionTime", now)
        conditions[i] = new
        return True
    if value == FALSE:
        if not conditions:
            status.pop("conditions")
        return False
    conditions.append(new)
    return True


def job_finished_type(job: dict[str, Any]) -> str:
    """``Complete`` or ``Failed`` when that condition is True, else ``""`` (upstream ``JobFinished``)."""
    status = job.get("status") or {}
    for condition_type in (c.JOB_CONDITION_COMPLETE, c.JOB_CONDITION_FAILED):
        if is_true(status, condition_type):
            return condition_type
    return ""


def job_failure_condition(job: dict[str, Any]) -> dict[str, Any] | None:
    """The Job's True Failed condition, or ``None``."""
    status = job.get("status") or {}
    return find_condition(status, c.JOB_CONDITION_FAILED) if is_true(status, c.JOB_CONDITION_FAILED) else None


def job_suspended(job: dict[str, Any]) -> bool:
    """``spec.suspend`` of a Job (kept in an annotation: the 1.20 apiserver drops the field)."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(c.ANNOTATION_JOB_SUSPEND)
    if value is None:
        return bool((job.get("spec") or {}).get("suspend"))
    return value == "true"


def job_ready(job: dict[str, Any]) -> int:
    """``status.ready`` of a Job (kept in an annotation: the 1.20 apiserver drops the field)."""
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    try:
        return int(annotations.get(c.ANNOTATION_JOB_READY) or (job.get("status") or {}).get("ready") or 0)
    except ValueError:
        return 0

"""The TrainJob status as upstream writes it, pure (``pkg/controller/trainjob_controller.go`` and the JobSet
plugin's ``Status``, ``pkg/runtime/framework/plugins/jobset/jobset.go``).

Conditions are ``metav1.Condition`` dicts, set the way ``meta.SetStatusCondition`` sets them: a new type is
appended (its ``lastTransitionTime`` now unless given), an existing one keeps its transition time unless its status
changes. There is no Created and no Running condition: ``Suspended`` (``Suspended``/``Resumed``), ``Complete``
and ``Failed`` (the JobSet's reasons and messages, or the trainer's own ``DeadlineExceeded``,
``TrainingRuntimeNotSupported``).
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from airflow_trainjob_local.trainer import constants as c

__all__ = [
    "apply_jobset_status",
    "carry_transition_times",
    "deadline",
    "find_condition",
    "is_condition_true",
    "is_finished",
    "remove_failed_condition",
    "set_condition",
    "set_failed",
    "set_suspended_condition",
]

CONDITION_TRUE = "True"
CONDITION_FALSE = "False"


def find_condition(status: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The condition of ``type_`` in ``status``, or ``None``."""
    for cond in status.get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def is_condition_true(status: dict[str, Any], type_: str) -> bool:
    cond = find_condition(status, type_)
    return cond is not None and cond.get("status") == CONDITION_TRUE


def is_finished(status: dict[str, Any]) -> bool:
    """Complete or Failed is True (``trainjob.IsTrainJobFinished``)."""
    return is_condition_true(status, c.CONDITION_COMPLETE) or is_condition_true(status, c.CONDITION_FAILED)


def set_condition(status: dict[str, Any], new: dict[str, Any], now: str) -> None:
    """Set ``new`` (a condition with type, status, reason, message) in ``status`` like ``meta.SetStatusCondition``.

    :param status: the TrainJob status, changed in place.
    :param new: the condition; its ``lastTransitionTime`` and ``observedGeneration`` are used when present.
    :param now: the current time, RFC 3339 (the transition time when ``new`` has none).
    """
    conditions = status.setdefault("conditions", [])
    existing = find_condition(status, new["type"])
    if existing is None:
        cond = copy.deepcopy(new)
        cond["lastTransitionTime"] = cond.get("lastTransitionTime") or now
        conditions.append(cond)
        return
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or now
    for field in ("reason", "message", "observedGeneration"):
        if field in new and existing.get(field) != new[field]:
            existing[field] = new[field]


def set_failed(status: dict[str, Any], reason: str, message: str, now: str) -> None:
    """Failed True with ``reason`` and ``message`` (``setFailedCondition``)."""
    set_condition(
        status, {"type": c.CONDITION_FAILED, "status": CONDITION_TRUE, "reason": reason, "message": message}, now
    )


def remove_failed_condition(status: dict[str, Any]) -> None:
    """Drop a Failed condition unless its reason is DeadlineExceeded: a spec change may bring a failed TrainJob
    back (``removeFailedCondition``)."""
    cond = find_condition(status, c.CONDITION_FAILED)
    if cond is not None and cond.get("reason") != c.REASON_DEADLINE_EXCEEDED:
        status["conditions"] = [x for x in status.get("conditions") or [] if x is not cond]


def set_suspended_condition(status: dict[str, Any], suspend: bool, now: str) -> None:
    """Suspended True (reason Suspended) while ``spec.suspend``; turned False (reason Resumed) when it was True and
    the TrainJob is no longer suspended; otherwise untouched (``setSuspendedCondition``)."""
    if suspend:
        cond = {
            "type": c.CONDITION_SUSPENDED,
            "status": CONDITION_TRUE,
            "reason": c.REASON_SUSPENDED,
            "message": c.MESSAGE_SUSPENDED,
        }
    elif is_condition_true(status, c.CONDITION_SUSPENDED):
        cond = {
            "type": c.CONDITION_SUSPENDED,
            "status": CONDITION_FALSE,
            "reason": c.REASON_RESUMED,
            "message": c.MESSAGE_RESUMED,
        }
    else:
        return
    set_condition(status, cond, now)


def apply_jobset_status(status: dict[str, Any], jobset: dict[str, Any], now: str) -> None:
    """Copy the JobSet's outcome into the TrainJob status (the JobSet plugin's ``Status``): its Completed True
    condition as Complete, its Failed True condition as Failed (reason, message, times kept), and ``jobsStatus``
    from its ``replicatedJobsStatus`` (absent when it has none). A DeadlineExceeded Failed condition is kept.

    :param status: the TrainJob status, changed in place.
    :param jobset: the JobSet as read from the API.
    :param now: the current time, RFC 3339.
    """
    deadline_cond = find_condition(status, c.CONDITION_FAILED)
    if deadline_cond is not None and deadline_cond.get("reason") != c.REASON_DEADLINE_EXCEEDED:
        deadline_cond = None
    deadline_cond = copy.deepcopy(deadline_cond)
    jobset_status = jobset.get("status") or {}
    mapping = ((c.JOBSET_CONDITION_COMPLETED, c.CONDITION_COMPLETE), (c.JOBSET_CONDITION_FAILED, c.CONDITION_FAILED))
    for jobset_type, trainjob_type in mapping:
        cond = find_condition(jobset_status, jobset_type)
        if cond is not None and cond.get("status") == CONDITION_TRUE:
            set_condition(status, {**copy.deepcopy(cond), "type": trainjob_type}, now)
    jobs = [
        {
            "name": job.get("name"),
            **{field: int(job.get(field) or 0) for field in ("ready", "succeeded", "failed", "active", "suspended")},
        }
        for job in jobset_status.get("replicatedJobsStatus") or []
    ]
    if jobs:
        status["jobsStatus"] = jobs
    else:
        status.pop("jobsStatus", None)
    if deadline_cond is not None:
        set_condition(status, deadline_cond, now)


def deadline(
    spec_active_deadline: int | None, creation: dt.datetime, status: dict[str, Any], parse: Any
) -> dt.datetime | None:
    """When an unsuspended TrainJob's ``activeDeadlineSeconds`` runs out: counted from its creation, or from its
    resumption (the Suspended False condition's transition time); ``None`` without a deadline.

    :param spec_active_deadline: ``spec.activeDeadlineSeconds`` (seconds), ``None`` or 0 for none.
    :param creation: ``metadata.creationTimestamp``.
    :param status: the TrainJob status.
    :param parse: parses an RFC 3339 time (``airflow_trainjob_local.kube.parse_time``).
    """
    if not spec_active_deadline:
        return None
    start = creation
    suspended = find_condition(status, c.CONDITION_SUSPENDED)
    if suspended is not None and suspended.get("status") == CONDITION_FALSE and suspended.get("lastTransitionTime"):
        start = parse(suspended["lastTransitionTime"])
    return start + dt.timedelta(seconds=int(spec_active_deadline))


def carry_transition_times(status: dict[str, Any], old_status: dict[str, Any]) -> None:
    """Give each condition whose status did not change its old ``lastTransitionTime``.

    Upstream drops the Failed condition at the start of every reconcile and sets it again, which stamps a new
    transition time each time; kept, a TrainJob refused for good would be written again on every reconcile.

    :param status: the new status, changed in place.
    :param old_status: the status as read.
    """
    for cond in status.get("conditions") or []:
        old = find_condition(old_status, cond["type"])
        if old is not None and old.get("status") == cond.get("status") and old.get("lastTransitionTime"):
            cond["lastTransitionTime"] = old["lastTransitionTime"]

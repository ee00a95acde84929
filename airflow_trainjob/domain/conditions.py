"""The one place that decides what a training job's status means.

Pure functions over a job's ``status`` (a dict as the API returns it, a :class:`JobStatus`, or
None), shared by the operator, the sensor and the trigger. The rule, as in the Kubeflow SDK: a
condition counts only when its ``status`` is the string ``"True"``, wherever it stands in the
list. A status that is missing, ``{}``, or has ``conditions: null`` means "not started yet".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from airflow_trainjob.constants import ConditionStatus, JobConditionType
from airflow_trainjob.domain.timestamps import epoch

#: Phase of a job whose status holds no true condition yet.
NOT_STARTED = "NotStarted"

# When several conditions are true at once, the first of these decides. Failed outranks
# Succeeded unless Succeeded is the later transition (see ``phase``). A suspended job is suspended, whatever it
# did before (the operator turns Running False on suspension; a stale true one must not say it runs).
_PRECEDENCE = (
    JobConditionType.FAILED,
    JobConditionType.SUCCEEDED,
    JobConditionType.SUSPENDED,
    JobConditionType.RESTARTING,
    JobConditionType.RUNNING,
    JobConditionType.SCALING,
    JobConditionType.PENDING,
)


def _as_dict(status: Any) -> Mapping[str, Any]:
    if isinstance(status, BaseModel):
        return status.model_dump(mode="json", by_alias=True)
    return status if isinstance(status, Mapping) else {}


def true_conditions(status: Any) -> list[Mapping[str, Any]]:
    """The conditions whose ``status`` is ``"True"``, in the order the controller wrote them.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    conditions = _as_dict(status).get("conditions")
    if not isinstance(conditions, list):
        return []
    return [c for c in conditions if isinstance(c, Mapping) and c.get("status") == ConditionStatus.TRUE]


def has_condition(status: Any, condition_type: str) -> bool:
    """True when a condition of ``condition_type`` is ``"True"``.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    :param condition_type: a ``status.conditions[].type``, e.g. ``Running`` (:class:`JobConditionType`).
    """
    return any(c.get("type") == condition_type for c in true_conditions(status))


def _deciding(status: Any) -> Mapping[str, Any] | None:
    true = true_conditions(status)
    by_type = {c.get("type"): c for c in true}  # a later duplicate of a type wins
    failed, succeeded = by_type.get(JobConditionType.FAILED), by_type.get(JobConditionType.SUCCEEDED)
    if (
        failed
        and succeeded
        and str(succeeded.get("lastTransitionTime") or "") > str(failed.get("lastTransitionTime") or "")
    ):
        return succeeded
    for condition_type in _PRECEDENCE:
        if condition_type in by_type:
            return by_type[condition_type]
    # A type this provider does not know says more than "Created": the latest speaks.
    unknown = [c for c in true if c.get("type") != JobConditionType.CREATED]
    if unknown:
        return unknown[-1]
    return by_type.get(JobConditionType.CREATED)


def phase(status: Any) -> str:
    """One word for where the job is: ``Succeeded``, ``Failed``, ``Suspended``, ``Restarting``, ``Running``,
    ``Scaling``, ``Pending``, ``Created``, a condition type this provider does not know, or
    :data:`NOT_STARTED`.

    Several true conditions: the first in ``Failed, Succeeded, Suspended, Restarting, Running, Scaling,
    Pending``, then the latest of unknown types, then ``Created`` decides, except that a ``Succeeded`` whose ``lastTransitionTime`` is later
    than ``Failed``'s wins (RFC 3339 UTC timestamps compare as strings).

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    condition = _deciding(status)
    return str(condition.get("type")) if condition else NOT_STARTED


def deciding_condition(status: Any) -> Mapping[str, Any] | None:
    """The true condition that :func:`phase` reports, with its ``reason`` and ``message``.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return _deciding(status)


def is_succeeded(status: Any) -> bool:
    """The job finished successfully (``Succeeded`` decides the phase).

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return phase(status) == JobConditionType.SUCCEEDED


def failed_at(status: Any) -> str | None:
    """The ``lastTransitionTime`` (RFC 3339) of the true ``Failed`` condition when ``Failed`` decides the phase.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    condition = _deciding(status)
    if not condition or condition.get("type") != JobConditionType.FAILED:
        return None
    return str(condition.get("lastTransitionTime") or "") or None


def is_failed(status: Any) -> bool:
    """The job failed (``Failed`` decides the phase).

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return phase(status) == JobConditionType.FAILED


def is_terminal(status: Any) -> bool:
    """The job has finished, successfully or not; it will not change phase again.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return phase(status) in (JobConditionType.SUCCEEDED, JobConditionType.FAILED)


def is_running(status: Any) -> bool:
    """The job's replicas are running (``Running`` decides the phase).

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return phase(status) == JobConditionType.RUNNING


def is_suspended(status: Any) -> bool:
    """The operator reports the job suspended (``Suspended`` decides the phase): it has no pods and waits for
    ``runPolicy.suspend`` to turn false. Whether a job is *queued* also depends on its spec: see
    :func:`airflow_trainjob.domain.deadlines.queue_state`.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return phase(status) == JobConditionType.SUSPENDED


def is_restarting(status: Any) -> bool:
    """One or more replicas failed and are being restarted by the operator.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    return phase(status) == JobConditionType.RESTARTING


def has_started(status: Any) -> bool:
    """The job reached ``Running`` at some point (true now or earlier), or has finished.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    if is_terminal(status) or has_condition(status, JobConditionType.RUNNING):
        return True
    conditions = _as_dict(status).get("conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping) and c.get("type") == JobConditionType.RUNNING for c in conditions
    )


def started_since_admission(status: Any, admitted_at: float | None) -> bool:
    """The job reached ``Running`` (or finished) after its last admission; for a job never suspended, at all.

    :param status: the job's ``status`` (API JSON dict, or None before the controller wrote one).
    :param admitted_at: epoch seconds of the last admission (the ``Suspended`` condition's turn to False, as the
        server dates it); None: never suspended.
    """
    if is_terminal(status) or has_condition(status, JobConditionType.RUNNING):
        return True
    if admitted_at is None:
        return has_started(status)
    # e.g. Running False, reason Restarting: it ran since admission. Running False of the suspension (reason
    # <Kind>Suspended) is no run, even in the same whole second as the admission (preempted, admitted at once).
    found = _as_dict(status).get("conditions")
    running_all = [
        c
        for c in (found if isinstance(found, list) else [])
        if isinstance(c, Mapping) and c.get("type") == JobConditionType.RUNNING
    ]
    running = running_all[-1] if running_all else None
    turned = epoch((running or {}).get("lastTransitionTime"))
    suspension = str((running or {}).get("reason") or "").endswith(JobConditionType.SUSPENDED)
    return turned is not None and turned >= admitted_at and not suspension


def status_from_events(events: Any, kind: str, uid: str | None) -> dict[str, Any] | None:
    """The terminal condition the training operator announced for job ``uid`` in its events, as a status, for a
    job that is gone before its terminal state was seen: the operator records ``<Kind>Succeeded`` and
    ``<Kind>Failed`` events on the job when it writes those conditions, and events outlive the job (an hour by
    default). None when no such event is there (or ``uid`` is unknown).

    :param events: the namespace's events about the job (API JSON dicts), any order.
    :param kind: the job's kind, e.g. ``PyTorchJob``.
    :param uid: the job's ``metadata.uid`` (matched against each event's ``involvedObject.uid``).
    """
    if not uid:
        return None
    reasons = {f"{kind}{t.value}": t.value for t in (JobConditionType.SUCCEEDED, JobConditionType.FAILED)}
    announced = [
        e
        for e in events or []
        if isinstance(e, Mapping) and e.get("reason") in reasons and (e.get("involvedObject") or {}).get("uid") == uid
    ]
    if not announced:
        return None
    last = max(announced, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    when = last.get("lastTimestamp") or last.get("eventTime")
    condition = {
        "type": reasons[last["reason"]],
        "status": ConditionStatus.TRUE.value,
        "reason": last["reason"],
        "message": last.get("message") or "",
        "lastTransitionTime": when,
    }
    return {"conditions": [condition], "completionTime": when}


def with_announced_end(seen: Any, announced: Mapping[str, Any]) -> dict[str, Any]:
    """The status of a gone job: the last one seen, with the terminal condition of :func:`status_from_events` and
    without the replica counts seen then (they predate the end; the end's are unknown).

    :param seen: the job's last ``status`` seen (an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`,
        or None); only its ``startTime`` is kept.
    :param announced: the status :func:`status_from_events` made of the operator's terminal event.
    """
    kept = {k: v for k, v in _as_dict(seen).items() if k == "startTime"}
    return {**kept, **announced}


def controller_has_acted(status: Any) -> bool:
    """True when a controller has written any condition (true or not) or replica status to the job.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    """
    status = _as_dict(status)
    return bool(status.get("conditions") or status.get("replicaStatuses"))


def replica_count_parts(status: Any, desired: Mapping[str, int] | None = None) -> list[tuple[str, str]]:
    """:func:`replica_counts` per replica type: ``[("Master", "1/1 active"), ("Worker", "1/2 active (1 failed)")]``;
    once the job is terminal only what finished, ``[("Master", "1 failed"), ("Worker", "none finished")]``.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    :param desired: replica type -> ``replicas`` from the spec; shows ``active/desired`` when given.
    """
    statuses = _as_dict(status).get("replicaStatuses")
    return count_parts(statuses if isinstance(statuses, Mapping) else {}, desired, terminal=is_terminal(status))


def count_parts(
    counts: Mapping[str, Any], desired: Mapping[str, int] | None = None, *, terminal: bool
) -> list[tuple[str, str]]:
    """The words of :func:`replica_count_parts` for pod counts however they were read (a family's
    :meth:`~airflow_trainjob.domain.family.JobFamily.replica_statuses`, raised by the pods a page shows finished).

    :param counts: replica type -> ``active``, ``succeeded``, ``failed`` (counts; a missing one is 0).
    :param desired: replica type -> ``replicas`` from the spec; shows ``active/desired`` when given.
    :param terminal: the job has finished: only what finished is said.
    """
    types = list(desired or {}) + [t for t in counts if t not in (desired or {})]
    parts = []
    for replica_type in types:
        found = counts.get(replica_type)
        found = found if isinstance(found, Mapping) else {}
        active = found.get("active") or 0
        wanted = f"/{desired[replica_type]}" if desired and replica_type in desired else ""
        finished = [f"{found[k]} {k}" for k in ("succeeded", "failed") if found.get(k)]
        if terminal:
            parts.append((replica_type, ", ".join(finished) or "none finished"))
            continue
        text = f"{active}{wanted} active"
        parts.append((replica_type, f"{text} ({', '.join(finished)})" if finished else text))
    return parts


def replica_counts(status: Any, desired: Mapping[str, int] | None = None) -> str:
    """Pod counts per replica type, e.g. ``Master 1/1 active, Worker 1/2 active (1 failed)``; once the job is
    terminal only what finished, e.g. ``Master 1 failed, Worker 1 succeeded`` — the controller may leave an
    ``active`` count behind for pods it (or the provider) is stopping or has deleted.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    :param desired: replica type -> ``replicas`` from the spec; shows ``active/desired`` when given.
    """
    return ", ".join(f"{replica_type} {text}" for replica_type, text in replica_count_parts(status, desired))


def summary(status: Any, desired: Mapping[str, int] | None = None) -> str:
    """A one-line human summary: phase, the deciding reason and message, and replica counts.

    e.g. ``Running — Master 1/1 active, Worker 2/2 active`` or
    ``Failed (PyTorchJobFailed: Job has failed because ...) — Master 1 failed, Worker none finished``.

    :param status: the job's ``status``: an API JSON dict, a :class:`~airflow_trainjob.models.JobStatus`, or None.
    :param desired: replica type -> ``replicas`` from the spec (count); shows ``active/desired`` when given.
    """
    condition = deciding_condition(status)
    text = phase(status)
    if condition and (condition.get("reason") or condition.get("message")):
        why = ": ".join(str(condition[k]) for k in ("reason", "message") if condition.get(k))
        text = f"{text} ({why})"
    counts = replica_counts(status, desired)
    return f"{text} — {counts}" if counts else text


def progress_line(ref: str, status: Any, desired: Mapping[str, int] | None = None) -> str:
    """The line a waiting task logs each time its job's phase or replica counts change, in either mode (the
    synchronous wait and the trigger): ``<Kind> <namespace>/<name>: `` and :func:`summary`.

    :param ref: ``<Kind> <namespace>/<name>``.
    :param status: the job's ``status``.
    :param desired: replica type -> ``replicas`` (:meth:`~airflow_trainjob.constants.JobKind.desired_replicas`), for ``active/desired`` counts.
    """
    return f"{ref}: {summary(status, desired)}"

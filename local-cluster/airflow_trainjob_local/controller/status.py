"""The job status the real operator writes: conditions, replicaStatuses and the kind's success rule.

- :func:`update_conditions` mirrors ``pkg/util/status.go``: a condition is replaced in place of its type and
  appended at the end; setting Running drops Restarting and vice versa; setting Succeeded or Failed turns
  Running to False; nothing changes any more once Failed is True; an unchanged status and reason is a no-op.
- :func:`count_pod` mirrors ``UpdateJobReplicaStatuses`` (a Running pod being deleted counts as failed).
- :func:`update_job_status` applies each kind's ``UpdateJobStatus`` (start time, selector, Running,
  Succeeded, Restarting, Failed), with the real reasons (``<Kind><Reason>``) and messages.

Everything here is pure: statuses are plain dicts in the API's JSON shape, events are returned to the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller.pods import container_exit_code
from airflow_trainjob_local.controller.spec import JobView

__all__ = [
    "EventSpec",
    "StatusContext",
    "count_pod",
    "has_condition",
    "initialize_replica_statuses",
    "is_failed",
    "is_finished",
    "is_running",
    "is_succeeded",
    "is_suspended",
    "new_reason",
    "update_conditions",
    "update_job_status",
]

NORMAL, WARNING = "Normal", "Warning"
CONDITION_FALSE = "False"
#: The condition a suspended job carries (``JobSuspended``, training-operator v1.7+).
CONDITION_SUSPENDED = "Suspended"
# ``<Kind><Reason>`` suffixes of pkg/util/status.go besides those in airflow_trainjob_local.constants.
JOB_REASON_SUSPENDED = "Suspended"
JOB_REASON_RESUMED = "Resumed"
JOB_REASON_FAILED_VALIDATION = "FailedValidation"


@dataclass(frozen=True)
class EventSpec:
    """An event to record on the job: ``type`` is Normal or Warning."""

    type: str
    reason: str
    message: str


def new_reason(kind: str, reason: str) -> str:
    """``util.NewReason``: ``PyTorchJob`` + ``Failed`` -> ``PyTorchJobFailed``."""
    return f"{kind}{reason}"


def has_condition(status: dict[str, Any], condition_type: str) -> bool:
    """True when a condition of that type has status ``True`` (wherever it sits in the list)."""
    return any(
        cond.get("type") == condition_type and cond.get("status") == c.CONDITION_TRUE
        for cond in status.get("conditions") or []
    )


def is_succeeded(status: dict[str, Any]) -> bool:
    return has_condition(status, c.CONDITION_SUCCEEDED)


def is_failed(status: dict[str, Any]) -> bool:
    return has_condition(status, c.CONDITION_FAILED)


def is_finished(status: dict[str, Any]) -> bool:
    return is_succeeded(status) or is_failed(status)


def is_running(status: dict[str, Any]) -> bool:
    return has_condition(status, c.CONDITION_RUNNING)


def is_suspended(status: dict[str, Any]) -> bool:
    return has_condition(status, CONDITION_SUSPENDED)


def update_conditions(
    status: dict[str, Any], condition_type: str, condition_status: str, reason: str, message: str, now: str
) -> None:
    """Set one condition the way ``UpdateJobConditions`` does (see the module docstring).

    :param now: the API timestamp for lastUpdateTime/lastTransitionTime.
    """
    if is_failed(status):
        return
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    current = next((cond for cond in conditions if cond.get("type") == condition_type), None)
    if current is not None and current.get("status") == condition_status and current.get("reason") == reason:
        return
    transition = now
    if current is not None and current.get("status") == condition_status:
        transition = current.get("lastTransitionTime", now)
    kept = []
    for cond in conditions:
        ctype = cond.get("type")
        if condition_type == c.CONDITION_RESTARTING and ctype == c.CONDITION_RUNNING:
            continue
        if condition_type == c.CONDITION_RUNNING and ctype == c.CONDITION_RESTARTING:
            continue
        if ctype == condition_type:
            continue
        if condition_type in (c.CONDITION_FAILED, c.CONDITION_SUCCEEDED) and ctype == c.CONDITION_RUNNING:
            cond = dict(cond, status=CONDITION_FALSE)
        kept.append(cond)
    kept.append(
        {
            "type": condition_type,
            "status": condition_status,
            "reason": reason,
            "message": message,
            "lastUpdateTime": now,
            "lastTransitionTime": transition,
        }
    )
    status["conditions"] = kept


def initialize_replica_statuses(status: dict[str, Any], replica_type: str) -> None:
    """Reset a replica type's counters (they are recounted from the pods on every reconcile)."""
    status.setdefault("replicaStatuses", {})[replica_type] = {}


def _bump(status: dict[str, Any], replica_type: str, counter: str, by: int = 1) -> None:
    # Zero counters are left out, as the Go fields are ``omitempty``.
    entry = status.setdefault("replicaStatuses", {}).setdefault(replica_type, {})
    entry[counter] = int(entry.get(counter, 0)) + by


def replica_counts(status: dict[str, Any], replica_type: str) -> tuple[int, int, int]:
    """``(active, succeeded, failed)`` of a replica type."""
    entry = (status.get("replicaStatuses") or {}).get(replica_type) or {}
    return int(entry.get("active", 0)), int(entry.get("succeeded", 0)), int(entry.get("failed", 0))


def count_pod(status: dict[str, Any], replica_type: str, pod: dict[str, Any]) -> None:
    """Count one pod into its replica type's active/succeeded/failed by phase."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Running":
        deleting = bool(pod.get("metadata", {}).get("deletionTimestamp"))
        _bump(status, replica_type, "failed" if deleting else "active")
    elif phase == "Succeeded":
        _bump(status, replica_type, "succeeded")
    elif phase == "Failed":
        _bump(status, replica_type, "failed")


def move_active_to_succeeded(status: dict[str, Any]) -> None:
    """A succeeded job's still-active replicas count as succeeded (their pods may be cleaned up)."""
    for entry in (status.get("replicaStatuses") or {}).values():
        active = int(entry.pop("active", 0))
        if active:
            entry["succeeded"] = int(entry.get("succeeded", 0)) + active


@dataclass
class StatusContext:
    """What a kind's status rule needs besides the status: the time, and where events go.

    :param now: API timestamp of this reconcile.
    :param pods_by_replica: ``{(replica_type, index): pod}`` of the job's pods.
    :param events: events to record on the job, appended by the rules.
    """

    now: str
    pods_by_replica: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    events: list[EventSpec] = field(default_factory=list)

    def emit(self, type_: str, reason: str, message: str) -> None:
        self.events.append(EventSpec(type_, reason, message))


def update_job_status(view: JobView, status: dict[str, Any], ctx: StatusContext) -> None:
    """Apply the kind's ``UpdateJobStatus``: start time, replica selectors, then Running/Succeeded/
    Restarting/Failed from the replica counts (which the caller has just recounted)."""
    if not status.get("startTime"):
        status["startTime"] = ctx.now
    for rtype in view.replica_types():
        entry = status.setdefault("replicaStatuses", {}).setdefault(rtype, {})
        entry["selector"] = view.replica_selector(rtype)
    _RULES[view.kind.kind](view, status, ctx)


# --- per-kind rules --------------------------------------------------------------------------------


def _set(ctx: StatusContext, status: dict[str, Any], view: JobView, ctype: str, reason: str, msg: str) -> None:
    update_conditions(status, ctype, c.CONDITION_TRUE, new_reason(view.kind.kind, reason), msg, ctx.now)


def _running(ctx: StatusContext, status: dict[str, Any], view: JobView, msg: str) -> None:
    _set(ctx, status, view, c.CONDITION_RUNNING, c.JOB_REASON_RUNNING, msg)


def _succeed(ctx: StatusContext, status: dict[str, Any], view: JobView, msg: str) -> None:
    ctx.emit(NORMAL, new_reason(view.kind.kind, c.JOB_REASON_SUCCEEDED), msg)
    if not status.get("completionTime"):
        status["completionTime"] = ctx.now
    _set(ctx, status, view, c.CONDITION_SUCCEEDED, c.JOB_REASON_SUCCEEDED, msg)


def _fail(ctx: StatusContext, status: dict[str, Any], view: JobView, msg: str) -> None:
    ctx.emit(NORMAL, new_reason(view.kind.kind, c.JOB_REASON_FAILED), msg)
    if not status.get("completionTime"):
        status["completionTime"] = ctx.now
    _set(ctx, status, view, c.CONDITION_FAILED, c.JOB_REASON_FAILED, msg)


def _restart(ctx: StatusContext, status: dict[str, Any], view: JobView, msg: str) -> None:
    ctx.emit(WARNING, new_reason(view.kind.kind, c.JOB_REASON_RESTARTING), msg)
    _set(ctx, status, view, c.CONDITION_RESTARTING, c.JOB_REASON_RESTARTING, msg)


def _guarded_failures(view: JobView, status: dict[str, Any], ctx: StatusContext, rtype: str) -> None:
    """PyTorch/Paddle/JAX: failed pods that are not replaced yet restart the job unless the policy is Never."""
    active, succeeded, failed = replica_counts(status, rtype)
    if failed > 0 and view.replicas(rtype) > succeeded + active:
        kind = view.kind.kind
        if view.restart_policy(rtype) != c.RESTART_POLICY_NEVER:
            _restart(ctx, status, view, f"{kind} {view.name} is restarting because {failed} {rtype} replica(s) failed.")
        else:
            _fail(ctx, status, view, f"{kind} {view.name} is failed because {failed} {rtype} replica(s) failed.")


def _master_or_workers(view: JobView, status: dict[str, Any], ctx: StatusContext) -> None:
    """PyTorchJob and PaddleJob: the Master decides; without one, all Workers must succeed
    (for PyTorch with an elasticPolicy, any succeeded Worker)."""
    kind, name, ns = view.kind.kind, view.name, view.namespace
    for rtype in view.replica_types():
        active, succeeded, _ = replica_counts(status, rtype)
        expected = view.replicas(rtype) - succeeded
        if "Master" in view.replica_specs:
            if rtype == "Master":
                if active > 0:
                    _running(ctx, status, view, f"{kind} {name} is running.")
                if expected == 0:
                    _succeed(ctx, status, view, f"{kind} {name} is successfully completed.")
                    return
        elif rtype == "Worker":
            elastic_done = kind == "PyTorchJob" and view.spec.get("elasticPolicy") is not None and succeeded > 0
            if expected == 0 or elastic_done:
                _succeed(ctx, status, view, f"{kind} {ns}/{name} successfully completed.")
            elif active > 0:
                _running(ctx, status, view, f"{kind} {ns}/{name} is running.")
        _guarded_failures(view, status, ctx, rtype)


def _jax(view: JobView, status: dict[str, Any], ctx: StatusContext) -> None:
    """JAXJob: all Workers must succeed."""
    kind, name, ns = view.kind.kind, view.name, view.namespace
    for rtype in view.replica_types():
        active, succeeded, _ = replica_counts(status, rtype)
        if rtype == "Worker":
            if view.replicas(rtype) - succeeded == 0:
                _succeed(ctx, status, view, f"{kind} {ns}/{name} successfully completed.")
            elif active > 0:
                _running(ctx, status, view, f"{kind} {ns}/{name} is running.")
        _guarded_failures(view, status, ctx, rtype)


def _tensorflow(view: JobView, status: dict[str, Any], ctx: StatusContext) -> None:
    """TFJob: Chief or Master decides; without them worker 0 exiting 0 (default successPolicy) or all
    workers (``AllWorkers``). A failed replica fails the job unless a Restarting condition is pending."""
    kind, name, ns = view.kind.kind, view.name, view.namespace
    worker0 = ctx.pods_by_replica.get(("Worker", 0))
    worker0_done = "Worker" not in view.replica_specs or (
        worker0 is not None
        and (worker0.get("status") or {}).get("phase") == "Succeeded"
        and container_exit_code(worker0, view.kind.default_container) == 0
    )
    restarting = next(
        (cond for cond in status.get("conditions") or [] if cond.get("type") == c.CONDITION_RESTARTING), None
    )
    policy = view.spec.get("successPolicy") or c.TF_SUCCESS_POLICY_DEFAULT
    has_lead = "Chief" in view.replica_specs or "Master" in view.replica_specs
    for rtype in ("Chief", "Evaluator", "Master", "PS", "Worker"):
        if rtype not in view.replica_specs:
            continue
        active, succeeded, failed = replica_counts(status, rtype)
        expected = view.replicas(rtype) - succeeded
        if has_lead:
            if rtype in ("Chief", "Master"):
                if active > 0:
                    _running(ctx, status, view, f"{kind} {ns}/{name} is running.")
                if expected == 0:
                    _succeed(ctx, status, view, f"{kind} {ns}/{name} successfully completed.")
        elif rtype == "Worker":
            if expected == 0 or (worker0_done and policy != c.TF_SUCCESS_POLICY_ALL_WORKERS):
                _succeed(ctx, status, view, f"{kind} {ns}/{name} successfully completed.")
            elif active > 0:
                _running(ctx, status, view, f"{kind} {ns}/{name} is running.")
        if failed > 0:
            if restarting is not None:
                # Running may have dropped the Restarting condition set while reconciling pods: put it back.
                update_conditions(
                    status,
                    c.CONDITION_RESTARTING,
                    c.CONDITION_TRUE,
                    restarting.get("reason", ""),
                    restarting.get("message", ""),
                    ctx.now,
                )
            elif not (view.spec.get("enableDynamicWorker") and rtype == "Worker"):
                _fail(ctx, status, view, f"{kind} {ns}/{name} has failed because {failed} {rtype} replica(s) failed.")


def _exit_code_restarts(view: JobView, status: dict[str, Any], ctx: StatusContext, rtype: str) -> None:
    """MPIJob and XGBoostJob: a failed replica restarts the job under ExitCode, fails it otherwise."""
    _, _, failed = replica_counts(status, rtype)
    if failed > 0:
        kind = view.kind.kind
        if view.restart_policy(rtype) == c.RESTART_POLICY_EXIT_CODE:
            _restart(ctx, status, view, f"{kind} {view.name} is restarting because {failed} {rtype} replica(s) failed.")
        else:
            _fail(ctx, status, view, f"{kind} {view.name} is failed because {failed} {rtype} replica(s) failed.")


def _xgboost(view: JobView, status: dict[str, Any], ctx: StatusContext) -> None:
    """XGBoostJob: the Master decides; Running is recorded (once) before Succeeded or a failure."""
    kind, name = view.kind.kind, view.name

    def ensure_running() -> None:
        if not any(cond.get("type") == c.CONDITION_RUNNING for cond in status.get("conditions") or []):
            _running(ctx, status, view, f"{kind} {name} is running.")

    for rtype in view.replica_types():
        active, succeeded, failed = replica_counts(status, rtype)
        if rtype == "Master":
            if active > 0:
                ensure_running()
            if view.replicas(rtype) - succeeded == 0:
                ensure_running()
                _succeed(ctx, status, view, f"{kind} {name} is successfully completed.")
                return
        if failed > 0:
            ensure_running()
        _exit_code_restarts(view, status, ctx, rtype)


def _mpi(view: JobView, status: dict[str, Any], ctx: StatusContext) -> None:
    """MPIJob: the Launcher decides; Running while the launcher runs."""
    kind, name = view.kind.kind, view.name
    for rtype in view.replica_types():
        active, succeeded, _ = replica_counts(status, rtype)
        if rtype == "Launcher":
            if active > 0:
                _running(ctx, status, view, f"{kind} {name} is running.")
            if view.replicas(rtype) - succeeded == 0:
                _succeed(ctx, status, view, f"{kind} {name} is successfully completed.")
                return
        _exit_code_restarts(view, status, ctx, rtype)


_RULES: dict[str, Callable[[JobView, dict[str, Any], StatusContext], None]] = {
    "PyTorchJob": _master_or_workers,
    "PaddleJob": _master_or_workers,
    "JAXJob": _jax,
    "TFJob": _tensorflow,
    "XGBoostJob": _xgboost,
    "MPIJob": _mpi,
}

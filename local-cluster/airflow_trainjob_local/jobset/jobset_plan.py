"""What one reconcile of a JobSet does, decided from the JobSet and the Jobs it owns: the new status and the
Jobs to create, delete, suspend or resume. Upstream: ``reconcile`` in ``pkg/controllers/jobset_controller.go``,
with ``success_policy.go``, ``failure_policy.go``, ``startup_policy.go``, ``depends_on.go`` and
``ttl_after_finished.go`` of kubernetes-sigs/jobset v0.12.0. Pure: :func:`plan_jobset` makes no API calls.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.builders import build_job
from airflow_trainjob_local.jobset.conditions import (
    FALSE,
    TRUE,
    is_true,
    job_finished_type,
    job_ready,
    job_suspended,
    update_jobset_condition,
)
from airflow_trainjob_local.jobset.failure_policy import apply_failure_policy
from airflow_trainjob_local.jobset.spec import JobSetView
from airflow_trainjob_local.kube import format_time, parse_time

__all__ = ["ChildJobs", "JobSetPlan", "classify_jobs", "plan_jobset", "replicated_jobs_status"]

NORMAL = "Normal"
WARNING = "Warning"


@dataclass
class ChildJobs:
    """The JobSet's Jobs by state (upstream ``childJobs``): those of the current restart attempt are active,
    successful or failed; those of an earlier attempt are ``previous`` (to be deleted)."""

    active: list[dict[str, Any]] = field(default_factory=list)
    successful: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    previous: list[dict[str, Any]] = field(default_factory=list)

    def names(self) -> set[str]:
        return {j["metadata"]["name"] for j in self.active + self.successful + self.failed + self.previous}


@dataclass
class JobSetPlan:
    """What to write. Events are recorded only once the status was written (upstream ``updateJobSetStatus``).

    :ivar status: the JobSet's new status.
    :ivar changed: whether ``status`` differs from the one read.
    :ivar events: ``(type, reason, message)`` Events about the JobSet.
    :ivar create_jobs: Job manifests to create.
    :ivar delete_jobs: Jobs to delete (foreground propagation).
    :ivar suspend_jobs: names of Jobs to suspend; :ivar resume_jobs: to resume.
    :ivar ensure_service: create the headless Service if it is missing.
    :ivar delete_jobset: the TTL after finishing passed: delete the JobSet.
    :ivar requeue_after: seconds until the TTL passes.
    """

    status: dict[str, Any]
    changed: bool = False
    events: list[tuple[str, str, str]] = field(default_factory=list)
    create_jobs: list[dict[str, Any]] = field(default_factory=list)
    delete_jobs: list[dict[str, Any]] = field(default_factory=list)
    suspend_jobs: list[str] = field(default_factory=list)
    resume_jobs: list[str] = field(default_factory=list)
    ensure_service: bool = False
    delete_jobset: bool = False
    requeue_after: float | None = None

    def condition(self, event_type: str, condition_type: str, value: str, reason: str, message: str, now: str) -> None:
        """Upstream ``setCondition``: update one condition; when it changed, queue its Event."""
        if update_jobset_condition(self.status, condition_type, value, reason, message, now):
            self.changed = True
            self.events.append((event_type, reason, message))


def classify_jobs(jobs: list[dict[str, Any]], restarts: int) -> ChildJobs:
    """Upstream ``getChildJobs``: sort the JobSet's Jobs by restart attempt and finished state. A Job whose
    ``restart-attempt`` label is not a number counts as previous."""
    children = ChildJobs()
    for job in jobs:
        try:
            attempt = int(((job.get("metadata") or {}).get("labels") or {}).get(c.LABEL_RESTART_ATTEMPT, ""))
        except ValueError:
            attempt = -1
        if attempt < restarts:
            children.previous.append(job)
            continue
        finished = job_finished_type(job)
        bucket = {"": children.active, c.JOB_CONDITION_FAILED: children.failed}.get(finished, children.successful)
        bucket.append(job)
    return children


def replicated_jobs_status(view: JobSetView, children: ChildJobs) -> list[dict[str, Any]]:
    """Upstream ``calculateReplicatedJobStatuses``, in spec order: per replicated job, its Jobs that are ready
    (succeeded + ready pods reach ``min(parallelism, completions)``), active (an active pod), suspended,
    succeeded and failed."""
    counts = {
        r["name"]: dict.fromkeys(("ready", "succeeded", "failed", "active", "suspended"), 0)
        for r in view.replicated_jobs()
    }

    def bucket(job: dict[str, Any]) -> dict[str, int] | None:
        return counts.get(((job.get("metadata") or {}).get("labels") or {}).get(c.LABEL_REPLICATED_JOB_NAME, ""))

    for job in children.active:
        entry = bucket(job)
        if entry is None:
            continue
        spec, status = job.get("spec") or {}, job.get("status") or {}
        pods = int(spec["parallelism"]) if spec.get("parallelism") is not None else 1
        if spec.get("completions") is not None:
            pods = min(pods, int(spec["completions"]))
        entry["ready"] += int(int(status.get("succeeded") or 0) + job_ready(job) >= pods)
        entry["active"] += int(int(status.get("active") or 0) > 0)
        entry["suspended"] += int(job_suspended(job))
    for jobs, key in ((children.successful, "succeeded"), (children.failed, "failed")):
        for job in jobs:
            entry = bucket(job)
            if entry is not None:
                entry[key] += 1
    return [{"name": name, **entry} for name, entry in counts.items()]


def _finished(status: dict[str, Any]) -> bool:
    return is_true(status, c.CONDITION_COMPLETED) or is_true(status, c.CONDITION_FAILED)


def plan_jobset(view: JobSetView, jobs: list[dict[str, Any]], now: dt.datetime) -> JobSetPlan:
    """Decide one reconcile of the JobSet ``view`` whose Jobs (owned by it) are ``jobs``, at ``now`` (aware)."""
    stamp = format_time(now)
    plan = JobSetPlan(status=copy.deepcopy(view.status))
    if "restarts" not in plan.status:  # upstream always writes it (no omitempty)
        plan.status["restarts"] = 0
        plan.changed = True
    children = classify_jobs(jobs, view.restarts)
    statuses = replicated_jobs_status(view, children)
    if sorted(plan.status.get("replicatedJobsStatus") or [], key=lambda s: s.get("name", "")) != sorted(
        statuses, key=lambda s: s["name"]
    ):
        plan.status["replicatedJobsStatus"] = statuses
        plan.changed = True

    if _finished(plan.status):
        plan.delete_jobs = [j for j in children.active if not j["metadata"].get("deletionTimestamp")]
        _plan_ttl(view, plan, now)
        return plan
    plan.delete_jobs = [j for j in children.previous if not j["metadata"].get("deletionTimestamp")]

    if not view.suspended and _all_jobs_ready(view, statuses):
        plan.condition(
            NORMAL,
            c.CONDITION_RESTARTING,
            FALSE,
            c.REASON_RESTARTING_JOBS_READY,
            c.MESSAGE_RESTARTING_JOBS_READY,
            stamp,
        )
    if children.failed:
        apply_failure_policy(view, plan, children.failed, stamp)
        return plan
    if children.successful and _success_policy_met(view, children.successful):
        set_completed(plan, stamp)
        return plan

    plan.ensure_service = view.dns_hostnames
    _plan_creations(view, plan, children, statuses, stamp)
    if view.suspended:
        plan.suspend_jobs = [j["metadata"]["name"] for j in children.active if not job_suspended(j)]
        plan.condition(NORMAL, c.CONDITION_SUSPENDED, TRUE, c.REASON_SUSPENDED, c.MESSAGE_SUSPENDED, stamp)
        plan.condition(
            NORMAL, c.CONDITION_RESTARTING, FALSE, c.REASON_RESTARTING_JOBSET_SUSPENDED, c.MESSAGE_SUSPENDED, stamp
        )
    else:
        _plan_resumes(view, plan, children, statuses, stamp)
    return plan


def set_completed(plan: JobSetPlan, stamp: str) -> None:
    """``setJobSetCompletedCondition``: Completed, RestartingJobSet False, terminalState Completed."""
    plan.condition(
        NORMAL, c.CONDITION_COMPLETED, TRUE, c.REASON_ALL_JOBS_COMPLETED, c.MESSAGE_ALL_JOBS_COMPLETED, stamp
    )
    plan.condition(
        NORMAL,
        c.CONDITION_RESTARTING,
        FALSE,
        c.REASON_RESTARTING_JOBSET_COMPLETED,
        c.MESSAGE_ALL_JOBS_COMPLETED,
        stamp,
    )
    if plan.status.get("terminalState") != c.TERMINAL_COMPLETED:
        plan.status["terminalState"] = c.TERMINAL_COMPLETED
        plan.changed = True


def _all_jobs_ready(view: JobSetView, statuses: list[dict[str, Any]]) -> bool:
    return view.global_replicas() == sum(s["ready"] + s["succeeded"] for s in statuses)


def _success_policy_met(view: JobSetView, successful: list[dict[str, Any]]) -> bool:
    """``executeSuccessPolicy``: enough succeeded Jobs of the targeted replicated jobs (All: every one of their
    Jobs; Any: one)."""
    policy = view.success_policy
    targets = policy.get("targetReplicatedJobs") or []

    def targeted(name: str) -> bool:
        return not targets or name in targets

    matching = sum(
        1
        for j in successful
        if targeted(((j.get("metadata") or {}).get("labels") or {}).get(c.LABEL_REPLICATED_JOB_NAME, ""))
    )
    if policy.get("operator") == c.OPERATOR_ANY:
        expected = 1
    else:
        expected = sum(int(r["replicas"]) for r in view.replicated_jobs() if targeted(r["name"]))
    return matching >= expected


def _dependencies_reached(rjob: dict[str, Any], replicas: dict[str, int], statuses: list[dict[str, Any]]) -> bool:
    """``dependencyReachedStatus``: every ``dependsOn`` entry's replicated job (earlier in the spec) has all its
    Jobs succeeded (``Complete``) or ready, failed or succeeded (``Ready``)."""
    by_name = {s["name"]: s for s in statuses}
    for dependency in rjob.get("dependsOn") or []:
        name, wanted = dependency.get("name", ""), dependency.get("status")
        found = by_name.get(name)
        if found is None:
            return False
        if wanted == c.DEPENDENCY_COMPLETE and replicas.get(name) != found["succeeded"]:
            return False
        if wanted == c.DEPENDENCY_READY and replicas.get(name) != found["failed"] + found["ready"] + found["succeeded"]:
            return False
    return True


def _all_started(replicas: int, status: dict[str, Any]) -> bool:
    return replicas == status["failed"] + status["ready"] + status["succeeded"]


def _plan_creations(
    view: JobSetView, plan: JobSetPlan, children: ChildJobs, statuses: list[dict[str, Any]], stamp: str
) -> None:
    """``reconcileReplicatedJobs``: create the missing Jobs of each replicated job whose dependencies are
    reached; with the InOrder startup policy, one replicated job at a time until all of its Jobs started."""
    existing = children.names()
    # BlockingRecreate: no new Job until every Job of the previous attempt is gone.
    blocked = (
        bool(children.previous)
        and (view.failure_policy or {}).get("restartStrategy") == c.RESTART_STRATEGY_BLOCKING_RECREATE
    )
    by_name = {s["name"]: s for s in statuses}
    replicas: dict[str, int] = {}
    in_order = view.in_order_startup and not view.suspended
    for rjob in view.replicated_jobs():
        replicas[rjob["name"]] = int(rjob["replicas"])
        if not _dependencies_reached(rjob, replicas, statuses):
            continue
        if in_order and _all_started(int(rjob["replicas"]), by_name[rjob["name"]]):
            continue
        for index in range(0 if blocked else int(rjob["replicas"])):
            manifest = build_job(view, rjob, index)
            if manifest["metadata"]["name"] not in existing:
                plan.create_jobs.append(manifest)
        if in_order:
            _startup_in_progress(plan, stamp)
            return
    if in_order:
        plan.condition(
            NORMAL,
            c.CONDITION_STARTUP_POLICY_COMPLETED,
            TRUE,
            c.REASON_IN_ORDER_COMPLETED,
            c.MESSAGE_IN_ORDER_COMPLETED,
            stamp,
        )


def _startup_in_progress(plan: JobSetPlan, stamp: str) -> None:
    plan.condition(
        NORMAL,
        c.CONDITION_STARTUP_POLICY_IN_PROGRESS,
        TRUE,
        c.REASON_IN_ORDER_IN_PROGRESS,
        c.MESSAGE_IN_ORDER_IN_PROGRESS,
        stamp,
    )


def _plan_resumes(
    view: JobSetView, plan: JobSetPlan, children: ChildJobs, statuses: list[dict[str, Any]], stamp: str
) -> None:
    """``resumeJobsIfNecessary``: resume the suspended Jobs of each replicated job whose dependencies are
    reached (InOrder: one replicated job at a time), then Suspended False (ResumeJobs)."""
    by_name = {s["name"]: s for s in statuses}
    replicas: dict[str, int] = {}
    for rjob in view.replicated_jobs():
        replicas[rjob["name"]] = int(rjob["replicas"])
        if not _dependencies_reached(rjob, replicas, statuses):
            continue
        if view.in_order_startup and _all_started(int(rjob["replicas"]), by_name[rjob["name"]]):
            continue
        for job in children.active:
            labels = job["metadata"].get("labels") or {}
            if labels.get(c.LABEL_REPLICATED_JOB_NAME) == rjob["name"] and job_suspended(job):
                plan.resume_jobs.append(job["metadata"]["name"])
        if view.in_order_startup:
            _startup_in_progress(plan, stamp)
            return
    plan.condition(NORMAL, c.CONDITION_SUSPENDED, FALSE, c.REASON_RESUMED, c.MESSAGE_RESUMED, stamp)


def _plan_ttl(view: JobSetView, plan: JobSetPlan, now: dt.datetime) -> None:
    """``executeTTLAfterFinishedPolicy``: delete the JobSet ``ttlSecondsAfterFinished`` after the
    lastTransitionTime of its Completed or Failed condition, else look again then."""
    ttl = view.ttl_seconds_after_finished
    if ttl is None:
        return
    finished_at = None
    for condition in plan.status.get("conditions") or []:
        if condition.get("type") in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) and condition.get("status") == TRUE:
            finished_at = parse_time(condition.get("lastTransitionTime"))
            break
    if finished_at is None:
        return
    remaining = (finished_at + dt.timedelta(seconds=ttl) - now).total_seconds()
    if remaining <= 0:
        plan.delete_jobset = True
    else:
        plan.requeue_after = remaining

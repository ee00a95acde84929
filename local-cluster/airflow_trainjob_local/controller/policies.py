"""The job's run policies as pure decisions: what to do with a failed pod (restartPolicy), whether the job is
past its backoffLimit or activeDeadlineSeconds, which pods cleanPodPolicy deletes, when
ttlSecondsAfterFinished deletes the job, and whether schedulingPolicy.minAvailable lets pods start.

Times are timezone-aware datetimes; durations are seconds.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from enum import Enum
from typing import Any

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller.spec import JobView
from airflow_trainjob_local.controller.status import is_finished
from airflow_trainjob_local.kube import parse_time

__all__ = [
    "DEFAULT_MAX_PODS",
    "PodAction",
    "failed_pod_action",
    "free_pod_slots",
    "is_retryable_exit_code",
    "min_available",
    "past_active_deadline",
    "past_backoff_limit",
    "pods_to_clean",
    "seconds_until_deadline",
    "seconds_until_ttl_expires",
]

#: The kubelet's default ``maxPods``: a Node that reports no ``allocatable.pods`` is assumed to take this many.
DEFAULT_MAX_PODS = 110


class PodAction(Enum):
    """What ``ReconcilePods`` does with a pod in phase Failed."""

    KEEP = "keep"  # restartPolicy Never: the status rule fails the job
    RESTART = "restart"  # delete it, set Restarting; it is recreated on a later reconcile
    FAIL = "fail"  # ExitCode with a permanent exit code: fail the job


def is_retryable_exit_code(exit_code: int) -> bool:
    """``train.IsRetryableExitCode``: 128 and above (killed by a signal: 137 = SIGKILL/OOM, 143 = SIGTERM)."""
    return exit_code >= 128


def failed_pod_action(restart_policy: str, exit_code: int) -> PodAction:
    """The action for a Failed pod of a replica with ``restart_policy`` whose container exited ``exit_code``.

    OnFailure and Always restart whatever the code (the kubelet restarts such containers in place, so a
    Failed pod means it gave up, e.g. eviction); ExitCode restarts on 128-255 and fails on 1-127.
    """
    if restart_policy == c.RESTART_POLICY_EXIT_CODE:
        return PodAction.RESTART if is_retryable_exit_code(exit_code) else PodAction.FAIL
    if restart_policy in (c.RESTART_POLICY_ON_FAILURE, c.RESTART_POLICY_ALWAYS):
        return PodAction.RESTART
    return PodAction.KEEP


def past_backoff_limit(view: JobView, pods: Iterable[dict[str, Any]], recreated: int) -> bool:
    """Whether the job's restarts reached ``runPolicy.backoffLimit``.

    Restarts are the container restartCounts of the pods of replica types whose restartPolicy is OnFailure,
    Always or ExitCode (the real ``PastBackoffLimit`` counts these, for Running pods only), plus ``recreated``:
    the pods this controller deleted and recreated, which the real count loses with the deleted pods.
    A limit of 0 allows no restart; N allows fewer than N.
    """
    limit = _opt_int(view.run_policy.get("backoffLimit"))
    if limit is None:
        return False
    counted_types = {
        t.lower()
        for t in view.replica_specs
        if view.restart_policy(t) in (c.RESTART_POLICY_ON_FAILURE, c.RESTART_POLICY_ALWAYS, c.RESTART_POLICY_EXIT_CODE)
    }
    restarts = recreated
    for pod in pods:
        if pod.get("metadata", {}).get("labels", {}).get(c.LABEL_REPLICA_TYPE) not in counted_types:
            continue
        status = pod.get("status") or {}
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            restarts += int(cs.get("restartCount", 0))
    if int(limit) == 0:
        return restarts > 0
    return restarts >= int(limit)


def past_active_deadline(view: JobView, status: dict[str, Any], now: dt.datetime) -> bool:
    """Whether ``now`` is at or past ``startTime + activeDeadlineSeconds`` (never without both)."""
    remaining = seconds_until_deadline(view, status, now)
    return remaining is not None and remaining <= 0


def seconds_until_deadline(view: JobView, status: dict[str, Any], now: dt.datetime) -> float | None:
    """Seconds left before activeDeadlineSeconds runs out; ``None`` when the job has no deadline or start."""
    deadline = _opt_int(view.run_policy.get("activeDeadlineSeconds"))
    start = parse_time(status.get("startTime"))
    if deadline is None or start is None:
        return None
    return (start + dt.timedelta(seconds=int(deadline)) - now).total_seconds()


def seconds_until_ttl_expires(view: JobView, status: dict[str, Any], now: dt.datetime) -> float | None:
    """Seconds until a finished job is deleted (``completionTime + ttlSecondsAfterFinished``); ``None`` when the
    job has no TTL, is not finished, has no completionTime, or is suspended."""
    ttl = _opt_int(view.run_policy.get("ttlSecondsAfterFinished"))
    if ttl is None or view.suspended or not is_finished(status):
        return None  # CleanupJob: no TTL while the job is suspended
    done = parse_time(status.get("completionTime"))
    if done is None:
        return None
    return (done + dt.timedelta(seconds=ttl) - now).total_seconds()


def pods_to_clean(view: JobView, status: dict[str, Any], pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods ``DeletePodsAndServices`` deletes (each with its same-named service).

    A job that has not finished (failed by backoff or deadline just now) loses all its pods. A finished job:
    cleanPodPolicy All deletes all, Running deletes Running and Pending ones (a Pending pod would start
    later), None deletes none. Pods already being deleted are skipped.
    """
    policy = view.run_policy.get("cleanPodPolicy") or c.CLEAN_POD_POLICY_NONE
    finished = is_finished(status)
    if finished and policy == c.CLEAN_POD_POLICY_NONE:
        return []
    chosen = []
    for pod in pods:
        if pod.get("metadata", {}).get("deletionTimestamp"):
            continue
        phase = (pod.get("status") or {}).get("phase")
        if finished and policy == c.CLEAN_POD_POLICY_RUNNING and phase not in ("Running", "Pending"):
            continue
        chosen.append(pod)
    return chosen


def min_available(view: JobView) -> int | None:
    """``runPolicy.schedulingPolicy.minAvailable``, or ``None`` when unset."""
    scheduling = view.run_policy.get("schedulingPolicy")
    return _opt_int(scheduling.get("minAvailable")) if isinstance(scheduling, dict) else None


def free_pod_slots(nodes: Iterable[dict[str, Any]], pods: Iterable[dict[str, Any]]) -> int:
    """How many more pods can start now: the local meaning of "can" for minAvailable.

    Summed over Ready, schedulable Nodes: ``status.allocatable.pods`` (``DEFAULT_MAX_PODS`` when not reported)
    minus the pods bound to that Node that have not finished; then minus the unfinished pods bound to no
    Node yet, which will take a slot somewhere. No Ready Node means no slot.
    """
    busy: dict[str, int] = {}
    unbound = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            busy[node] = busy.get(node, 0) + 1
        else:
            unbound += 1
    free = -unbound
    for node in nodes:
        if (node.get("spec") or {}).get("unschedulable"):
            continue
        conditions = (node.get("status") or {}).get("conditions") or []
        if not any(cond.get("type") == "Ready" and cond.get("status") == "True" for cond in conditions):
            continue
        capacity = _quantity((node.get("status") or {}).get("allocatable", {}).get("pods"), DEFAULT_MAX_PODS)
        free += max(0, capacity - busy.get(node["metadata"]["name"], 0))
    return max(0, free)


def _opt_int(value: Any) -> int | None:
    """An integer field of the run policy, ``None`` when unset or malformed (a malformed one fails validation)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _quantity(value: Any, default: int) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default

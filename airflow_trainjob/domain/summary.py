"""The task's XCom ``return_value``: what a try returns of its job once it succeeded (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any


def job_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """The task's XCom ``return_value``: kind, name, namespace, conditions, replicaStatuses, startTime,
    completionTime, duration (seconds, None until both times are known). JSON-safe.

    :param job: the job as last read, an API JSON dict (``status.startTime``, ``status.completionTime``...).
    """
    status = job.get("status") or {}
    start, end = status.get("startTime"), status.get("completionTime")
    duration = None
    if start and end:
        duration = (
            datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
        ).total_seconds()
    return {
        "kind": job["kind"],
        "name": job["metadata"]["name"],
        "namespace": job["metadata"]["namespace"],
        "conditions": status.get("conditions") or [],
        "replicaStatuses": status.get("replicaStatuses") or {},
        "startTime": start,
        "completionTime": end,
        "duration": duration,
    }

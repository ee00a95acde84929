"""The task's XCom ``return_value``: what a try returns of its job once it succeeded (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from airflow_trainjob.domain.progress import summary_entry
from airflow_trainjob.domain.timestamps import epoch

#: The status fields of Kubeflow Trainer v2's TrainJob a summary carries when the job has them (its steps' child
#: Jobs, and the trainer's own progress and metrics with the ``TrainJobStatus`` feature gate).
TRAINJOB_STATUS_KEYS = ("jobsStatus", "trainerStatus")


class RunTimes(Protocol):
    """What :func:`job_summary` reads of the job's family (:class:`~airflow_trainjob.domain.family.JobFamily`)."""

    def run_times(self, job: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """``(start, completion)`` of the job's run, RFC 3339 (None when not known).

        :param job: the job, an API JSON dict.
        """
        ...


class SummaryFamily(RunTimes, Protocol):
    """What :func:`job_summary` reads of the job's family: its run's times and the training's own progress."""

    def trainer_progress(self, status: Any) -> dict[str, Any] | None:
        """The training's own progress as its controller reports it (a TrainJob's ``status.trainerStatus``), or None.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...


def _seconds_between(start: str | None, end: str | None) -> float | None:
    started, ended = epoch(start), epoch(end)
    return None if started is None or ended is None else ended - started


def job_summary(job: Mapping[str, Any], family: SummaryFamily | None = None) -> dict[str, Any]:
    """The task's XCom ``return_value``: kind, name, namespace, conditions, replicaStatuses, startTime,
    completionTime, duration (seconds, None until both times are known); for a TrainJob also its ``jobsStatus`` and
    ``trainerStatus`` when it has them, and with the latter ``progress``: the last report read plainly
    (:func:`~airflow_trainjob.domain.progress.summary_entry`: ``percentage``, ``estimated_remaining_seconds``,
    ``metrics`` as name -> value, ``last_updated_time``). JSON-safe.

    :param job: the job as last read, an API JSON dict (``status.startTime``, ``status.completionTime``...).
    :param family: the job's API family, which says when its run started and completed
        (:meth:`~airflow_trainjob.domain.family.JobFamily.run_times`); None: ``status.startTime`` and
        ``status.completionTime``.
    """
    status = job.get("status") or {}
    if family is not None:
        start, end = family.run_times(job)
    else:
        start, end = status.get("startTime"), status.get("completionTime")
    progress = summary_entry(family.trainer_progress(status)) if family is not None else None
    return {
        "kind": job["kind"],
        "name": job["metadata"]["name"],
        "namespace": job["metadata"]["namespace"],
        "conditions": status.get("conditions") or [],
        "replicaStatuses": status.get("replicaStatuses") or {},
        "startTime": start,
        "completionTime": end,
        "duration": _seconds_between(start, end),
        **{k: status[k] for k in TRAINJOB_STATUS_KEYS if status.get(k)},
        **({"progress": progress} if progress is not None else {}),
    }

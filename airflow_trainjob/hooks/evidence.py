"""What a verdict needs, read through a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`: the failed
job's pods, the log tail of each failed container and the events (:func:`failure_exception`, :func:`read_tails`),
and the end the training operator announced for a job that is gone (:func:`announced_end`).

Reads only: what the evidence means is :mod:`airflow_trainjob.domain.verdict`'s and
:mod:`airflow_trainjob.domain.conditions`', the exception :func:`airflow_trainjob.exceptions.exception_for`'s. The
reads happen before any cleanup deletes the pods. Shared by the operator and the sensor.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubernetes.client.exceptions import ApiException

from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.failed_tails import TAILS_QUOTED
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.pods import with_pods_seen
from airflow_trainjob.domain.verdict import job_ref, judge_failure
from airflow_trainjob.exceptions import exception_for
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import RAISED_ERRORS, one_line

log = logging.getLogger(__name__)


def announced_end(hook: Any, job: dict[str, Any]) -> dict[str, Any] | None:
    """``job`` as last seen, now gone, with the terminal condition the training operator announced for it in its
    events (its family's ``status_from_events``); None when no such event is there.

    :param hook: a :class:`TrainingJobHook`.
    :param job: the job as last seen, an API JSON dict (its ``metadata.uid`` picks the events).
    """
    meta = job["metadata"]
    family = family_of(job["kind"])
    status = family.status_from_events(hook.list_events(meta["namespace"], {meta["name"]}), meta.get("uid"))
    return None if status is None else {**job, "status": conditions.with_announced_end(job.get("status"), status)}


def read_tails(
    hook: Any,
    namespace: str,
    ends: Sequence[ContainerEnd],
    tail_lines: int,
    known: Mapping[str, str] | None = None,
    *,
    warn: bool = True,
) -> dict[str, str]:
    """The last lines of the logs of the failed runs among ``ends``, the first :data:`TAILS_QUOTED` containers to
    fail, each read from that container (an init container's own log) and that run (``previous`` for a run that
    was restarted since); a log that cannot be read (the pod is gone) is left out, with a warning.

    :param hook: a :class:`TrainingJobHook`.
    :param namespace: the pods' namespace.
    :param ends: container runs, oldest first (:func:`failures.container_ends`).
    :param tail_lines: lines read of each (count; 0 reads none).
    :param known: tails read earlier, by the same key (the wait reads a failed run's tail when it first sees it: a
        pod the controller deletes with the job's failure, e.g. a Job's restarting pod, takes its log with it); they
        are taken as they are, not read again.
    :param warn: log a log that cannot be read (the verdict's reads); False: leave it to the verdict (the wait's
        early reads, of pods that may be on their way out).
    :returns: :attr:`~airflow_trainjob.domain.failures.ContainerEnd.source` (``Master-0``, ``Master-0 (initContainer
        fetch-data)``) -> its last lines, in the order of ``ends``.
    """
    tails: dict[str, str] = {}
    for end in [e for e in ends if e.failed]:
        if len(tails) >= TAILS_QUOTED or not tail_lines:
            break
        if end.source in tails or not end.container:
            continue
        if (known or {}).get(end.source):
            tails[end.source] = (known or {})[end.source]
            continue
        try:
            tails[end.source] = hook.read_pod_log(
                end.pod, namespace, end.container, tail_lines=tail_lines, previous=end.restarted
            )
        except (ApiException, *RAISED_ERRORS) as e:
            # The pod may be gone already (cleanPodPolicy, TTL): the verdict does not need its log. A run that never
            # started (StartError: a missing executable) has no previous log: the API answers 400, raised by the
            # hook as a JobRejectedError, which must not end the wait or replace the verdict.
            if warn:
                log.warning("Could not read the log of %s (pod %s): %s", end.source, end.pod, one_line(e))
    return tails


def failure_exception(
    hook: Any,
    job: dict[str, Any],
    log_tail_lines: int = 50,
    seen_pods: Iterable[dict[str, Any]] = (),
    known_tails: Mapping[str, str] | None = None,
) -> Exception:
    """The exception for failed ``job``: ``AirflowFailException`` when the failure that failed it is permanent
    (exit code 1-127, see :mod:`airflow_trainjob.domain.failures`), else :class:`TrainingJobError` (Airflow may retry).

    The exits come from the job's pods as they are now, else as they were last seen
    (``seen_pods``), else from the operator's ``ExitedWithCode`` events: with ``cleanPodPolicy``
    ``All`` the operator may delete the pods the moment the job fails.

    :param hook: a :class:`TrainingJobHook`.
    :param job: the failed job, an API JSON dict (its ``status`` and pod templates).
    :param log_tail_lines: lines quoted from each failed replica's log (count; 0 quotes none).
    :param seen_pods: the job's pods as last seen while waiting (API JSON dicts).
    :param known_tails: the failed runs' tails the wait read when it saw them fail (:func:`read_tails`' ``known``).
    """
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    family = family_of(job["kind"])
    pods = with_pods_seen(hook.list_job_pods(name, namespace, kind=family.kind), seen_pods)
    tails = read_tails(hook, namespace, family.container_ends(pods), log_tail_lines, known_tails)
    return exception_for(judge_failure(job, pods, _events_if_any(hook, job, pods), tails, family))


def _events_if_any(hook: Any, job: dict[str, Any], pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events about ``job`` and ``pods``; none, with a warning, when the API refuses the list."""
    namespace = job["metadata"]["namespace"]
    try:
        return hook.list_events(namespace, {job["metadata"]["name"], *(p["metadata"]["name"] for p in pods)})
    except ApiException as e:
        log.warning("Could not list the events of %s: %s", job_ref(job), one_line(e))
        return []

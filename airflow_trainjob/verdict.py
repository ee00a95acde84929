"""Turns a failed job into the exception Airflow should see: message, cause and retry class.

Reads what the message needs — the pods' exits, the log tail of each failed container (an init container's
from its own log) and the recent events — before any cleanup deletes the pods. Shared by the operator and the sensor.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from airflow.providers.common.compat.sdk import AirflowFailException
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.failures import (
    ContainerEnd,
    container_ends,
    ends_from_events,
    failure_message,
    is_permanent,
    restart_policies,
)
from airflow_trainjob.domain.pods import log_container
from airflow_trainjob.exceptions import TrainingJobError
from airflow_trainjob.hooks.api_errors import one_line

#: Failed replicas whose log tail is quoted (the first ones to fail).
TAILS_QUOTED = 8

log = logging.getLogger(__name__)


def job_ref(job: dict[str, Any]) -> str:
    """``"<Kind> <namespace>/<name>"``.

    :param job: the job, an API JSON dict (``kind``, ``metadata.namespace``, ``metadata.name``).
    """
    return f"{job['kind']} {job['metadata']['namespace']}/{job['metadata']['name']}"


def announced_end(hook: Any, job: dict[str, Any]) -> dict[str, Any] | None:
    """``job`` as last seen, now gone, with the terminal condition the training operator announced for it in its
    events (:func:`conditions.status_from_events`); None when no such event is there.

    :param hook: a :class:`TrainingJobHook`.
    :param job: the job as last seen, an API JSON dict (its ``metadata.uid`` picks the events).
    """
    meta = job["metadata"]
    status = conditions.status_from_events(
        hook.list_events(meta["namespace"], {meta["name"]}), job["kind"], meta.get("uid")
    )
    return None if status is None else {**job, "status": conditions.with_announced_end(job.get("status"), status)}


def _template_container(job: Mapping[str, Any], kind: Any, replica: str) -> str:
    """The container that speaks for ``replica`` (``Worker-0``) by the job's pod template, as for a live pod."""
    spec = ((job.get("spec") or {}).get(kind.replica_specs_key) or {}).get(replica.rpartition("-")[0]) or {}
    return log_container(spec.get("template") or {}, kind)


def read_tails(hook: Any, namespace: str, ends: Sequence[ContainerEnd], tail_lines: int) -> dict[str, str]:
    """The last lines of the logs of the failed runs among ``ends``, the first :data:`TAILS_QUOTED` containers to
    fail, each read from that container (an init container's own log) and that run (``previous`` for a run that
    was restarted since); a log that cannot be read (the pod is gone) is left out, with a warning.

    :param hook: a :class:`TrainingJobHook`.
    :param namespace: the pods' namespace.
    :param ends: container runs, oldest first (:func:`failures.container_ends`).
    :param tail_lines: lines read of each (count; 0 reads none).
    :returns: :attr:`~airflow_trainjob.domain.failures.ContainerEnd.source` (``Master-0``, ``Master-0 (initContainer
        fetch-data)``) -> its last lines, in the order of ``ends``.
    """
    tails: dict[str, str] = {}
    for end in [e for e in ends if e.failed]:
        if len(tails) >= TAILS_QUOTED or not tail_lines:
            break
        if end.source in tails or not end.container:
            continue
        try:
            tails[end.source] = hook.read_pod_log(
                end.pod, namespace, end.container, tail_lines=tail_lines, previous=end.restarted
            )
        except ApiException as e:
            # The pod may be gone already (cleanPodPolicy, TTL): the verdict does not need its log.
            log.warning("Could not read the log of %s (pod %s): %s", end.source, end.pod, one_line(e))
    return tails


def failure_ends(
    job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> list[ContainerEnd]:
    """The container runs a failed job is judged by, oldest first, as :func:`failure_exception` reads them: the pods'
    (:func:`failures.container_ends`); when none of them failed (the pods are gone: ``cleanPodPolicy``, or the
    controller replaced them), the exits the training operator reported in its ``ExitedWithCode`` events, each
    container named from the job's pod template. The Training job tab marks failed replicas by the same runs.

    :param job: the job, an API JSON dict (``kind``, ``metadata.name``, the pod templates of ``spec``).
    :param pods: its pods (API JSON dicts: now, and as last seen).
    :param events: the events about the job and its pods (API JSON dicts).
    """
    kind = JOB_KINDS[job["kind"]]
    ends = container_ends(pods, kind)
    if any(e.failed for e in ends):
        return ends
    return [
        replace(e, container=e.container or _template_container(job, kind, e.replica))
        for e in ends_from_events(events, job["metadata"]["name"], kind)
    ]


def failure_exception(
    hook: Any, job: dict[str, Any], log_tail_lines: int = 50, seen_pods: Iterable[dict[str, Any]] = ()
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
    """
    name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
    kind = JOB_KINDS[job["kind"]]
    pods = hook.list_job_pods(name, namespace)
    present = {p["metadata"]["name"] for p in pods}
    pods = [*pods, *(p for p in seen_pods if p["metadata"]["name"] not in present)]
    ends = container_ends(pods, kind)
    tails = read_tails(hook, namespace, ends, log_tail_lines)
    try:
        involved = {name, *(p["metadata"]["name"] for p in pods)}
        raw_events = hook.list_events(namespace, involved)
    except ApiException as e:
        log.warning("Could not list the events of %s: %s", job_ref(job), one_line(e))
        raw_events = []
    ends = failure_ends(job, pods, raw_events)
    events = [
        f"{e.get('type')} {e.get('reason')} {e['involvedObject'].get('name')}: {e.get('message', '')}"
        for e in raw_events
    ]
    policies = restart_policies(job)
    message = failure_message(job_ref(job), job.get("status"), ends, events, tails, policies)
    permanent = is_permanent(ends, policies, conditions.failed_at(job.get("status")))
    return AirflowFailException(message) if permanent else TrainingJobError(message)

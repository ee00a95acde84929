"""A failed job's verdict, from the evidence already read (pure): the container runs it is judged by, the message
Airflow shows, and whether retrying can help.

The evidence -- the job's pods (now, and as last seen), the log tail of each failed container, the events about the
job and its pods -- is read by :mod:`airflow_trainjob.hooks.evidence` before any cleanup deletes the pods; the
exception a verdict becomes is :func:`airflow_trainjob.exceptions.exception_for`'s. Shared by the operator (both
modes) and the sensor; the Training job tab marks failed replicas by the same runs (:func:`failure_ends`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

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


@dataclass(frozen=True)
class Verdict:
    """What a failed job's evidence says.

    :param permanent: retrying cannot help: the failure that failed the job is permanent (exit code 1-127, see
        :mod:`airflow_trainjob.domain.failures`); Airflow does not retry. False: Airflow may retry.
    :param message: the multi-line message (:func:`~airflow_trainjob.domain.failures.failure_message`).
    :param ends: the container runs the job is judged by, oldest first (:func:`failure_ends`).
    """

    permanent: bool
    message: str
    ends: tuple[ContainerEnd, ...]


def job_ref(job: Mapping[str, Any]) -> str:
    """``"<Kind> <namespace>/<name>"``.

    :param job: the job, an API JSON dict (``kind``, ``metadata.namespace``, ``metadata.name``).
    """
    return f"{job['kind']} {job['metadata']['namespace']}/{job['metadata']['name']}"


def _template_container(job: Mapping[str, Any], kind: Any, replica: str) -> str:
    """The container that speaks for ``replica`` (``Worker-0``) by the job's pod template, as for a live pod."""
    spec = ((job.get("spec") or {}).get(kind.replica_specs_key) or {}).get(replica.rpartition("-")[0]) or {}
    return log_container(spec.get("template") or {}, kind)


def failure_ends(
    job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]]
) -> list[ContainerEnd]:
    """The container runs a failed job is judged by, oldest first, as :func:`judge_failure` reads them: the pods'
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


def event_line(event: Mapping[str, Any]) -> str:
    """How a failure message quotes an event: ``<type> <reason> <involved object's name>: <message>``.

    :param event: a core/v1 event (API JSON dict).
    """
    return (
        f"{event.get('type')} {event.get('reason')} {event['involvedObject'].get('name')}: {event.get('message', '')}"
    )


def judge_failure(
    job: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    tails: Mapping[str, str],
) -> Verdict:
    """The verdict on failed ``job``: the runs it is judged by (:func:`failure_ends`), the message (its deciding
    condition, the cause first, the events, the log tails) and whether the cause is permanent.

    :param job: the failed job, an API JSON dict (its ``status`` and pod templates).
    :param pods: its pods, now and as last seen (API JSON dicts).
    :param events: the events about the job and its pods, oldest first (API JSON dicts).
    :param tails: :attr:`~airflow_trainjob.domain.failures.ContainerEnd.source` -> the last lines of its log.
    """
    events = list(events)
    ends = failure_ends(job, pods, events)
    policies = restart_policies(job)
    status = job.get("status")
    message = failure_message(job_ref(job), status, ends, [event_line(e) for e in events], tails, policies)
    return Verdict(is_permanent(ends, policies, conditions.failed_at(status)), message, tuple(ends))

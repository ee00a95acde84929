"""A failed job's verdict, from the evidence already read (pure): the container runs it is judged by, the message
Airflow shows, and whether retrying can help.

The evidence -- the job's pods (now, and as last seen), the log tail of each failed container, the events about the
job and its pods -- is read by :mod:`airflow_trainjob.hooks.evidence` before any cleanup deletes the pods; the
exception a verdict becomes is :func:`airflow_trainjob.exceptions.exception_for`'s. Shared by the operator (both
modes) and the sensor; the Training job tab marks failed replicas by the same runs (:func:`failure_ends`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.failures import ContainerEnd, failure_message, is_permanent
from airflow_trainjob.domain.family import JobFamily

#: The line of a failure no container's exit explains: its pods went with it (a Job deletes its active pods when it
#: fails; ``cleanPodPolicy``) before anything read them, and no event recorded an exit code.
NO_EXIT_KNOWN = (
    "No failed container run is left to judge by (the job's pods went with its failure, and no event recorded an "
    "exit code): retryable"
)


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


def failure_ends(
    job: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    family: JobFamily,
) -> list[ContainerEnd]:
    """The container runs a failed job is judged by, oldest first, as :func:`judge_failure` reads them: the pods'
    (:meth:`JobFamily.container_ends`), and the failed exits the controller reported in its events
    (:meth:`JobFamily.ends_from_events`: the training operator's ``ExitedWithCode``) of the pods that show no failed
    run of their own (gone before anyone saw them fail: ``cleanPodPolicy``, a wait that started after the failure, or
    a pod the controller replaced). The Training job tab marks failed replicas by the same runs.

    :param job: the job, an API JSON dict (``kind``, ``metadata.name``, the pod templates of ``spec``).
    :param pods: its pods (API JSON dicts: now, and as last seen).
    :param events: the events about the job and its pods (API JSON dicts).
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`).
    """
    ends = family.container_ends(pods)
    failed_pods = {e.pod for e in ends if e.failed}
    if not failed_pods:
        return family.ends_from_events(events, job)
    unseen = [e for e in family.ends_from_events(events, job) if e.failed and e.pod not in failed_pods]
    return sorted([*ends, *unseen], key=lambda e: e.finished_at) if unseen else ends


def about_these_objects(
    events: Iterable[Mapping[str, Any]], objects: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The events that are about ``objects`` themselves: events are listed by the names of the objects they are about,
    and a same-named job (or pod) deleted before this one left its own, which name another uid. An event about an
    object whose uid is not known here (a pod gone unseen, a step's Job), or that names no uid, is kept.

    :param events: events listed by ``involvedObject.name``, oldest first (API JSON dicts).
    :param objects: the job and its pods as read (API JSON dicts: ``metadata.name``, ``metadata.uid``).
    """
    uids = {o["metadata"]["name"]: o["metadata"].get("uid") for o in objects if o.get("metadata", {}).get("name")}

    def ours(event: Mapping[str, Any]) -> bool:
        involved = event.get("involvedObject") or {}
        known, named = uids.get(involved.get("name")), involved.get("uid")
        return known is None or named is None or named == known

    return [e for e in events if ours(e)]


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
    family: JobFamily,
) -> Verdict:
    """The verdict on failed ``job``: the runs it is judged by (:func:`failure_ends`), the message (its deciding
    condition, the cause first, the events, the log tails) and whether the cause is permanent: the failure's reason
    when it decides (:meth:`JobFamily.permanent_by_reason`: a runtime the cluster does not serve), else the first
    failed container's exit.

    :param job: the failed job, an API JSON dict (its ``status`` and pod templates).
    :param pods: its pods, now and as last seen (API JSON dicts).
    :param events: the events about the job and its pods, oldest first (API JSON dicts).
    :param tails: :attr:`~airflow_trainjob.domain.failures.ContainerEnd.source` -> the last lines of its log.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`): its pods' replicas,
        the controller's events, the restart policies.
    """
    pods = list(pods)
    events = about_these_objects(events, [job, *pods])
    ends = failure_ends(job, pods, events, family)
    policies = family.restart_policies(job)
    status = job.get("status")
    message = failure_message(job_ref(job), status, ends, [event_line(e) for e in events], tails, policies)
    by_reason = family.permanent_by_reason(status)
    permanent = is_permanent(ends, policies, conditions.failed_at(status)) if by_reason is None else by_reason
    if by_reason is None and not any(e.failed for e in ends):
        first, _, rest = message.partition("\n")
        message = "\n".join(filter(None, [first, NO_EXIT_KNOWN, rest]))
    return Verdict(permanent, message, tuple(ends))

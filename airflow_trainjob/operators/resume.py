"""The deferred try: the trigger it defers to (:func:`trigger_for`, with the spans of the manifest's secrets), and
what it reads when it resumes after the trigger fired (:func:`event_job`, :func:`event_end` (see :meth:`~airflow_trainjob.operators.run.TrainingJobRun.complete`): the job as the
API has it now, its pods, and the rest of the lead replica's log, which the trigger did not copy while it waited.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.domain.deadlines import queue_state
from airflow_trainjob.domain.lead_log import (
    LOG_NOT_THERE,
    SECRET_MARK,
    LeadLogCopy,
    LogCursor,
    cursor_on_job,
    quote_log,
    secret_spans,
    write_lines,
)
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.params import RunSettings
from airflow_trainjob.domain.pods import with_pods_seen
from airflow_trainjob.domain.verdict import job_ref
from airflow_trainjob.exceptions import JobDeletedError, TrainingJobError
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import RAISED_ERRORS, one_line
from airflow_trainjob.triggers.args import TriggerArgs
from airflow_trainjob.triggers.events import ERROR, FINISHED, TIMED_OUT
from airflow_trainjob.triggers.training_job import TrainingJobTrigger


def marked_secrets(text: str) -> str:
    """``text`` with each secret the task's masker knows replaced by
    :data:`~airflow_trainjob.domain.lead_log.SECRET_MARK` (Airflow's ``redact``).

    :param text: a value of the manifest.
    """
    from airflow.providers.common.compat.sdk import redact

    redacted = redact(text, replacement=SECRET_MARK)
    return redacted if isinstance(redacted, str) else text


def trigger_for(
    settings: RunSettings,
    identity: TaskInstanceIdentity,
    kind: str,
    metadata: Mapping[str, Any],
    manifest: Callable[[], dict[str, Any]],
) -> TrainingJobTrigger:
    """The trigger that waits for the try's job, with the deadlines counted from now.

    :param settings: the operator's parameters that govern the try.
    :param identity: the task instance and try (the job's owner labels).
    :param kind: the job's kind.
    :param metadata: the job's ``metadata`` as created or attached to (name, namespace, uid).
    :param manifest: the job the try sent, built when called: the spans of its secrets, with ``get_logs`` or
        ``log_tail_lines`` (the trigger copies the lead's log, reads the failed runs' tails).
    """
    args = TriggerArgs.for_run(
        settings,
        kind=kind,
        metadata=metadata,
        owner_labels=identity.instance_labels(),
        try_number=identity.try_number,
        started_at=time.time(),
        secret_spans=secret_spans(manifest(), marked_secrets) if settings.get_logs or settings.log_tail_lines else None,
    )
    return TrainingJobTrigger(**args.kwargs())


def event_job(
    hook: Any,
    identity: TaskInstanceIdentity,
    kind: str,
    metadata: Callable[[], dict[str, Any]],
    event: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, Any] | None, bool]:
    """The event to judge, the job it is about, and whether that job was read now rather than taken from the event.
    When the trigger gave up watching (``error`` without a job: the watch failed, not the job), the job is read here
    (:func:`own_job`): a finished one gets its verdict (the event becomes ``finished``); a running one is deleted
    with the task's failure, as after any synchronous error.

    :param hook: the task's hook.
    :param identity: the task instance and try.
    :param kind: the job's kind.
    :param metadata: returns the manifest's ``metadata`` (built only when the job must be read).
    :param event: the trigger's event payload.
    :raises TrainingJobError: the job cannot be read, or is not this task instance's (see :func:`own_job`).
    """
    job = event.get("job")
    if event["outcome"] != ERROR or job is not None:
        return event, job, False
    job = own_job(hook, identity, kind, metadata(), event["message"])
    if family_of(kind).is_terminal(job.get("status")):
        event = {**event, "outcome": FINISHED, "pods": []}
    return event, job, True


def event_end(
    hook: Any,
    log: Any,
    job: dict[str, Any],
    event: dict[str, Any],
    settings: RunSettings,
    *,
    try_number: int,
    timeout: Callable[..., Exception],
) -> list[dict[str, Any]]:
    """What the trigger's event says of the job's end: the pods to judge the job by, after the rest of the lead
    replica's log (with ``get_logs``), read before the cleanup deletes the job and its pods.

    :param hook: the task's hook.
    :param log: the task's logger.
    :param job: the job as read now (else the event's).
    :param event: the trigger's event (``outcome``, ``message``, ``which``, ``pods``, ``lead_log``).
    :param settings: the try's settings (``get_logs``, ``log_tail_lines``, the deadlines).
    :param try_number: this try's number.
    :param timeout: builds the error of a deadline passed: ``timeout(job, which, seconds, ref, status, pods, queue)``.
    :returns: the pods as they are now, and those the trigger sent of a failed job that are gone since.
    :raises TrainingJobTimeoutError: the event says a deadline passed.
    :raises TrainingJobError: the event is an error (the trigger could not watch the job).
    """

    def copy_log(pods: list[dict[str, Any]]) -> None:
        if settings.get_logs:  # before the cleanup deletes the job and its pods
            lead_log = event.get("lead_log")
            copy_rest_of_lead_log(
                hook, log, job, pods, lead_log, try_number=try_number, tail_lines=settings.log_tail_lines
            )

    if event["outcome"] == TIMED_OUT:
        which = event.get("which", "timeout")
        family = family_of(job["kind"])
        found = hook.list_job_pods(job["metadata"]["name"], job["metadata"]["namespace"], kind=family.kind)
        pods = [p for p in found if family.owns_pod(job, p)]
        copy_log(pods)
        status = job.get("status")
        queue = queue_state(job, family)
        raise timeout(job, which, settings.limit(which) or 0, job_ref(job), status, pods, queue)
    if event["outcome"] != FINISHED:
        raise TrainingJobError(event["message"])
    log.info("%s", event["message"])
    pods = with_pods_seen(pods_if_any(hook, job, log), event.get("pods") or [])
    copy_log(pods)
    return pods


def current_job(hook: Any, identity: TaskInstanceIdentity, job: dict[str, Any], log: Any) -> dict[str, Any]:
    """The job as the API has it now, if it is still the object the event is about: the event carries only its
    identity and status (see :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger`); else (gone,
    replaced, unreadable) the event's.

    :param hook: the task's hook.
    :param identity: the task instance and try.
    :param job: the event's job (``kind``, ``metadata``, ``status``).
    :param log: the task's logger.
    """
    meta = job["metadata"]
    try:
        current = hook.get_job(job["kind"], meta["name"], meta["namespace"])
    except ApiException as e:
        if e.status != 404:
            log.warning("Could not read %s again (%s): judging it by the trigger's event", job_ref(job), one_line(e))
        return job
    except (HTTPError, OSError) as e:
        log.warning("Could not read %s again (%s): judging it by the trigger's event", job_ref(job), one_line(e))
        return job
    same = current["metadata"].get("uid") == meta.get("uid") or not meta.get("uid")
    return current if same and identity.owns(current) else job


def own_job(
    hook: Any, identity: TaskInstanceIdentity, kind: str, metadata: dict[str, Any], message: str
) -> dict[str, Any]:
    """This task instance's job as the API has it now.

    :param hook: the task's hook.
    :param identity: the task instance and try.
    :param kind: the job's kind.
    :param metadata: the manifest's ``metadata`` (``name``, ``namespace``).
    :param message: the event's message, the error's when the job is gone.
    :raises JobDeletedError: it is gone or not ours.
    """
    try:
        job = hook.get_job(kind, metadata["name"], metadata["namespace"])
    except ApiException as e:
        if e.status == 404:
            raise JobDeletedError(message) from e
        raise
    if not identity.owns(job):
        raise JobDeletedError(message)
    return job


def pods_if_any(hook: Any, job: dict[str, Any], log: Any) -> list[dict[str, Any]]:
    """The job's own pods now (:meth:`~airflow_trainjob.domain.family.JobFamily.owns_pod`); none, with a warning,
    when they cannot be listed.

    :param hook: the task's hook.
    :param job: the job, as last read.
    :param log: the task's logger.
    """
    family = family_of(job["kind"])
    try:
        found = hook.list_job_pods(job["metadata"]["name"], job["metadata"]["namespace"], kind=family.kind)
        return [p for p in found if family.owns_pod(job, p)]
    except ApiException as e:
        log.warning("Could not list the pods of %s: %s", job_ref(job), one_line(e))
        return []


def _lead_log_count(copy: LeadLogCopy, before: int) -> str:
    """``The lead replica's log: 5 lines in this task log (2 copied while the task waited)``, with its cut."""
    lines = copy.cursor.lines
    cut = f"; cut at {copy.max_bytes} bytes" if copy.cursor.cut else ""
    plural = "" if lines == 1 else "s"
    return f"The lead replica's log: {lines} line{plural} in this task log ({before} copied while the task waited){cut}"


def copy_rest_of_lead_log(
    hook: Any,
    log: Any,
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    copied: dict[str, Any] | None,
    *,
    try_number: int,
    tail_lines: int,
) -> None:
    """Copy into the task log what the trigger did not copy of the lead replica's log: from the event's cursor (else
    the one the trigger recorded on the job for this try, else from the start), up to the size bound of
    :mod:`~airflow_trainjob.domain.lead_log`, read now, before the cleanup removes the pod.

    :param hook: the task's hook.
    :param log: the task's logger.
    :param job: the job, as last read.
    :param pods: its pods, as listed now (and those the event kept of a failed job).
    :param copied: the event's ``lead_log``: the trigger's cursor (see :mod:`~airflow_trainjob.triggers.events`).
    :param try_number: this try's number (the cursor recorded on the job is this try's).
    :param tail_lines: lines quoted of the lead's end when the copy passed its size bound (count).
    """
    if copied and copied.get("quoted"):
        return  # an event of an earlier version of the trigger: it quoted the tail before stopping the lead's pod
    family = family_of(job["kind"])
    if copied and "text" in copied:  # ... or carried the tail in the event
        quote_log(log, copied["pod"], copied["pod"], copied["text"], tail_lines)
        return
    cursor = LogCursor.from_dict(copied) if copied else cursor_on_job(job, try_number)
    copy = LeadLogCopy(family, cursor, final=True, tail_lines=tail_lines)
    namespace = job["metadata"]["namespace"]
    before = copy.cursor.lines
    write_lines(log, copy.look([p for p in pods if family.owns_pod(job, p)]))
    if before and copy.next_read() is not None:
        log.info("The rest of the lead replica's log, after the %d lines copied while the task waited:", before)
    while (read := copy.next_read()) is not None:
        try:
            data = hook.read_timestamped_log(
                read.pod,
                namespace,
                read.container,
                previous=read.previous,
                since_time=read.since_time,
                limit_bytes=read.limit_bytes,
                tail_lines=read.tail_lines,
            )
        except (*RAISED_ERRORS, ApiException, HTTPError, OSError) as e:  # a 400 comes as a JobRejectedError
            if getattr(e, "status", None) in LOG_NOT_THERE:
                write_lines(log, copy.missing(read, one_line(e)))
                continue
            log.warning("Could not read the rest of the lead replica's log: %s", one_line(e))
            return
        write_lines(log, copy.take(read, data))
    if copy.cursor.lines:
        log.info("%s", _lead_log_count(copy, before))

"""Pure: a training job, its pods and its events -> the JSON of the UI's pages (the issue 13 contract).

Nothing here reads the cluster or the database: :mod:`airflow_trainjob.ui.app` hands in what it read, live from the
cluster or recorded by the task (``final`` of :mod:`airflow_trainjob.domain.records` at the end of its try, its
``last_seen`` while it ran, or the end its trigger recorded when Airflow killed it), and Airflow's state of each try;
the same functions serve all of them. Which sight of a job a try shows, and whether the try is still under way, is
decided by :mod:`airflow_trainjob.ui.try_view`, which assembles a try's answer from these; which replicas failed, by
the task's own judgement (:func:`failure_marks`). What a job's status means is decided by its family
(:class:`~airflow_trainjob.domain.family.JobFamily`: the phase and its deciding condition, its replica counts or a
TrainJob's steps and progress, which pods are its own, which replica a pod is, how its containers ended and which pod
leads) and :mod:`airflow_trainjob.domain.deadlines` (whether it waits in a queue); what an exit means, by
:mod:`airflow_trainjob.domain.failures`. All times are the API's RFC 3339 strings (UTC), durations seconds (float).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

import yaml

from airflow_trainjob.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    LABEL_DAG_ID,
    LABEL_TRY_NUMBER,
    JobConditionType,
    PodPhase,
)
from airflow_trainjob.domain import conditions, failures, pods
from airflow_trainjob.domain.deadlines import queue_state
from airflow_trainjob.domain.failures import ExitClass
from airflow_trainjob.domain.own_keys import read_own_key
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.verdict import failure_ends
from airflow_trainjob.families import JobFamily, family_or_none, success_conditions

#: Seconds between two polls of a page while its job can still change.
REFRESH_SECONDS = 5
#: Most events shown for one job (the newest).
EVENTS_SHOWN = 50
#: The ``url_route`` of the task instance tab (the plugin's external view): ``.../plugin/<this>``.
TAB_ROUTE = "training-job"

#: Phases of the contract besides the condition types :func:`conditions.phase` reports.
CREATED, QUEUED, SUSPENDED, UNKNOWN = "Created", "Queued", "Suspended", "Unknown"
#: A job in these phases will not change phase again: every family's success (``Succeeded``, a TrainJob's
#: ``Complete``) and ``Failed`` (both families' word).
FINISHED_PHASES = frozenset({*success_conditions(), JobConditionType.FAILED.value})

Json = dict[str, Any]


# --- small readers ----------------------------------------------------------------------------------


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (obj or {}).get("metadata") or {}


def _status(job: Mapping[str, Any] | None) -> Mapping[str, Any]:
    status = (job or {}).get("status")
    return status if isinstance(status, Mapping) else {}


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time (``2026-12-02T05:00:00Z``, fractions and offsets allowed) as an aware datetime, or None.

    :param value: the API's string (anything else gives None).
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def iso(value: datetime | str | None) -> str | None:
    """``value`` as the pages show times: an RFC 3339 UTC string (``...Z``); a string is passed as it is.

    :param value: a datetime (naive ones are taken as UTC), a string, or None.
    """
    if value is None or isinstance(value, str):
        return value or None
    aware = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return aware.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def stamp(value: Any) -> str | None:
    """An API time as the pages show it: RFC 3339 UTC with ``Z`` (the clients write ``+00:00`` or ``Z``, with or
    without fractions); text that is no time is passed as it is, a missing one is None.

    :param value: the API's string.
    """
    parsed = parse_time(value)
    return iso(parsed) if parsed else (value or None)


#: Sorts before every real time (a missing one).
_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def _when(value: Any) -> datetime:
    """``value`` as a datetime to order by (missing or unreadable: :data:`_NEVER`)."""
    return parse_time(value) or _NEVER


def _seconds(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


def _event_time(event: Mapping[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or _meta(event).get("creationTimestamp")
        or ""
    )


# --- the job ----------------------------------------------------------------------------------------


def job_phase(job: Mapping[str, Any] | None) -> str:
    """The page's phase of ``job``: :func:`conditions.phase` of its status, except ``Queued`` (Kueue holds it:
    :func:`admission.queue_state` says queued and it names a queue), ``Suspended`` (queued without a queue name),
    ``Created`` (no true condition yet) and ``Unknown`` (no job to read).

    :param job: the job as an API JSON dict (a recorded one may lack ``spec``), or None.
    """
    if job is None:
        return UNKNOWN
    status, family = _status(job), _kind_of(job.get("kind"))
    if family is None:
        return UNKNOWN
    decided = family.phase(status)
    if decided not in FINISHED_PHASES:
        queue = queue_state(job, family)
        if queue.queued:
            return QUEUED if queue.queue_name else SUSPENDED
    return CREATED if decided == conditions.NOT_STARTED else decided


def is_finished(phase: str) -> bool:
    """The phase will not change again (``Succeeded``, ``Complete`` or ``Failed``).

    :param phase: a phase of :func:`job_phase`.
    """
    return phase in FINISHED_PHASES


def deciding_condition(job: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The true condition that decides the job's phase, as its family reads it (:meth:`JobFamily.deciding_condition`);
    {} when none does, or the kind is unknown.

    :param job: the job as an API JSON dict, or None.
    """
    family = _kind_of((job or {}).get("kind"))
    return (family.deciding_condition(_status(job)) if family else None) or {}


def _failed_at(status: Mapping[str, Any], family: JobFamily) -> str | None:
    """The ``lastTransitionTime`` of the deciding ``Failed`` condition of a failed job (None otherwise)."""
    if not family.is_failed(status):
        return None
    return str((family.deciding_condition(status) or {}).get("lastTransitionTime") or "") or None


def timeline(job: Mapping[str, Any] | None) -> list[Json]:
    """Every condition of the job (true or not) by ``lastTransitionTime``, oldest first: ``type``, ``status``,
    ``reason``, ``message``, ``time``. The controller keeps one entry per type, so each type shows its last turn.

    :param job: the job as an API JSON dict, or None.
    """
    found = [c for c in _status(job).get("conditions") or [] if isinstance(c, Mapping)]
    ordered = sorted(found, key=lambda c: (not c.get("lastTransitionTime"), _when(c.get("lastTransitionTime"))))
    return [
        {
            "type": c.get("type"),
            "status": c.get("status"),
            "reason": c.get("reason") or None,
            "message": c.get("message") or None,
            "time": stamp(c.get("lastTransitionTime")),
        }
        for c in ordered
    ]


def with_sent_spec(job: Mapping[str, Any] | None, manifest_yaml: Any) -> Mapping[str, Any] | None:
    """``job``, with the ``spec`` of the manifest the try sent when it has none of its own: a recorded job keeps
    metadata and status only (:func:`~airflow_trainjob.domain.records.trim_job`), and the desired replica counts
    (``spec.<kind>ReplicaSpecs[*].replicas``) are read from the spec.

    :param job: the job as an API JSON dict (live, or recorded), or None.
    :param manifest_yaml: the try's record's ``manifest_yaml`` (YAML text; None or unreadable: ``job`` as it is).
    """
    if job is None or job.get("spec") or not isinstance(manifest_yaml, str):
        return job
    try:
        sent = yaml.safe_load(manifest_yaml)
    except yaml.YAMLError:
        return job
    spec = sent.get("spec") if isinstance(sent, Mapping) else None
    return {**job, "spec": spec} if isinstance(spec, Mapping) else job


def replica_counts(
    job: Mapping[str, Any] | None, kind: JobFamily | None, rows: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Json]:
    """Replica type -> ``desired`` (from the spec; None when unknown), ``active``, ``succeeded``, ``failed`` (the pod
    counts the controller reports: :meth:`JobFamily.replica_statuses`, v1's ``status.replicaStatuses``) and ``text``,
    the task log's wording of them (:func:`conditions.count_parts`: ``1/2 active (1 failed)``), for every type of the
    spec or the status. Once the job is terminal ``active`` is None and ``text`` says only what finished (``1 failed``,
    ``none finished``): the training operator leaves its last ``active`` count behind when a job stops, which is no
    count of pods running now. Nor does it count a replica that finished after the job did (it stops counting then),
    so a terminal job counts at least the replicas the table shows finished (``rows``, :func:`replicas`).

    {} for a job whose family runs it as steps of child Jobs (a TrainJob: :func:`steps` replace these), or of no
    known kind.

    :param job: the job as an API JSON dict, or None.
    :param kind: the job's kind (None: unknown).
    :param rows: the replicas table (:func:`replicas`) to count a terminal job's finished replicas from.
    """
    status = _status(job)
    if kind is None or kind.steps(status) is not None:
        return {}
    desired = kind.desired_replicas(job)
    terminal = kind.is_terminal(status)
    statuses = kind.replica_statuses(status)
    if terminal:
        statuses = _counted_with(statuses, rows)
    texts = dict(conditions.count_parts(statuses, desired or None, terminal=terminal))
    counts: dict[str, Json] = {}
    for replica_type in [*desired, *(t for t in statuses if t not in desired)]:
        got = statuses.get(replica_type) or {}
        counts[replica_type] = {
            "desired": desired.get(replica_type),
            **{k: int(got.get(k) or 0) for k in ("active", "succeeded", "failed")},
            "text": texts.get(replica_type),
        }
        if terminal:
            counts[replica_type]["active"] = None
    return counts


def steps(job: Mapping[str, Any] | None, kind: JobFamily | None) -> list[Json] | None:
    """The job's steps (:meth:`JobFamily.steps`: a TrainJob's ``jobsStatus``, each replicated job with the nodes its
    spec asks for and its child Jobs' counts, ``active``/``ready`` None once it is terminal, and their ``text``); None
    for a job whose family counts replicas instead (v1: :func:`replica_counts`), or of no known kind.

    :param job: the job as an API JSON dict (with its spec for the nodes asked for), or None.
    :param kind: the job's kind (None: unknown).
    """
    return kind.steps(_status(job), kind.desired_replicas(job) or None) if kind else None


def job_summary(job: Mapping[str, Any] | None, kind: JobFamily | None, counts: Mapping[str, Json]) -> str | None:
    """The one-line summary the task log gives: the phase, its deciding condition's reason and message, and the
    replica counts of :func:`replica_counts` (a terminal job's raised by the pods the table shows finished); a job
    whose family counts steps, its family's own (:meth:`JobFamily.summary`: its steps and progress). None without a
    job.

    :param job: the job as an API JSON dict (with its spec), or None.
    :param kind: the job's kind (None: unknown).
    :param counts: :func:`replica_counts` of the job.
    """
    if job is None or kind is None:
        return None
    status = _status(job)
    if kind.steps(status) is not None:
        return kind.summary(status, kind.desired_replicas(job) or None)
    condition = kind.deciding_condition(status)
    text = kind.phase(status)
    if condition and (condition.get("reason") or condition.get("message")):
        text += f" ({': '.join(str(condition[k]) for k in ('reason', 'message') if condition.get(k))})"
    said = ", ".join(f"{replica_type} {c['text']}" for replica_type, c in counts.items())
    return f"{text} — {said}" if said else text


def progress(job: Mapping[str, Any] | None, kind: JobFamily | None) -> Json | None:
    """The training's own progress when its controller reports it (:meth:`JobFamily.trainer_progress`: a TrainJob's
    ``trainerStatus``): ``percentage``, ``estimated_remaining_seconds``, ``metrics`` (``[{name, value}]``),
    ``last_updated_time`` (RFC 3339 UTC, ``Z``); None otherwise.

    :param job: the job as an API JSON dict, or None.
    :param kind: the job's kind (None: unknown).
    """
    found = kind.trainer_progress(_status(job)) if kind else None
    return {**found, "last_updated_time": stamp(found.get("last_updated_time"))} if found else None


def _finished_as(row: Mapping[str, Any]) -> str | None:
    """``succeeded`` for a replica of the table that succeeded; ``failed`` for one that failed (the task's judgement:
    ``failed``, e.g. an exit 1 restarted, then stopped with its job; or its pod's phase); None for one that did
    neither (stopped before it could)."""
    phase = row.get("phase")
    if phase == PodPhase.SUCCEEDED or (phase == POD_GONE and row.get("exit_class") == ExitClass.SUCCEEDED):
        return "succeeded"
    gone_failed = phase == POD_GONE and row.get("exit_class") not in (None, ExitClass.SUCCEEDED)
    if row.get("failed") or phase == PodPhase.FAILED or gone_failed:
        return "failed"
    return None


def _counted_with(
    statuses: Mapping[str, Mapping[str, int]], rows: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, int]]:
    """The pod counts ``statuses`` (replica type -> counts), each type's ``succeeded`` and ``failed`` at least the rows
    of that type that finished so."""
    counted = {t: dict(c) for t, c in statuses.items()}
    seen = Counter((str(r.get("replica_type")), way) for r in rows if (way := _finished_as(r)))
    for (replica_type, way), count in seen.items():
        entry = counted.setdefault(replica_type, {})
        entry[way] = max(int(entry.get(way) or 0), count)
    return counted


def times(
    job: Mapping[str, Any] | None, phase: str, now: datetime | None
) -> tuple[str | None, str | None, float | None]:
    """``(start_time, completion_time, duration_seconds)`` as its family dates the run
    (:meth:`~airflow_trainjob.domain.family.JobFamily.run_times`: a v1 job's ``status.startTime`` and
    ``completionTime``; a TrainJob's last admission, else its creation, once it has started, and its deciding
    condition's turn); the duration runs to the completion, else (finished) the deciding condition's turn, else
    ``now``.

    :param job: the job as an API JSON dict, or None.
    :param phase: its :func:`job_phase`.
    :param now: the time to measure a running job's duration to; None: a job read from a record (no duration
        unless it finished).
    """
    status, family = _status(job), _kind_of((job or {}).get("kind"))
    started, ended = family.run_times(job or {}) if family else (status.get("startTime"), status.get("completionTime"))
    if family is not None and family.steps(status) is not None and not family.has_started(status):
        started = None  # a TrainJob dates its start by its creation: not before it has started
    start, completion = stamp(started), stamp(ended)
    end = parse_time(completion)
    if end is None and is_finished(phase):
        end = parse_time(deciding_condition(job).get("lastTransitionTime"))
    if end is None and not is_finished(phase):
        end = now
    return start, completion, _seconds(parse_time(start), end)


# --- the pods ---------------------------------------------------------------------------------------


def _kind_of(name: str | None) -> JobFamily | None:
    return family_or_none(name)


def _sorted_pods(found: Iterable[Mapping[str, Any]], kind: JobFamily) -> list[Mapping[str, Any]]:
    order = {t: i for i, t in enumerate(kind.lead_order)}
    return sorted(found, key=lambda p: (order.get(kind.replica_of(p)[0], len(order)), kind.replica_of(p)))


#: The phase shown for a pod recorded as Pending or Running whose job is gone: it went with the job (the record was
#: written as the try ended, before the cleanup stopped it).
STOPPED_WITH_JOB = "Stopped"
#: The phase shown for a replica of a finished job whose pod is gone (``cleanPodPolicy``, or the controller, removed
#: it), known from the training operator's ``ExitedWithCode`` events.
POD_GONE = "Gone"


def replicas(
    found: Sequence[Mapping[str, Any]],
    kind: JobFamily | None,
    *,
    job_gone: bool = False,
    ended_at: Any = None,
    recorded: Sequence[Mapping[str, Any]] = (),
    job_events: Sequence[Mapping[str, Any]] = (),
    job: Mapping[str, Any] | None = None,
) -> list[Json]:
    """The replicas table: one row per pod, lead replica types first, by index: ``replica_type``, ``index``,
    ``pod``, ``container`` (whose log speaks for it), ``phase``, ``restarts``, the last ``exit_code`` with its
    ``reason`` (``OOMKilled``, ``Evicted``, ``Error``...) and ``exit_class`` (:class:`failures.ExitClass`),
    ``node``, ``created_at``, ``age_seconds`` (the pod's age when the try recorded it; None for a live pod, whose
    age the page counts), ``lead``, ``gone`` (False: the pod is there, or was when recorded), and the task's
    judgement of the failure (the one its error gives, :func:`~airflow_trainjob.domain.verdict.failure_ends` ranked by
    :func:`failures.failures_in_order` and :func:`failures.root_cause`): ``failed`` (the replica is among the
    failures), ``first_failure`` (its run failed the job) and ``failure`` (that run's ``exit_code``, ``reason``,
    ``exit_class``; None when it did not fail).

    Besides ``found``, the table has every pod of ``recorded`` (what the try recorded) that ``found`` lacks: removed
    since (``cleanPodPolicy``, the controller), shown as recorded with ``gone`` True (one recorded active as
    :data:`STOPPED_WITH_JOB`); and every replica the training operator's ``ExitedWithCode`` events in ``job_events``
    report an exit of and no pod stands for (:func:`gone_replicas`).

    :param found: the job's pods (API JSON dicts, or recorded trimmed pods).
    :param kind: the job's kind (None: unknown, gives no rows).
    :param job_gone: the job no longer exists: a pod recorded as active shows :data:`STOPPED_WITH_JOB`.
    :param ended_at: when the try recorded the pods (RFC 3339; the record's ``final.ended_at``), for a recorded pod's
        ``age_seconds``; None: unknown.
    :param recorded: the pods the try recorded (trimmed), shown where ``found`` lacks them.
    :param job_events: events about the job and its pods (:func:`about_job`), for the replicas no pod stands for.
    :param job: the job, with its spec (:func:`with_sent_spec`), to judge its failure as the task did; None: no
        judgement (no replica ``failed``).
    """
    if kind is None:
        return []
    present = {pods.pod_name(p) for p in found}
    removed = [p for p in recorded if pods.pod_name(p) not in present]
    every = [*found, *removed]
    lead = kind.lead_pod(every)
    restarts = pods.restart_counts(every)
    failures_of, cause = failure_marks(job, every, job_events)
    rows = []
    for pod in _sorted_pods(every, kind):
        gone = any(pod is r for r in removed)
        row = _pod_row(pod, kind, gone=gone, job_gone=job_gone, ended_at=ended_at, restarts=restarts, lead=lead)
        rows.append({**row, **_failure_columns(failures_of.get(row["pod"]), cause)})
    covered = {(r["replica_type"], r["index"]) for r in rows}
    for row in _event_rows(job_events, job, kind):
        if (row["replica_type"], row["index"]) not in covered:
            rows.append({**row, **_failure_columns(failures_of.get(str(row["pod"])), cause)})
    rows.sort(key=_table_order(kind))
    if lead is None:  # no pod stands for the lead replica: its row from the events leads (as pods.lead_pod picks)
        _mark_lead_row(rows, kind)
    return rows


def _pod_row(
    pod: Mapping[str, Any],
    kind: JobFamily,
    *,
    gone: bool,
    job_gone: bool,
    ended_at: Any,
    restarts: Mapping[str, int],
    lead: Mapping[str, Any] | None,
) -> Json:
    """A pod's row of :func:`replicas`, but the failure columns: ``gone``, it was recorded and is removed since;
    ``job_gone``, its job no longer exists (either way a pod recorded active shows :data:`STOPPED_WITH_JOB`, and its
    age is counted to ``ended_at``, when the try recorded it)."""
    replica_type, index = kind.replica_of(pod)
    last = failures.last_replica_end(kind.container_ends([pod]))
    stopped = (job_gone or gone) and pods.is_active(pod)
    name = pods.pod_name(pod)
    created = _meta(pod).get("creationTimestamp")
    removed_as = ("removed with its job" if job_gone else "removed since") if stopped else None
    return {
        "replica_type": replica_type,
        "index": index,
        "pod": name,
        "container": kind.log_container(pod) or None,
        "phase": STOPPED_WITH_JOB if stopped else pods.phase_of(pod),
        "restarts": restarts.get(name, 0),
        "exit_code": last.exit_code if last else None,
        "reason": (last.reason if last else None) or (pod.get("status") or {}).get("reason") or removed_as,
        "exit_class": last.exit_class.value if last else None,
        "node": (pod.get("spec") or {}).get("nodeName") or None,
        "created_at": stamp(created),
        "age_seconds": _seconds(parse_time(created), parse_time(ended_at)) if job_gone or gone else None,
        "lead": pod is lead,
        "gone": gone,
    }


def _event_rows(job_events: Sequence[Mapping[str, Any]], job: Mapping[str, Any] | None, kind: JobFamily) -> list[Json]:
    """The rows of :func:`gone_replicas` (from the ``ExitedWithCode`` events) when there are events and a job name."""
    return gone_replicas(job_events, job, kind) if job_events and job and _meta(job).get("name") else []


def _mark_lead_row(rows: list[Json], kind: JobFamily) -> None:
    """Mark the row of the first lead replica type's index 0 as the lead, if the table has one."""
    first = next((r for t in kind.lead_order for r in rows if (r["replica_type"], r["index"]) == (t, 0)), None)
    if first is not None:
        first["lead"] = True


def _table_order(kind: JobFamily) -> Callable[[Mapping[str, Any]], tuple[int, str, tuple[int, str]]]:
    """The replicas table's sort key: lead replica types first (``kind.lead_order``), then by type and index."""
    order = {t: i for i, t in enumerate(kind.lead_order)}
    return lambda r: (order.get(str(r["replica_type"]), len(order)), str(r["replica_type"]), _index(r))


def _index(row: Mapping[str, Any]) -> tuple[int, str]:
    index = row.get("index")
    return (index, "") if isinstance(index, int) else (2**31, str(index))


def failure_marks(
    job: Mapping[str, Any] | None, found: Sequence[Mapping[str, Any]], job_events: Sequence[Mapping[str, Any]]
) -> tuple[dict[str, failures.ContainerEnd], failures.ContainerEnd | None]:
    """The failures of the job as the task's error gives them: pod name -> the run of that pod the error ranks first
    (the job's cause, for its pod), and the cause itself (None unless the job is ``Failed``).

    :param job: the job with its spec (kind, name, pod templates, ``restartPolicy``, status), or None (no marks).
    :param found: its pods (live and recorded).
    :param job_events: events about the job and its pods (their ``ExitedWithCode`` exits, when no pod failed).
    """
    family = _kind_of((job or {}).get("kind"))
    if job is None or family is None or not _meta(job).get("name"):
        return {}, None
    ends = failure_ends(job, found, job_events, family)
    status = _status(job)
    failed_at = _failed_at(status, family)
    ranked = failures.failures_in_order(ends, failed_at)
    first: dict[str, failures.ContainerEnd] = {}
    for end in [*ranked, *(e for e in ends if e.failed and e not in ranked)]:
        first.setdefault(end.pod, end)
    cause = failures.root_cause(ends, family.restart_policies(job), failed_at) if family.is_failed(status) else None
    if cause is not None:
        first[cause.pod] = cause
    return first, cause


def _failure_columns(failure: failures.ContainerEnd | None, cause: failures.ContainerEnd | None) -> Json:
    return {
        "failed": failure is not None,
        "first_failure": failure is not None and failure is cause,
        "failure": {
            "exit_code": failure.exit_code,
            "reason": failure.reason or None,
            "exit_class": failure.exit_class.value,
        }
        if failure is not None
        else None,
    }


def gone_replicas(
    job_events: Sequence[Mapping[str, Any]], job: Mapping[str, Any] | None, kind: JobFamily | None
) -> list[Json]:
    """The replicas table of a finished job whose pods are gone: one row per replica the training operator's
    ``ExitedWithCode`` events name (:func:`failures.ends_from_events`), with its last exit, ``restarts`` (its earlier
    exits), phase :data:`POD_GONE` and ``gone`` True (no log to read); the columns of :func:`replicas`.

    :param job_events: events about the job and its pods (:func:`about_job`).
    :param job: the job, an API JSON dict (its ``metadata.name``: its pods are named after it; the pod templates of
        its spec name a replica's container), or None (no rows).
    :param kind: the job's kind (None: unknown, gives no rows).
    """
    if kind is None or job is None:
        return []
    ends: dict[str, list[failures.ContainerEnd]] = {}
    for end in kind.ends_from_events(job_events, job):
        ends.setdefault(end.replica, []).append(end)
    order = {t: i for i, t in enumerate(kind.lead_order)}
    rows = []
    for replica, runs in ends.items():
        replica_type, _, index = replica.rpartition("-")
        last = runs[-1]
        rows.append(
            {
                "replica_type": replica_type,
                "index": int(index) if index.isdigit() else index,
                "pod": last.pod,
                "container": None,
                "phase": POD_GONE,
                "restarts": len(runs) - 1,
                "exit_code": last.exit_code,
                "reason": last.reason or None,
                "exit_class": last.exit_class.value,
                "node": None,
                "created_at": None,
                "age_seconds": None,
                "lead": False,
                "gone": True,
            }
        )
    rows.sort(key=lambda r: (order.get(str(r["replica_type"]), len(order)), str(r["replica_type"]), str(r["index"])))
    return rows


def restart_marks(
    found: Sequence[Mapping[str, Any]],
    job_events: Sequence[Mapping[str, Any]],
    job: Mapping[str, Any] | None,
    kind: JobFamily | None,
) -> list[Json]:
    """Replica restarts, oldest first, as marks on the timeline: ``replica`` (``Worker-0``), ``time``, ``exit_code``,
    ``reason``. A container the kubelet started again shows in its ``lastState``; a pod the training operator
    deleted and created again (``restartPolicy: ExitCode``) only in the operator's ``ExitedWithCode`` events, older
    than the pod now there.

    :param found: the job's pods (API JSON dicts).
    :param job_events: events about the job and its pods.
    :param job: the job, an API JSON dict (its ``metadata.name``: its pods are named after it; its spec's pod
        templates), or None (only the pods' own restarts).
    :param kind: the job's kind (None: unknown, gives no marks).
    """
    if kind is None:
        return []
    marks = [e for e in kind.container_ends(found) if e.restarted]
    created = {pods.pod_name(p): parse_time(_meta(p).get("creationTimestamp")) for p in found}
    from_events = kind.ends_from_events(job_events, job) if job is not None else []
    marks += [
        e
        for e in from_events
        if (made := created.get(e.pod)) is not None and (ended := parse_time(e.finished_at)) and ended < made
    ]
    if not found:  # the pods are gone: every exit of a replica but its last was followed by a restart
        last = {e.replica: e for e in from_events}
        marks += [e for e in from_events if e is not last[e.replica]]
    seen: set[tuple[str, str]] = set()
    out = []
    for end in sorted(marks, key=lambda e: _when(e.finished_at)):
        if (end.replica, stamp(end.finished_at) or "") in seen:
            continue
        seen.add((end.replica, stamp(end.finished_at) or ""))
        out.append(
            {
                "replica": end.replica,
                "time": stamp(end.finished_at),
                "exit_code": end.exit_code,
                "reason": end.reason or None,
            }
        )
    return out


# --- the log ----------------------------------------------------------------------------------------

#: Terminal control sequences (ANSI colours, cursor moves: CSI ``ESC [ ... letter``; OSC ``ESC ] ... BEL``) and other
#: two-character escapes, which a log viewer in a page would show as garbage.
_TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def without_terminal_codes(text: str) -> str:
    """``text`` without ANSI escape sequences (colours, cursor moves, window titles): what a terminal would show.

    :param text: log text as the kubelet returns it.
    """
    return _TERMINAL_CODES.sub("", text)


# --- the events -------------------------------------------------------------------------------------


def about_job(
    found_events: Iterable[Mapping[str, Any]], job: Mapping[str, Any] | None, found_pods: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The events about this job object and its pods, oldest first: those naming the job (of its uid, when the event
    says one) or one of its pods, not older than the job (a same-named predecessor's events are not its own).

    :param found_events: events of the job's namespace (API JSON dicts), any order.
    :param job: the job as an API JSON dict (None: every event passes).
    :param found_pods: the job's pods (their names).
    """
    if job is None:
        return sorted(found_events, key=lambda e: _when(_event_time(e)))
    name, uid = _meta(job).get("name"), _meta(job).get("uid")
    created = parse_time(_meta(job).get("creationTimestamp"))
    pod_names = {pods.pod_name(p) for p in found_pods}
    chosen = []
    for event in found_events:
        involved = event.get("involvedObject") or {}
        about_the_job = involved.get("name") == name and involved.get("kind") in (None, job.get("kind"))
        if about_the_job and uid and involved.get("uid") and involved["uid"] != uid:
            continue
        if not about_the_job and not (involved.get("kind") in (None, "Pod") and involved.get("name") in pod_names):
            continue
        when = parse_time(_event_time(event))
        if created and when and when < created:
            continue
        chosen.append(event)
    return sorted(chosen, key=lambda e: _when(_event_time(e)))


def events(found: Iterable[Mapping[str, Any]], limit: int = EVENTS_SHOWN) -> list[Json]:
    """The events as the page lists them, newest first, at most ``limit``: ``time``, ``type``, ``reason``,
    ``message``, ``object`` (``Pod/<name>``), ``count``.

    :param found: events (API JSON dicts or recorded trimmed ones), any order.
    :param limit: how many to keep (count).
    """
    newest = sorted(found, key=lambda e: _when(_event_time(e)), reverse=True)[:limit]
    return [
        {
            "time": stamp(_event_time(e)),
            "type": e.get("type") or None,
            "reason": e.get("reason") or None,
            "message": e.get("message") or None,
            "object": "/".join(str(v) for v in ((e.get("involvedObject") or {}).get(k) for k in ("kind", "name")) if v)
            or None,
            "count": e.get("count"),
        }
        for e in newest
    ]


# --- the jobs page ----------------------------------------------------------------------------------


def job_identity(job: Mapping[str, Any]) -> TaskInstanceIdentity | None:
    """The task instance that launched ``job``, from the provider's raw-identity annotations
    (``airflow-trainjob/dag-id`` ...), when they agree with its ownership labels; None for a job the
    provider did not launch, or whose annotations and labels disagree (label values are sanitised: they cannot
    be read back, and an annotation that does not match them is not trusted). Keys count under either prefix: a
    job an earlier release launched is listed too (the jobs come from a stream of every job of the kind in the
    namespace, selected by no label, so no second selector is needed for them).

    :param job: the job as an API JSON dict.
    """
    meta = _meta(job)
    annotations, labels = meta.get("annotations"), meta.get("labels")
    dag_id, run_id, task_id = (
        read_own_key(annotations, k) for k in (ANNOTATION_DAG_ID, ANNOTATION_RUN_ID, ANNOTATION_TASK_ID)
    )
    if read_own_key(labels, LABEL_DAG_ID) is None or not (dag_id and run_id and task_id):
        return None
    try:
        map_index = int(read_own_key(annotations, ANNOTATION_MAP_INDEX) or -1)
        try_number = int(
            read_own_key(annotations, ANNOTATION_TRY_NUMBER) or read_own_key(labels, LABEL_TRY_NUMBER) or 1
        )
    except ValueError:
        return None
    identity = TaskInstanceIdentity(
        dag_id=dag_id,
        task_id=task_id,
        run_id=run_id,
        map_index=map_index,
        try_number=try_number,
    )
    return identity if identity.owns(job) else None


def ui_urls(base: str, dag_id: str, run_id: str, task_id: str, map_index: int) -> Json:
    """Links into Airflow 3.3's UI: ``dag_url`` ``/dags/{dag_id}``, ``run_url`` ``.../runs/{run_id}``,
    ``task_instance_url`` ``.../tasks/{task_id}`` (mapped: ``.../mapped/{map_index}``) and ``training_job_url``,
    the instance's Training job tab (``.../plugin/training-job``). Each part is percent-encoded.

    :param base: the UI's path prefix (``""`` at the root; the api-server's root path otherwise).
    :param dag_id: the DAG id.
    :param run_id: the DAG run id.
    :param task_id: the task id.
    :param map_index: the map index (``-1``: not mapped).
    """
    dag_url = f"{base.rstrip('/')}/dags/{quote(dag_id, safe='')}"
    run_url = f"{dag_url}/runs/{quote(run_id, safe='')}"
    ti_url = f"{run_url}/tasks/{quote(task_id, safe='')}" + (f"/mapped/{map_index}" if map_index >= 0 else "")
    return {
        "dag_url": dag_url,
        "run_url": run_url,
        "task_instance_url": ti_url,
        "training_job_url": f"{ti_url}/plugin/{TAB_ROUTE}",
    }


def last_failure_reason(job: Mapping[str, Any]) -> str | None:
    """Why the job last failed, from its conditions alone (the jobs page reads no pods): the ``Failed``
    condition's reason and message when it decides the phase, else the latest ``Restarting`` condition's (a replica
    failed and was restarted), else None.

    :param job: the job as an API JSON dict.
    """
    status = _status(job)
    decided = deciding_condition(job)
    if decided and decided.get("type") == JobConditionType.FAILED:
        picked: Mapping[str, Any] | None = decided
    else:
        restarting = [
            c
            for c in status.get("conditions") or []
            if isinstance(c, Mapping) and c.get("type") == JobConditionType.RESTARTING
        ]
        picked = restarting[-1] if restarting else None
    if not picked:
        return None
    return ": ".join(str(picked[k]) for k in ("reason", "message") if picked.get(k)) or None


def job_row(job: Mapping[str, Any], identity: TaskInstanceIdentity, now: datetime, base: str = "") -> Json:
    """One row of ``GET /trainjob/api/jobs``. A job whose family runs it as steps (a TrainJob) counts no replicas
    (``replicas_*`` None): its ``nodes``, ``runtime``, ``steps`` and ``progress`` say how it goes.

    :param job: the job as an API JSON dict (live, from the shared stream).
    :param identity: its task instance (:func:`job_identity`).
    :param now: the time running durations are measured to.
    :param base: the UI's path prefix, for :func:`ui_urls`.
    """
    kind = _kind_of(job.get("kind"))
    phase = job_phase(job)
    start, _, duration = times(job, phase, now)
    meta = _meta(job)
    return {
        "kind": job.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "phase": phase,
        "reason": deciding_condition(job).get("reason") or None,
        "dag_id": identity.dag_id,
        "run_id": identity.run_id,
        "task_id": identity.task_id,
        "map_index": identity.map_index,
        "try_number": identity.try_number,
        "created_at": stamp(meta.get("creationTimestamp")),
        "start_time": start,
        "duration_seconds": duration,
        **_replica_columns(job, kind, phase),
        "last_failure_reason": last_failure_reason(job),
        **ui_urls(base, identity.dag_id, identity.run_id, identity.task_id, identity.map_index),
        **shape_fields(job, kind),
    }


def _replica_columns(job: Mapping[str, Any], kind: JobFamily | None, phase: str) -> Json:
    """The row's replica counts: ``replicas_active`` (None once the job is terminal: the controller's last active
    count is no count of running pods), ``replicas_desired``, ``replicas_succeeded``, ``replicas_failed``; all None for
    a job whose family counts steps, not replicas (:func:`steps`)."""
    if kind is not None and kind.steps(_status(job)) is not None:
        return dict.fromkeys(("replicas_active", "replicas_desired", "replicas_succeeded", "replicas_failed"))
    counts = replica_counts(job, kind)
    desired = [c["desired"] for c in counts.values() if c["desired"] is not None]
    return {
        "replicas_active": None if is_finished(phase) else sum(c["active"] or 0 for c in counts.values()),
        "replicas_desired": sum(desired) if desired else None,
        "replicas_succeeded": sum(c["succeeded"] for c in counts.values()),
        "replicas_failed": sum(c["failed"] for c in counts.values()),
    }


def shape_fields(job: Mapping[str, Any] | None, kind: JobFamily | None) -> Json:
    """What a job run as steps on a runtime shows besides its replicas (all None for a v1 job): ``runtime`` (a
    TrainJob's ``spec.runtimeRef.name``), ``nodes`` (the nodes its spec asks for: ``spec.trainer.numNodes``),
    ``steps`` (:func:`steps`) and ``progress`` (:func:`progress`).

    :param job: the job as an API JSON dict (with its spec), or None.
    :param kind: the job's kind (None: unknown).
    """
    found = steps(job, kind)
    asked = [s["nodes"] for s in found or [] if isinstance(s.get("nodes"), int)]
    return {
        "runtime": kind.runtime_name(job) if kind and job is not None else None,
        "nodes": sum(asked) if asked else None,
        "steps": found,
        "progress": progress(job, kind),
    }


def jobs_page(
    rows: Sequence[Json], *, phase: str | None = None, dag_id: str | None = None, sources: Sequence[Json] = ()
) -> Json:
    """The body of ``GET /trainjob/api/jobs``: ``counts`` per phase over every row (before the filters), the rows
    that pass the filters newest first, and the ``sources`` read.

    :param rows: :func:`job_row` of every job the user may see.
    :param phase: keep only this phase (None or ``""``: all).
    :param dag_id: keep only this DAG (None or ``""``: all).
    :param sources: one entry per (connection, namespace) read: ``connection``, ``namespace``, ``error``.
    """
    counts = Counter(str(r["phase"]) for r in rows)
    kept = [r for r in rows if (not phase or r["phase"] == phase) and (not dag_id or r["dag_id"] == dag_id)]
    kept.sort(key=lambda r: (_when(r.get("created_at")), str(r.get("name") or "")), reverse=True)
    return {"counts": dict(counts), "jobs": kept, "sources": list(sources)}

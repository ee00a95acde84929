"""Pure: one try of a task -> its entry of ``tries`` in ``GET /trainjob/api/task-instance``.

Which sight of the try's job the view shows (:func:`chosen_sight`: the job live, what the try recorded, or the page's
last sight of it before it was deleted), whether Airflow says the try has ended (:func:`try_has_ended`), whether the
page polls it, and the header's :func:`badge`; the job, its replicas and its events are shown by
:mod:`airflow_trainjob.ui.views`. Nothing here reads the cluster or the database: :mod:`airflow_trainjob.ui.app` hands
in what it read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from airflow_trainjob.domain import pods
from airflow_trainjob.domain.progress import merged, point_of
from airflow_trainjob.domain.trigger_progress import shown_points
from airflow_trainjob.families import JobFamily
from airflow_trainjob.ui.views import (
    REFRESH_SECONDS,
    Json,
    _kind_of,
    _meta,
    about_job,
    deciding_condition,
    events,
    is_finished,
    iso,
    job_phase,
    job_summary,
    parse_time,
    replica_counts,
    replicas,
    restart_marks,
    shape_fields,
    stamp,
    timeline,
    times,
    with_sent_spec,
)

#: Airflow states of a try still under way: on a worker, waiting in the triggerer, or scheduled and queued (a deferred
#: try resumes on a worker through these, as the same try). Any other state of the try (``success``, ``failed``,
#: ``up_for_retry``, ``upstream_failed``, ``removed``, a try ``task_instance_history`` keeps...) is an ended one.
TRY_UNDER_WAY = frozenset({"running", "deferred", "scheduled", "queued", "up_for_reschedule", None})
#: Seconds after Airflow ended a try during which the page polls for the try's record of its end (``on_kill`` writes
#: it after Airflow has marked the task instance), at the least: a deferred try's record may come as long as the
#: triggerer gives ``on_kill`` (:func:`~airflow_trainjob.ui.settings.end_record_wait_seconds`).
END_RECORD_WAIT_SECONDS = 60
#: Who saw the state of the job a try shows: the cluster now, the task (its record: at its end, or while it ran), the
#: deferred task's trigger (when Airflow killed the task), this page's watch (before the job was deleted).
SEEN_BY_CLUSTER, SEEN_BY_TASK, SEEN_BY_TRIGGER, SEEN_BY_PAGE = "cluster", "task", "trigger", "page"
#: The header's badge of an ended try whose job did not finish (the job's phase would read as if it still ran), by
#: the try's recorded outcome (:class:`~airflow_trainjob.domain.records.FinalState`); :data:`ENDED` when none is recorded.
#: A ``succeeded`` outcome reads as the job's family's word for success (:data:`SUCCEEDED`: ``Succeeded`` here; a
#: TrainJob's ``Complete``).
SUCCEEDED = "succeeded"
OUTCOME_BADGES = {
    SUCCEEDED: "Succeeded",
    "failed": "Failed",
    "timed_out": "Timed out",
    "stopped": "Stopped",
    "deleted": "Deleted",
}
ENDED = "Ended"
#: Seconds past the job's creation after which a try that says it created the job (its ``try-number`` label) took it
#: up later: it reconnected to it, or the job is an earlier release's of that try number. Creating a job and recording
#: it take well under this.
TAKE_UP_GAP_SECONDS = 60


def try_has_ended(try_number: int, states: Mapping[int, Mapping[str, Any]]) -> bool | None:
    """Whether Airflow says the try has ended: ``task_instance_history`` keeps it, a later try exists, or the task
    instance's state is not one of :data:`TRY_UNDER_WAY`; None when Airflow has no word on it (no row).

    :param try_number: the try.
    :param states: Airflow's state of each try (:func:`airflow_trainjob.ui.store.load_try_states`).
    """
    if any(n > try_number for n in states):
        return True
    mine = states.get(try_number)
    if mine is None:
        return None
    return not mine.get("current") or mine.get("state") not in TRY_UNDER_WAY


@dataclass(frozen=True)
class Sight:
    """The state of a try's job that its view shows, and where it comes from.

    :param job: the job (API JSON, or trimmed as recorded), or None when nothing is known of it.
    :param pods: its pods then.
    :param events: the events about it then.
    :param seen_by: one of the ``SEEN_BY_*`` values, or None.
    :param seen_at: when it was seen (RFC 3339), for a recorded sight; None for the cluster's now.
    """

    job: Mapping[str, Any] | None
    pods: Sequence[Mapping[str, Any]]
    events: Sequence[Mapping[str, Any]]
    seen_by: str | None
    seen_at: str | None


def chosen_sight(
    record: Mapping[str, Any],
    *,
    live: Mapping[str, Any] | None,
    live_pods: Sequence[Mapping[str, Any]] = (),
    live_events: Sequence[Mapping[str, Any]] = (),
    gone: Mapping[str, Any] | None = None,
    ended: bool,
) -> Sight:
    """Which state of the job a try's view shows. A try under way: the job live, else the last state seen before it
    was deleted. An ended try shows the last state the task or its trigger saw, never a live one the try no longer
    follows: the job live when it has finished (its pods, and their logs, may still be read), else what the try
    recorded at its end (the task's record, or the trigger's), else what the task last saw while it ran, else the
    job as the cluster has it now (or had it when deleted).

    :param record: the try's record (JSON: ``final``, ``last_seen``).
    :param live: the job in the cluster now (this try's uid), or None.
    :param live_pods: its pods now.
    :param live_events: the events about it now.
    :param gone: the job's last state before it was deleted, as the page's watch saw it, or None.
    :param ended: the try has ended (:func:`try_has_ended`, or the record says so).
    """
    final = record.get("final") or {}
    last = record.get("last_seen") or {}
    if live is not None and (not ended or is_finished(job_phase(live))):
        return Sight(live, live_pods, live_events, SEEN_BY_CLUSTER, None)
    if final.get("job"):
        by = SEEN_BY_TRIGGER if final.get("recorded_by") == SEEN_BY_TRIGGER else SEEN_BY_TASK
        return Sight(
            final["job"], list(final.get("pods") or []), list(final.get("events") or []), by, final.get("ended_at")
        )
    last_sight = (
        Sight(last["job"], list(last.get("pods") or []), [], SEEN_BY_TASK, last.get("seen_at"))
        if last.get("job")
        else None
    )
    if ended and last_sight is not None:
        return last_sight
    if live is not None:
        return Sight(live, live_pods, live_events, SEEN_BY_CLUSTER, None)
    if gone is not None:
        return Sight(gone, [], [], SEEN_BY_PAGE, None)
    return last_sight or Sight(None, [], [], None, None)


def _recorded_pods(record: Mapping[str, Any]) -> list[Any]:
    """The pods the try recorded: at its end, else as it last saw them."""
    final, last = record.get("final") or {}, record.get("last_seen") or {}
    return list(final.get("pods") or last.get("pods") or [])


def _recorded_at(record: Mapping[str, Any]) -> str | None:
    """When the try recorded its pods: its end, else its last sight."""
    final, last = record.get("final") or {}, record.get("last_seen") or {}
    return final.get("ended_at") or last.get("seen_at") or None


def _seconds_ago(value: Any, now: datetime | None) -> float | None:
    when = parse_time(value)
    return None if when is None or now is None else (now - when).total_seconds()


def try_view(
    record: Mapping[str, Any],
    *,
    live: Mapping[str, Any] | None,
    live_pods: Sequence[Mapping[str, Any]] = (),
    live_events: Sequence[Mapping[str, Any]] = (),
    gone: Mapping[str, Any] | None = None,
    now: datetime | None,
    airflow: Mapping[int, Mapping[str, Any]] | None = None,
    link: str | None = None,
    error: str | None = None,
    may_appear: bool = False,
    unreadable_since: str | None = None,
    pods_read: bool = True,
    end_record_wait: float = END_RECORD_WAIT_SECONDS,
) -> Json:
    """One entry of ``tries`` in ``GET /trainjob/api/task-instance``.

    :param record: the try's record (:mod:`airflow_trainjob.domain.records` JSON: ``try_number``,
        ``kubernetes_conn_id``, ``kind``, ``namespace``, ``name``, ``uid``, ``created_at``, ``attached``,
        ``manifest_yaml``, ``final``, ``last_seen``).
    :param live: the job in the cluster now, when it exists and is this try's; None otherwise.
    :param live_pods: its pods (read now).
    :param live_events: events about it and its pods (any order; filtered by :func:`about_job`).
    :param gone: the job's last state before it was deleted, as the page's watch saw it, or None.
    :param now: the time now (running durations; how long ago Airflow ended the try); None: unknown.
    :param airflow: Airflow's state of each try of the task instance (:func:`~airflow_trainjob.ui.store.load_try_states`);
        None or {}: no word (the record alone says whether the try ended).
    :param link: the job's Kubeflow dashboard URL, when one is configured.
    :param error: why the cluster could not be read (one line), if it could not.
    :param may_appear: the job may still appear or change (the latest try, which has not recorded its end): keep
        polling even though it is not in the cluster, while the try has not ended.
    :param unreadable_since: since when the cluster cannot be read (RFC 3339; None: it was read just now): the page
        shows the last state seen, says since when, and polls until the cluster answers again (while the try runs).
    :param pods_read: the job's pods were read (False: the read failed, and ``live_pods`` says nothing).
    :param end_record_wait: seconds after Airflow ended the try during which its record of the end may still come.

    The answer says which sight of the job it shows (:func:`chosen_sight`: ``source``, ``seen_by``, ``seen_at``),
    whether the try has ended (``try_ended``, with Airflow's ``airflow_state`` and ``airflow_ended_at``), the header's
    :func:`badge`, and whether the page polls (``refresh_seconds``; an ended try only while its end record may come).
    """
    mine = (airflow or {}).get(int(record.get("try_number") or 0)) or {}
    ended = _has_ended(record, airflow or {})
    sight = chosen_sight(record, live=live, live_pods=live_pods, live_events=live_events, gone=gone, ended=ended)
    shown = _Shown.of(record, sight, ended=ended, exists=live is not None)
    polled = _still_changing(
        shown, mine, now=now, may_appear=may_appear, unreadable_since=unreadable_since, end_record_wait=end_record_wait
    )
    return {
        **_record_fields(record, sight.job),
        **_sight_fields(shown),
        **_job_fields(shown, known_until=_known_until(shown, mine, now=now), pods_read=pods_read),
        "link": link,
        "manifest_yaml": record.get("manifest_yaml") or None,
        **_end_fields(record, mine, ended=ended),
        "error": error,
        "cluster_unreadable_since": None if ended else stamp(unreadable_since),
        "refresh_seconds": REFRESH_SECONDS if polled else None,
    }


def _has_ended(record: Mapping[str, Any], states: Mapping[int, Mapping[str, Any]]) -> bool:
    """Airflow's word on whether the try has ended (:func:`try_has_ended`); without one, the record's: it recorded
    its end."""
    said = try_has_ended(int(record.get("try_number") or 0), states)
    return said if said is not None else bool(record.get("final"))


@dataclass(frozen=True)
class _Shown:
    """The sight a try's view shows, and what the steps of :func:`try_view` read of it."""

    record: Mapping[str, Any]
    sight: Sight
    kind: JobFamily | None
    ended: bool
    exists: bool  # the job is in the cluster now (and is this try's)
    phase: str  # job_phase of the sight's job
    relevant: list[Mapping[str, Any]]  # the events about the job and its pods (about_job)
    # A recorded job has no spec: the desired replica counts (and the restart policies) come from the manifest sent.
    specced: Mapping[str, Any] | None

    @classmethod
    def of(cls, record: Mapping[str, Any], sight: Sight, *, ended: bool, exists: bool) -> _Shown:
        job = sight.job
        relevant = about_job(sight.events, job, sight.pods)
        specced = with_sent_spec(job, record.get("manifest_yaml"))
        return cls(record, sight, _kind_of(record.get("kind")), ended, exists, job_phase(job), relevant, specced)

    @property
    def job(self) -> Mapping[str, Any] | None:
        return self.sight.job

    @property
    def on_cluster(self) -> bool:
        return self.sight.seen_by == SEEN_BY_CLUSTER

    @property
    def finished(self) -> bool:
        return is_finished(self.phase)


def _still_changing(
    shown: _Shown,
    mine: Mapping[str, Any],
    *,
    now: datetime | None,
    may_appear: bool,
    unreadable_since: str | None,
    end_record_wait: float,
) -> bool:
    """Whether the page polls the try: one under way while its job can still change (it exists and has not
    finished, it may still appear, or the cluster cannot be read); an ended one only for ``end_record_wait`` seconds
    after Airflow ended it (``mine``'s ``end_date``), while its record of the end has not come."""
    if shown.ended:
        ago = _seconds_ago(mine.get("end_date"), now)
        return not shown.record.get("final") and ago is not None and ago < end_record_wait
    return (shown.exists and not shown.finished) or (not shown.exists and may_appear) or bool(unreadable_since)


def badge(phase: str, *, ended: bool, outcome: Any, kind: JobFamily | None = None) -> str:
    """The header's badge of a try: its job's phase, but for an ended try whose job did not finish (the phase would
    read as if it still ran), the try's recorded outcome (:data:`OUTCOME_BADGES`; a success in the words of the job's
    family), else :data:`ENDED`.

    :param phase: the job's :func:`~airflow_trainjob.ui.views.job_phase`.
    :param ended: the try has ended.
    :param outcome: the try's record's ``final.outcome`` (:class:`~airflow_trainjob.domain.records.FinalState`), or None.
    :param kind: the job's family (None: unknown; a success reads ``Succeeded``).
    """
    if not ended or is_finished(phase):
        return phase
    if str(outcome) == SUCCEEDED and kind is not None:
        return kind.success_condition
    return OUTCOME_BADGES.get(str(outcome), ENDED)


def _record_fields(record: Mapping[str, Any], job: Mapping[str, Any] | None) -> Json:
    """The try's job as its record names it (the uid of the job shown, when it has one)."""
    return {
        "try_number": record.get("try_number"),
        "kubernetes_conn_id": record.get("kubernetes_conn_id"),
        "kind": record.get("kind"),
        "namespace": record.get("namespace"),
        "name": record.get("name"),
        "uid": _meta(job).get("uid") or record.get("uid"),
        "created_at": stamp(record.get("created_at")),
        "attached": bool(record.get("attached")),
        # This try returned the success of that try's job instead of training again (Airflow ran it after the success).
        "reused_from_try": record.get("reused_from_try"),
        **_origin_fields(record, job),
    }


def _origin_fields(record: Mapping[str, Any], job: Mapping[str, Any] | None) -> Json:
    """When the job was created (``job_created_at``: its ``metadata.creationTimestamp``; the record's ``created_at``
    only for a job this try created) and, when this try took up a job it did not just create, when it did
    (``attached_at``): the record's ``created_at`` is when the try attached or reconnected, not the job's creation."""
    created = parse_time(_meta(job).get("creationTimestamp"))
    taken_up = parse_time(record.get("created_at"))
    attached = bool(record.get("attached"))
    later = created is not None and taken_up is not None and taken_up - created > timedelta(seconds=TAKE_UP_GAP_SECONDS)
    return {
        "job_created_at": iso(created) if created else None if attached else stamp(record.get("created_at")),
        "attached_at": stamp(record.get("created_at")) if attached or later else None,
    }


def _known_until(shown: _Shown, mine: Mapping[str, Any], *, now: datetime | None) -> datetime | None:
    """Until when the state shown is known, where its last phase ends (its duration, and the timeline's last bar of a
    job that did not finish): ``now`` while the try watches the job live; for an ended try its end (the record's,
    else Airflow's ``end_date``), else the sight's own time (recorded, last seen); never past the job's deletion."""
    if shown.on_cluster and not shown.ended:
        return now
    final = shown.record.get("final") or {}
    sight_end = (
        [shown.sight.seen_at] if not shown.ended else [final.get("ended_at"), mine.get("end_date"), shown.sight.seen_at]
    )
    end = next((t for t in map(parse_time, sight_end) if t is not None), None)
    deleted = parse_time(_meta(shown.job).get("deletionTimestamp"))
    return min(end, deleted) if end and deleted else end or deleted


def _sight_fields(shown: _Shown) -> Json:
    """Whether the job exists now, and who saw the state shown, when."""
    seen_by = shown.sight.seen_by
    return {
        "exists": shown.exists,
        "source": "live" if seen_by in (SEEN_BY_CLUSTER, SEEN_BY_PAGE) else "recorded",
        "seen_by": seen_by,
        "seen_at": stamp(shown.sight.seen_at),
    }


def _job_fields(shown: _Shown, *, known_until: datetime | None, pods_read: bool) -> Json:
    """The job as shown: its phase and badge, its deciding condition, times, timeline, replicas and events."""
    job = shown.job
    condition = deciding_condition(job)
    # A job that did not finish was in its last phase until what is known of it ends (_known_until).
    start, completion, duration = times(job, shown.phase, known_until)
    rows, removed = _replica_rows(shown)
    # A recorded job has no spec: the replicas and nodes asked for are read from the manifest sent (specced).
    counts = replica_counts(shown.specced, shown.kind, rows)
    outcome = (shown.record.get("final") or {}).get("outcome")
    return {
        "phase": shown.phase,
        "badge": badge(shown.phase, ended=shown.ended, outcome=outcome, kind=shown.kind),
        "reason": condition.get("reason") or None,
        "message": condition.get("message") or None,
        "summary": job_summary(shown.specced, shown.kind, counts) if job is not None else None,
        "start_time": start,
        "completion_time": completion,
        "duration_seconds": duration,
        "timeline": timeline(job),
        # The timeline's last bar of a job that did not finish runs to this (RFC 3339), not to its own transition.
        "known_until": iso(known_until) if job is not None else None,
        "restarts": restart_marks([*shown.sight.pods, *removed], shown.relevant, _named(shown), shown.kind),
        "replica_counts": counts,
        **(shape_fields(shown.specced, shown.kind) if job is not None else shape_fields(None, None)),
        "progress_history": progress_history(shown.record, job, shown.kind),
        "replicas": rows,
        # A finished job that is still there without pods: cleanPodPolicy (or the controller) removed them.
        "pods_gone": shown.on_cluster and shown.exists and shown.finished and pods_read and not shown.sight.pods,
        "events": events(shown.relevant),
    }


def progress_history(record: Mapping[str, Any], job: Mapping[str, Any] | None, kind: JobFamily | None) -> list[Json]:
    """The training's own progress over the try, oldest first, for the tab's metrics table over time: the points the
    try recorded at its end, else those it recorded while it ran and those a deferred try's trigger wrote while it
    waits (:func:`~airflow_trainjob.domain.trigger_progress.shown_points`), then the one the job shown reports now
    when it is newer. Each point: ``at`` (RFC 3339 UTC, ``Z``), ``percentage``, ``estimated_remaining_seconds``,
    ``metrics`` (name -> value). ``[]`` for a job whose controller reports no progress (a v1 job, a TrainJob without
    ``trainerStatus``).

    :param record: the try's record (JSON: ``final.progress``, ``last_seen.progress``, and the trigger's points
        under :data:`~airflow_trainjob.domain.trigger_progress.RECORD_FIELD`).
    :param job: the job shown (live or recorded), or None.
    :param kind: the job's family, or None.
    """
    recorded = shown_points(record)
    status = (job or {}).get("status") if isinstance(job, Mapping) else None
    now = point_of(kind.trainer_progress(status), "") if kind is not None and job is not None else None
    points = [p for p in [*recorded, now] if isinstance(p, Mapping) and p.get("at")]
    return merged([[{**p, "at": stamp(p["at"])} for p in points]])


def _named(shown: _Shown) -> Mapping[str, Any]:
    """The job shown, with its spec (the pod templates), named as the try's record names it (a job not seen has
    only its name)."""
    name = str(shown.record.get("name") or "")
    job = shown.specced or {}
    return {**job, "metadata": {**(job.get("metadata") or {}), "name": name}}


def _replica_rows(shown: _Shown) -> tuple[list[Json], list[Any]]:
    """The replicas table (:func:`~airflow_trainjob.ui.views.replicas`), and the pods the try recorded that are gone
    since. The table has those, and the exits the events report of replicas no pod stands for, once the job has
    finished (a running job's missing pod is one being made again)."""
    sight, record = shown.sight, shown.record
    present = {pods.pod_name(p) for p in sight.pods}
    live_and_finished = shown.on_cluster and shown.finished
    removed = [p for p in _recorded_pods(record) if pods.pod_name(p) not in present] if live_and_finished else []
    rows = replicas(
        sight.pods,
        shown.kind,
        job_gone=not shown.exists,
        ended_at=sight.seen_at or _recorded_at(record),
        recorded=removed,
        job_events=shown.relevant if shown.finished else (),
        job=shown.specced,
    )
    return rows, removed


def _end_fields(record: Mapping[str, Any], mine: Mapping[str, Any], *, ended: bool) -> Json:
    """How the try ended, as it recorded it, and Airflow's state of it."""
    final = record.get("final") or {}
    return {
        "outcome": final.get("outcome"),
        "outcome_message": final.get("message"),
        "ended_at": stamp(final.get("ended_at")),
        "try_ended": ended,
        "airflow_state": mine.get("state"),
        "airflow_ended_at": stamp(mine.get("end_date")),
    }


def recorded_parts(record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[Any], list[Any]]:
    """``(job, pods, events)`` the try recorded at its end (``final``), else as it last saw them while it ran
    (``last_seen``, no events), or ``(None, [], [])``.

    :param record: the try's record (JSON).
    """
    final, last = record.get("final") or {}, record.get("last_seen") or {}
    if final.get("job") or not last.get("job"):
        return final.get("job") or None, list(final.get("pods") or []), list(final.get("events") or [])
    return last["job"], list(last.get("pods") or []), []

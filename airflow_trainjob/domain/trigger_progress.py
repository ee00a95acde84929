"""A deferred try's progress over time while its trigger waits (pure): when the trigger writes its points where the
Training job tab reads them, what it writes, and what the tab shows of them.

A synchronous try keeps its progress points (:mod:`airflow_trainjob.domain.progress`) in its record in
``task_state_store`` as it runs. A deferred try's trigger runs in the triggerer, which cannot reach that store: it
keeps its points in memory and hands them over in its event at the end. Meanwhile it writes them, packed
(:func:`~airflow_trainjob.domain.progress.packed`) and masked as records are, to the task instance's XCom under
:data:`TRIGGER_PROGRESS_KEY` (:func:`progress_value`): when a new report came since its last write, at most once every
:func:`write_interval` seconds (:func:`write_due`); a report that comes sooner is written when the interval has passed
(:func:`write_delay`). The tab reads that XCom beside the record
(:func:`with_trigger_progress`) and shows, for a try that has not recorded its end, the points it recorded and the
trigger's (:func:`shown_points`); once the resumed (or killed) try has recorded its end, that record's points alone.

Airflow keeps a task instance's XComs when it resumes after a deferral (its execution API lists the keys to clear
only for a try that does not resume: ``ti_run``), and clears them when the next try starts. So the trigger's points
are there until the try ends, and a trigger run again after a triggerer restart reads them back
(:func:`taken_up`) before its first write, so that neither the XCom nor its event loses the course before the
restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from airflow_trainjob.domain.progress import MAX_POINTS, Point, merged, packed, thinned, unpacked
from airflow_trainjob.domain.records import Redact, redacted

#: XCom key of a deferred try's progress points, written by its trigger (:func:`progress_value`); renaming it hides
#: the points of the tries deferred before.
TRIGGER_PROGRESS_KEY = "airflow_trainjob_try_progress"
#: Seconds between two writes of one trigger, at least. The tab polls every few seconds and always shows the report
#: the job carries now, so the points over time may lag this much behind without the tab missing the latest.
MIN_WRITE_SECONDS = 30.0
#: Writes a second of all the triggers of one triggerer, at most (:func:`write_interval`). Each is a request to the
#: triggerer's supervisor, which serves it in the loop that also syncs the triggers' states with Airflow, and a row
#: written through Airflow's API: thousands of triggers share both.
WRITES_PER_SECOND = 5.0
#: The record's key, in the tab's copy of a try's record (JSON), under which the trigger's points are handed to the
#: view (:func:`with_trigger_progress`): never written to the store.
RECORD_FIELD = "trigger_progress"


def write_interval(writers: int) -> float:
    """Seconds between two writes of one trigger: :data:`MIN_WRITE_SECONDS`, longer when so many triggers of the
    triggerer write that together they would pass :data:`WRITES_PER_SECOND` (every 200 s with 1,000 of them).

    :param writers: triggers of the triggerer whose jobs report progress now (count).
    """
    return max(MIN_WRITE_SECONDS, max(0, writers) / WRITES_PER_SECOND)


def has_new(points: Sequence[Mapping[str, Any]], written: Mapping[str, Any] | None) -> bool:
    """The trigger has a point it did not write yet: its latest is not the latest of its last write.

    :param points: the trigger's points, oldest first.
    :param written: the latest point of the last write that went through, or None.
    """
    return bool(points) and (written is None or dict(points[-1]) != dict(written))


def write_due(
    points: Sequence[Mapping[str, Any]],
    written: Mapping[str, Any] | None,
    tried_at: float | None,
    now: float,
    interval: float,
) -> bool:
    """Whether the trigger writes its points now: it has a point it did not write yet (:func:`has_new`), and it has
    not tried to write for ``interval`` seconds (the first write goes at once).

    :param points: the trigger's points, oldest first.
    :param written: the latest point of the last write that went through, or None.
    :param tried_at: monotonic seconds the last attempt to write ended (through or not), or None.
    :param now: monotonic seconds now.
    :param interval: :func:`write_interval` (seconds).
    """
    return has_new(points, written) and (tried_at is None or now - tried_at >= interval)


def write_delay(tried_at: float | None, now: float, interval: float) -> float:
    """Seconds until the trigger may write again: a point it holds back is written then, whether or not another
    report comes meanwhile (the latest report may be the last one for a long while).

    :param tried_at: monotonic seconds the last attempt to write ended, or None (none yet: 0).
    :param now: monotonic seconds now.
    :param interval: :func:`write_interval` (seconds).
    """
    return 0.0 if tried_at is None else max(0.0, tried_at + interval - now)


def progress_value(
    try_number: int, points: Iterable[Mapping[str, Any]], redact: Redact | None = None
) -> dict[str, Any]:
    """The XCom value under :data:`TRIGGER_PROGRESS_KEY`: ``{"try_number", "progress"}``, the points
    :func:`~airflow_trainjob.domain.progress.packed` (about a third of their own JSON), every string passed through
    ``redact`` as a record's are.

    :param try_number: the deferred try.
    :param points: its points, oldest first.
    :param redact: replaces the secrets Airflow's masker knows in one string; None: kept as they are.
    """
    return {"try_number": try_number, "progress": packed([redacted(dict(p), redact) for p in points])}


def read_progress_value(value: Any) -> tuple[int, list[Point]] | None:
    """The try and its points in an XCom value of :func:`progress_value`; None for anything else.

    :param value: the XCom value under :data:`TRIGGER_PROGRESS_KEY` (deserialized), or None.
    """
    if not isinstance(value, Mapping):
        return None
    try_number = value.get("try_number")
    if not isinstance(try_number, int) or isinstance(try_number, bool):
        return None
    return try_number, unpacked(value.get("progress"))


def taken_up(value: Any, try_number: int | None, points: Sequence[Mapping[str, Any]]) -> list[Point]:
    """A trigger's points with those an earlier run of it wrote for the same try (a triggerer restarted: the new run
    starts with none), each change once, within :data:`~airflow_trainjob.domain.progress.MAX_POINTS`.

    :param value: the XCom value under :data:`TRIGGER_PROGRESS_KEY` as read (deserialized), or None.
    :param try_number: the trigger's try; None: nothing is taken up.
    :param points: the trigger's own points, oldest first.
    """
    found = read_progress_value(value)
    if found is None or try_number is None or found[0] != try_number:
        return [dict(p) for p in points]
    return thinned(merged([found[1], points]), MAX_POINTS)


def with_trigger_progress(
    records: Sequence[Mapping[str, Any]], found: tuple[int, list[Point]] | None
) -> list[dict[str, Any]]:
    """The tab's copies of the records (JSON, latest try first), the trigger's points (:func:`read_progress_value`)
    added to their try's under :data:`RECORD_FIELD`.

    :param records: the records as JSON dicts.
    :param found: the try and its trigger's points, or None.
    """
    if found is None:
        return [dict(r) for r in records]
    try_number, points = found
    return [{**r, RECORD_FIELD: points} if r.get("try_number") == try_number else dict(r) for r in records]


def shown_points(record: Mapping[str, Any]) -> list[Point]:
    """The points the tab shows of a try, before the report its job carries now: those it recorded at its end (the
    resumed try merged its trigger's in; a killed one's trigger recorded its own), else those it recorded while it
    ran and those its trigger wrote while it waited (:data:`RECORD_FIELD`), each change once, oldest first.

    :param record: the tab's copy of the try's record (JSON: ``final.progress``, ``last_seen.progress``,
        :data:`RECORD_FIELD`).
    """
    final, last = record.get("final") or {}, record.get("last_seen") or {}
    if final.get("progress"):
        return [dict(p) for p in final["progress"] if isinstance(p, Mapping)]
    return merged([last.get("progress") or [], record.get(RECORD_FIELD) or []])

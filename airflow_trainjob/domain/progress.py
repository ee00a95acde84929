"""A training's own progress over time (pure): the points a try keeps of what its controller reported (a TrainJob's
``status.trainerStatus``, read through :meth:`~airflow_trainjob.domain.family.JobFamily.trainer_progress`), for the
Training job tab's metrics table over time and the XCom summary's ``progress`` entry.

A point is a JSON dict: ``at`` (RFC 3339: the reporter's ``lastUpdatedTime``, else when the try saw it),
``percentage`` (0-100, or None), ``estimated_remaining_seconds`` (or None) and ``metrics`` (name -> value, the values
strings as reported). A try appends one each time the reported progress changes (:func:`with_point`; a new
``lastUpdatedTime`` with the same numbers is no change), at most :data:`MAX_POINTS`: past that, the older half is
thinned (every second point of it dropped), so a long training keeps its whole course at a coarser grain and its
latest points as they came.

Where the points live: the synchronous wait keeps them in the try's record (``last_seen.progress`` while it runs,
``final.progress`` at its end: :mod:`airflow_trainjob.domain.records`); the trigger keeps them in memory, writes them
to the task instance's XCom while it waits (:mod:`airflow_trainjob.domain.trigger_progress`) and hands them over in its
event (``progress``, :func:`packed`, thinned when its budget cannot hold them all), which the resumed task records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_trainjob.domain.family import JobFamily

#: Points a try keeps (see the module's docstring): about 100 bytes each with a few metrics.
MAX_POINTS = 48
#: Metrics the task log's progress line names (the rest are counted): a trainer may report up to 256.
METRICS_IN_LINE = 8

Point = dict[str, Any]


def point_of(trainer: Mapping[str, Any] | None, seen_at: str) -> Point | None:
    """The point of one report, or None when there is none.

    :param trainer: :meth:`~airflow_trainjob.domain.family.JobFamily.trainer_progress` of the job's status
        (``percentage``, ``estimated_remaining_seconds``, ``metrics`` as ``[{name, value}]``, ``last_updated_time``),
        or None.
    :param seen_at: RFC 3339 time the try saw it, used when the report carries no ``last_updated_time``.
    """
    if not trainer:
        return None
    metrics = {str(m["name"]): m.get("value") for m in trainer.get("metrics") or [] if m.get("name")}
    if trainer.get("percentage") is None and trainer.get("estimated_remaining_seconds") is None and not metrics:
        return None
    return {
        "at": trainer.get("last_updated_time") or seen_at,
        "percentage": trainer.get("percentage"),
        "estimated_remaining_seconds": trainer.get("estimated_remaining_seconds"),
        "metrics": metrics,
    }


def _numbers(point: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return point.get("percentage"), point.get("estimated_remaining_seconds"), point.get("metrics") or {}


def same_progress(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Both points report the same percentage, estimate and metrics (their times aside).

    :param a: a point, or None.
    :param b: another, or None.
    """
    return a is not None and b is not None and _numbers(a) == _numbers(b)


def packed(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``points`` as a trigger's event carries them: each metric's name once (``metrics``), then one row per point
    (``rows``: ``[at, percentage, estimated_remaining_seconds, value of each metric or None]``). About a third of the
    points' own JSON, so a deferred try hands over its whole course within the event's budget.

    :param points: points, oldest first.
    """
    names: list[str] = []
    for point in points:
        names.extend(n for n in point.get("metrics") or {} if n not in names)
    rows = [
        [p.get("at"), p.get("percentage"), p.get("estimated_remaining_seconds")]
        + [(p.get("metrics") or {}).get(n) for n in names]
        for p in points
    ]
    return {"metrics": names, "rows": rows}


def unpacked(value: Any) -> list[Point]:
    """The points of a trigger's event's ``progress``: :func:`packed` rows (a metric a point did not report left
    out), or a list of points as they are; ``[]`` for anything else.

    :param value: the event's ``progress``, or None.
    """
    if isinstance(value, list):
        return [dict(p) for p in value if isinstance(p, Mapping)]
    if not isinstance(value, Mapping) or not isinstance(value.get("rows"), list):
        return []
    names = [str(n) for n in value.get("metrics") or []]
    points = []
    for row in value["rows"]:
        if isinstance(row, list) and len(row) >= 3:
            values = row[3 : 3 + len(names)]
            metrics = {n: v for n, v in zip(names, values, strict=False) if v is not None}
            points.append(
                {"at": row[0], "percentage": row[1], "estimated_remaining_seconds": row[2], "metrics": metrics}
            )
    return points


def thinned(points: Sequence[Mapping[str, Any]], limit: int = MAX_POINTS) -> list[Point]:
    """``points`` within ``limit``: while over it, every second point of the older half is dropped (the first one
    and the latest half kept as they are).

    :param points: points, oldest first.
    :param limit: how many to keep at most (count, at least 2).
    """
    kept = [dict(p) for p in points]
    limit = max(2, limit)
    while len(kept) > limit:
        half = len(kept) // 2
        kept = kept[:half:2] + kept[half:]
        if len(kept) > limit and half < 2:  # nothing left to thin in the older half
            kept = kept[:1] + kept[len(kept) - limit + 1 :]
    return kept


def with_point(points: Sequence[Point], point: Point | None, limit: int = MAX_POINTS) -> list[Point]:
    """``points`` with ``point`` appended when it reports a change from the latest one (:func:`same_progress`),
    thinned to ``limit`` (:func:`thinned`).

    :param points: the try's points, oldest first.
    :param point: :func:`point_of` a look, or None.
    :param limit: how many to keep at most (count).
    """
    if point is None or (points and same_progress(points[-1], point)):
        return list(points)
    return thinned([*points, point], limit)


def with_report(points: Sequence[Point], family: JobFamily, status: Any, seen_at: str) -> list[Point]:
    """``points`` with the report a look at the job found (:meth:`JobFamily.trainer_progress` of its ``status``),
    when it is a change (:func:`with_point`): what every wait keeps of each look.

    :param points: the try's points, oldest first.
    :param family: the job's API family.
    :param status: the job's ``status`` as read (a dict, or None).
    :param seen_at: RFC 3339 time of the look (:func:`point_of`'s).
    """
    return with_point(points, point_of(family.trainer_progress(status), seen_at))


def merged(series: Iterable[Iterable[Any]]) -> list[Point]:
    """The points of several sources (the record's, the trigger's event, a live look), oldest first by ``at``, each
    change once (a point reporting what the one before it reported is left out); entries that are not points are
    skipped.

    :param series: iterables of points (JSON dicts), one per source.
    """
    found = sorted(
        (p for s in series for p in s if isinstance(p, Mapping) and isinstance(p.get("at"), str)),
        key=lambda p: p["at"],
    )
    kept: list[Point] = []
    for point in found:
        if not kept or not same_progress(kept[-1], point):
            kept.append(dict(point))
    return kept


def metrics_words(metrics: Mapping[str, Any], limit: int = METRICS_IN_LINE) -> str:
    """``loss 0.2347, accuracy 0.9876``: the metrics as the progress line names them, at most ``limit`` (``and 3
    more metrics`` after them); ``""`` for none.

    :param metrics: name -> value (strings as reported).
    :param limit: how many to name (count).
    """
    said = [f"{name} {value}" for name, value in list(metrics.items())[:limit]]
    more = len(metrics) - limit
    if more > 0:
        said.append(f"and {more} more metric{'s' if more != 1 else ''}")
    return ", ".join(said)


def summary_entry(trainer: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The XCom summary's ``progress`` entry: ``percentage``, ``estimated_remaining_seconds``, ``metrics`` (name ->
    value, strings as reported) and ``last_updated_time`` (RFC 3339) of the last report; None without one.

    :param trainer: :meth:`~airflow_trainjob.domain.family.JobFamily.trainer_progress` of the job's status, or None.
    """
    if not trainer:
        return None
    return {
        "percentage": trainer.get("percentage"),
        "estimated_remaining_seconds": trainer.get("estimated_remaining_seconds"),
        "metrics": {str(m["name"]): m.get("value") for m in trainer.get("metrics") or [] if m.get("name")},
        "last_updated_time": trainer.get("last_updated_time"),
    }

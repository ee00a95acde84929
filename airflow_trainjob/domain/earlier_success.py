"""Whether a try returns the success of an earlier try's job instead of training again (pure: the task instance's
records in, one decision out, and what the task log says about it).

Airflow can run a task instance again after its training job has succeeded:

- the scheduler's race after a deferred task resumes (apache/airflow#72716): the resumed try logs the success,
  deletes the job (``on_finish="delete_succeeded_job"``) and pushes its XCom; then the scheduler logs
  ``... finished with state success, but the task instance's state attribute is running`` and fails the task, and
  it is retried;
- its variant where the deferring worker's exit reaches the scheduler after the trigger fired (``... finished with
  state success, but the task instance's state attribute is queued``): the resume never runs, and Airflow runs the
  task's ``execute`` again, in a new try or in the same one;
- a worker lost after the job succeeded, during or after the try's cleanup, before the task runner reported the
  success.

By then the job may be gone, deleted by this provider's own cleanup, and cannot say that it succeeded; the try's
record in ``task_state_store`` (:mod:`airflow_trainjob.domain.records`), written before the cleanup, can. A retry in the
same series of tries (:class:`~airflow_trainjob.domain.records.TrySeries`: no clear since) returns that success. A
clear starts a new series, whose tries train again: the way to ask for a new training.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.domain.records import JobRecord, TrySeries

#: Why Airflow runs a task instance again after its job succeeded, for the task log.
WHY_AGAIN = (
    "Airflow ran the task again after that success (the scheduler's race around a deferred task's resume, "
    "apache/airflow#72716, or a worker lost before it reported the success)"
)


@dataclass(frozen=True)
class Reuse:
    """Return the success of an earlier try's job: its summary, without creating a job.

    :param source: the latest earlier try's record: one that says its job succeeded, or one of a try that ended
        without recording how (its worker was lost) or that Airflow stopped, whose job may have succeeded since.
    :param succeeded_try: the try whose job succeeded (``source``'s, or the one ``source`` itself reused).
    :param summary: the summary to return (that try's XCom ``return_value``); None when the try did not record it:
        then only the job, read now, can tell, and it is reused only if it has succeeded.
    :param spec_changed: this try built another job (kind and spec) than the one that succeeded.
    """

    source: JobRecord
    succeeded_try: int
    summary: dict[str, Any] | None
    spec_changed: bool


@dataclass(frozen=True)
class StartOver:
    """Train: create (or attach to) this try's job as usual.

    :param reason: why an earlier try's job is not taken as this try's result, for the task log; None when there
        is nothing to explain (no earlier try, or the latest one failed, timed out or was stopped).
    """

    reason: str | None = None


def _job(record: JobRecord) -> str:
    return f"{record.kind} {record.namespace}/{record.name}"


def _unfinished(record: JobRecord) -> str:
    """How a try that did not see its job's end ended: without a word, or stopped by Airflow."""
    if record.final is None:
        return "ended without recording how (its worker was lost, or Airflow did not resume it)"
    return "was stopped by Airflow before it saw the job's end"


def decide(
    records: Iterable[JobRecord], try_number: int, series: TrySeries, spec_sha256: str | None
) -> Reuse | StartOver:
    """Reuse the success of the latest try of this task instance so far, or start over.

    The latest try so far is an earlier one, or this very try when Airflow runs its ``execute`` again (its record
    exists already). Only that try counts: a success before a failed or timed-out try, or one whose job was deleted
    outside the task, is not this task's result any more. It is reused when its record says its job succeeded (or
    the try ended without a word, or Airflow stopped it: the caller reads the job, and reuses it only if it has
    succeeded) and it belongs to this try's series: the same ``clear_number`` and ``max_tries``
    (:class:`~airflow_trainjob.domain.records.TrySeries`). A record without a series (written by an earlier version of
    this provider) cannot tell a retry from a clear: start over.

    :param records: the task instance's records (:func:`~airflow_trainjob.domain.records.read_records`), any order.
    :param try_number: this try (1 for the first).
    :param series: this try's series (:meth:`TrySeries.from_context`).
    :param spec_sha256: :func:`~airflow_trainjob.domain.records.spec_digest` of the job this try built; None: unknown.
    """
    earlier = [r for r in records if r.try_number <= try_number]
    if not earlier:
        return StartOver()
    last = max(earlier, key=lambda r: r.try_number)
    final = last.final
    if final is not None and final.outcome not in ("succeeded", "stopped"):
        return StartOver()
    succeeded_try = last.reused_from_try or last.try_number
    what = (
        f"Try {succeeded_try}'s {_job(last)} succeeded"
        if final is not None and final.outcome == "succeeded"
        else f"Try {last.try_number} followed {_job(last)} and {_unfinished(last)}"
    )
    if last.series is None:
        return StartOver(
            f"{what}, but its record was written by an earlier version of airflow-trainjob, which did not note the "
            "clear the try ran under (a retry and a clear look alike): this try trains again"
        )
    if not last.series.same_as(series):
        return StartOver(
            f"{what}, but the task was cleared since ({last.series.describe()} then, {series.describe()} now): "
            "this try trains again"
        )
    return Reuse(
        source=last,
        succeeded_try=succeeded_try,
        summary=final.summary if final is not None and final.outcome == "succeeded" else None,
        spec_changed=bool(spec_sha256 and last.spec_sha256 and spec_sha256 != last.spec_sha256),
    )


def reuse_lines(reuse: Reuse, try_number: int, series: TrySeries, *, job_exists: bool, on_finish: str) -> list[str]:
    """What the task log says when a try returns an earlier try's success: that it does not train again, why, the
    try whose job succeeded, what became of that job, and how to train again.

    :param reuse: the decision (:func:`decide`), its summary known (recorded, or read from the job now).
    :param try_number: this try.
    :param series: this try's series.
    :param job_exists: the job is still in the cluster (it is cleaned up now, as ``on_finish`` says).
    :param on_finish: the operator's ``on_finish``.
    """
    source, done = reuse.source, reuse.succeeded_try
    summary = reuse.summary or {}
    completed = f" (completed {summary['completionTime']})" if summary.get("completionTime") else ""
    unseen = source.final is None or source.final.outcome != "succeeded"
    unrecorded = f"; try {source.try_number} {_unfinished(source)}" if unseen else ""
    this = (
        f"Airflow runs try {try_number} again"
        if try_number == source.try_number
        else f"this is try {try_number} of the same series of tries"
    )
    if job_exists:
        fate = f"The job is still there: cleaning it up now as that try would have (on_finish={on_finish!r})."
    elif source.final is not None and on_finish in ("delete_job", "delete_succeeded_job"):
        fate = f"The job is gone: that try's cleanup deleted it (on_finish={on_finish!r})."
    else:
        fate = "The job is gone."
    lines = [
        f"Not training again: try {done}'s {_job(source)} succeeded{completed}{unrecorded}, and {this} (no clear "
        f"since: {series.describe()}). {WHY_AGAIN}; this try returns try {done}'s result as its own. {fate} To train "
        "again, clear the task.",
    ]
    if reuse.spec_changed:
        lines.append(
            f"The job this try would create differs from the one try {done} ran (its kind or spec changed: the DAG "
            "or what its templates read changed since); that try's result is returned all the same. Clear the task "
            "to train with the new definition."
        )
    return lines

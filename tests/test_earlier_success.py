"""The pure decision of a try that Airflow runs after an earlier try's job succeeded: the records, the series (the
DAG run's ``clear_number`` and the task instance's ``max_tries``) and the try number in; reuse that success or
start over out, with what the task log says."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from airflow_trainjob.domain.earlier_success import Reuse, StartOver, decide, reuse_lines
from airflow_trainjob.domain.records import FinalState, JobRecord, TrySeries, read_records

SERIES = TrySeries(clear_number=0, max_tries=2)
SUMMARY = {
    "kind": "TFJob",
    "name": "train-job",
    "namespace": "ml",
    "conditions": [{"type": "Succeeded", "status": "True"}],
    "replicaStatuses": {"Chief": {"succeeded": 1}},
    "startTime": "2026-01-01T00:00:00Z",
    "completionTime": "2026-01-01T00:00:07Z",
    "duration": 7.0,
}


def record(
    try_number: int,
    outcome: str | None = "succeeded",
    series: TrySeries | None = SERIES,
    **fields: Any,
) -> JobRecord:
    final = (
        FinalState(
            ended_at="2026-01-01T00:00:08Z", outcome=outcome, summary=SUMMARY if outcome == "succeeded" else None
        )
        if outcome is not None
        else None
    )
    fields.setdefault("spec_sha256", "aaa")
    return JobRecord(
        try_number=try_number,
        kind="TFJob",
        namespace="ml",
        name="train-job",
        uid=f"uid-{try_number}",
        created_at="2026-01-01T00:00:00Z",
        final=final,
        series=series,
        **fields,
    )


def test_a_first_try_has_nothing_to_reuse():
    assert decide([], 1, SERIES, "aaa") == StartOver()
    assert decide([record(2)], 1, SERIES, "aaa") == StartOver()  # a later try's record does not count


def test_a_try_whose_execute_airflow_runs_again_reuses_its_own_job():
    """The deferring worker's exit reached the scheduler after the trigger fired: the resume never ran, and Airflow
    runs the same try's ``execute`` again. Its own record (no end) is the latest: the caller reads the job."""
    deferred = record(1, outcome=None)
    assert decide([deferred], 1, SERIES, "aaa") == Reuse(
        source=deferred, succeeded_try=1, summary=None, spec_changed=False
    )


def test_a_retry_of_the_same_series_reuses_the_success():
    first = record(1)
    decision = decide([first], 2, SERIES, "aaa")
    assert decision == Reuse(source=first, succeeded_try=1, summary=SUMMARY, spec_changed=False)


def test_a_clear_starts_over_and_says_why():
    decision = decide([record(1)], 2, TrySeries(clear_number=1, max_tries=3), "aaa")
    assert decision == StartOver(
        "Try 1's TFJob ml/train-job succeeded, but the task was cleared since (clear_number 0, max_tries 2 then, "
        "clear_number 1, max_tries 3 now): this try trains again"
    )


def test_a_clear_that_left_the_run_alone_is_told_by_max_tries():
    """``clearTaskInstances`` with ``reset_dag_runs: false`` (and ``DAG.test``) leave ``clear_number``; a clear always
    sets ``max_tries`` to ``try_number + retries``."""
    decision = decide([record(1)], 2, TrySeries(clear_number=0, max_tries=3), "aaa")
    assert isinstance(decision, StartOver) and decision.reason and "cleared since" in decision.reason


def test_a_record_of_an_earlier_provider_is_not_taken_for_this_series():
    decision = decide([record(1, series=None)], 2, SERIES, "aaa")
    assert isinstance(decision, StartOver) and decision.reason == (
        "Try 1's TFJob ml/train-job succeeded, but its record was written by an earlier version of airflow-trainjob, "
        "which did not note the clear the try ran under (a retry and a clear look alike): this try trains again"
    )


def test_a_record_without_a_series_read_back_from_json_is_one_of_an_earlier_provider():
    entry = record(1).model_dump(mode="json")
    del entry["series"], entry["final"]["summary"]
    (old,) = read_records([entry])
    assert old.series is None and isinstance(decide([old], 2, SERIES, "aaa"), StartOver)


@pytest.mark.parametrize("outcome", ["failed", "timed_out", "deleted"])
def test_only_the_latest_earlier_try_counts(outcome):
    """A success followed by a try that failed, timed out or lost its job is no result any more."""
    assert decide([record(1), record(2, outcome)], 3, SERIES, "aaa") == StartOver()
    assert decide([record(1, outcome)], 2, SERIES, "aaa") == StartOver()


def test_a_try_that_airflow_stopped_is_judged_by_its_job():
    """Airflow stopped the try (a worker shut down, a stale resume killed): its job may have succeeded, and was kept
    by the kill's cleanup; the caller reads it. A clear since (a user's Clear) starts over."""
    stopped = record(1, "stopped")
    assert decide([stopped], 2, SERIES, "aaa") == Reuse(
        source=stopped, succeeded_try=1, summary=None, spec_changed=False
    )
    cleared = decide([stopped], 2, TrySeries(clear_number=1, max_tries=3), "aaa")
    assert isinstance(cleared, StartOver) and (cleared.reason or "").startswith(
        "Try 1 followed TFJob ml/train-job and was stopped by Airflow before it saw the job's end, but the task was "
        "cleared since"
    )


def test_a_try_that_ended_without_a_word_is_reused_only_as_its_job_says():
    """Its worker was lost: the caller reads the job and reuses it only if it has succeeded."""
    lost = record(1, outcome=None)
    assert decide([lost], 2, SERIES, "aaa") == Reuse(source=lost, succeeded_try=1, summary=None, spec_changed=False)
    cleared = decide([lost], 2, TrySeries(clear_number=1, max_tries=3), "aaa")
    assert isinstance(cleared, StartOver) and (cleared.reason or "").startswith(
        "Try 1 followed TFJob ml/train-job and ended without recording how (its worker was lost, or Airflow did not "
        "resume it), but the task was cleared since"
    )


def test_a_reused_success_names_the_try_whose_job_succeeded():
    second = record(2, reused_from_try=1)
    decision = decide([record(1), second], 3, SERIES, "aaa")
    assert decision == Reuse(source=second, succeeded_try=1, summary=SUMMARY, spec_changed=False)


def test_another_spec_is_noted_not_a_reason_to_train_again():
    assert decide([record(1)], 2, SERIES, "bbb") == Reuse(
        source=record(1), succeeded_try=1, summary=SUMMARY, spec_changed=True
    )
    unknown = decide([record(1, spec_sha256=None)], 2, SERIES, "bbb")
    assert isinstance(unknown, Reuse) and not unknown.spec_changed


def test_the_series_is_read_from_the_context():
    context = {"dag_run": SimpleNamespace(clear_number=2), "ti": SimpleNamespace(max_tries=5)}
    assert TrySeries.from_context(context) == TrySeries(clear_number=2, max_tries=5)
    assert TrySeries.from_context({"ti": SimpleNamespace()}) == TrySeries()  # not Airflow's context: unknown
    assert TrySeries.from_context({"dag_run": SimpleNamespace(clear_number=True)}) == TrySeries()
    assert TrySeries().same_as(TrySeries()) and not TrySeries(clear_number=0).same_as(TrySeries())


def test_what_the_task_log_says_when_the_job_is_gone():
    (line,) = reuse_lines(
        decide([record(1)], 2, SERIES, "aaa"), 2, SERIES, job_exists=False, on_finish="delete_succeeded_job"
    )
    assert line == (
        "Not training again: try 1's TFJob ml/train-job succeeded (completed 2026-01-01T00:00:07Z), and this is try 2 "
        "of the same series of tries (no clear since: clear_number 0, max_tries 2). Airflow ran the task again after "
        "that success (the scheduler's race around a deferred task's resume, apache/airflow#72716, or a worker lost "
        "before it reported the success); this try returns try 1's result as its own. The job is gone: that try's "
        "cleanup deleted it (on_finish='delete_succeeded_job'). To train again, clear the task."
    )


def test_what_the_task_log_says_when_the_job_is_still_there_and_changed():
    decision = Reuse(source=record(1, outcome=None), succeeded_try=1, summary=SUMMARY, spec_changed=True)
    first, second = reuse_lines(decision, 2, SERIES, job_exists=True, on_finish="keep_job")
    assert (
        "succeeded (completed 2026-01-01T00:00:07Z); try 1 ended without recording how (its worker was lost, or "
        "Airflow did not resume it), and this is try 2 of the same series"
    ) in first
    (again,) = reuse_lines(decision, 1, SERIES, job_exists=True, on_finish="keep_job")[:1]
    assert "it), and Airflow runs try 1 again (no clear since: clear_number 0, max_tries 2)." in again
    assert "The job is still there: cleaning it up now as that try would have (on_finish='keep_job')." in first
    assert second.startswith("The job this try would create differs from the one try 1 ran")
    kept_gone = reuse_lines(decide([record(1)], 2, SERIES, "aaa"), 2, SERIES, job_exists=False, on_finish="keep_job")
    assert "The job is gone. To train again, clear the task." in kept_gone[0]

"""A training's own progress over time (:mod:`airflow_trainjob.domain.progress`): the points a try keeps of a
TrainJob's ``status.trainerStatus``, the progress line's words, the XCom summary's entry, and what the trigger's event
keeps of the points within its budget. Pure: no cluster."""

from __future__ import annotations

import json

from airflow_trainjob.domain.deadlines import Deadlines
from airflow_trainjob.domain.lifecycle import JobWait, progress_line
from airflow_trainjob.domain.progress import (
    MAX_POINTS,
    merged,
    metrics_words,
    packed,
    point_of,
    summary_entry,
    thinned,
    unpacked,
    with_point,
)
from airflow_trainjob.domain.summary import job_summary
from airflow_trainjob.families import family_of
from airflow_trainjob.triggers.events import EVENT_BUDGET, FINISHED, event_payload
from tests.families import trainer_v2_objects as v2

TRAINJOB = family_of("TrainJob")
PYTORCH = family_of("PyTorchJob")


def trainer_status(percent: int | None, left: int | None, at: str, **metrics: str) -> dict:
    status: dict = {"lastUpdatedTime": at, "metrics": [{"name": k, "value": v} for k, v in metrics.items()]}
    if percent is not None:
        status["progressPercentage"] = percent
    if left is not None:
        status["estimatedRemainingSeconds"] = left
    return {"trainerStatus": status}


def test_the_progress_line_names_the_percentage_the_estimate_and_the_metrics():
    status = trainer_status(45, 60, "2026-12-07T10:00:00Z", loss="0.2347", accuracy="0.9876")
    assert progress_line("TrainJob ml/t", TRAINJOB, status) == (
        "TrainJob ml/t: Created — 45% done, about 60 s left; loss 0.2347, accuracy 0.9876"
    )
    only_metrics = trainer_status(None, None, "2026-12-07T10:00:00Z", loss="0.5")
    assert progress_line("TrainJob ml/t", TRAINJOB, only_metrics) == "TrainJob ml/t: Created; loss 0.5"
    assert TRAINJOB.summary(status) == "Created — 45% done, about 60 s left", "the summary names no metrics"
    assert progress_line("PyTorchJob ml/t", PYTORCH, status) == "PyTorchJob ml/t: NotStarted", "v1: no trainerStatus"


def test_a_wait_logs_a_line_when_the_progress_changes_and_not_when_it_is_reported_again():
    wait = JobWait("TrainJob ml/t", Deadlines(started_at=0.0, family=TRAINJOB), TRAINJOB)
    job = {"kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"}, "spec": {}}
    looks = [
        trainer_status(10, 90, "2026-12-07T10:00:00Z", loss="0.9"),
        trainer_status(10, 90, "2026-12-07T10:00:05Z", loss="0.9"),  # reported again: no line
        trainer_status(10, 90, "2026-12-07T10:00:10Z", loss="0.8"),  # a metric alone moved: a line
        trainer_status(45, 60, "2026-12-07T10:00:15Z", loss="0.8"),
    ]
    lines = [wait.seen({**job, "status": s}, 1.0).lines.progress for s in looks]
    assert lines == [
        "TrainJob ml/t: Created — 10% done, about 90 s left; loss 0.9",
        None,
        "TrainJob ml/t: Created — 10% done, about 90 s left; loss 0.8",
        "TrainJob ml/t: Created — 45% done, about 60 s left; loss 0.8",
    ]


def test_a_finished_trainjobs_line_keeps_its_last_percentage_and_metrics_but_no_time_left():
    complete = {
        "conditions": [{"type": "Complete", "status": "True", "reason": "AllJobsCompleted"}],
        **trainer_status(100, 5, "2026-12-07T10:00:00Z", loss="0.1"),
    }
    assert progress_line("TrainJob ml/t", TRAINJOB, complete) == (
        "TrainJob ml/t: Complete (AllJobsCompleted) — 100% done; loss 0.1"
    )


def test_many_metrics_are_counted_past_the_first_eight():
    metrics = {f"m{i}": str(i) for i in range(11)}
    assert metrics_words(metrics) == "m0 0, m1 1, m2 2, m3 3, m4 4, m5 5, m6 6, m7 7, and 3 more metrics"
    assert metrics_words({}) == ""


def test_a_point_is_the_report_with_its_metrics_by_name():
    reported = TRAINJOB.trainer_progress(trainer_status(45, 60, "2026-12-07T10:00:00Z", loss="0.2347"))
    assert point_of(reported, "2026-12-07T10:00:09Z") == {
        "at": "2026-12-07T10:00:00Z",
        "percentage": 45,
        "estimated_remaining_seconds": 60,
        "metrics": {"loss": "0.2347"},
    }
    assert point_of(None, "2026-12-07T10:00:09Z") is None
    empty = TRAINJOB.trainer_progress({"trainerStatus": {"lastUpdatedTime": "2026-12-07T10:00:00Z"}})
    assert point_of(empty, "x") is None, "a report of nothing is no point"


def test_a_point_is_kept_only_when_the_progress_changed():
    first = {"at": "t1", "percentage": 10, "estimated_remaining_seconds": 90, "metrics": {"loss": "0.9"}}
    same_again = {**first, "at": "t2"}
    moved = {**first, "at": "t3", "percentage": 20}
    points = with_point(with_point(with_point([], first), same_again), moved)
    assert [p["at"] for p in points] == ["t1", "t3"]
    assert with_point(points, None) == points


def test_a_long_training_keeps_its_whole_course_thinned_and_its_latest_points():
    points: list = []
    for i in range(200):
        points = with_point(points, {"at": f"t{i:03d}", "percentage": i // 2, "metrics": {"step": str(i)}})
    assert len(points) <= MAX_POINTS
    assert points[0]["at"] == "t000" and points[-1]["at"] == "t199"
    assert [p["at"] for p in points] == sorted(p["at"] for p in points)
    assert thinned([{"at": "a"}, {"at": "b"}, {"at": "c"}], 2) == [{"at": "a"}, {"at": "c"}]


def test_points_of_several_sources_merge_in_time_each_change_once():
    a = {"at": "2026-12-07T10:00:00Z", "percentage": 10, "metrics": {}}
    b = {"at": "2026-12-07T10:01:00Z", "percentage": 20, "metrics": {}}
    b_live = {**b, "at": "2026-12-07T10:01:05Z"}
    assert merged([[b, a], [b_live, "junk", {"no": "at"}]]) == [a, b]


def test_the_xcom_summary_has_a_plain_progress_entry_beside_the_raw_status():
    raw = trainer_status(100, 0, "2026-12-07T10:05:00Z", loss="0.12", accuracy="0.99")
    job = {"kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"}, "status": raw}
    summary = job_summary(job, TRAINJOB)
    assert summary["trainerStatus"] == raw["trainerStatus"], "the raw status stays as it was"
    assert summary["progress"] == {
        "percentage": 100,
        "estimated_remaining_seconds": 0,
        "metrics": {"loss": "0.12", "accuracy": "0.99"},
        "last_updated_time": "2026-12-07T10:05:00Z",
    }
    assert "progress" not in job_summary({**job, "status": {}}, TRAINJOB)
    assert summary_entry(None) is None


def test_the_event_carries_every_point_that_fits_else_the_first_and_the_latest():
    job = {"kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"}, "status": {}}
    few = [
        {"at": f"t{i}", "percentage": i, "estimated_remaining_seconds": 9 - i, "metrics": {"loss": "0.1"}}
        for i in range(3)
    ]
    assert unpacked(event_payload(FINISHED, "done", job, progress=few)["progress"]) == few
    many = [
        {
            "at": f"2026-12-07T10:{i:02d}:00Z",
            "percentage": i,
            "estimated_remaining_seconds": None,
            "metrics": {"loss": "0.123456"},
        }
        for i in range(96)
    ]
    payload = event_payload(FINISHED, "done", job, progress=many)
    kept = unpacked(payload["progress"])
    assert len(json.dumps(payload)) <= EVENT_BUDGET and 2 <= len(kept) < len(many)
    assert kept[0] == many[0] and kept[-1] == many[-1]
    assert "progress" not in event_payload(FINISHED, "done", job)


def test_a_deferred_try_hands_over_a_whole_course_of_reports_in_its_event():
    """The example's ten epochs with two metrics each fit whole beside a finished TrainJob's event (a trial's trigger
    kept 6 of 10 when the points went as they are: 1,446 characters against 649 packed)."""
    epochs = [
        {
            "at": f"2026-12-07T16:07:{10 + 2 * i:02d}.123456Z",
            "percentage": 10 * (i + 1),
            "estimated_remaining_seconds": 2 * (9 - i),
            "metrics": {"loss": f"{1.98 / (i + 1):.4f}", "accuracy": f"{0.66 + 0.03 * i:.4f}"},
        }
        for i in range(10)
    ]
    message = f"TrainJob ml/{v2.NAME}: Complete (AllJobsCompleted: jobset completed successfully) — node (2 nodes): 1 "
    cursor = {"pod": f"{v2.NAME}-node-0-0-abcde", "container": "node", "lines": 100, "complete": True}
    payload = event_payload(FINISHED, message, v2.train_job(v2.COMPLETE), progress=epochs, lead_log=cursor)
    assert unpacked(payload["progress"]) == epochs and len(json.dumps(payload)) <= EVENT_BUDGET


def test_packed_points_keep_a_metric_a_point_did_not_report_out_and_read_old_lists_as_they_are():
    points = [
        {"at": "a", "percentage": 10, "estimated_remaining_seconds": None, "metrics": {"loss": "1"}},
        {"at": "b", "percentage": None, "estimated_remaining_seconds": 5, "metrics": {"accuracy": "0.5"}},
    ]
    assert packed(points) == {
        "metrics": ["loss", "accuracy"],
        "rows": [["a", 10, None, "1", None], ["b", None, 5, None, "0.5"]],
    }
    assert unpacked(packed(points)) == points
    assert unpacked(points) == points and unpacked(None) == [] and unpacked({"rows": "x"}) == []

"""A deferred try's progress over time while its trigger waits (:mod:`airflow_trainjob.domain.trigger_progress`):
when the trigger writes its points, what it writes (packed, masked), how a trigger run again after a restart takes up
what it wrote before, and what the Training job tab shows of them before and after the try's end. Pure: no cluster."""

from __future__ import annotations

import json

from airflow_trainjob.domain.progress import MAX_POINTS, packed
from airflow_trainjob.domain.trigger_progress import (
    MIN_WRITE_SECONDS,
    RECORD_FIELD,
    WRITES_PER_SECOND,
    has_new,
    progress_value,
    read_progress_value,
    shown_points,
    taken_up,
    with_trigger_progress,
    write_delay,
    write_due,
    write_interval,
)


def point(second: int, percentage: int, loss: str = "0.5") -> dict:
    return {
        "at": f"2026-12-07T10:{second // 60:02d}:{second % 60:02d}Z",
        "percentage": percentage,
        "estimated_remaining_seconds": 100 - percentage,
        "metrics": {"loss": loss},
    }


A, B, C = point(10, 10, "0.9"), point(20, 20, "0.7"), point(30, 30, "0.5")


def test_the_first_point_is_written_at_once_then_at_most_once_an_interval_and_only_when_new():
    assert not write_due([], None, None, 0.0, 30.0), "no point, nothing to write"
    assert write_due([A], None, None, 0.0, 30.0), "the first write goes at once"
    assert not write_due([A], A, 0.0, 100.0, 30.0), "nothing new since the last write"
    assert not write_due([A, B], A, 0.0, 29.9, 30.0), "new, but within the interval"
    assert write_due([A, B], A, 0.0, 30.0, 30.0)
    assert write_due([A, B], None, 0.0, 30.0, 30.0), "the last write failed: tried again after the interval"
    assert not write_due([A, B], None, 0.0, 5.0, 30.0), "... not sooner"


def test_a_point_held_back_is_written_when_the_interval_has_passed():
    assert has_new([A, B], A) and has_new([A], None) and not has_new([A], dict(A)) and not has_new([], None)
    assert write_delay(None, 50.0, 30.0) == 0.0, "never written: at once"
    assert write_delay(40.0, 50.0, 30.0) == 20.0
    assert write_delay(10.0, 50.0, 30.0) == 0.0


def test_the_interval_grows_when_many_triggers_write_so_that_the_triggerer_writes_at_most_its_rate():
    assert write_interval(0) == write_interval(1) == MIN_WRITE_SECONDS
    assert write_interval(150) == MIN_WRITE_SECONDS
    assert write_interval(1000) == 1000 / WRITES_PER_SECOND == 200.0
    for writers in (1, 10, 150, 151, 1000, 10_000):
        assert writers / write_interval(writers) <= WRITES_PER_SECOND


def test_the_value_is_the_try_and_its_points_packed_and_masked_and_reads_back():
    secret = {**B, "metrics": {"loss": "0.7", "token": "s3cr3t"}}
    value = progress_value(3, [A, secret], redact=lambda text: text.replace("s3cr3t", "***"))
    assert value["try_number"] == 3
    assert value["progress"] == packed([A, {**secret, "metrics": {"loss": "0.7", "token": "***"}}])
    assert "s3cr3t" not in json.dumps(value)
    assert read_progress_value(json.loads(json.dumps(value))) == (
        3,
        [A, {**secret, "metrics": {"loss": "0.7", "token": "***"}}],
    )
    for junk in (None, "x", [], {"try_number": "3"}, {"try_number": True, "progress": []}):
        assert read_progress_value(junk) is None, junk
    assert read_progress_value({"try_number": 2}) == (2, []), "a try and no points"


def test_a_trigger_run_again_takes_up_the_points_its_earlier_run_wrote_for_the_same_try():
    stored = progress_value(2, [A, B])
    assert taken_up(stored, 2, [B, C]) == [A, B, C], "each change once"
    assert taken_up(stored, 2, []) == [A, B]
    assert taken_up(stored, 3, [C]) == [C], "another try's points are not this one's"
    assert taken_up(None, 2, [C]) == [C]
    assert taken_up(stored, None, [C]) == [C]
    many = [point(i, i % 100) for i in range(MAX_POINTS)]
    assert len(taken_up(progress_value(2, many), 2, [point(MAX_POINTS + 1, 99, "0.01")])) <= MAX_POINTS


def test_the_tab_hands_the_triggers_points_to_their_try_only():
    records = [{"try_number": 2, "name": "j"}, {"try_number": 1, "name": "j"}]
    second, first = with_trigger_progress(records, (2, [A, B]))
    assert second[RECORD_FIELD] == [A, B] and RECORD_FIELD not in first
    assert with_trigger_progress(records, None) == records
    assert RECORD_FIELD not in records[0], "the records read are left as they are"


def test_a_running_deferred_try_shows_its_recorded_points_and_its_triggers_then_its_end_wins():
    waiting = {"try_number": 1, "last_seen": {"progress": [A]}, RECORD_FIELD: [A, B, C]}
    assert shown_points(waiting) == [A, B, C], "each change once, oldest first"
    assert shown_points({"try_number": 1, RECORD_FIELD: [B, C]}) == [B, C], "no sight recorded: the trigger's"
    ended = {"try_number": 1, "final": {"progress": [A, C]}, RECORD_FIELD: [A, B, C]}
    assert shown_points(ended) == [A, C], "the try's end, as it recorded it, wins over what its trigger wrote"
    without = {"try_number": 1, "final": {"progress": []}, RECORD_FIELD: [A, B]}
    assert shown_points(without) == [A, B], "an end recorded without points (left out for size): the trigger's"
    assert shown_points({"try_number": 1}) == []

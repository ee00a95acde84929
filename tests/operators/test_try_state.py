"""The states of a try and the moves each allows (:mod:`airflow_trainjob.operators.try_state`): pure, no cluster."""

from __future__ import annotations

import pytest

from airflow_trainjob.operators.try_state import TRANSITIONS, TryProgress, TryState, TryStateError

JOB = {"kind": "PyTorchJob", "metadata": {"name": "train-job", "namespace": "default", "uid": "u1"}}
OTHER = {"kind": "PyTorchJob", "metadata": {"name": "train-job", "namespace": "default", "uid": "u2"}}


def at(state: TryState) -> TryProgress:
    """A try brought to ``state`` by the moves that lead there (holding :data:`JOB` from its take-up on)."""
    progress = TryProgress()
    steps = {
        TryState.NEW: [],
        TryState.TAKEN_UP: [lambda p: p.take_up(JOB)],
        TryState.WAITING: [lambda p: p.take_up(JOB), TryProgress.start_waiting],
        TryState.ENDED: [lambda p: p.take_up(JOB), TryProgress.start_waiting, lambda p: p.end("failed")],
        TryState.CLEANED_UP: [
            lambda p: p.take_up(JOB),
            TryProgress.start_waiting,
            lambda p: p.end("failed"),
            TryProgress.let_go,
        ],
        TryState.STOPPED_BY_AIRFLOW: [TryProgress.stop],
    }[state]
    for step in steps:
        step(progress)
    assert progress.state is state
    return progress


def test_a_synchronous_try_goes_through_every_state_in_order():
    progress = TryProgress()
    assert (progress.state, progress.job) == (TryState.NEW, None)
    progress.take_up(JOB)
    assert (progress.state, progress.job) == (TryState.TAKEN_UP, JOB)
    progress.start_waiting()
    progress.hold(OTHER)  # read again (the patch that says this try follows it)
    assert (progress.state, progress.job) == (TryState.WAITING, OTHER)
    assert progress.end("succeeded") is True
    progress.success_written(True)
    assert (progress.state, progress.end_recorded, progress.success_recorded) == (TryState.ENDED, True, True)
    assert progress.let_go() == OTHER
    assert (progress.state, progress.job, progress.stopped_by_airflow) == (TryState.CLEANED_UP, None, False)


def test_the_cleanup_lets_the_job_go_once():
    progress = at(TryState.ENDED)
    assert progress.let_go() == JOB
    assert progress.let_go() is None
    progress.hold(OTHER)  # a read that comes back after the cleanup does not hold the job again
    assert progress.job is None


def test_the_end_is_recorded_once():
    progress = at(TryState.WAITING)
    assert progress.end("failed") is True
    assert progress.end("failed") is False
    assert progress.end("succeeded") is False  # only a stop is recorded over
    assert progress.state is TryState.ENDED


def test_a_reconnected_failed_job_is_replaced_before_the_wait():
    progress = at(TryState.TAKEN_UP)
    progress.take_up(OTHER)
    assert (progress.state, progress.job) == (TryState.TAKEN_UP, OTHER)


def test_an_earlier_success_is_ended_and_cleaned_up_without_a_wait():
    progress = TryProgress()
    progress.take_up(JOB)
    assert progress.end("succeeded") is True
    assert progress.let_go() == JOB and progress.state is TryState.CLEANED_UP


def test_an_end_without_a_job_leaves_nothing_to_clean_up():
    """The trigger's event says the job is gone, or the earlier try's job whose success is returned is gone."""
    progress = TryProgress()
    assert progress.end("deleted") is True
    assert progress.let_go() is None and progress.state is TryState.ENDED


@pytest.mark.parametrize("state", [s for s in TryState if s is not TryState.STOPPED_BY_AIRFLOW])
def test_airflow_may_stop_a_try_in_any_state(state):
    progress = at(state)
    progress.stop()
    assert progress.state is TryState.STOPPED_BY_AIRFLOW and progress.stopped_by_airflow


def test_a_stop_during_the_wait_is_recorded_and_cleaned_up_once_and_the_try_stays_stopped():
    progress = at(TryState.WAITING)
    progress.stop()
    assert progress.end("stopped") is True
    assert progress.let_go() == JOB
    assert progress.end("stopped") is False  # the wait's way out, raising TrainingJobStoppedError
    assert progress.let_go() is None
    assert progress.state is TryState.STOPPED_BY_AIRFLOW


def test_a_success_seen_after_the_stop_was_recorded_is_recorded_over_it():
    progress = at(TryState.WAITING)
    progress.stop()
    assert progress.end("stopped") is True
    assert progress.end("succeeded") is True
    assert progress.end("succeeded") is False
    assert progress.state is TryState.STOPPED_BY_AIRFLOW


def test_a_stop_after_the_end_does_not_record_over_it():
    progress = at(TryState.ENDED)  # failed
    progress.stop()
    assert progress.end("stopped") is False
    assert progress.let_go() == JOB  # the stop's cleanup, since the way out had not got to it


def test_a_job_taken_up_after_the_stop_is_still_cleaned_up():
    """Airflow's process runs on for a few seconds after on_kill: a job created then is cleaned up on the way out."""
    progress = at(TryState.STOPPED_BY_AIRFLOW)
    assert progress.end("stopped") is True
    progress.take_up(JOB)
    progress.start_waiting()
    assert progress.let_go() == JOB and progress.state is TryState.STOPPED_BY_AIRFLOW


@pytest.mark.parametrize(
    ("state", "move"),
    [
        (TryState.NEW, TryProgress.start_waiting),  # wait before anything was taken up
        (TryState.WAITING, TryProgress.start_waiting),
        (TryState.WAITING, lambda p: p.take_up(OTHER)),  # another job while waiting
        (TryState.ENDED, lambda p: p.take_up(OTHER)),
        (TryState.CLEANED_UP, lambda p: p.take_up(OTHER)),
        (TryState.CLEANED_UP, TryProgress.start_waiting),
        (TryState.TAKEN_UP, TryProgress.let_go),  # cleanup before the end is recorded
        (TryState.WAITING, TryProgress.let_go),
    ],
)
def test_a_move_out_of_order_is_refused(state, move):
    progress = at(state)
    with pytest.raises(TryStateError, match=f"a try that is {state.value} cannot become"):
        move(progress)
    assert progress.state is state


def test_the_first_end_of_a_try_that_cleaned_up_is_refused():
    progress = TryProgress()
    progress._state = TryState.CLEANED_UP  # not reachable without an end: the table alone refuses it
    with pytest.raises(TryStateError):
        progress.end("failed")


def test_the_table_names_every_state_and_only_the_stop_is_reachable_from_everywhere():
    assert set(TRANSITIONS) == set(TryState)
    everywhere = set.intersection(*(set(targets) for targets in TRANSITIONS.values()))
    assert everywhere == {TryState.STOPPED_BY_AIRFLOW}
    assert TRANSITIONS[TryState.STOPPED_BY_AIRFLOW] == frozenset(TryState)

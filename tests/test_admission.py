"""Queue state and deadlines (airflow_trainjob.domain.deadlines): pure decisions, no cluster."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.conditions import started_since_admission
from airflow_trainjob.domain.deadlines import (
    LOOK_MARGIN,
    QUEUE_LINE_SECONDS,
    QUEUE_TIMEOUT,
    STARTUP_TIMEOUT,
    TIMEOUT,
    Deadlines,
    look_again_in,
    queue_line,
    queue_state,
)
from airflow_trainjob.families import family_of

V1 = family_of("PyTorchJob")

T0 = 1_800_000_000.0  # the try's start, epoch seconds


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: str, at: float, reason: str = "") -> dict:
    return {"type": type_, "status": status, "reason": reason, "lastTransitionTime": stamp(at)}


def job(suspend=None, conds=(), queue: str | None = "team-a") -> dict:
    run_policy = {} if suspend is None else {"suspend": suspend}
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "metadata": {"name": "j", "labels": labels},
        "spec": {"runPolicy": run_policy},
        "status": {"conditions": list(conds)},
    }


CREATED = condition("Created", "True", T0)


def test_created_suspended_before_the_operator_acts_is_queued():
    state = queue_state(job(suspend=True), V1)
    assert state.queued and state.queue_name == "team-a" and state.queued_since is None
    assert state.where() == "Kueue queue 'team-a'"


def test_suspended_condition_is_queued_with_its_time_and_decides_the_phase():
    seen = job(suspend=True, conds=[CREATED, condition("Suspended", "True", T0 + 1, "PyTorchJobSuspended")])
    state = queue_state(seen, V1)
    assert state.queued and state.queued_since == T0 + 1
    assert conditions.phase(seen["status"]) == "Suspended" and conditions.is_suspended(seen["status"])


def test_a_stale_running_true_does_not_outrank_suspended():
    status = {"conditions": [CREATED, condition("Running", "True", T0 + 5), condition("Suspended", "True", T0 + 9)]}
    assert conditions.phase(status) == "Suspended"


def test_resumed_is_admitted_at_the_condition_turn():
    state = queue_state(job(suspend=False, conds=[CREATED, condition("Suspended", "False", T0 + 30, "Resumed")]), V1)
    assert not state.queued and state.admitted_at == T0 + 30 and state.queued_since is None


def test_admitted_by_kueue_before_the_operator_resumes_it_stays_queued():
    # Kueue set suspend false; the Suspended condition is still true until the operator reconciles.
    assert queue_state(job(suspend=False, conds=[CREATED, condition("Suspended", "True", T0)]), V1).queued


def test_never_suspended_and_without_queue_label():
    state = queue_state(job(queue=None, conds=[CREATED]), V1)
    assert not state.queued and state.admitted_at is None and state.queue_name is None
    assert state.where() == "its queue (runPolicy.suspend is true)"


def test_a_finished_job_is_not_queued_even_with_a_true_suspended_left():
    status = [condition("Suspended", "True", T0), condition("Failed", "True", T0 + 3)]
    assert not queue_state(job(conds=status), V1).queued
    assert not queue_state(job(suspend=True, conds=status), V1).queued  # suspended after it finished: nothing to admit


def test_startup_timeout_does_not_run_while_queued_and_counts_from_admission():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=10)
    assert d.observe(job(suspend=True), T0) == "queued"
    assert d.passed(T0 + 500) is None  # 500 s in the queue: not a startup failure
    assert d.seconds_left(T0 + 500) is None  # no clock that ends the wait runs
    admitted = job(suspend=False, conds=[CREATED, condition("Suspended", "False", T0 + 500, "Resumed")])
    # Seen 1 s after the server's (whole-second) timestamp: the startup clock starts when it was seen.
    assert d.observe(admitted, T0 + 501) == "admitted"
    assert d.passed(T0 + 510) is None
    assert d.seconds_left(T0 + 505) == pytest.approx(6)
    assert d.passed(T0 + 512) == (STARTUP_TIMEOUT, 10)


def test_startup_timeout_from_creation_when_no_queue_holds_the_job():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=10)
    d.observe(job(queue=None, conds=[CREATED]), T0 + 1)
    assert d.passed(T0 + 9) is None and d.passed(T0 + 11) == (STARTUP_TIMEOUT, 10)


def test_running_stops_the_startup_clock():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=10)
    d.observe(job(conds=[CREATED, condition("Running", "True", T0 + 2)]), T0 + 3)
    assert d.passed(T0 + 100) is None


def test_queue_timeout_counts_in_the_queue_only():
    d = Deadlines(family=V1, started_at=T0, queue_timeout=60)
    d.observe(job(suspend=True, conds=[CREATED, condition("Suspended", "True", T0)]), T0 + 1)
    assert d.queued_for(T0 + 30) == pytest.approx(30)
    assert d.passed(T0 + 59) is None
    assert d.passed(T0 + 61) == (QUEUE_TIMEOUT, 60)


def test_preempted_job_gets_a_new_queue_clock_and_a_new_startup_clock():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=20, queue_timeout=60)
    d.observe(job(conds=[CREATED, condition("Running", "True", T0 + 5)]), T0 + 6)
    preempted = [
        CREATED,
        condition("Running", "False", T0 + 100, "PyTorchJobSuspended"),
        condition("Suspended", "True", T0 + 100, "PyTorchJobSuspended"),
    ]
    assert d.observe(job(suspend=True, conds=preempted), T0 + 101) == "requeued"
    line = queue_line("PyTorchJob ml/j", d, "requeued", T0 + 101)
    assert "was suspended again after it had been admitted (Kueue preempted or evicted it" in line
    assert "its training starts over then, unless the program resumes from a checkpoint" in line
    # Seen entering the queue at T0 + 101: its clock starts then, not at the server's whole second before.
    assert d.queued_for(T0 + 150) == pytest.approx(49)
    assert d.passed(T0 + 160) is None and d.passed(T0 + 162) == (QUEUE_TIMEOUT, 60)
    resumed = [
        CREATED,
        condition("Running", "False", T0 + 100, "PyTorchJobSuspended"),
        condition("Suspended", "False", T0 + 140, "PyTorchJobResumed"),
    ]
    assert d.observe(job(suspend=False, conds=resumed), T0 + 141) == "admitted"
    # Running (False since the suspension) predates the admission: the job has not started again yet.
    assert d.passed(T0 + 160) is None and d.passed(T0 + 162) == (STARTUP_TIMEOUT, 20)
    running_again = [*resumed, condition("Running", "False", T0 + 150, "PyTorchJobRestarting")]
    d.observe(job(suspend=False, conds=running_again), T0 + 151)  # ran since the admission, now restarting
    assert d.passed(T0 + 500) is None


def test_timeout_counts_from_the_start_queue_included_and_comes_first():
    d = Deadlines(family=V1, started_at=T0, timeout=100, queue_timeout=1000)
    d.observe(job(suspend=True), T0)
    assert d.passed(T0 + 99) is None and d.passed(T0 + 101) == (TIMEOUT, 100)


def test_server_times_are_never_before_the_try_nor_after_now():
    d = Deadlines(family=V1, started_at=T0, queue_timeout=60)
    # A job queued long before this try attached to it: the try's queue clock starts at the try.
    d.observe(job(suspend=True, conds=[condition("Suspended", "True", T0 - 3600)]), T0)
    assert d.passed(T0 + 30) is None
    later = Deadlines(family=V1, started_at=T0, queue_timeout=60)
    later.observe(job(suspend=True, conds=[condition("Suspended", "True", T0 + 999)]), T0 + 10)  # a server ahead
    assert later.queued_for(T0 + 10) == 0


def test_a_triggerer_restart_keeps_the_clocks_from_the_job():
    # A fresh Deadlines (a trigger re-created) sees the job already admitted 50 s ago: startup counts from then.
    d = Deadlines(family=V1, started_at=T0, startup_timeout=60)
    d.observe(job(suspend=False, conds=[CREATED, condition("Suspended", "False", T0 + 100)]), T0 + 150)
    assert d.passed(T0 + 159) is None and d.passed(T0 + 161) == (STARTUP_TIMEOUT, 60)


def test_a_job_preempted_and_admitted_again_within_one_second_has_not_started_since():
    # The server's timestamps are whole seconds: the suspension's Running False and the admission share one.
    status = {
        "conditions": [
            CREATED,
            condition("Running", "False", T0 + 100, "PyTorchJobSuspended"),
            condition("Suspended", "False", T0 + 100, "PyTorchJobResumed"),
        ]
    }
    assert not started_since_admission(status, T0 + 100)
    d = Deadlines(family=V1, started_at=T0, startup_timeout=20)
    d.observe(job(conds=[CREATED, condition("Running", "True", T0 + 5)]), T0 + 6)
    d.observe(
        job(suspend=True, conds=[*status["conditions"][:2], condition("Suspended", "True", T0 + 100)]), T0 + 100.2
    )
    d.observe(job(suspend=False, conds=status["conditions"]), T0 + 100.6)
    assert d.passed(T0 + 120.5) is None and d.passed(T0 + 120.7) == (STARTUP_TIMEOUT, 20)


def test_started_since_admission():
    assert started_since_admission({"conditions": [condition("Running", "True", T0)]}, T0 + 50)
    assert not started_since_admission({"conditions": [condition("Running", "False", T0)]}, T0 + 50)
    assert started_since_admission({"conditions": [condition("Running", "False", T0 + 60)]}, T0 + 50)
    assert started_since_admission({"conditions": [condition("Running", "False", T0)]}, None)
    assert not started_since_admission({}, None)


def test_queue_lines_name_the_queue_and_the_time():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=600, queue_timeout=900)
    turn = d.observe(job(suspend=True), T0)
    assert queue_line("PyTorchJob ml/j", d, turn, T0 + 42) == (
        "PyTorchJob ml/j is waiting in Kueue queue 'team-a' (suspended: not admitted yet) for 42 s; "
        "queue_timeout 900 s (858 s left); startup_timeout counts from admission"
    )
    turn = d.observe(job(suspend=False, conds=[condition("Suspended", "False", T0 + 50)]), T0 + 51)
    assert queue_line("PyTorchJob ml/j", d, turn, T0 + 51) == (
        "PyTorchJob ml/j was admitted from Kueue queue 'team-a'; startup_timeout of 600 s counts from now"
    )


def test_a_sensor_has_no_deadlines_to_name_and_sees_the_whole_wait():
    d = Deadlines(family=V1, started_at=T0)
    d.observe(job(suspend=True, conds=[condition("Suspended", "True", T0 - 18)]), T0)
    assert queue_line("PyTorchJob ml/j", d, "queued", T0 + 2) == (
        "PyTorchJob ml/j is waiting in Kueue queue 'team-a' (suspended: not admitted yet) for 20 s"
    )


def test_the_queue_is_logged_at_each_turn_and_every_five_minutes():
    d = Deadlines(family=V1, started_at=T0)
    turn = d.observe(job(suspend=True), T0)
    assert d.due(turn, T0)
    assert not d.due(d.observe(job(suspend=True), T0 + 100), T0 + 100)
    assert d.due(d.observe(job(suspend=True), T0 + 301), T0 + 301)
    assert not d.due(d.observe(job(suspend=True), T0 + 400), T0 + 400)
    admitted = job(suspend=False, conds=[condition("Suspended", "False", T0 + 450)])
    assert d.due(d.observe(admitted, T0 + 451), T0 + 451)
    assert not d.due(d.observe(admitted, T0 + 9000), T0 + 9000)  # not queued: nothing to repeat


# ---- when to look again -----------------------------------------------------------------------------------------


def test_look_again_in_is_never_past_the_nearest_deadline():
    assert look_again_in(60, 5) == pytest.approx(5 + LOOK_MARGIN)  # the deadline comes first
    assert look_again_in(60, 500) == 60  # the wait's own interval comes first
    assert look_again_in(None, 5) == pytest.approx(5 + LOOK_MARGIN)
    assert look_again_in(60, None) == 60
    assert look_again_in(None, None) is None  # nothing bounds the wait: only a change calls for a look
    assert look_again_in(60, 0) == pytest.approx(LOOK_MARGIN)  # passed: look at once
    assert look_again_in(60, -3) == pytest.approx(LOOK_MARGIN)


def test_the_next_look_moves_to_queue_timeout_when_a_queue_suspends_the_job_after_creation():
    # The case: created (startup_timeout 600 s runs), suspended a moment later (queue_timeout 8 s runs).
    d = Deadlines(family=V1, started_at=T0, startup_timeout=600, queue_timeout=8)
    d.observe(job(conds=[CREATED]), T0)
    assert d.next_look(T0) == pytest.approx(600 + LOOK_MARGIN)
    assert d.observe(job(suspend=True, conds=[CREATED]), T0 + 0.4) == "queued"
    assert d.next_look(T0 + 0.5) == pytest.approx(7.9 + LOOK_MARGIN)
    # The operator's Suspended condition, a moment later, dates the entry to the second before it was seen: the
    # clock this wait started when it saw the job enter the queue stands.
    d.observe(job(suspend=True, conds=[CREATED, condition("Suspended", "True", T0)]), T0 + 0.6)
    assert d.next_look(T0 + 1) == pytest.approx(7.4 + LOOK_MARGIN)
    assert d.passed(T0 + 8.3) is None and d.passed(T0 + 8.5) == (QUEUE_TIMEOUT, 8)


def test_the_next_look_after_a_preemption_and_after_the_admission_that_follows():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=20, queue_timeout=60)
    d.observe(job(conds=[CREATED, condition("Running", "True", T0 + 5)]), T0 + 6)
    assert d.next_look(T0 + 6) is None  # running, no timeout: nothing but a change calls for a look
    assert d.next_look(T0 + 6, every=900) == 900
    preempted = [CREATED, condition("Running", "False", T0 + 99), condition("Suspended", "True", T0 + 99)]
    d.due(d.observe(job(suspend=True, conds=preempted), T0 + 100), T0 + 100)
    assert d.next_look(T0 + 100) == pytest.approx(60 + LOOK_MARGIN)
    resumed = [*preempted[:2], condition("Suspended", "False", T0 + 130)]
    d.due(d.observe(job(suspend=False, conds=resumed), T0 + 131), T0 + 131)
    assert d.next_look(T0 + 131) == pytest.approx(20 + LOOK_MARGIN)  # startup_timeout from this admission


def test_a_queued_job_is_looked_at_for_its_next_queue_line_counted_from_the_last():
    d = Deadlines(family=V1, started_at=T0, startup_timeout=600)
    assert d.due(d.observe(job(suspend=True), T0), T0)
    assert d.next_look(T0 + 100) == pytest.approx(QUEUE_LINE_SECONDS - 100)
    assert d.next_look(T0 + 100, every=60) == 60
    assert d.due(d.observe(job(suspend=True), T0 + 301), T0 + 301)
    assert d.next_look(T0 + 301) == pytest.approx(QUEUE_LINE_SECONDS)


def test_a_queue_clock_found_running_at_the_first_look_keeps_the_servers_time():
    # A trigger re-created (a triggerer restart) finds the job queued since 30 s: its queue_timeout counts from then.
    d = Deadlines(family=V1, started_at=T0 - 100, queue_timeout=60)
    d.observe(job(suspend=True, conds=[condition("Suspended", "True", T0 - 30)]), T0)
    assert d.next_look(T0) == pytest.approx(30 + LOOK_MARGIN)

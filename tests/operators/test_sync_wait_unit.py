"""How long the synchronous wait lets one watch of its job last (``look_within``), over the in-memory hook: as long
as a watch may (``WATCH_SECONDS``) with no deadline to judge, never past the next deadline, and never past the
next "still queued" line while the job waits in its queue; asked again after each state seen, so a change that
starts a nearer deadline moves the next look. No cluster."""

from __future__ import annotations

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME
from airflow_trainjob.domain.deadlines import QUEUE_LINE_SECONDS
from airflow_trainjob.watching.job_watch import Seen
from tests.operators.test_run_unit import RUNNING, SUCCEEDED, make_run
from tests.support.fake_hook import FakeTrainingJobHook, job_status


class WindowRecorder:
    """Stands in for JobWatch: the job with ``status``, then (after asking ``look_within``) the job Succeeded."""

    def __init__(self, status: dict) -> None:
        self.status = status
        self.windows: list[float | None] = []

    def __call__(self, hook, job, *, poll_interval, outage_tolerance, log):
        self.job = job
        return self

    def follow(self, look_within):
        yield Seen({**self.job, "status": self.status})
        self.windows.append(look_within())
        yield Seen({**self.job, "status": SUCCEEDED})


class ChangesRecorder(WindowRecorder):
    """Stands in for JobWatch: each of ``states`` (``(suspend, status)``) in turn, asking ``look_within`` after each
    (as the watch does after each event), then the job Succeeded."""

    def __init__(self, *states: tuple[bool, dict]) -> None:
        super().__init__(SUCCEEDED)
        self.states = states

    def follow(self, look_within):
        for suspend, status in self.states:
            spec = {**self.job["spec"], "runPolicy": {**self.job["spec"].get("runPolicy", {}), "suspend": suspend}}
            yield Seen({**self.job, "spec": spec, "status": status})
            self.windows.append(look_within())
        yield Seen({**self.job, "status": SUCCEEDED})


def test_a_queue_suspending_the_job_after_creation_brings_the_next_look_to_queue_timeout():
    hook = FakeTrainingJobHook(namespace="default")
    recorder = ChangesRecorder(
        (False, job_status("Created")), (True, job_status("Created")), (True, job_status("Created", "Suspended"))
    )
    run = make_run(hook, watch=recorder, startup_timeout=600.0, queue_timeout=8.0)
    run.create_or_attach()
    run.wait()
    created, suspended, condition_written = recorder.windows
    assert created is not None and 599 < created <= 600.05
    assert suspended is not None and 7 < suspended <= 8.05
    assert condition_written is not None and 7 < condition_written <= suspended


def wait_with(status: dict, **settings) -> list[float | None]:
    hook = FakeTrainingJobHook(namespace="default")
    recorder = WindowRecorder(status)
    run = make_run(hook, watch=recorder, **settings)
    run.create_or_attach()
    run.wait()
    return recorder.windows


def test_a_running_job_without_deadlines_is_watched_as_long_as_a_watch_may_last():
    assert wait_with(RUNNING, timeout=None, startup_timeout=None) == [None]  # None: WATCH_SECONDS


def test_the_next_deadline_ends_the_watch():
    (window,) = wait_with(RUNNING, timeout=30.0, startup_timeout=None)
    assert window is not None and 29.0 < window <= 30.05


def test_a_queued_job_is_looked_at_for_its_next_queue_line():
    queued = job_status("Created", "Suspended")
    (window,) = wait_with(
        queued,
        timeout=None,
        startup_timeout=None,
        run_policy={"suspend": True},
        labels={LABEL_KUEUE_QUEUE_NAME: "team-a"},
    )
    assert window is not None and QUEUE_LINE_SECONDS - 1 < window <= QUEUE_LINE_SECONDS + 0.05

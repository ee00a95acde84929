"""Every deadline fires on time, whatever changes or does not: the time a deadline FIRED, measured from the change
that started it, in both waits of the operator (synchronous and deferred), against the local cluster.

A deadline that starts on a change — ``queue_timeout`` when a queue suspends the job after its creation or preempts
it later, ``startup_timeout`` from each admission — must fire within :data:`LATE` seconds of its time also when
nothing changes after that change. The synchronous wait once followed a watch whose length was fixed when it began
(from the deadline that stood then: 600 s of ``startup_timeout``, 900 s for a running job, 300 s for a queued one's
next line), so such a deadline fired when that watch ended.

There is no Kueue on the local cluster: the tests do what Kueue does (as in ``test_queued.py``). They set
``runPolicy.suspend`` (the local training controller then writes ``Suspended`` a moment later, as the training
operator does for Kueue) and set it false to admit the job. ``schedulingPolicy.minAvailable`` larger than the local
node's pod slots keeps an admitted job from ever running (the controller creates no pod).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.exceptions import TrainingJobTimeoutError
from airflow_trainjob.watching.job_watch import JobWatch
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, defer, first_event, operator_for
from tests.support.jobs import SLEEP, jobs, pytorch_specs, true_types
from tests.support.report import record

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: Seconds of the deadline under test.
LIMIT = 6.0
#: Seconds a deadline may fire after its time: the watch ends on a whole second (< 1 s), the change's way to the
#: wait, and the task's reaction on a loaded machine.
LATE = 3.0
#: The API server's timestamps are whole seconds: a clock started from one (the trigger's first look found the job
#: already queued or admitted) may start up to this much before the change; the synchronous wait sees every change.
SERVER_SECOND = 1.0
#: Seconds a test waits for the task to end at all: far past the deadline, far short of when the watch's old length
#: (300, 600, 900 s) made it fire.
GIVE_UP = 60.0
#: A gang larger than the local node's pod slots: the controller never creates the job's pods.
NEVER_SCHEDULED = {"schedulingPolicy": {"minAvailable": 500}}


class Try:
    """The operator's try in a thread, in ``mode``; when its deadline fired (the synchronous wait raised, the trigger
    sent its event) and what it raised."""

    def __init__(self, mode: str, operator: Any, ti: Any) -> None:
        self.mode = mode
        self.fired_at: float | None = None
        self.event: dict | None = None
        self.error: BaseException | None = None
        self.started_at = time.time()
        self._thread = threading.Thread(target=self._run, args=(operator, ti), daemon=True)
        self._thread.start()

    def _run(self, operator: Any, ti: Any) -> None:
        try:
            if self.mode == "sync":
                operator.execute({"ti": ti})
            else:
                self.event = first_event(defer(operator, ti), timeout=GIVE_UP)
                self.fired_at = time.time()
                operator.execute_complete({"ti": ti}, self.event)
        except BaseException as e:
            self.fired_at = self.fired_at or time.time()
            self.error = e

    def fired_after(self, which: str, change_at: float) -> float:
        """Seconds from ``change_at`` until ``which`` fired; fails the test if the try ended otherwise or not within
        :data:`GIVE_UP` seconds."""
        self._thread.join(GIVE_UP)
        assert not self._thread.is_alive(), (
            f"{which} of {LIMIT:g} s had not fired {time.time() - change_at:.0f} s after the change that started it"
        )
        assert isinstance(self.error, TrainingJobTimeoutError), self.error
        assert f"{which} of {LIMIT:g} s passed" in str(self.error)
        if self.event is not None:
            assert self.event["which"] == which
        assert self.fired_at is not None
        return self.fired_at - change_at

    def assert_fired_on_time(self, which: str, change_at: float, earliest: float | None = None) -> None:
        after = self.fired_after(which, change_at)
        if earliest is None:
            earliest = LIMIT if self.mode == "sync" else LIMIT - SERVER_SECOND
        assert_on_time(self.mode, which, after, earliest)


def assert_on_time(wait: str, which: str, after: float, earliest: float = LIMIT) -> None:
    """``which`` (of :data:`LIMIT` seconds) fired ``after`` seconds after the change that started it: not before
    ``earliest``, at most :data:`LATE` seconds late. Recorded for the suite's report, and printed."""
    on_time = earliest <= after <= LIMIT + LATE
    record("deadline_timing", wait=wait, deadline=which, on_time=on_time)
    print(f"{wait}: {which} of {LIMIT:g} s fired {after:.2f} s after the change that started it")
    assert on_time, f"{which} of {LIMIT:g} s fired {after:.2f} s after the change that started it"


def the_job(custom_objects, namespace: str) -> dict:
    return wait_for(lambda: next(iter(jobs(custom_objects, namespace)), None), timeout=60, what="the job")


def has_true(custom_objects, namespace: str, name: str, condition: str) -> dict:
    """The job once its ``condition`` is true."""
    read = lambda: custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
    return wait_for(read, lambda job: condition in true_types(job), timeout=60, what=f"{name} {condition}")


def patch_run_policy(custom_objects, namespace: str, name: str, run_policy: dict) -> float:
    """Patch the job's ``runPolicy`` (as Kueue does ``suspend``); the time just before the patch was sent."""
    at = time.time()
    custom_objects.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, "pytorchjobs", name, {"spec": {"runPolicy": run_policy}}
    )
    return at


@pytest.fixture
def job_watches(monkeypatch) -> list[float]:
    """The window (seconds) of each watch request of the synchronous wait's job watch, in order."""
    windows: list[float] = []
    original = JobWatch._watch

    def counted(self, window):
        windows.append(window)
        return original(self, window)

    monkeypatch.setattr(JobWatch, "_watch", counted)
    return windows


@pytest.mark.parametrize("mode", MODES)
def test_queue_timeout_fires_on_time_when_a_queue_suspends_the_job_right_after_creation(
    mode, ti, namespace, custom_objects, job_watches
):
    # The case: queue_timeout 8 s fired after 601 s in the synchronous wait (the default startup_timeout,
    # 600 s, set the watch's length when the job was created).
    operator = operator_for(mode, pytorch_specs(SLEEP, workers=0), queue_name="team-a", queue_timeout=LIMIT)
    task = Try(mode, operator, ti)
    name = the_job(custom_objects, namespace)["metadata"]["name"]
    suspended_at = patch_run_policy(custom_objects, namespace, name, {"suspend": True})
    task.assert_fired_on_time("queue_timeout", suspended_at)
    if mode == "sync":
        # One job watch at a time: the one from the creation, ended when the suspension brought the deadline
        # nearer, and one that ends at the deadline (a third only if the Suspended condition came in after it).
        print(f"job watch requests: {len(job_watches)}, windows (s): {', '.join(f'{w:.2f}' for w in job_watches)}")
        assert 2 <= len(job_watches) <= 3, job_watches
        assert job_watches[0] > 500 and job_watches[-1] <= LIMIT + 1, job_watches


@pytest.mark.parametrize("mode", MODES)
def test_queue_timeout_fires_on_time_when_a_running_job_is_preempted(mode, ti, namespace, custom_objects):
    operator = operator_for(mode, pytorch_specs(SLEEP, workers=0), queue_name="team-a", queue_timeout=LIMIT)
    task = Try(mode, operator, ti)
    name = the_job(custom_objects, namespace)["metadata"]["name"]
    has_true(custom_objects, namespace, name, "Running")  # no deadline runs now: the watch may last 900 s
    preempted_at = patch_run_policy(custom_objects, namespace, name, {"suspend": True})
    task.assert_fired_on_time("queue_timeout", preempted_at)


@pytest.mark.parametrize("mode", MODES)
def test_startup_timeout_counts_from_the_last_admission_of_a_preempted_job(mode, ti, namespace, custom_objects):
    operator = operator_for(mode, pytorch_specs(SLEEP, workers=0), queue_name="team-a", startup_timeout=LIMIT)
    task = Try(mode, operator, ti)
    name = the_job(custom_objects, namespace)["metadata"]["name"]
    has_true(custom_objects, namespace, name, "Running")
    # It runs for longer than startup_timeout: what fires after the next admission can only be that admission's.
    time.sleep(max(0.0, task.started_at + LIMIT + LATE - time.time()))
    patch_run_policy(custom_objects, namespace, name, {"suspend": True})
    has_true(custom_objects, namespace, name, "Suspended")  # queued, no queue_timeout: the next look is its line
    patch_run_policy(custom_objects, namespace, name, NEVER_SCHEDULED)  # admitted again, it never runs
    admitted_at = patch_run_policy(custom_objects, namespace, name, {"suspend": False})
    task.assert_fired_on_time("startup_timeout", admitted_at)


@pytest.mark.parametrize("mode", MODES)
def test_startup_timeout_from_an_admission_after_which_nothing_changes(mode, ti, namespace, custom_objects):
    operator = operator_for(
        mode,
        pytorch_specs(SLEEP, workers=0),
        queue_name="team-a",
        run_policy={"suspend": True, **NEVER_SCHEDULED},
        startup_timeout=LIMIT,
    )
    task = Try(mode, operator, ti)
    name = the_job(custom_objects, namespace)["metadata"]["name"]
    has_true(custom_objects, namespace, name, "Suspended")
    admitted_at = patch_run_policy(custom_objects, namespace, name, {"suspend": False})
    task.assert_fired_on_time("startup_timeout", admitted_at)


@pytest.mark.parametrize("mode", MODES)
def test_timeout_fires_on_time_when_nothing_changes(mode, ti, namespace, custom_objects):
    operator = operator_for(
        mode, pytorch_specs(SLEEP, workers=0), run_policy=NEVER_SCHEDULED, timeout=LIMIT, startup_timeout=None
    )
    task = Try(mode, operator, ti)
    # The clock starts once the job is created (after this try's checks), a moment after the task began.
    assert_on_time(mode, "timeout", task.fired_after("timeout", task.started_at))

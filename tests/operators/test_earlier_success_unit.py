"""A try that Airflow runs after an earlier try's job succeeded, over the in-memory hook (no cluster), in both modes:
a retry of the same series returns that success without creating a job, whether the job is gone (deleted by the
try's own cleanup), kept, or left half cleaned up; a clear, a record of an earlier provider or ``durable=False``
train again.

The cluster-side versions (the worker SIGKILLed right after the cleanup, against the real apiserver) are in
``tests/operators/test_retry_after_success.py``; the real Airflow deployment in
``tests/ui/test_deployment_retry_after_success.py``.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.records import RECORD_KEY, JobRecord, TrySeries, read_records
from airflow_trainjob.exceptions import TrainingJobStoppedError
from airflow_trainjob.links.training_job import TrainingJobLink
from airflow_trainjob.operators.recorder import JobRecorder
from airflow_trainjob.operators.run import JOB_NOT_REUSED, RunSettings, TrainingJobRun, job_summary
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.triggers.training_job import FINISHED
from tests.support.fake_hook import FakeTaskInstance, FakeTaskStateStore, FakeTrainingJobHook, job_status

NAME, NS = "train-job", "default"
RUN_ID = "manual__unit"
CONTAINER = {"name": "pytorch", "image": "python:3.11-slim", "command": ["python", "-c", "print(1)"]}
MASTER = {"Master": {"template": {"spec": {"containers": [CONTAINER]}}}}
RUNNING = job_status("Created", "Running")
SUCCEEDED = job_status(
    "Created", "Running", "Succeeded", end="2026-01-01T00:01:30Z", replica_statuses={"Master": {"succeeded": 1}}
)
MODES = ["synchronous", "deferred"]
LOG = logging.getLogger("tests.earlier_success_unit")
NOT_AGAIN = f"Not training again: try 1's PyTorchJob {NS}/{NAME} succeeded (completed 2026-01-01T00:01:30Z)"


@pytest.fixture
def hook() -> FakeTrainingJobHook:
    return FakeTrainingJobHook(namespace=NS)


def operator(hook: FakeTrainingJobHook, mode: str = "synchronous", **kwargs: Any) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.001)
    kwargs.setdefault("get_logs", False)
    kwargs.setdefault("replica_specs", MASTER)
    op = TrainingJobOperator(task_id="train", kind="PyTorchJob", job_name=NAME, deferrable=mode == "deferred", **kwargs)
    op.__dict__["hook"] = hook  # the cached property
    return op


def context(store: Any, try_number: int, clear_number: int = 0, max_tries: int = 2) -> dict[str, Any]:
    """What the task runner hands ``execute``: the task instance (with ``max_tries``), its DAG run (with
    ``clear_number``) and the store kept across tries."""
    ti = FakeTaskInstance(run_id=RUN_ID, try_number=try_number)
    ti.max_tries = max_tries  # type: ignore[attr-defined]
    return {"ti": ti, "dag_run": SimpleNamespace(clear_number=clear_number), "task_state_store": store}


def records(store: FakeTaskStateStore) -> list[JobRecord]:
    return read_records(store.get(RECORD_KEY))


def succeeds_once_replaced(hook: FakeTrainingJobHook) -> None:
    """A get_job step: a successor of try 1's job (uid-1), once there, has succeeded."""
    job = hook.job(NAME)
    if job is not None and job["metadata"]["uid"] != "uid-1":
        hook.set_status(NAME, SUCCEEDED)


def first_try_succeeds(hook: FakeTrainingJobHook, store: FakeTaskStateStore, mode: str, **kwargs: Any) -> dict:
    """Try 1 runs to its success, in ``mode``, and cleans up (``on_finish`` as given, default
    ``delete_succeeded_job``): its summary."""
    ctx = context(store, 1)
    if mode == "synchronous":
        hook.on_get(lambda h: h.set_status(NAME, SUCCEEDED))
        return operator(hook, mode, **kwargs).execute(ctx)
    with pytest.raises(TaskDeferred):
        operator(hook, mode, **kwargs).execute(ctx)
    hook.set_status(NAME, SUCCEEDED)
    event: dict[str, Any] = {
        "outcome": FINISHED,
        "message": f"PyTorchJob {NS}/{NAME} succeeded",
        "job": hook.job(NAME),
        "pods": [],
    }
    return operator(hook, mode, **kwargs).execute_complete(ctx, event)  # resumed: a new instance of the task


@pytest.mark.parametrize("mode", MODES)
def test_a_retry_after_the_cleanup_deleted_the_job_returns_its_success(hook, mode, capfd):
    """The case of the scheduler's race (deferred) and of a worker lost after the cleanup (both modes): the job is
    gone, the record says it succeeded; try 2 returns try 1's summary and creates nothing."""
    store = FakeTaskStateStore()
    summary = first_try_succeeds(hook, store, mode)
    assert hook.jobs == {}  # deleted by try 1's cleanup (delete_succeeded_job)
    capfd.readouterr()

    ctx = context(store, 2)
    again = operator(hook, mode).execute(ctx)  # no TaskDeferred: nothing to wait for
    assert again == summary
    assert len(hook.called("create_job")) == 1
    task_log = capfd.readouterr().out
    assert NOT_AGAIN in task_log and "this is try 2 of the same series of tries" in task_log
    assert "The job is gone: that try's cleanup deleted it (on_finish='delete_succeeded_job')." in task_log
    latest, first = records(store)
    assert (latest.try_number, latest.reused_from_try, latest.uid) == (2, 1, first.uid)
    assert latest.final is not None and latest.final.outcome == "succeeded" and latest.final.summary == summary
    assert latest.final.job == (first.final.job if first.final else None)  # the job as try 1 recorded it
    assert ctx["ti"].xcom["job_name"] == NAME and ctx["ti"].xcom["job_namespace"] == NS
    assert ctx["ti"].xcom[TrainingJobLink().xcom_key].endswith("/tasks/train/plugin/training-job")


@pytest.mark.parametrize("mode", MODES)
def test_a_retry_of_a_retry_names_the_try_whose_job_succeeded(hook, mode, capfd):
    store = FakeTaskStateStore()
    summary = first_try_succeeds(hook, store, mode)
    operator(hook, mode).execute(context(store, 2))
    capfd.readouterr()
    assert operator(hook, mode).execute(context(store, 3)) == summary
    assert NOT_AGAIN in capfd.readouterr().out
    assert [(r.try_number, r.reused_from_try) for r in records(store)] == [(3, 1), (2, 1), (1, None)]
    assert len(hook.called("create_job")) == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_clear_trains_again(hook, mode, capfd):
    store = FakeTaskStateStore()
    first_try_succeeds(hook, store, mode)
    capfd.readouterr()
    ctx = context(store, 2, clear_number=1, max_tries=3)  # the UI's Clear: clear_number + 1, max_tries = 1 + retries
    if mode == "synchronous":
        hook.on_get(*[succeeds_once_replaced] * 10)
        summary = operator(hook, mode).execute(ctx)
        assert summary["name"] == NAME
    else:
        with pytest.raises(TaskDeferred):
            operator(hook, mode).execute(ctx)
    assert len(hook.called("create_job")) == 2
    assert (
        f"Try 1's PyTorchJob {NS}/{NAME} succeeded, but the task was cleared since (clear_number 0, max_tries 2 then, "
        "clear_number 1, max_tries 3 now): this try trains again"
    ) in capfd.readouterr().out
    assert records(store)[0].reused_from_try is None


@pytest.mark.parametrize("mode", MODES)
def test_a_clear_that_left_the_run_alone_trains_again(hook, mode):
    """``clearTaskInstances`` with ``reset_dag_runs: false`` keeps ``clear_number``; ``max_tries`` tells."""
    store = FakeTaskStateStore()
    first_try_succeeds(hook, store, mode)
    hook.on_get(*[succeeds_once_replaced] * 10)
    try:
        operator(hook, mode).execute(context(store, 2, clear_number=0, max_tries=3))
    except TaskDeferred:
        pass
    assert len(hook.called("create_job")) == 2


def test_a_clear_replaces_a_kept_job_that_succeeded(hook, capfd):
    """Synchronous and durable, ``keep_job``: the cleared try used to find the kept job in ``task_state_store``,
    ``Succeeded``, and return its old result; it trains again, in a new job."""
    store = FakeTaskStateStore()
    first = first_try_succeeds(hook, store, "synchronous", on_finish="keep_job")
    assert store[TrainingJobOperator.external_id_key]["uid"] == "uid-1" and hook.job(NAME) is not None
    hook.on_get(*[succeeds_once_replaced] * 10)
    summary = operator(hook, on_finish="keep_job").execute(context(store, 2, clear_number=1, max_tries=3))
    assert hook.job(NAME)["metadata"]["uid"] != "uid-1"
    assert len(hook.called("create_job")) == 3  # try 1's; try 2's, refused (409: the kept job); its successor
    assert summary["conditions"] == first["conditions"] and records(store)[0].uid == hook.job(NAME)["metadata"]["uid"]
    assert f"Replacing PyTorchJob {NS}/{NAME} left by an earlier try (Succeeded)" in capfd.readouterr().out


@pytest.mark.parametrize("mode", MODES)
def test_a_kept_job_is_returned_by_a_retry_and_kept(hook, mode, capfd):
    store = FakeTaskStateStore()
    summary = first_try_succeeds(hook, store, mode, on_finish="keep_job")
    capfd.readouterr()
    assert operator(hook, mode, on_finish="keep_job").execute(context(store, 2)) == summary
    assert hook.job(NAME)["metadata"]["uid"] == "uid-1" and len(hook.called("create_job")) == 1
    task_log = capfd.readouterr().out
    assert "The job is still there: cleaning it up now as that try would have (on_finish='keep_job')." in task_log
    assert f"Keeping Succeeded PyTorchJob {NS}/{NAME} for inspection" in task_log


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_lost_during_the_cleanup(hook, mode, capfd):
    """Try 1 recorded its success and died before its cleanup deleted the job: try 2 returns the recorded summary
    and finishes the cleanup."""
    store = FakeTaskStateStore()
    summary = first_try_succeeds(hook, store, mode, on_finish="keep_job")  # as if its delete never happened
    capfd.readouterr()
    assert operator(hook, mode).execute(context(store, 2)) == summary
    assert hook.jobs == {} and len(hook.called("create_job")) == 1
    assert f"Deleting PyTorchJob {NS}/{NAME} (delete_succeeded_job)" in capfd.readouterr().out


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_lost_before_it_recorded_the_success(hook, mode, capfd):
    """Try 1 created its job and its worker was lost (its record has no end); the job succeeded meanwhile. Try 2
    returns the job's summary and cleans it up, in both modes (the deferred retry used to replace it and train
    again)."""
    store = FakeTaskStateStore()
    first = operator(hook, mode)
    ctx = context(store, 1)
    external_id = first.submit_job(ctx)  # created and recorded; then the worker is gone
    store.set(TrainingJobOperator.external_id_key, external_id)  # as ResumableJobMixin persists it
    hook.set_status(NAME, SUCCEEDED)
    expected = job_summary(hook.job(NAME))
    capfd.readouterr()
    summary = operator(hook, mode).execute(context(store, 2))
    assert summary == expected
    assert len(hook.called("create_job")) == 1 and hook.jobs == {}
    task_log = capfd.readouterr().out
    assert f"{NOT_AGAIN}; try 1 ended without recording how (its worker was lost, or Airflow" in task_log
    latest = records(store)[0]
    assert latest.reused_from_try == 1 and latest.final is not None and latest.final.summary == summary


@pytest.mark.parametrize("mode", MODES)
def test_a_lost_try_whose_job_still_runs_is_followed_as_before(hook, mode):
    store = FakeTaskStateStore()
    external_id = operator(hook, mode).submit_job(context(store, 1))
    store.set(TrainingJobOperator.external_id_key, external_id)
    hook.set_status(NAME, RUNNING)
    if mode == "synchronous":
        hook.on_get(lambda h: None, lambda h: None, lambda h: h.set_status(NAME, SUCCEEDED))
        assert operator(hook, mode).execute(context(store, 2))["conditions"] == SUCCEEDED["conditions"]
    else:
        with pytest.raises(TaskDeferred) as deferred:
            operator(hook, mode).execute(context(store, 2))
        assert deferred.value.trigger.serialize()[1]["uid"] == "uid-1"  # attached, not replaced
    assert len(hook.called("create_job")) == 1 + (mode == "deferred")  # deferred: create, 409, attach


@pytest.mark.parametrize("mode", MODES)
def test_a_lost_try_whose_job_succeeds_right_after_the_first_look(hook, mode, capfd):
    """``execute`` reads the job Running; by the next read (``reconnect``, or the 409 of ``create_or_attach``) it has
    succeeded: taken up as this try's result, never replaced."""
    store = FakeTaskStateStore()
    external_id = operator(hook, mode).submit_job(context(store, 1))
    store.set(TrainingJobOperator.external_id_key, external_id)
    hook.set_status(NAME, RUNNING)
    hook.on_get(lambda h: None, lambda h: h.set_status(NAME, SUCCEEDED))
    capfd.readouterr()
    if mode == "synchronous":
        summary = operator(hook, mode).execute(context(store, 2))
        assert summary["conditions"] == SUCCEEDED["conditions"] and hook.jobs == {}
        assert f"{NOT_AGAIN}; try 1 ended without recording how" in capfd.readouterr().out
        assert records(store)[0].reused_from_try == 1
    else:
        with pytest.raises(TaskDeferred) as deferred:
            operator(hook, mode).execute(context(store, 2))
        assert deferred.value.trigger.serialize()[1]["uid"] == "uid-1"  # its end is seen at once by the trigger
        assert f"Attaching to PyTorchJob {NS}/{NAME}, Succeeded, created by try 1" in capfd.readouterr().out
        assert not hook.called("delete_job")  # not replaced
    assert len(hook.called("create_job")) == 1 + (mode == "deferred")  # deferred: try 2's create met a 409


def test_a_deferred_try_whose_execute_airflow_runs_again(hook, capfd):
    """Seen in a real deployment (``... finished with state success, but the task instance's state attribute is
    queued``): try 1 deferred, its trigger fired, and Airflow ran try 1's ``execute`` again instead of resuming it.
    Its own job, succeeded, is its result: not replaced."""
    store = FakeTaskStateStore()
    with pytest.raises(TaskDeferred):
        operator(hook, "deferred").execute(context(store, 1))
    hook.set_status(NAME, SUCCEEDED)
    expected = job_summary(hook.job(NAME))
    capfd.readouterr()
    assert operator(hook, "deferred").execute(context(store, 1)) == expected
    assert len(hook.called("create_job")) == 1 and hook.jobs == {}  # cleaned up, as the resume would have
    assert "and Airflow runs try 1 again (no clear since: clear_number 0, max_tries 2)" in capfd.readouterr().out
    (record,) = records(store)
    assert record.final is not None and record.final.summary == expected
    assert (record.reused_from_try, record.attached) == (None, False)  # it is try 1's own job


def test_a_success_seen_after_airflow_stopped_the_resumed_try_is_recorded_as_one(hook, capfd):
    """``on_kill`` (SIGTERM: the worker shuts down, or Airflow moved the task instance on) arrives while the resumed
    task reads its job; the task runner lets the try go on, and it sees the job's success and deletes it. The record
    says succeeded, with the summary (the kill had recorded the try as stopped): the next try returns it."""
    store = FakeTaskStateStore()
    ctx = context(store, 1)
    with pytest.raises(TaskDeferred):
        operator(hook, "deferred").execute(ctx)
    hook.set_status(NAME, SUCCEEDED)
    resumed = operator(hook, "deferred")
    hook.on_get(lambda h: resumed.on_kill())  # the signal handler, during the resume's first read of the job
    event: dict[str, Any] = {"outcome": FINISHED, "message": "done", "job": hook.job(NAME), "pods": []}
    summary = resumed.execute_complete(ctx, event)
    assert hook.jobs == {}
    (record,) = records(store)
    assert record.final is not None and (record.final.outcome, record.final.summary) == ("succeeded", summary)
    assert operator(hook, "deferred").execute(context(store, 2)) == summary
    assert len(hook.called("create_job")) == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_try_stopped_after_its_job_succeeded_leaves_it_to_the_next(hook, mode, capfd):
    """Airflow stopped try 1 (``on_kill``: a worker shutdown) when its job had just succeeded and before the try saw
    it: the try ends stopped, the kill's cleanup keeps the succeeded job. The next try returns its success."""
    store = FakeTaskStateStore()
    ctx = context(store, 1)
    if mode == "synchronous":
        first = operator(hook, mode)
        hook.on_get(lambda h: (h.set_status(NAME, SUCCEEDED), first.on_kill()))
        with pytest.raises(TrainingJobStoppedError):
            first.execute(ctx)
    else:
        with pytest.raises(TaskDeferred):
            operator(hook, mode).execute(ctx)
        hook.set_status(NAME, SUCCEEDED)
        resumed = operator(hook, mode)
        resumed._run_for(ctx)  # the resumed task is killed before it reads the event
        resumed.on_kill()
    (record,) = records(store)
    assert record.final is not None and record.final.outcome == "stopped" and hook.job(NAME) is not None
    expected = job_summary(hook.job(NAME))
    capfd.readouterr()
    assert operator(hook, mode).execute(context(store, 2)) == expected
    assert len(hook.called("create_job")) == 1 and hook.jobs == {}
    assert f"{NOT_AGAIN}; try 1 was stopped by Airflow before it saw the job's end" in capfd.readouterr().out


class StaleTryStore:
    """``task_state_store`` as a try sees it once Airflow has moved the task instance on (seen in a real deployment):
    a read answers 404 "Task instance not found", which the task SDK returns as "no such key"; a write raises."""

    def get(self, key: str, default: Any = None) -> Any:
        return default

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:
        raise RuntimeError("API_SERVER_ERROR: 404 Task instance not found")


@pytest.mark.parametrize("mode", MODES)
def test_a_stale_run_of_the_same_try_never_replaces_its_succeeded_job(hook, mode):
    """Try 1 deferred and its trigger fired; Airflow ran try 1's ``execute`` again after it had moved the task
    instance on, so that run reads no records at all. Its own job, succeeded, is taken up, not replaced: the try that
    Airflow runs next finds it and returns its success."""
    with pytest.raises(TaskDeferred):
        operator(hook, "deferred").execute(context(FakeTaskStateStore(), 1))
    hook.set_status(NAME, SUCCEEDED)
    stale = context(StaleTryStore(), 1)
    if mode == "deferred":
        with pytest.raises(TaskDeferred) as deferred:
            operator(hook, mode).execute(stale)
        assert deferred.value.trigger.serialize()[1]["uid"] == "uid-1"  # the trigger sees it succeeded at once
    else:
        with pytest.raises(RuntimeError, match="404"):  # ResumableJobMixin's own write of the job's identity
            operator(hook, mode).execute(stale)
    assert hook.job(NAME)["metadata"]["uid"] == "uid-1"  # still there, succeeded: the next try's result
    assert not [c for c in hook.called("delete_job") if c[-1] == "Foreground"]  # never replaced
    assert len(hook.called("create_job")) == 2  # try 1's; the stale run's, which met the job (409)


class StoreThatLosesTheEnd(FakeTaskStateStore):
    """``task_state_store`` that refuses to record a try's end, as for a try that Airflow has moved the task instance
    past while it finished (seen in a real deployment: its resume saw the success, could not record it, deleted the
    job; the next try, finding neither, trained again)."""

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:
        if key == RECORD_KEY and any(entry.get("final") for entry in value):
            raise RuntimeError("API_SERVER_ERROR: 404 Task instance not found")
        super().set(key, value, retention=retention)


@pytest.mark.parametrize("mode", MODES)
def test_a_success_that_cannot_be_recorded_keeps_its_job_for_the_next_try(hook, mode, capfd):
    store = StoreThatLosesTheEnd()
    summary = first_try_succeeds(hook, store, mode)
    task_log = capfd.readouterr().out
    assert (
        f"Not deleting Succeeded PyTorchJob {NS}/{NAME}: its success could not be recorded in task_state_store"
    ) in task_log
    assert hook.job(NAME) is not None and records(store)[0].final is None
    assert operator(hook, mode).execute(context(FakeTaskStateStore(store), 2)) == summary  # Airflow's next try
    assert hook.jobs == {} and len(hook.called("create_job")) == 1


@pytest.mark.parametrize("mode", MODES)
def test_the_earlier_try_ends_beside_this_one(hook, mode, capfd):
    """Airflow runs try 2 while try 1's resumed task still finishes (the scheduler failed try 1 on a stale executor
    event): try 2 reads the records before try 1 has recorded its end, then finds the job gone, deleted by try 1's
    cleanup, which comes after its record. Reading the records again finds the success."""
    store = FakeTaskStateStore()
    ctx = context(store, 1)
    operator(hook, mode).submit_job(ctx)
    hook.set_status(NAME, SUCCEEDED)
    expected = job_summary(hook.job(NAME))
    first = JobRecorder(
        store, TaskInstanceIdentity.from_context(ctx), "kubernetes_default", LOG, TrySeries(clear_number=0, max_tries=2)
    )

    def try_1_ends(h: FakeTrainingJobHook) -> None:  # its record, then its cleanup: before try 2's read answers
        first.ended("succeeded", h.job(NAME), summary=expected)
        h.remove_job(NAME)

    hook.on_get(try_1_ends)
    capfd.readouterr()
    assert operator(hook, mode).execute(context(store, 2)) == expected
    assert len(hook.called("create_job")) == 1
    assert f"{NOT_AGAIN}, and this is try 2" in capfd.readouterr().out


@pytest.mark.parametrize("mode", MODES)
def test_a_record_of_an_earlier_provider_trains_again(hook, mode, capfd):
    store = FakeTaskStateStore()
    first_try_succeeds(hook, store, mode)
    entries = store[RECORD_KEY]
    for entry in entries:  # as an earlier version wrote it: no series, no summary
        entry.pop("series"), entry["final"].pop("summary")
    capfd.readouterr()
    try:
        hook.on_get(*[succeeds_once_replaced] * 10)
        operator(hook, mode).execute(context(store, 2))
    except TaskDeferred:
        pass
    assert len(hook.called("create_job")) == 2
    assert "written by an earlier version of airflow-trainjob" in capfd.readouterr().out


@pytest.mark.parametrize("mode", MODES)
def test_durable_false_trains_again(hook, mode):
    store = FakeTaskStateStore()
    first_try_succeeds(hook, store, mode)
    hook.on_get(*[succeeds_once_replaced] * 10)
    try:
        operator(hook, mode, durable=False, reattach_on_restart=False).execute(context(store, 2))
    except TaskDeferred:
        pass
    assert len(hook.called("create_job")) == 2


def test_a_changed_spec_is_said_and_the_success_returned(hook, capfd):
    store = FakeTaskStateStore()
    summary = first_try_succeeds(hook, store, "synchronous")
    other = {"Master": {"template": {"spec": {"containers": [{**CONTAINER, "image": "python:3.12-slim"}]}}}}
    capfd.readouterr()
    assert operator(hook, replica_specs=other).execute(context(store, 2)) == summary
    assert "The job this try would create differs from the one try 1 ran" in capfd.readouterr().out
    assert len(hook.called("create_job")) == 1


def test_reconnect_to_a_stored_job_that_succeeded_does_not_make_it_the_result(hook):
    """``execute`` returns the successes that are this try's (earlier_success); one that reaches ``reconnect`` is
    replaced, as a failed one is."""
    identity = TaskInstanceIdentity(dag_id="retrain", task_id="train", run_id=RUN_ID, map_index=-1, try_number=1)
    first = operator(hook)
    external_id = first.submit_job({"ti": FakeTaskInstance(run_id=RUN_ID)})
    hook.set_status(NAME, SUCCEEDED)
    run = TrainingJobRun(
        hook,
        TaskInstanceIdentity(**{**identity.__dict__, "try_number": 2}),
        RunSettings(poll_interval=0.001, get_logs=False),
        manifest=first._manifest or {},
        log=first.log,
    )
    assert run.reconnect(external_id) == JOB_NOT_REUSED
    assert not first.is_job_active(JOB_NOT_REUSED) and not first.is_job_succeeded(JOB_NOT_REUSED)
    with pytest.raises(Exception, match="no summary"):
        run.result()

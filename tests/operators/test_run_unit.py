"""TrainingJobRun and the operator's entry points over an in-memory hook: every branch of a try, no cluster.

The synchronous wait runs the real :class:`~airflow_trainjob.watching.job_watch.JobWatch` on the fake hook, whose watch is
refused (403), so it reads the job every ``poll_interval`` (1 ms here) and each scripted ``get_job`` step is one
look; a few cases drive the wait with a scripted watch instead (what only a watch can see). The deadlines and
the outage tolerance are cut to milliseconds.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME, LABEL_TRY_NUMBER
from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY, hold, user_run_policy
from airflow_trainjob.domain.ownership import ANNOTATION_FOLLOWED_BY_TRY, TaskInstanceIdentity
from airflow_trainjob.exceptions import (
    InvalidJobSpecError,
    JobDeletedError,
    JobNotOwnedError,
    KubernetesAccessError,
    TrainingJobError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.models.job import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.operators import sync_wait as sync_wait_module
from airflow_trainjob.operators import take_up
from airflow_trainjob.operators.run import JOB_GONE, JOB_NOT_REUSED, RunSettings, TrainingJobRun, job_summary
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.triggers.training_job import DELETED, ERROR, FINISHED, TIMED_OUT, TrainingJobTrigger
from airflow_trainjob.watching.job_watch import Seen
from tests.support.fake_hook import (
    FakeTaskInstance,
    FakeTaskStateStore,
    FakeTrainingJobHook,
    api_error,
    job_status,
)
from tests.support.legacy import as_legacy

NAME, NS = "train-job", "default"
REF = f"PyTorchJob {NS}/{NAME}"
RUN_ID = "manual__unit"
LOG = logging.getLogger("tests.run_unit")
CONTAINER = {"name": "pytorch", "image": "python:3.11-slim", "command": ["python", "-c", "print(1)"]}
MASTER = {"Master": {"template": {"spec": {"containers": [CONTAINER]}}}}

RUNNING = job_status("Created", "Running")
SUCCEEDED = job_status(
    "Created", "Running", "Succeeded", end="2026-01-01T00:01:30Z", replica_statuses={"Master": {"succeeded": 1}}
)
FAILED = job_status(
    "Created", "Running", "Failed", end="2026-01-01T00:01:30Z", replica_statuses={"Master": {"failed": 1}}
)


def identity(try_number: int = 1) -> TaskInstanceIdentity:
    return TaskInstanceIdentity(dag_id="retrain", task_id="train", run_id=RUN_ID, map_index=-1, try_number=try_number)


def manifest_for(who: TaskInstanceIdentity, run_policy: Any = None, labels: dict | None = None) -> dict[str, Any]:
    spec = TrainingJobSpec.parse("PyTorchJob", MASTER, run_policy, None)
    return hold(build_manifest(spec=spec, name=NAME, namespace=NS, labels={**(labels or {}), **who.labels()}))


def make_run(
    hook: FakeTrainingJobHook,
    try_number: int = 1,
    *,
    watch: Any = None,
    run_policy: Any = None,
    labels: dict | None = None,
    **settings: Any,
) -> TrainingJobRun:
    settings.setdefault("poll_interval", 0.001)
    settings.setdefault("get_logs", False)
    who = identity(try_number)
    extra = {"watch": watch} if watch is not None else {}
    return TrainingJobRun(
        hook, who, RunSettings(**settings), manifest=manifest_for(who, run_policy, labels), log=LOG, **extra
    )


def existing_job(hook: FakeTrainingJobHook, try_number: int, status: dict | None = None, **meta: Any) -> dict:
    """The job an earlier try (``try_number``) of this task instance created."""
    job = manifest_for(identity(try_number))
    job["metadata"].update(meta)
    if status is not None:
        job["status"] = status
    return hook.put_job(job)


def becomes(status: dict[str, Any]):
    """A get_job step: the job has ``status`` from this look on."""
    return lambda hook: hook.set_status(NAME, status)


class ScriptedWatch:
    """Stands in for JobWatch: the job as given, then one :class:`Seen` per scripted look (a function of that job)."""

    def __init__(self, *looks):
        self.looks = looks
        self.made: list[dict[str, Any]] = []

    def __call__(self, hook, job, *, poll_interval, outage_tolerance, log):
        self.made.append({"job": job, "poll_interval": poll_interval, "outage_tolerance": outage_tolerance})
        self.job = job
        return self

    def follow(self, look_within):
        yield Seen(self.job)
        for look in self.looks:
            assert look_within() > 0
            yield look(self.job)


@pytest.fixture
def hook() -> FakeTrainingJobHook:
    return FakeTrainingJobHook(namespace=NS)


@pytest.fixture
def log_text(caplog):
    caplog.set_level(logging.INFO, logger=LOG.name)
    return lambda: "\n".join(r.getMessage() for r in caplog.records)


# ---- create or attach ------------------------------------------------------------------------------


def test_create_wait_success_summary_and_delete(hook, log_text):
    run = make_run(hook)
    job = run.create_or_attach()
    assert run.external_id == {"name": NAME, "namespace": NS, "uid": job["metadata"]["uid"]}
    hook.on_get(becomes(RUNNING), becomes(SUCCEEDED))
    summary = run.wait()
    assert summary == {
        "kind": "PyTorchJob",
        "name": NAME,
        "namespace": NS,
        "conditions": SUCCEEDED["conditions"],
        "replicaStatuses": {"Master": {"succeeded": 1}},
        "startTime": "2026-01-01T00:00:00Z",
        "completionTime": "2026-01-01T00:01:30Z",
        "duration": 90.0,
    }
    assert run.result() is summary  # get_job_result after poll_until_complete: the same summary, no second cleanup
    text = log_text()
    assert f"Created {REF}" in text and f"{REF}: Running" in text and f"{REF} succeeded" in text
    assert f"Deleting {REF} (delete_succeeded_job)" in text
    assert hook.jobs == {}
    assert not hook.called("patch_job")  # created by this try: it follows it already


def test_409_then_404_the_job_vanished_between_create_and_read(hook, log_text):
    hook.fail("create_job", api_error(409))
    job = make_run(hook).create_or_attach()
    assert [c[0] for c in hook.calls] == ["create_job", "get_job", "create_job"]
    assert hook.job(NAME)["metadata"]["uid"] == job["metadata"]["uid"]


def test_409_then_another_error_is_raised(hook):
    hook.fail("create_job", api_error(409))
    hook.fail("get_job", api_error(403))
    with pytest.raises(ApiException) as raised:
        make_run(hook).create_or_attach()
    assert raised.value.status == 403


def test_attach_to_this_trys_job_after_a_restart(hook, log_text):
    stored = existing_job(hook, 1, RUNNING)
    job = make_run(hook).create_or_attach()
    assert job["metadata"]["uid"] == stored["metadata"]["uid"]
    assert f"Attaching to {REF}, still Running, created by try 1" in log_text()
    assert not hook.called("delete_job") and not hook.called("patch_job")


def test_attach_to_an_earlier_trys_running_job_records_that_this_try_follows_it(hook, log_text):
    stored = existing_job(hook, 1, RUNNING)
    job = make_run(hook, 2).create_or_attach()
    assert job["metadata"]["uid"] == stored["metadata"]["uid"]
    assert hook.job(NAME)["metadata"]["annotations"][ANNOTATION_FOLLOWED_BY_TRY] == "2"
    assert f"Attaching to {REF}, still Running, created by try 1" in log_text()


def test_attach_to_a_job_an_earlier_release_created(hook, log_text):
    """Labelled under the legacy prefix (before 1.0), created by try 1: try 2, after the upgrade, attaches to it and
    records that it follows it under the prefix written now."""
    stored = hook.put_job(
        {**as_legacy(manifest_for(identity(1), run_policy={"cleanPodPolicy": "All"})), "status": RUNNING}
    )
    job = make_run(hook, 2).create_or_attach()
    assert job["metadata"]["uid"] == stored["metadata"]["uid"] and not hook.called("delete_job")
    assert hook.job(NAME)["metadata"]["annotations"][ANNOTATION_FOLLOWED_BY_TRY] == "2"
    assert f"Attaching to {REF}, still Running, created by try 1" in log_text()
    assert identity(2).follows(hook.job(NAME)) and user_run_policy(hook.job(NAME)).held


def test_a_failed_follow_annotation_is_a_warning(hook, log_text):
    existing_job(hook, 1, RUNNING)
    hook.fail("patch_job", api_error(500))
    make_run(hook, 2).create_or_attach()
    assert f"Could not record on {REF} that try 2 follows it" in log_text()


@pytest.mark.parametrize(
    ("status", "reattach", "phase"),
    [(FAILED, True, "Failed"), (SUCCEEDED, True, "Succeeded"), (RUNNING, False, "Running")],
)
def test_replace_a_stale_job_of_an_earlier_try(hook, log_text, status, reattach, phase):
    stored = existing_job(hook, 1, status)
    job = make_run(hook, 2, reattach_on_restart=reattach).create_or_attach()
    assert job["metadata"]["uid"] != stored["metadata"]["uid"]
    assert job["metadata"]["labels"][LABEL_TRY_NUMBER] == "2"
    assert hook.called("delete_job") == [
        ("delete_job", "PyTorchJob", NS, NAME, stored["metadata"]["uid"], "Foreground")
    ]
    text = log_text()
    assert f"Replacing {REF} left by an earlier try ({phase})" in text and f"Created {REF}" in text


def test_replace_a_job_being_deleted_waits_for_it_to_go(hook, log_text, monkeypatch):
    monkeypatch.setattr(take_up, "REPLACE_POLL_SECONDS", 0.001)
    existing_job(hook, 1, RUNNING, deletionTimestamp="2026-01-01T00:05:00Z")
    hook.on_get(lambda h: None, lambda h: None, lambda h: h.remove_job(NAME))  # the 409's read, one look, gone
    job = make_run(hook, 2).create_or_attach()
    assert job["metadata"]["labels"][LABEL_TRY_NUMBER] == "2"
    assert not hook.called("delete_job")  # already being deleted (e.g. by the killed try)
    assert f"Replacing {REF} left by an earlier try (Running, being deleted)" in log_text()


def test_a_replaced_job_that_does_not_go_fails_the_try(hook, monkeypatch):
    monkeypatch.setattr(take_up, "REPLACE_TIMEOUT", 0.01)
    monkeypatch.setattr(take_up, "REPLACE_POLL_SECONDS", 0.001)
    existing_job(hook, 1, FAILED, deletionTimestamp="2026-01-01T00:05:00Z")
    with pytest.raises(TrainingJobError) as raised:
        make_run(hook, 2).create_or_attach()
    assert str(raised.value) == f"{REF} of an earlier try was not gone after 0 s"


def test_a_job_of_someone_else_is_refused_and_left_alone(hook):
    foreign = hook.put_job(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": NAME, "labels": {"team": "other"}},
            "spec": {},
        }
    )
    with pytest.raises(JobNotOwnedError) as raised:
        make_run(hook).create_or_attach()
    assert str(raised.value) == (
        f"A PyTorchJob named {NS}/{NAME} already exists and is not labelled as this task instance's (dag_id=retrain, "
        f"task_id=train, run_id={RUN_ID}, map_index=-1); it was left untouched. Set another job_name or remove it."
    )
    assert hook.job(NAME) == foreign and not hook.called("delete_job")


# ---- outage tolerance ------------------------------------------------------------------------------


def test_transient_errors_for_a_while_then_success(hook, log_text):
    make_run(hook).create_or_attach()
    run = make_run(hook)
    run.create_or_attach()  # attaches to the job just created (same try)
    hook.fail("get_job", *(api_error(503) for _ in range(4)))
    hook.on_get(becomes(SUCCEEDED))
    assert run.wait()["completionTime"] == "2026-01-01T00:01:30Z"
    text = log_text()
    assert f"{REF}: the Kubernetes API is not answering as expected (503 Service Unavailable" in text
    assert f"{REF}: the Kubernetes API answers again after" in text
    assert f"Watching {REF} was refused" in text  # the fake refuses watches: the wait reads the job instead


def test_past_the_outage_tolerance_the_last_error_fails_the_try(hook, log_text, monkeypatch):
    monkeypatch.setattr(sync_wait_module, "API_OUTAGE_TOLERANCE", 0.02)
    run = make_run(hook)
    run.create_or_attach()
    hook.fail_always("get_job", api_error(500))
    with pytest.raises(ApiException) as raised:
        run.wait()
    assert raised.value.status == 500
    assert str(raised.value).startswith("500 Internal Server Error") and REF in str(raised.value)
    # The cleanup could not read the job either: said, and the verdict (the API's error) stands.
    assert f"Could not clean up {REF} after the task's verdict" in log_text()
    assert hook.job(NAME) is not None


def test_the_watch_gets_the_tolerance_and_poll_interval(hook):
    watch = ScriptedWatch(lambda job: Seen({**job, "status": SUCCEEDED}))
    run = make_run(hook, watch=watch, poll_interval=7.0)
    run.create_or_attach()
    run.wait()
    assert watch.made[0]["poll_interval"] == 7.0
    assert watch.made[0]["outage_tolerance"] == sync_wait_module.API_OUTAGE_TOLERANCE == 300.0


# ---- verdicts ----------------------------------------------------------------------------------------


def test_permanent_failure_is_not_retried_and_the_failed_job_is_kept(hook, log_text):
    run = make_run(hook)
    run.create_or_attach()

    def fails(h):
        h.add_pod(NAME, "Master", phase="Failed", exit_code=1, log="loading\nbad input")
        h.set_status(NAME, FAILED)

    hook.on_get(becomes(RUNNING), fails)
    with pytest.raises(AirflowFailException) as raised:
        run.wait()
    message = str(raised.value)
    assert "PyTorchJobFailed" in message and "Master-0" in message and "exit code 1" in message
    assert "permanent" in message and "| bad input" in message
    assert not isinstance(raised.value, TrainingJobError)
    assert hook.job(NAME) is not None  # delete_succeeded_job keeps a failed job
    assert (
        f"Keeping Failed {REF} for inspection (on_finish='delete_succeeded_job'; its pods follow cleanPodPolicy "
        f"Running); remove it with: kubectl delete pytorchjobs.kubeflow.org {NAME} -n {NS}"
    ) in log_text()


def test_a_secret_a_failed_replica_printed_is_masked_in_the_tries_error(hook):
    """The try's error quotes the failed replica's last lines; a secret the task rendered into the job (a Variable
    the masker knows) is masked in the exception itself, which reaches places Airflow's log masker does not (an
    OpenLineage FAIL event's ``errorMessage``)."""
    from airflow.providers.common.compat.sdk import mask_secret

    secret = "pw_RUNUNITfailure0123456789"
    mask_secret(secret)
    run = make_run(hook)
    run.create_or_attach()

    def fails(h):
        h.add_pod(NAME, "Master", phase="Failed", exit_code=3, log=f"pw is {secret}\nbad input")
        h.set_status(NAME, FAILED)

    hook.on_get(becomes(RUNNING), fails)
    with pytest.raises(AirflowFailException) as raised:
        run.wait()
    assert secret not in str(raised.value) and "| pw is ***" in str(raised.value), str(raised.value)
    assert run.error is raised.value


def test_retryable_failure_137(hook):
    run = make_run(hook, on_finish="delete_job")
    run.create_or_attach()

    def killed(h):
        h.add_pod(NAME, "Master", phase="Failed", exit_code=137)
        h.set_status(NAME, FAILED)

    hook.on_get(killed)
    with pytest.raises(TrainingJobError) as raised:
        run.wait()
    assert not isinstance(raised.value, AirflowFailException)
    assert "exit code 137" in str(raised.value) and "retryable" in str(raised.value)
    assert hook.jobs == {}  # on_finish=delete_job


def test_a_kept_job_gets_its_run_policy_back_with_its_ttl(hook, log_text):
    run = make_run(hook, run_policy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60}, on_finish="keep_job")
    run.create_or_attach()
    assert ANNOTATION_HELD_RUN_POLICY in hook.job(NAME)["metadata"]["annotations"]
    hook.on_get(lambda h: (h.add_pod(NAME, "Master", phase="Succeeded", exit_code=0), h.set_status(NAME, SUCCEEDED)))
    run.wait()
    kept = hook.job(NAME)
    assert kept["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    assert kept["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 60
    assert ANNOTATION_HELD_RUN_POLICY not in kept["metadata"].get("annotations", {})
    assert hook.pods == {}  # cleanPodPolicy All, applied by the task
    assert (
        f"Keeping Succeeded {REF} for inspection (on_finish='keep_job'; its pods follow cleanPodPolicy All); the "
        "training operator deletes it 60 s after it finished (ttlSecondsAfterFinished), now: that time has "
        "passed"
    ) in log_text()


def test_deleted_outside_the_task_before_it_finished(hook):
    run = make_run(hook)
    run.create_or_attach()
    hook.on_get(becomes(RUNNING), lambda h: h.remove_job(NAME))
    with pytest.raises(JobDeletedError) as raised:
        run.wait()
    assert str(raised.value).startswith(f"{REF} was deleted outside this task before it finished (last seen Running")


def test_deleted_right_after_it_finished_is_judged_by_its_last_state(hook, log_text):
    watch = ScriptedWatch(lambda job: Seen({**job, "status": SUCCEEDED}, deleted=True))
    run = make_run(hook, watch=watch)
    run.create_or_attach()
    hook.remove_job(NAME)
    assert run.wait()["conditions"] == SUCCEEDED["conditions"]
    assert f"{REF} was deleted outside this task right after it finished: Succeeded" in log_text()


def test_gone_with_the_end_announced_in_events(hook, log_text):
    run = make_run(hook)
    job = run.create_or_attach()
    hook.add_event(
        NAME, "PyTorchJobSucceeded", "PyTorchJob train-job is successfully completed.", uid=job["metadata"]["uid"]
    )
    hook.on_get(becomes(RUNNING), lambda h: h.remove_job(NAME))
    summary = run.wait()
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert summary["completionTime"] == "2026-01-01T00:02:00Z"
    assert f"{REF} was deleted outside this task right after it finished: Succeeded (PyTorchJobSucceeded" in log_text()


def test_replaced_by_another_object(hook):
    run = make_run(hook, watch=ScriptedWatch(lambda job: Seen(job, deleted=True, replaced=True)))
    run.create_or_attach()
    with pytest.raises(JobDeletedError) as raised:
        run.wait()
    assert str(raised.value) == f"{REF} was deleted outside this task and replaced by another object"


def test_timeout_deletes_the_running_job(hook, log_text):
    run = make_run(hook, timeout=0.05)
    run.create_or_attach()
    hook.add_pod(NAME, "Master")
    hook.set_status(NAME, RUNNING)
    hook.add_event(NAME, "FailedScheduling", "0/1 nodes are available", type_="Warning")
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run.wait()
    assert str(raised.value) == (
        f"{REF}: timeout of 0.05 s passed; last state: Running (PyTorchJobRunning: "
        "PyTorchJob is running); warnings: FailedScheduling: 0/1 nodes are available"
    )
    assert f"Deleting {REF} (not finished)" in log_text() and hook.jobs == {}


def test_startup_timeout_with_no_controller(hook):
    run = make_run(hook, startup_timeout=0.05)
    run.create_or_attach()
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run.wait()
    assert str(raised.value) == (
        f"{REF}: startup_timeout of 0.05 s passed and no controller has acted on the job (no status, no pods): the "
        f"Kubeflow training operator may not be running, or not watching namespace {NS} (its --namespace flag), or "
        "not serving PyTorchJob (--enable-scheme); the job was deleted"
    )
    assert hook.jobs == {}


def test_queue_timeout(hook, log_text):
    run = make_run(hook, queue_timeout=0.05, run_policy={"suspend": True}, labels={LABEL_KUEUE_QUEUE_NAME: "team-a"})
    run.create_or_attach()
    hook.set_status(NAME, job_status("Created", "Suspended"))
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run.wait()
    assert str(raised.value) == (
        f"{REF}: queue_timeout of 0.05 s passed while the job waited in Kueue queue 'team-a', suspended and not "
        f"admitted (for Kueue's reason: kubectl get workloads.kueue.x-k8s.io -n {NS}); the job was deleted"
    )
    assert f"{REF} is waiting in Kueue queue 'team-a' (suspended: not admitted yet)" in log_text()
    assert hook.jobs == {}


def test_queue_timeout_of_a_job_that_names_no_queue(hook, log_text):
    run = make_run(hook, queue_timeout=0.05, run_policy={"suspend": True})
    run.create_or_attach()
    hook.set_status(NAME, job_status("Created", "Suspended"))
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run.wait()
    assert str(raised.value) == (
        f"{REF}: queue_timeout of 0.05 s passed while the job waited suspended: its runPolicy.suspend is true and "
        "nothing resumed it (it names no Kueue queue: set runPolicy.suspend to false, or let a queue controller "
        "admit it); the job was deleted"
    )
    assert hook.jobs == {}


def test_stopped_by_airflow_mid_wait(hook, log_text):
    run = make_run(hook)
    run.create_or_attach()
    hook.on_get(becomes(RUNNING), lambda h: run.kill())  # on_kill arrives while the wait reads the job
    with pytest.raises(TrainingJobStoppedError) as raised:
        run.wait()
    assert str(raised.value) == (
        f"{REF}: this task was stopped by Airflow (cleared, marked failed or success, or its worker shut down) while "
        "the job was Running; it deleted the job and its pods on the way out"
    )
    assert not isinstance(raised.value, JobDeletedError)
    assert f"Deleting {REF} (not finished)" in log_text() and hook.jobs == {}


def test_a_late_kill_of_an_earlier_try_leaves_the_job_the_next_try_follows(hook, log_text):
    first = make_run(hook, 1)
    first.create_or_attach()
    hook.set_status(NAME, RUNNING)
    make_run(hook, 2).create_or_attach()  # attaches, and says so on the job
    first.kill()
    assert hook.job(NAME) is not None
    assert f"Not deleting {REF}: try 2 of this task follows it now" in log_text()


def test_kill_before_any_job_does_nothing(hook):
    make_run(hook).kill()
    assert hook.calls == []


def test_the_lead_replicas_log_is_followed(hook, log_text):
    run = make_run(hook, get_logs=True)
    run.create_or_attach()
    hook.add_pod(NAME, "Master", log="hello from rank 0\nbye")
    hook.on_get(becomes(RUNNING), becomes(SUCCEEDED))
    run.wait()
    text = log_text()
    assert "[Master-0] hello from rank 0" in text and "[Master-0] bye" in text


# ---- deferred: the trigger's event -----------------------------------------------------------------------


def _event(outcome: str, message: str, job: dict | None, **extra: Any) -> dict[str, Any]:
    return {"outcome": outcome, "message": message, "job": job, "pods": [], **extra}


def test_trigger_carries_the_run(hook):
    run = make_run(hook, timeout=30, get_logs=True, log_tail_lines=5)
    job = run.create_or_attach()
    trigger = run.trigger()
    assert isinstance(trigger, TrainingJobTrigger)
    _, kwargs = trigger.serialize()
    assert kwargs["uid"] == job["metadata"]["uid"] and kwargs["timeout"] == 30 and kwargs["log_tail_lines"] == 5
    assert kwargs["try_number"] == 1 and LABEL_TRY_NUMBER not in kwargs["owner_labels"]


def test_the_trigger_gets_where_the_secrets_of_the_job_are_not_the_secrets(hook):
    """A Variable the task read is masked in the task's own log; the trigger learns where such secrets sit in the job
    (to have the triggerer mask them in the lead's lines it copies), never their values: its kwargs are stored."""
    from airflow.providers.common.compat.sdk import mask_secret

    secret = "hf_RUNUNITsecret0123456789"
    mask_secret(secret)  # what reading a sensitive Variable in a template does
    container = {**CONTAINER, "env": [{"name": "HF_TOKEN", "value": secret}]}
    who = identity()
    manifest = build_manifest(
        spec=TrainingJobSpec.parse("PyTorchJob", {"Master": {"template": {"spec": {"containers": [container]}}}}),
        name=NAME,
        namespace=NS,
        labels=who.labels(),
    )
    run = TrainingJobRun(hook, who, RunSettings(get_logs=True), manifest=manifest, log=LOG)
    run.create_or_attach()
    _, kwargs = run.trigger().serialize()
    (span,) = kwargs["secret_spans"]
    assert secret not in repr(kwargs)
    assert span == ["/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/env/0/value", 0, len(secret)]
    quiet = TrainingJobRun(hook, who, RunSettings(get_logs=False, log_tail_lines=0), manifest=manifest, log=LOG)
    quiet.job = hook.job(NAME)
    assert quiet.trigger().serialize()[1]["secret_spans"] == []  # nothing copied nor read: nothing to mask
    tails_only = TrainingJobRun(hook, who, RunSettings(get_logs=False), manifest=manifest, log=LOG)
    tails_only.job = hook.job(NAME)
    _, kwargs = tails_only.trigger().serialize()  # the failed runs' tails are read, for the event: masked
    assert kwargs["secret_spans"] == [span] and kwargs["failed_tails"] is True and secret not in repr(kwargs)


def test_complete_copies_the_rest_of_the_lead_log_after_the_triggers_cursor(hook, log_text):
    """The event's cursor says the trigger copied the first two lines: the resumed task copies the other three."""
    from tests.support.fake_hook import LOG_START

    run = make_run(hook, get_logs=True)
    job = run.create_or_attach()
    hook.set_status(NAME, SUCCEEDED)
    pod = hook.add_pod(NAME, "Master", exit_code=0, phase="Succeeded", log="one\ntwo\nthree\nfour\nfive")
    second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(LOG_START + 1)) + ".000000000Z"
    cursor = {"uid": pod["metadata"]["uid"], "restarts": 0, "since": second, "at": 1, "lines": 2, "bytes": 8}
    run.complete(_event(FINISHED, f"{REF} finished", {**job, "status": SUCCEEDED}, lead_log=cursor))
    text = log_text()
    assert "[Master-0] one" not in text and "[Master-0] two" not in text
    assert all(f"[Master-0] {line}" in text for line in ("three", "four", "five"))
    assert "The lead replica's log: 5 lines in this task log (2 copied while the task waited)" in text


def test_a_lead_log_that_cannot_be_read_at_the_end_leaves_the_verdict_alone(hook, log_text):
    run = make_run(hook, get_logs=True)
    job = run.create_or_attach()
    hook.set_status(NAME, SUCCEEDED)
    hook.add_pod(NAME, "Master", exit_code=0, phase="Succeeded", log="one")
    hook.fail_always("read_timestamped_log", KubernetesAccessError("forbidden to get pods/log"))
    summary = run.complete(_event(FINISHED, f"{REF} finished", {**job, "status": SUCCEEDED}))
    assert summary == job_summary({**job, "status": SUCCEEDED})
    assert (
        "Could not read the rest of the lead replica's log: KubernetesAccessError: forbidden to get pods/log"
        in log_text()
    )


def test_complete_success_quotes_the_lead_log_and_cleans_up(hook, log_text):
    run = make_run(hook, get_logs=True, log_tail_lines=2)
    job = run.create_or_attach()
    hook.set_status(NAME, SUCCEEDED)
    event = _event(
        FINISHED,
        f"{REF} finished",
        {**job, "status": SUCCEEDED},
        lead_log={"pod": f"{NAME}-master-0", "container": "pytorch", "text": "a\nb"},
    )
    assert run.complete(event) == job_summary({**job, "status": SUCCEEDED})
    text = log_text()
    assert f"Last 2 lines of the lead replica's log ({NAME}-master-0, pod {NAME}-master-0):" in text
    assert f"[{NAME}-master-0] b" in text and f"{REF} succeeded" in text
    assert hook.jobs == {}


def test_complete_failure(hook):
    run = make_run(hook)
    job = run.create_or_attach()
    pod = hook.add_pod(NAME, "Master", phase="Failed", exit_code=2)
    hook.set_status(NAME, FAILED)
    with pytest.raises(AirflowFailException) as raised:
        run.complete(_event(FINISHED, f"{REF} failed", {**job, "status": FAILED}, pods=[pod]))
    assert "exit code 2" in str(raised.value)


def test_complete_timeout(hook):
    run = make_run(hook, timeout=30)
    job = run.create_or_attach()
    hook.set_status(NAME, RUNNING)
    hook.add_pod(NAME, "Master")
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run.complete(_event(TIMED_OUT, "timed out", {**job, "status": RUNNING}, which="timeout"))
    assert str(raised.value).startswith(f"{REF}: timeout of 30 s passed; last state: Running")
    assert hook.jobs == {}


def test_complete_deleted(hook):
    run = make_run(hook)
    run.create_or_attach()
    with pytest.raises(JobDeletedError) as raised:
        run.complete(_event(DELETED, f"{REF} was deleted", None))
    assert str(raised.value) == f"{REF} was deleted"


def test_complete_error_with_a_running_job_fails_and_deletes_it(hook):
    make_run(hook).create_or_attach()
    hook.set_status(NAME, RUNNING)
    run = make_run(hook)  # the resumed task's run: it has not seen the job
    with pytest.raises(TrainingJobError) as raised:
        run.complete(_event(ERROR, "waiting for it failed: 500", None))
    assert str(raised.value) == "waiting for it failed: 500"
    assert hook.jobs == {}


def test_complete_error_with_a_finished_job_gives_its_verdict(hook):
    make_run(hook).create_or_attach()
    hook.set_status(NAME, SUCCEEDED)
    assert make_run(hook).complete(_event(ERROR, "waiting for it failed", None))["name"] == NAME


def test_complete_error_with_the_job_gone(hook):
    with pytest.raises(JobDeletedError) as raised:
        make_run(hook).complete(_event(ERROR, "waiting for it failed", None))
    assert str(raised.value) == "waiting for it failed"


# ---- reconnect and result: no hidden order between the steps -----------------------------------------


def test_reconnect_reads_the_phase_or_gone(hook):
    job = existing_job(hook, 1, RUNNING)
    stored = {"name": NAME, "namespace": NS, "uid": job["metadata"]["uid"]}
    assert make_run(hook, 2).reconnect(stored) == "Running"
    assert make_run(hook, 2).reconnect({**stored, "uid": "another"}) == JOB_GONE
    hook.remove_job(NAME)
    assert make_run(hook, 2).reconnect(stored) == JOB_GONE


def test_reconnect_to_a_stored_job_that_succeeded_is_not_this_tries_result(hook):
    """A success that is this try's result is returned before any step (``earlier_success``, from the records of
    the same series); one that reaches ``reconnect`` is replaced, as a failed one is."""
    job = existing_job(hook, 1, SUCCEEDED)
    stored = {"name": NAME, "namespace": NS, "uid": job["metadata"]["uid"]}
    assert make_run(hook, 2).reconnect(stored) == JOB_NOT_REUSED
    with pytest.raises(TrainingJobError, match="no summary: wait"):
        make_run(hook, 2).result()


# ---- the operator's entry points, over the fake hook -----------------------------------------------------


def operator(hook: FakeTrainingJobHook, **kwargs: Any) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.001)
    kwargs.setdefault("get_logs", False)
    op = TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=MASTER, job_name=NAME, **kwargs)
    op.__dict__["hook"] = hook  # the cached property
    return op


def test_operator_fresh_try_stores_the_job_and_returns_the_summary(hook):
    store, ti = FakeTaskStateStore(), FakeTaskInstance(run_id=RUN_ID)
    hook.on_get(becomes(SUCCEEDED))
    summary = operator(hook).execute({"ti": ti, "task_state_store": store})
    assert summary["name"] == NAME and summary["conditions"][-1]["type"] == "Succeeded"
    assert ti.xcom == {
        "job_name": NAME,
        "job_namespace": NS,
        # pushed when the job was created (no dashboard configured: the task instance's Training job tab)
        "_link_TrainingJobLink": f"/dags/retrain/runs/{RUN_ID}/tasks/train/plugin/training-job",
    }
    assert store[TrainingJobOperator.external_id_key]["name"] == NAME
    assert hook.jobs == {}


def test_operator_retry_reconnects_to_the_stored_running_job(hook):
    job = existing_job(hook, 1, RUNNING)
    store = FakeTaskStateStore(
        {TrainingJobOperator.external_id_key: {"name": NAME, "namespace": NS, "uid": job["metadata"]["uid"]}}
    )
    hook.on_get(lambda h: None, becomes(SUCCEEDED))  # get_job_status's read, then the wait's
    summary = operator(hook).execute({"ti": FakeTaskInstance(run_id=RUN_ID, try_number=2), "task_state_store": store})
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert not hook.called("create_job")
    assert [c for c in hook.called("patch_job") if ANNOTATION_FOLLOWED_BY_TRY in str(c)]  # try 2 follows it now


def test_operator_retry_of_a_stored_job_that_succeeded_without_a_record_trains_again(hook, log_text):
    """No record says the try that stored it ran in this series of tries (no clear since): the stored job's success
    is not taken for this try's result (see tests/operators/test_earlier_success_unit.py for the records' cases)."""
    job = existing_job(hook, 1, SUCCEEDED)
    store = FakeTaskStateStore(
        {TrainingJobOperator.external_id_key: {"name": NAME, "namespace": NS, "uid": job["metadata"]["uid"]}}
    )
    op = operator(hook, on_finish="keep_job")
    replaced = lambda h: (
        h.job(NAME) and h.job(NAME)["metadata"]["uid"] != job["metadata"]["uid"] and h.set_status(NAME, SUCCEEDED)
    )
    hook.on_get(*[replaced] * 10)
    summary = op.execute({"ti": FakeTaskInstance(run_id=RUN_ID, try_number=2), "task_state_store": store})
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert hook.job(NAME)["metadata"]["uid"] != job["metadata"]["uid"]


def test_operator_retry_of_a_stored_job_that_is_gone_submits_again(hook):
    store = FakeTaskStateStore({TrainingJobOperator.external_id_key: {"name": NAME, "namespace": NS, "uid": "old"}})
    hook.on_get(lambda h: None, becomes(SUCCEEDED))
    operator(hook).execute({"ti": FakeTaskInstance(run_id=RUN_ID, try_number=2), "task_state_store": store})
    assert len(hook.called("create_job")) == 1
    assert store[TrainingJobOperator.external_id_key]["uid"] != "old"


def test_operator_deferred_then_resumed_in_a_fresh_instance(hook):
    ti = FakeTaskInstance(run_id=RUN_ID)
    with pytest.raises(TaskDeferred) as deferred:
        operator(hook, deferrable=True).execute({"ti": ti})
    assert deferred.value.method_name == "execute_complete"
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["name"] == NAME and kwargs["uid"] == hook.job(NAME)["metadata"]["uid"]
    hook.set_status(NAME, SUCCEEDED)
    resumed = operator(hook, deferrable=True)  # Airflow resumes with a new instance of the task
    summary = resumed.execute_complete({"ti": ti}, _event(FINISHED, f"{REF} succeeded", hook.job(NAME)))
    assert summary["conditions"][-1]["type"] == "Succeeded" and hook.jobs == {}


def test_operator_on_kill_deletes_the_job_of_the_try(hook):
    op = operator(hook)
    op.submit_job({"ti": FakeTaskInstance(run_id=RUN_ID)})
    op.on_kill()
    assert hook.jobs == {}


def test_operator_bad_input_is_refused_before_any_call(hook):
    ti = FakeTaskInstance(run_id=RUN_ID)
    with pytest.raises(InvalidJobSpecError) as raised:
        operator(hook, on_finish="delete_everything", poll_interval=0).execute({"ti": ti})
    assert raised.value.problems == [
        "on_finish: 'delete_everything' is not one of keep_job, delete_job, delete_succeeded_job",
        "poll_interval: must be a positive number of seconds, got 0",
    ]
    assert hook.calls == [] and ti.xcom == {}


def test_operator_and_sensor_word_their_shared_checks_alike(hook):
    """The checks both tasks make come from airflow_trainjob.domain.params: the same field, the same words."""
    from airflow_trainjob.sensors.training_job import TrainingJobSensor

    sensor = TrainingJobSensor(
        task_id="watch", kind="SparkJob", job_name=NAME, kubernetes_conn_id="", log_tail_lines=-1, deferrable="yes"
    )
    sensor.__dict__["hook"] = hook
    with pytest.raises(InvalidJobSpecError) as by_sensor:
        sensor._check()
    op = operator(hook, kubernetes_conn_id="", log_tail_lines=-1, deferrable="yes")
    with pytest.raises(InvalidJobSpecError) as by_operator:
        op.execute({"ti": FakeTaskInstance(run_id=RUN_ID)})
    shared = [
        "kubernetes_conn_id: must be the id of a kubernetes connection (a non-empty string), got ''",
        "log_tail_lines: must be a count (0 or more), got -1",
        "deferrable: must be True or False, got str 'yes'",
    ]
    assert set(shared) <= set(by_sensor.value.problems) and set(shared) <= set(by_operator.value.problems)
    assert by_sensor.value.problems[0] == (
        "kind: 'SparkJob' is not a training job kind; allowed: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, "
        "JAXJob, TrainJob"
    )
    assert hook.calls == []


def test_a_one_line_lead_log_is_counted_in_the_singular(hook, log_text):
    """(Found by a trial: ``1 lines``.)"""
    run = make_run(hook, get_logs=True)
    job = run.create_or_attach()
    hook.set_status(NAME, SUCCEEDED)
    hook.add_pod(NAME, "Master", exit_code=0, phase="Succeeded", log="only")
    run.complete(_event(FINISHED, f"{REF} finished", {**job, "status": SUCCEEDED}))
    assert "The lead replica's log: 1 line in this task log (0 copied while the task waited)" in log_text()

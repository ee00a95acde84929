"""What the operator records of each try in ``task_state_store``, the identity annotations it puts on the job and the
extra link it pushes when the job is created: every way a try ends, over the in-memory hook (no cluster)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred

from airflow_trainjob.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
)
from airflow_trainjob.domain.records import RECORD_KEY, JobRecord, read_records
from airflow_trainjob.exceptions import (
    InvalidJobSpecError,
    JobDeletedError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.links.training_job import TrainingJobLink
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.triggers.training_job import DELETED, FINISHED
from tests.support.fake_hook import FakeTaskInstance, FakeTrainingJobHook, job_status

NAME, NS = "train-job", "default"
RUN_ID = "manual__2026-12-02T05:00:00+00:00"  # as Airflow names a manual run: ':' and '+' are no label characters
TAB = "/dags/retrain/runs/manual__2026-12-02T05%3A00%3A00%2B00%3A00/tasks/train/plugin/training-job"
CONTAINER = {"name": "pytorch", "image": "python:3.11-slim", "command": ["python", "-c", "print(1)"]}
MASTER = {"Master": {"template": {"spec": {"containers": [CONTAINER]}}}}
RUNNING = job_status("Created", "Running", replica_statuses={"Master": {"active": 1}})
SUCCEEDED = job_status(
    "Created", "Running", "Succeeded", end="2026-01-01T00:01:30Z", replica_statuses={"Master": {"succeeded": 1}}
)
FAILED = job_status(
    "Created", "Running", "Failed", end="2026-01-01T00:01:30Z", replica_statuses={"Master": {"failed": 1}}
)


class Store:
    """Airflow 3.3's ``task_state_store`` accessor as the task sees it: ``get``, ``set(..., retention=...)``, values
    through JSON as to the database; kept across the tries of one task instance."""

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self.values = {k: json.dumps(v) for k, v in (values or {}).items()}

    def get(self, key: str, default: Any = None) -> Any:
        return json.loads(self.values[key]) if key in self.values else default

    def set(self, key: str, value: Any, *, retention: Any = None) -> None:
        self.values[key] = json.dumps(value)

    def records(self) -> list[JobRecord]:
        return read_records(self.get(RECORD_KEY))


@pytest.fixture
def hook() -> FakeTrainingJobHook:
    return FakeTrainingJobHook(namespace=NS)


def operator(hook: FakeTrainingJobHook, **kwargs: Any) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.001)
    kwargs.setdefault("get_logs", False)
    kwargs.setdefault("replica_specs", MASTER)
    op = TrainingJobOperator(task_id="train", kind="PyTorchJob", job_name=NAME, **kwargs)
    op.__dict__["hook"] = hook  # the cached property
    return op


def context(store: Store | None, try_number: int = 1) -> dict[str, Any]:
    ti = FakeTaskInstance(run_id=RUN_ID, try_number=try_number)
    return {"ti": ti, **({"task_state_store": store} if store is not None else {})}


def becomes(status: dict[str, Any]):
    return lambda h: h.set_status(NAME, status)


def the_record(store: Store) -> JobRecord:
    (record,) = store.records()
    return record


# ---- synchronous: every way a try ends --------------------------------------------------------------------------


def test_a_successful_try_is_recorded_at_creation_and_at_its_end(hook):
    store, seen_at_creation = Store(), []

    def running(h):
        seen_at_creation.append(store.records())  # during the wait: the start is recorded already
        h.add_pod(NAME, "Master")
        h.add_event(NAME, "Started", "started the master", uid=h.job(NAME)["metadata"]["uid"])
        h.set_status(NAME, RUNNING)

    def succeeded(h):
        h.pods[(NS, f"{NAME}-master-0")]["status"]["phase"] = "Succeeded"
        h.set_status(NAME, SUCCEEDED)

    hook.on_get(running, succeeded)
    operator(hook).execute(context(store))
    ((started,),) = seen_at_creation[:1]
    assert started.final is None and started.uid == "uid-1" and started.attached is False
    record = the_record(store)
    assert (record.try_number, record.kind, record.namespace, record.name, record.uid) == (
        1,
        "PyTorchJob",
        NS,
        NAME,
        "uid-1",
    )
    assert record.kubernetes_conn_id == "kubernetes_default"
    assert record.manifest_yaml and f"{ANNOTATION_RUN_ID}: {RUN_ID}" in record.manifest_yaml
    final = record.final
    assert final is not None and final.outcome == "succeeded" and final.message is None
    assert final.job is not None and final.job["status"]["completionTime"] == "2026-01-01T00:01:30Z"
    assert [p["metadata"]["name"] for p in final.pods] == [f"{NAME}-master-0"]
    assert [(e["reason"], e["involvedObject"]["name"]) for e in final.events] == [("Started", NAME)]
    assert hook.jobs == {}  # recorded, then cleaned up (delete_succeeded_job)


def test_a_failed_try_records_its_verdict_and_the_failed_pod(hook):
    store = Store()

    def fails(h):
        h.add_pod(NAME, "Master", phase="Failed", exit_code=1, log="bad input")
        h.set_status(NAME, FAILED)

    hook.on_get(fails)
    with pytest.raises(AirflowFailException):
        operator(hook).execute(context(store))
    final = the_record(store).final
    assert final is not None and final.outcome == "failed"
    assert final.message and "exit code 1" in final.message and "permanent" in final.message
    (failed_pod,) = final.pods
    assert failed_pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1


def test_a_timeout_is_recorded_before_the_job_is_deleted(hook):
    store = Store()
    hook.on_get(becomes(RUNNING))
    with pytest.raises(TrainingJobTimeoutError):
        operator(hook, timeout=0.05).execute(context(store))
    final = the_record(store).final
    assert final is not None and final.outcome == "timed_out" and "timeout of 0.05 s passed" in (final.message or "")
    assert final.job is not None and final.job["status"]["conditions"][-1]["type"] == "Running"
    assert hook.jobs == {}


def test_a_job_deleted_outside_the_task(hook):
    store = Store()
    hook.on_get(
        becomes(RUNNING), lambda h: (h.add_event(NAME, "SuccessfulDelete", "deleted by someone"), h.remove_job(NAME))
    )
    with pytest.raises(JobDeletedError):
        operator(hook).execute(context(store))
    final = the_record(store).final
    assert final is not None and final.outcome == "deleted"
    assert final.job is not None and final.job["metadata"]["uid"] == "uid-1"  # as last seen
    assert [e["reason"] for e in final.events] == ["SuccessfulDelete"]  # events outlive the job: still read


def test_on_kill_records_the_try_as_stopped(hook):
    store = Store()
    op = operator(hook)
    hook.on_get(becomes(RUNNING), lambda h: op.on_kill())  # Airflow's SIGTERM handler, mid-wait
    with pytest.raises(TrainingJobStoppedError):
        op.execute(context(store))
    final = the_record(store).final
    assert final is not None and final.outcome == "stopped"
    assert final.job is not None and final.job["status"]["conditions"][-1]["type"] == "Running"  # read before deletion
    assert hook.jobs == {}


def test_a_retry_that_reconnects_is_recorded_as_attached_with_the_manifest_as_sent(hook):
    store = Store()
    first = operator(hook)
    external_id = first.submit_job(context(store))  # try 1 created the job, then its worker died
    store.set(TrainingJobOperator.external_id_key, external_id)  # as ResumableJobMixin persists it
    hook.set_status(NAME, RUNNING)
    hook.on_get(lambda h: None, lambda h: None, becomes(SUCCEEDED))  # earlier_success's read, reconnect's, the wait's
    operator(hook).execute(context(store, try_number=2))
    second, first_record = store.records()
    assert (second.try_number, second.attached, second.uid) == (2, True, first_record.uid)
    assert second.manifest_yaml == first_record.manifest_yaml  # the object as try 1 sent it
    assert f"{ANNOTATION_TRY_NUMBER}: '1'" in (second.manifest_yaml or "")
    assert first_record.final is None  # its worker died without a word
    assert second.final is not None and second.final.outcome == "succeeded"


def test_without_a_store_the_try_makes_no_extra_call(hook):
    hook.on_get(becomes(SUCCEEDED))
    operator(hook).execute(context(None))
    assert not hook.called("list_events")  # the record's reads happen only when there is a record
    with_store = FakeTrainingJobHook(namespace=NS)
    with_store.on_get(becomes(SUCCEEDED))
    operator(with_store).execute(context(Store()))
    assert len(with_store.called("list_events")) == 1


def test_a_secret_in_the_manifest_is_not_recorded(hook):
    from airflow.sdk.log import mask_secret

    secret = "wandbSECRETunit0123456789"
    mask_secret(secret)  # what reading a sensitive Variable in a template does
    container = {**CONTAINER, "env": [{"name": "WANDB_API_KEY", "value": secret}]}
    store = Store()
    hook.on_get(becomes(SUCCEEDED))
    operator(hook, replica_specs={"Master": {"template": {"spec": {"containers": [container]}}}}).execute(
        context(store)
    )
    assert secret not in store.values[RECORD_KEY] and "value: ***" in (the_record(store).manifest_yaml or "")
    assert hook.called("create_job")  # the cluster got the job (with the value: the fake keeps what it was sent)


# ---- deferred -------------------------------------------------------------------------------------------------


def test_a_deferred_try_is_recorded_before_it_defers_and_when_it_resumes(hook):
    store = Store()
    ctx = context(store)
    with pytest.raises(TaskDeferred):
        operator(hook, deferrable=True).execute(ctx)
    assert the_record(store).final is None
    assert ctx["ti"].xcom[TrainingJobLink().xcom_key] == TAB  # the link is there while the trigger waits
    hook.set_status(NAME, SUCCEEDED)
    resumed = operator(hook, deferrable=True)  # Airflow resumes with a new instance of the task
    event = {"outcome": FINISHED, "message": "done", "job": hook.job(NAME), "pods": []}
    resumed.execute_complete(ctx, event)
    final = the_record(store).final
    assert final is not None and final.outcome == "succeeded" and final.job is not None


def test_a_deferred_try_whose_job_was_deleted(hook):
    store = Store()
    ctx = context(store)
    with pytest.raises(TaskDeferred):
        operator(hook, deferrable=True).execute(ctx)
    last_seen = hook.job(NAME)
    hook.remove_job(NAME)
    event = {"outcome": DELETED, "message": f"PyTorchJob {NS}/{NAME} was deleted", "job": last_seen, "pods": []}
    with pytest.raises(JobDeletedError):
        operator(hook, deferrable=True).execute_complete(ctx, event)
    final = the_record(store).final
    assert final is not None and final.outcome == "deleted" and final.message == event["message"]


# ---- the extra link, pushed when the job is created --------------------------------------------------------------


def test_the_link_to_the_tab_is_pushed_while_the_synchronous_wait_runs(hook):
    ctx, during = context(None), []
    hook.on_get(lambda h: during.append(dict(ctx["ti"].xcom)), becomes(SUCCEEDED))
    operator(hook).execute(ctx)
    assert during[0][TrainingJobLink().xcom_key] == TAB


def test_with_a_dashboard_template_the_link_goes_there(hook):
    hook.conn_extras = {"job_url_template": "https://kubeflow.example.com/{namespace}/{plural}/{name}"}
    ctx = context(None)
    hook.on_get(becomes(SUCCEEDED))
    op = operator(hook)
    op.execute(ctx)
    url = f"https://kubeflow.example.com/{NS}/pytorchjobs/{NAME}"
    assert ctx["ti"].xcom[TrainingJobLink().xcom_key] == url
    assert TrainingJobLink().get_link(op, ti_key=ctx["ti"]) == url  # what the task runner pushes at the end


def test_a_bad_template_is_a_warning_not_a_failure(hook, capfd):
    hook.conn_extras = {"job_url_template": "https://kubeflow.example.com/{job}"}
    ctx = context(None)
    hook.on_get(becomes(SUCCEEDED))
    operator(hook).execute(ctx)
    task_log = capfd.readouterr().out  # Airflow's task logger writes to stdout here
    assert TrainingJobLink().xcom_key not in ctx["ti"].xcom
    assert "No Training job link: job_url_template 'https://kubeflow.example.com/{job}' uses an unknown" in task_log


def test_a_mapped_task_links_to_its_own_tab(hook):
    ctx = context(None)
    ctx["ti"].map_index = 3
    hook.on_get(becomes(SUCCEEDED))
    operator(hook).execute(ctx)
    assert ctx["ti"].xcom[TrainingJobLink().xcom_key] == TAB.replace("/tasks/train/", "/tasks/train/mapped/3/")


# ---- identity annotations ------------------------------------------------------------------------------------------


def test_the_job_carries_the_task_instance_unsanitised(hook):
    dag_id = "Retrain.Models_" + "x" * 80  # a label value stops at 63 characters
    ti = FakeTaskInstance(run_id=RUN_ID, try_number=2, dag_id=dag_id, map_index=4)
    hook.on_get(becomes(SUCCEEDED))
    op = operator(hook, on_finish="keep_job")
    op.execute({"ti": ti})
    annotations = hook.job(NAME)["metadata"]["annotations"]
    assert {k: annotations[k] for k in (ANNOTATION_DAG_ID, ANNOTATION_TASK_ID, ANNOTATION_RUN_ID)} == {
        ANNOTATION_DAG_ID: dag_id,
        ANNOTATION_TASK_ID: "train",
        ANNOTATION_RUN_ID: RUN_ID,
    }
    assert (annotations[ANNOTATION_MAP_INDEX], annotations[ANNOTATION_TRY_NUMBER]) == ("4", "2")


def test_an_unmapped_task_is_map_index_minus_one(hook):
    hook.on_get(becomes(SUCCEEDED))
    operator(hook, on_finish="keep_job", annotations={"owner": "ml"}).execute(context(None))
    annotations = hook.job(NAME)["metadata"]["annotations"]
    assert annotations[ANNOTATION_MAP_INDEX] == "-1" and annotations["owner"] == "ml"


def test_the_identity_annotations_cannot_be_given(hook):
    with pytest.raises(InvalidJobSpecError) as raised:
        operator(hook, annotations={ANNOTATION_RUN_ID: "someone-else", "owner": "ml"}).execute(context(None))
    assert raised.value.problems == [
        f"annotations: {ANNOTATION_RUN_ID} are set by this provider to identify the task instance"
    ]
    assert hook.calls == []


def test_a_whole_job_copied_with_an_earlier_jobs_identity_gets_this_ones(hook):
    copied = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "old", "annotations": {ANNOTATION_RUN_ID: "scheduled__2025", "owner": "ml"}},
        "spec": {"pytorchReplicaSpecs": MASTER},
    }
    hook.on_get(becomes(SUCCEEDED))
    op = TrainingJobOperator(task_id="train", job=copied, job_name=NAME, poll_interval=0.001, get_logs=False)
    op.__dict__["hook"] = hook
    op.on_finish = "keep_job"
    op.execute(context(None))
    annotations = hook.job(NAME)["metadata"]["annotations"]
    assert annotations[ANNOTATION_RUN_ID] == RUN_ID and annotations["owner"] == "ml"


def test_an_api_outage_is_recorded_in_one_line_without_reading_again(hook, monkeypatch):
    from airflow_trainjob.operators import sync_wait as sync_wait_module
    from tests.support.fake_hook import api_error

    monkeypatch.setattr(sync_wait_module, "API_OUTAGE_TOLERANCE", 0.02)
    store = Store()
    hook.fail_always("get_job", api_error(500))
    with pytest.raises(Exception, match="500"):
        operator(hook).execute(context(store))
    final = the_record(store).final
    assert final is not None and final.outcome == "failed"
    assert final.message and final.message.startswith("500 Internal Server Error") and "\n" not in final.message
    assert final.job is not None and final.job["metadata"]["uid"] == "uid-1"  # as created
    assert not hook.called("list_events")  # the record reads nothing more from a failing API


def test_a_pod_stopped_at_the_end_is_recorded_as_last_seen(hook):
    """A Worker still running when the job succeeded is stopped (``cleanPodPolicy: Running``) before the record reads
    the pods: it is recorded as the wait last saw it."""
    store = Store()
    specs = {**MASTER, "Worker": {"replicas": 1, "template": {"spec": {"containers": [CONTAINER]}}}}

    def running(h):
        h.add_pod(NAME, "Master")
        h.add_pod(NAME, "Worker")
        h.set_status(NAME, RUNNING)

    def succeeded(h):
        h.pods[(NS, f"{NAME}-master-0")]["status"]["phase"] = "Succeeded"
        h.set_status(NAME, SUCCEEDED)

    hook.on_get(running, succeeded)
    operator(hook, replica_specs=specs).execute(context(store))
    assert ("delete_pod", NS, f"{NAME}-worker-0", "uid-3") in hook.calls  # stopped at the end, by the task
    final = the_record(store).final
    assert final is not None
    assert {p["metadata"]["name"]: p["status"]["phase"] for p in final.pods} == {
        f"{NAME}-master-0": "Succeeded",
        f"{NAME}-worker-0": "Running",
    }


def test_a_try_cleared_while_it_waits_keeps_its_last_sight_of_the_job(hook):
    """A clear replaces the task instance's id before Airflow kills the try: the store refuses the killed try's write
    of its end (the execution API's 404). The record still has the job as the wait last saw it, Running with its
    pods, written as the job changed, not only that the try started."""
    store = Store()
    refused: list[str] = []

    def set_unless_cleared(key: str, value: Any, *, retention: Any = None) -> None:
        if refused:
            raise RuntimeError("404 Not Found: task instance not found")
        Store.set(store, key, value, retention=retention)

    store.set = set_unless_cleared
    op = operator(hook)

    def running(h):
        h.add_pod(NAME, "Master")
        h.set_status(NAME, RUNNING)

    def cleared(h):
        refused.append("cleared")
        op.on_kill()

    hook.on_get(running, lambda h: None, cleared)
    with pytest.raises(TrainingJobStoppedError):
        op.execute(context(store))
    record = the_record(store)
    assert record.final is None  # its end could not be written
    assert record.last_seen is not None
    assert record.last_seen.job["status"]["conditions"][-1]["type"] == "Running"
    assert [p["metadata"]["name"] for p in record.last_seen.pods] == [f"{NAME}-master-0"]
    assert hook.jobs == {}  # and the kill still deleted the job

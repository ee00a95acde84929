"""A replica whose init container fails, against the local cluster (real apiserver, controller and process kubelet):
every mode — the synchronous wait, the deferred resume, the sensor poking and deferred — names the replica, the
init container, its exit code and class, and quotes the init container's own last lines; a timeout while an init
container crash-loops says so, with the same lines."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred

from airflow_trainjob.exceptions import TrainingJobTimeoutError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from tests.support.deferred import first_event, rebuild
from tests.support.jobs import FETCH_FAILS, OK, create, pytorch_specs, with_init_container

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

CAUSE = "Master-0 (pod {job}-master-0, initContainer fetch-data): exit code 2 (Permanent), Error"
TAIL = ["Last log lines of Master-0 (initContainer fetch-data):", "  | fetching s3://bucket/train.csv"]


def init_fails(restart_policy: str = "Never", **fields) -> dict:
    """One Master whose init container ``fetch-data`` prints two lines and exits 2; its main container never runs."""
    specs = pytorch_specs(OK, workers=0, restartPolicy=restart_policy, **fields)
    return with_init_container(specs, "Master", FETCH_FAILS)


def assert_names_the_init_container(message: str, job: str) -> None:
    lines = message.splitlines()
    assert f"First failure (permanent: not retried): {CAUSE.format(job=job)}" in lines, message
    at = lines.index(TAIL[0])
    assert lines[at : at + 3] == [*TAIL, "  | error: access denied"], message


def make(**kwargs) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.5)
    return TrainingJobOperator(task_id="train", kind="PyTorchJob", **kwargs)


def test_synchronous_wait_names_the_failed_init_container(ti, namespace, capfd):
    operator = make(replica_specs=init_fails())
    with pytest.raises(AirflowFailException) as raised:
        operator.execute({"ti": ti})
    assert_names_the_init_container(str(raised.value), ti.xcom["job_name"])
    assert "[Master-0] error: access denied" in capfd.readouterr().out  # its log, followed into the task log


def test_deferred_resume_names_the_failed_init_container(ti, namespace):
    operator = make(replica_specs=init_fails(), deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    event = first_event(rebuild(deferred.value.trigger))
    (pod,) = event["pods"]  # what the resume has of the pod, should it be gone by then
    (init,) = pod["status"]["initContainerStatuses"]
    assert (init["name"], init["state"]["terminated"]["exitCode"]) == ("fetch-data", 2)
    with pytest.raises(AirflowFailException) as raised:
        operator.execute_complete({"ti": ti}, event)
    assert_names_the_init_container(str(raised.value), ti.xcom["job_name"])


def test_deferred_resume_names_it_when_cleanup_deleted_the_pod(ti, namespace, capfd):
    """``cleanPodPolicy: All``: the trigger stops the pods when the job fails, quoting the lead's log first — the
    init container's — and the resume names the init container from the event's pod summary."""
    operator = make(replica_specs=init_fails(), run_policy={"cleanPodPolicy": "All"}, deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    event = first_event(rebuild(deferred.value.trigger))
    with pytest.raises(AirflowFailException) as raised:
        operator.execute_complete({"ti": ti}, event)
    message = str(raised.value)
    assert f"First failure (permanent: not retried): {CAUSE.format(job=ti.xcom['job_name'])}" in message
    assert "[Master-0] error: access denied" in capfd.readouterr().out  # quoted before the pod was stopped


def test_sensor_poke_names_the_failed_init_container(namespace, custom_objects):
    create(custom_objects, namespace, "init-broken", "", specs=init_fails())
    sensor = TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="init-broken", poke_interval=0.5)

    def failed() -> str | None:
        try:
            sensor.poke({})
        except AirflowFailException as e:
            return str(e)
        return None

    from airflow_trainjob_local.testing.waiting import wait_for

    message = wait_for(failed, lambda m: m is not None, what="the sensor's failure")
    assert_names_the_init_container(message, "init-broken")


def test_deferred_sensor_names_the_failed_init_container(namespace, custom_objects):
    create(custom_objects, namespace, "init-broken", "", specs=init_fails())
    sensor = TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="init-broken", deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    event = first_event(rebuild(deferred.value.trigger))
    with pytest.raises(AirflowFailException) as raised:
        sensor.execute_complete({}, event)
    assert_names_the_init_container(str(raised.value), "init-broken")


def test_backoff_limit_while_the_init_container_crash_loops_names_it(ti, namespace, capfd, caplog):
    """``OnFailure``: the kubelet restarts the init container in place until ``backoffLimit`` fails the job; the
    message names it, the task log warned of each restart naming it, and its last lines are quoted — from the run
    the kubelet last reported (``previous``) — unless the controller deleted the pod first: it deletes a job's pods
    when ``backoffLimit`` fails it, so the read may come too late, and says so."""
    operator = make(replica_specs=init_fails("OnFailure"), run_policy={"backoffLimit": 2})
    with pytest.raises(AirflowFailException) as raised:
        operator.execute({"ti": ti})
    message, job = str(raised.value), ti.xcom["job_name"]
    assert f"First failure (permanent: not retried): {CAUSE.format(job=job)}" in message.splitlines(), message
    task_log = capfd.readouterr().out + caplog.text
    assert f"Replica restarted (restart 1): {CAUSE.format(job=job)}" in task_log
    if TAIL[0] in message:
        assert_names_the_init_container(message, job)
    else:
        assert f"Could not read the log of Master-0 (initContainer fetch-data) (pod {job}-master-0)" in task_log


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_a_timeout_while_the_init_container_crash_loops_says_so(ti, namespace, deferrable):
    operator = make(replica_specs=init_fails("OnFailure"), startup_timeout=10, deferrable=deferrable)
    with pytest.raises((TrainingJobTimeoutError, TaskDeferred)) as raised:
        operator.execute({"ti": ti})
    if deferrable:
        event = first_event(rebuild(raised.value.trigger))
        with pytest.raises(TrainingJobTimeoutError) as raised:
            operator.execute_complete({"ti": ti}, event)
    message = str(raised.value)
    first = message.splitlines()[0]
    assert "startup_timeout of 10 s passed" in first
    pending = f"pending: Master-0 ({ti.xcom['job_name']}-master-0) Pending: Init:"
    assert pending in first and "initContainer fetch-data " in first, message
    assert "last exit code 2 (Permanent), Error" in first, message
    lines = message.splitlines()
    at = lines.index(TAIL[0])
    assert lines[at : at + 3] == [*TAIL, "  | error: access denied"], message

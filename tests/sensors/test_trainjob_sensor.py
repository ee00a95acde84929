"""TrainingJobSensor on Kubeflow Trainer v2 TrainJobs made elsewhere (as a Kubeflow SDK's ``train()`` makes them), against
the local cluster: it waits for ``Complete``, and fails as the operator does, poking and deferred."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred

from airflow_trainjob.constants import TRAINER_GROUP, TRAINER_VERSION
from airflow_trainjob.exceptions import TrainingJobError
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, first_event, rebuild

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

OK = "print('trained', flush=True)"
EXIT_1 = "import sys; print('bad input', flush=True); sys.exit(1)"


def create(custom_objects, namespace: str, name: str, code: str, **spec) -> dict:
    """A TrainJob on torch-distributed with one node, as someone other than the provider makes it (no pod token)."""
    body = {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 1, "command": ["python", "-c", code]},
            **spec,
        },
    }
    return custom_objects.create_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", body)


def sensor(name: str, **kwargs) -> TrainingJobSensor:
    return TrainingJobSensor(task_id="watch", kind="TrainJob", job_name=name, poke_interval=1, timeout=120, **kwargs)


def watch(watcher: TrainingJobSensor, ti, mode: str) -> None:
    """The sensor's wait in ``mode``: pokes until one is true, or deferred until its trigger fires."""
    if mode == "sync":
        wait_for(lambda: watcher.poke({"ti": ti}), timeout=120, what="the sensor's success")
        return
    with pytest.raises(TaskDeferred) as deferred:
        watcher.execute({"ti": ti})
    watcher.execute_complete({"ti": ti}, first_event(rebuild(deferred.value.trigger), timeout=120))


@pytest.mark.parametrize("mode", MODES)
def test_the_sensor_waits_for_a_trainjob_made_elsewhere_to_complete(ti, namespace, custom_objects, mode):
    watcher = sensor("made-by-the-sdk", deferrable=mode == "deferred")
    assert watcher.target_conditions == ("Complete",)
    if mode == "sync":
        assert watcher.poke({"ti": ti}) is False  # not there yet: waited for
    create(custom_objects, namespace, "made-by-the-sdk", OK)
    watch(watcher, ti, mode)


def test_the_deferred_sensor_fails_with_the_operators_message_when_the_trainjob_fails(ti, namespace, custom_objects):
    """The trigger's pod watch saw node 0 fail before the Job's failure deleted its pod: named, and permanent."""
    create(custom_objects, namespace, "broken", EXIT_1)
    with pytest.raises(AirflowFailException) as raised:
        watch(sensor("broken", deferrable=True), ti, "deferred")
    assert f"TrainJob {namespace}/broken failed: FailedJobs" in str(raised.value)
    assert "node-0" in str(raised.value) and "exit code 1" in str(raised.value)


def failed_and_its_pods_gone(custom_objects, core_v1, namespace: str, name: str) -> bool:
    job = custom_objects.get_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", name)
    failed = any(c["type"] == "Failed" and c["status"] == "True" for c in job.get("status", {}).get("conditions", []))
    return failed and not core_v1.list_namespaced_pod(namespace).items


def test_a_poking_sensor_that_finds_the_failed_node_gone_says_so_and_lets_airflow_retry(
    ti, namespace, custom_objects, core_v1
):
    """Pokes read the TrainJob only: when it fails, its Job deletes the restarting node's pod, and no event has its
    exit code. A poke after the pod has gone (waited for here: a poke while it terminates names its exit code) says
    that nothing is left to judge by, and is retryable."""
    create(custom_objects, namespace, "broken", EXIT_1)
    wait_for(
        lambda: failed_and_its_pods_gone(custom_objects, core_v1, namespace, "broken"),
        timeout=120,
        what="the TrainJob Failed and its pod deleted",
    )
    with pytest.raises(TrainingJobError) as raised:
        watch(sensor("broken"), ti, "sync")
    assert not isinstance(raised.value, AirflowFailException)
    lines = str(raised.value).splitlines()
    assert lines[0].startswith(f"TrainJob {namespace}/broken failed: FailedJobs")
    assert lines[1].startswith("No failed container run is left to judge by") and lines[1].endswith("retryable")


def test_the_sensor_refuses_a_v1_condition_for_a_trainjob(namespace):
    from airflow_trainjob.exceptions import InvalidJobSpecError

    with pytest.raises(InvalidJobSpecError) as raised:
        sensor("any", target_conditions=["Succeeded"]).poke({})
    assert raised.value.problems == ["target_conditions: 'Succeeded' not allowed; allowed: Complete, Suspended"]

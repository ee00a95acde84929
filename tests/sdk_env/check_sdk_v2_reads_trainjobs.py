"""The provider beside the Kubeflow SDK v2 (``kubeflow`` 0.5.x, ``TrainerClient``): each reads what the other made.

Run by ``scripts/sdk2-check.sh`` in its environment (the provider installed from a wheel beside the SDK: the SDK
requires ``kubernetes<36``, which the provider accepts), after ``check_sdk_v2_trains.py``, against the same local
cluster. Not part of the main suite: the file name is outside pytest's ``test_*.py`` collection, and it skips itself
where ``kubeflow.trainer`` is not importable.

1. A TrainJob made by the provider's ``TrainJobOperator`` (2 nodes on ``torch-distributed``, kept at its end) is read
   with ``TrainerClient``: ``get_job`` shows it ``Complete`` with both nodes ``Succeeded``; ``get_job_logs`` returns
   what each node printed.
2. A TrainJob made by ``TrainerClient.train`` is waited for with the provider's ``TrainingJobSensor(kind="TrainJob")``,
   in poke mode and deferred (its trigger run to its event, as the triggerer runs it), and the sensor succeeds.

Environment: ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` (the line ``airflow-trainjob-local up`` prints) and ``KUBECONFIG``
(its ``kube_config_path``, which the SDK reads as its users' does). The namespace is the check's own.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

trainer = pytest.importorskip("kubeflow.trainer", reason="the Kubeflow SDK v2 (kubeflow 0.5.x) is not installed here")

if "AIRFLOW_HOME" not in os.environ:  # Airflow reads its home at import: never the developer's ~/airflow
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="airflow-trainjob-sdk2-check-")
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from airflow.providers.common.compat.sdk import TaskDeferred
from kubeflow.trainer.options import TrainerCommand
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor

RUNTIME = "torch-distributed"
NUM_NODES = 2
#: The process kubelet ignores the image; the SDK requires one for a CustomTrainerContainer.
IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
#: Each rank prints this with its RANK and WORLD_SIZE (set by torchrun from the runtime's PET_* environment).
NODE_CODE = "import os; print('provider-made rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], flush=True)"


def say(message: str) -> None:
    print(f"sdk2-check: {message}", flush=True)


@dataclass
class TaskInstanceStandIn:
    """What Airflow's task runner hands to ``execute`` as ``ti``: the identity fields the operator reads, and its
    XComs."""

    dag_id: str = "sdk2_check"
    task_id: str = "train"
    run_id: str = field(default_factory=lambda: f"manual__{uuid.uuid4().hex[:8]}")
    map_index: int = -1
    try_number: int = 1
    xcom: dict[str, Any] = field(default_factory=dict)
    stats_tags: dict[str, str] = field(default_factory=dict)

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


@pytest.fixture(scope="module")
def connection() -> dict[str, Any]:
    value = os.environ.get("AIRFLOW_CONN_KUBERNETES_DEFAULT")
    if not value or not os.environ.get("KUBECONFIG"):
        pytest.fail("AIRFLOW_CONN_KUBERNETES_DEFAULT or KUBECONFIG is not set: run this through scripts/sdk2-check.sh")
    return json.loads(value)


@pytest.fixture(scope="module")
def namespace(connection: dict[str, Any]) -> Iterator[str]:
    """The check's own namespace, created here and deleted at the end; ``kubernetes_default`` points at it."""
    name = f"sdk2-reads-{uuid.uuid4().hex[:6]}"
    core_v1 = client.CoreV1Api(config.new_client_from_config())
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    conn = {**connection, "extra": {**connection["extra"], "namespace": name}}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(conn))
        say(f"namespace {name} (KUBECONFIG {os.environ['KUBECONFIG']})")
        yield name
    try:
        core_v1.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture(scope="module")
def sdk(namespace: str) -> trainer.TrainerClient:
    return trainer.TrainerClient(backend_config=trainer.KubernetesBackendConfig(namespace=namespace))


def test_sdk_reads_a_trainjob_the_operator_made(sdk: trainer.TrainerClient, namespace: str) -> None:
    operator = TrainJobOperator(
        task_id="train",
        runtime=RUNTIME,
        trainer={"numNodes": NUM_NODES, "command": ["torchrun", "--no-python", "python", "-c", NODE_CODE]},
        on_finish="keep_job",  # kept with its pods, so that the SDK can read both after the task
        poll_interval=0.5,
        timeout=300,
    )
    started = time.monotonic()
    summary = operator.execute({"ti": TaskInstanceStandIn()})
    name = summary["name"]
    true_conditions = [c["type"] for c in summary["conditions"] if c["status"] == "True"]
    say(f"operator made TrainJob {namespace}/{name} in {time.monotonic() - started:.1f} s: {true_conditions}")
    assert summary["kind"] == "TrainJob" and summary["namespace"] == namespace and "Complete" in true_conditions

    job = sdk.get_job(name)
    steps = sorted(job.steps, key=lambda step: step.name)
    say(
        f"SDK get_job {name}: {job.status}, runtime {job.runtime.name}, {job.num_nodes} nodes, steps "
        f"{[(s.name, s.status) for s in steps]}"
    )
    assert job.name == name and job.status == "Complete"
    assert job.runtime.name == RUNTIME and job.num_nodes == NUM_NODES
    assert [(s.name, s.status) for s in steps] == [(f"node-{i}", "Succeeded") for i in range(NUM_NODES)]
    for rank in range(NUM_NODES):
        lines = list(sdk.get_job_logs(name, step=f"node-{rank}"))
        say(f"SDK get_job_logs {name} node-{rank}: {lines}")
        assert f"provider-made rank {rank} of {NUM_NODES}" in lines, lines
    assert f"provider-made rank 0 of {NUM_NODES}" in list(sdk.get_job_logs(name))  # the default step: node-0
    sdk.delete_job(name)


def _first_event(trigger: Any) -> dict[str, Any]:
    """The trigger run until its first event, as the triggerer runs it (it ends by the sensor's timeout at the
    latest); the event's payload."""

    async def run() -> dict[str, Any]:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    return asyncio.run(run())


@pytest.mark.parametrize("mode", ["poke", "deferred"])
def test_sensor_waits_for_a_trainjob_the_sdk_made(sdk: trainer.TrainerClient, namespace: str, mode: str) -> None:
    code = "import time; time.sleep(3); print('hello from the SDK-made TrainJob', flush=True)"
    name = sdk.train(
        runtime=RUNTIME,
        trainer=trainer.CustomTrainerContainer(image=IMAGE, num_nodes=1),
        options=[TrainerCommand(command=["python", "-c", code])],
    )
    say(f"SDK train made TrainJob {namespace}/{name} ({mode})")
    sensor = TrainingJobSensor(
        task_id="wait",
        kind="TrainJob",
        job_name=name,
        mode="poke",
        poke_interval=0.5,
        timeout=300,
        deferrable=mode == "deferred",
    )
    context = {"ti": TaskInstanceStandIn(task_id="wait")}
    started = time.monotonic()
    if mode == "poke":
        pokes: list[Any] = []
        poke = sensor.poke

        def counted_poke(context: Any) -> Any:
            pokes.append(poke(context))
            return pokes[-1]

        sensor.poke = counted_poke  # type: ignore[method-assign]
        sensor.execute(context)
        say(f"sensor (poke) returned after {time.monotonic() - started:.1f} s and {len(pokes)} pokes ({pokes})")
        assert pokes and pokes[-1]
    else:
        with pytest.raises(TaskDeferred) as deferred:
            sensor.execute(context)
        event = _first_event(deferred.value.trigger)
        sensor.execute_complete(context, event)  # raises unless the event is the job's success
        say(f"sensor (deferred) completed after {time.monotonic() - started:.1f} s on event {event.get('outcome')}")
    job = sdk.get_job(name)
    assert job.status == "Complete", job
    assert "hello from the SDK-made TrainJob" in list(sdk.get_job_logs(name))
    sdk.delete_job(name)


def teardown_module() -> None:
    home = os.environ.get("AIRFLOW_HOME", "")
    if os.path.basename(home).startswith("airflow-trainjob-sdk2-check-"):
        shutil.rmtree(home, ignore_errors=True)

"""The provider beside the Kubeflow training SDK (``kubeflow-training`` 1.9.4, which requires ``kubernetes<36``).

Run by ``scripts/sdk-check.sh`` in ``.venv-sdk`` (the provider installed from a wheel, plus the SDK), against a local
cluster the script starts. Not part of the main suite: the file name is outside pytest's ``test_*.py`` collection,
and it skips itself where ``kubeflow.training`` is not importable. The main suite's venv cannot run it anyway: its
``kubeflow-training`` 1.9.3 cannot read jobs with kubernetes 36.

1. A PyTorchJob made by the provider's ``TrainingJobOperator`` is read with the SDK's ``TrainingClient``
   (``get_job``, ``get_job_conditions``, ``is_job_succeeded``, ``get_job_logs``).
2. A PyTorchJob made by ``TrainingClient.create_job`` is waited for with the provider's ``TrainingJobSensor``.

Environment: ``AIRFLOW_CONN_KUBERNETES_DEFAULT`` (the line ``airflow-trainjob-local up`` prints; its
``kube_config_path`` is the kubeconfig the SDK uses too). The namespace is the check's own, created and deleted here.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

training = pytest.importorskip("kubeflow.training", reason="the Kubeflow training SDK is not installed here")

if "AIRFLOW_HOME" not in os.environ:  # Airflow reads its home at import: never the developer's ~/airflow
    os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="airflow-trainjob-sdk-check-")
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor

KIND = "PyTorchJob"
#: The SDK reads the logs of the kind's default container (``pytorch`` for a PyTorchJob).
CONTAINER = training.constants.JOB_PARAMETERS[KIND]["container"]
#: The process kubelet runs each container's command on the host and ignores the image.
IMAGE = "python:3.11-slim"


def say(message: str) -> None:
    print(f"sdk-check: {message}", flush=True)


@dataclass
class TaskInstanceStandIn:
    """What Airflow's task runner hands to ``execute`` as ``ti``: the identity fields the operator reads, and its
    XComs."""

    dag_id: str = "sdk_check"
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
    if not value:
        pytest.fail(
            "AIRFLOW_CONN_KUBERNETES_DEFAULT is not set: run this through scripts/sdk-check.sh, or eval the "
            "line `airflow-trainjob-local up` prints"
        )
    return json.loads(value)


@pytest.fixture(scope="module")
def kubeconfig(connection: dict[str, Any]) -> str:
    return connection["extra"]["kube_config_path"]


@pytest.fixture(scope="module")
def namespace(connection: dict[str, Any], kubeconfig: str) -> Iterator[str]:
    """The check's own namespace, created here and deleted at the end; ``kubernetes_default`` points at it."""
    name = f"sdk-check-{uuid.uuid4().hex[:6]}"
    core_v1 = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    conn = {**connection, "extra": {**connection["extra"], "namespace": name}}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", json.dumps(conn))
        say(f"namespace {name} (kubeconfig {kubeconfig})")
        yield name
    try:
        core_v1.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture(scope="module")
def sdk(kubeconfig: str, namespace: str) -> training.TrainingClient:
    return training.TrainingClient(config_file=kubeconfig, namespace=namespace)


def test_sdk_reads_a_job_the_operator_made(sdk: training.TrainingClient, namespace: str) -> None:
    operator = TrainingJobOperator(
        task_id="train",
        kind=KIND,
        replica_specs={
            "Master": {
                "replicas": 1,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": CONTAINER,
                                "image": IMAGE,
                                "command": [sys.executable, "-c", "print('hello from master')"],
                            },
                        ]
                    }
                },
            }
        },
        # Keep the job and its pods, so that the SDK can read both after the task.
        on_finish="keep_job",
        run_policy={"cleanPodPolicy": "None"},
        poll_interval=0.5,
        timeout=300,
    )
    summary = operator.execute({"ti": TaskInstanceStandIn()})
    name = summary["name"]
    assert summary["namespace"] == namespace
    true_conditions = [c["type"] for c in summary["conditions"] if c["status"] == "True"]
    say(f"operator made {KIND} {namespace}/{name}: {true_conditions}")

    job = sdk.get_job(name, job_kind=KIND)
    assert isinstance(job, training.KubeflowOrgV1PyTorchJob), type(job)
    assert job.metadata.name == name and job.metadata.namespace == namespace
    conditions = sdk.get_job_conditions(name=name, job_kind=KIND)
    say(f"SDK get_job_conditions: {[(c.type, c.status, c.reason) for c in conditions]}")
    assert any(c.type == "Succeeded" and c.status == "True" for c in conditions)
    assert sdk.is_job_succeeded(name=name, job_kind=KIND) is True
    logs, _ = sdk.get_job_logs(name, job_kind=KIND)
    say(f"SDK get_job_logs: {logs}")
    assert any("hello from master" in text for text in logs.values()), logs


def test_sensor_waits_for_a_job_the_sdk_made(sdk: training.TrainingClient, namespace: str) -> None:
    name = f"sdk-made-{uuid.uuid4().hex[:6]}"
    code = "import time; time.sleep(3); print('hello from the SDK-made job')"
    job = training.KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1",
        kind=KIND,
        metadata=client.V1ObjectMeta(name=name, namespace=namespace),
        spec=training.KubeflowOrgV1PyTorchJobSpec(
            run_policy=training.KubeflowOrgV1RunPolicy(clean_pod_policy="None"),
            pytorch_replica_specs={
                "Master": training.KubeflowOrgV1ReplicaSpec(
                    replicas=1,
                    restart_policy="OnFailure",
                    template=client.V1PodTemplateSpec(
                        spec=client.V1PodSpec(
                            containers=[
                                client.V1Container(name=CONTAINER, image=IMAGE, command=[sys.executable, "-c", code]),
                            ]
                        )
                    ),
                ),
            },
        ),
    )
    sdk.create_job(job=job, namespace=namespace)
    say(f"SDK create_job made {KIND} {namespace}/{name}")

    sensor = TrainingJobSensor(
        task_id="wait", kind=KIND, job_name=name, mode="poke", poke_interval=0.5, timeout=300, deferrable=False
    )
    pokes: list[Any] = []
    poke = sensor.poke

    def counted_poke(context: Any) -> Any:
        pokes.append(poke(context))
        return pokes[-1]

    sensor.poke = counted_poke  # type: ignore[method-assign]
    started = time.monotonic()
    sensor.execute({"ti": TaskInstanceStandIn(task_id="wait")})
    say(f"sensor returned after {time.monotonic() - started:.1f} s and {len(pokes)} pokes ({pokes})")
    assert pokes and pokes[-1]
    assert sdk.is_job_succeeded(name=name, job_kind=KIND) is True
    logs, _ = sdk.get_job_logs(name, job_kind=KIND)
    assert any("hello from the SDK-made job" in text for text in logs.values()), logs


def teardown_module() -> None:
    home = os.environ.get("AIRFLOW_HOME", "")
    if os.path.basename(home).startswith("airflow-trainjob-sdk-check-"):
        shutil.rmtree(home, ignore_errors=True)

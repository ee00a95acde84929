"""TrainJobs run end to end on the session cluster: the TrainJob controller builds the JobSet, the JobSet
controller its Jobs and pods, the process kubelet runs them; the TrainJob ends Complete or Failed with the JobSet's
reason.

After kubeflow/trainer v2.3.0 ``examples/yaml/01-multi-node.yaml`` (``torchrun`` on two nodes that meet through
the ``PET_`` environment and all-reduce a tensor with gloo, on ``manifests/base/runtimes/torch_distributed.yaml``)
and ``examples/yaml/05-multi-step.yaml`` (a dataset initializer the trainer depends on).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from kubernetes import client

from airflow_trainjob_local.testing import waiting
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.runtimes import PLAINML, TORCH_DISTRIBUTED

#: Two torch processes start on a 2-core machine shared with others: give them time.
TIMEOUT = 240.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT, interval=1.0)

ALL_REDUCE = """
import torch
import torch.distributed as dist

dist.init_process_group(backend="gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
print(f"rank {rank} of {world}: all-reduce sum {value.item():g}", flush=True)
dist.destroy_process_group()
"""


@pytest.fixture
def workloads(local_cluster: Any) -> None:
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the controllers and the process kubelet")


def run(custom: client.CustomObjectsApi, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    """Create the TrainJob ``name`` and return it once Complete or Failed."""
    body = {"apiVersion": c.API_VERSION, "kind": c.TRAINJOB_KIND, "metadata": {"name": name}, "spec": spec}
    custom.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, body)

    def read() -> dict[str, Any]:
        return custom.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, name)

    def finished(tj: dict[str, Any]) -> bool:
        return any(
            x["type"] in ("Complete", "Failed") and x["status"] == "True"
            for x in (tj.get("status") or {}).get("conditions") or []
        )

    return wait_for(read, finished, what=f"TrainJob {name} Complete or Failed")


def test_two_node_torchrun_all_reduce_completes(workloads, custom_objects, core_v1, namespace):
    trainjob = run(
        custom_objects,
        namespace,
        "allreduce",
        runtimeRef={"name": TORCH_DISTRIBUTED},
        trainer={"numNodes": 2, "command": ["torchrun", "--no-python", "python", "-c", ALL_REDUCE]},
    )
    logs = _node_logs(core_v1, namespace, "allreduce")
    conditions = {x["type"]: x for x in trainjob["status"]["conditions"]}
    assert "Complete" in conditions, (conditions, logs)
    assert conditions["Complete"]["reason"] == "AllJobsCompleted"
    assert "Running" not in conditions and "Created" not in conditions
    assert [job["name"] for job in trainjob["status"]["jobsStatus"]] == ["node"]
    assert trainjob["status"]["jobsStatus"][0]["succeeded"] == 1
    assert sorted(logs) == ["0", "1"]
    for index, log in logs.items():
        assert f"rank {index} of 2: all-reduce sum 3" in log, log


def _log(core: client.CoreV1Api, namespace: str, pod: str, container: str) -> str:
    # Raw: the client's own decoding turns a log into the repr of its bytes.
    response = core.read_namespaced_pod_log(pod, namespace, container=container, _preload_content=False)
    try:
        return str(response.data.decode())
    finally:
        response.release_conn()


def _node_logs(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, str]:
    """The ``node`` container's log of each pod of the TrainJob's JobSet, by completion index."""
    pods = core.list_namespaced_pod(namespace, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}").items
    return {
        pod.metadata.labels.get("batch.kubernetes.io/job-completion-index", pod.metadata.name): _log(
            core, namespace, pod.metadata.name, c.NODE
        )
        for pod in pods
    }


def test_dataset_initializer_runs_before_the_trainer(workloads, custom_objects, core_v1, namespace):
    """examples/yaml/05-multi-step.yaml: a TrainingRuntime with a dataset-initializer job that the node job
    dependsOn; the initializer gets STORAGE_URI and the TrainJob's env, then the trainer runs."""
    show = "import os; print('uri', os.environ['STORAGE_URI'], 'extra', os.environ['EXTRA'])"
    runtime = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINING_RUNTIME_KIND,
        "metadata": {"name": "with-dataset-init", "labels": {c.LABEL_FRAMEWORK: "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        _replicated_job("dataset-initializer", "dataset-initializer", ["python", "-c", show]),
                        {
                            **_replicated_job("node", "trainer", None),
                            "dependsOn": [{"name": "dataset-initializer", "status": "Complete"}],
                        },
                    ]
                }
            },
        },
    }
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINING_RUNTIMES, runtime)
    trainjob = run(
        custom_objects,
        namespace,
        "multi-step",
        runtimeRef={"name": "with-dataset-init", "kind": c.TRAINING_RUNTIME_KIND},
        initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca", "env": [{"name": "EXTRA", "value": "x"}]}},
        trainer={"command": ["python", "-c", "print('trained')"]},
    )
    assert _condition_types(trainjob) == {"Complete"}, trainjob["status"]
    assert [(j["name"], j["succeeded"]) for j in trainjob["status"]["jobsStatus"]] == [
        ("dataset-initializer", 1),
        ("node", 1),
    ]
    pods = core_v1.list_namespaced_pod(namespace, label_selector="jobset.sigs.k8s.io/jobset-name=multi-step").items
    init = next(p for p in pods if p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] == "dataset-initializer")
    node = next(p for p in pods if p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] == "node")
    init_log = _log(core_v1, namespace, init.metadata.name, "dataset-initializer")
    assert "uri hf://tatsu-lab/alpaca extra x" in init_log
    # The trainer started only once the initializer had finished.
    init_end = init.status.container_statuses[0].state.terminated.finished_at
    node_start = node.status.container_statuses[0].state.terminated.started_at
    assert node_start >= init_end


def test_plain_runtime_and_a_failing_trainer(workloads, custom_objects, core_v1, namespace):
    """The built-in plain runtime runs the TrainJob's command with its env; a trainer that exits 1 on a runtime
    whose Job allows no retry fails the JobSet, and the TrainJob is Failed with the JobSet's reason."""
    ok = run(
        custom_objects,
        namespace,
        "plain",
        runtimeRef={"name": PLAINML},
        trainer={
            "command": ["python", "-c", "import os; print('mine', os.environ['MINE'])"],
            "env": [{"name": "MINE", "value": "1"}],
        },
    )
    assert _condition_types(ok) == {"Complete"}, ok["status"]
    assert _node_logs(core_v1, namespace, "plain")["0"].strip() == "mine 1"
    runtime = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINING_RUNTIME_KIND,
        "metadata": {"name": "no-retry"},
        "spec": {
            "mlPolicy": {"numNodes": 1},
            "template": {"spec": {"replicatedJobs": [_replicated_job("node", "trainer", None, backoff_limit=0)]}},
        },
    }
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINING_RUNTIMES, runtime)
    failed = run(
        custom_objects,
        namespace,
        "fails",
        runtimeRef={"name": "no-retry", "kind": c.TRAINING_RUNTIME_KIND},
        trainer={"command": ["python", "-c", "raise SystemExit(1)"]},
    )
    assert _condition_types(failed) == {"Failed"}, failed["status"]
    cond = next(x for x in failed["status"]["conditions"] if x["type"] == "Failed")
    assert cond["reason"] == "FailedJobs"
    assert failed["status"]["jobsStatus"][0]["failed"] == 1


def _replicated_job(
    name: str, ancestor: str, command: list[str] | None, backoff_limit: int | None = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": c.NODE if ancestor == "trainer" else name, "image": "python:3.11"}
    if command:
        container["command"] = command
    job_spec: dict[str, Any] = {"template": {"spec": {"containers": [container]}}}
    if backoff_limit is not None:
        job_spec["backoffLimit"] = backoff_limit
    return {"name": name, "template": {"metadata": {"labels": {c.LABEL_ANCESTOR_STEP: ancestor}}, "spec": job_spec}}


def _condition_types(trainjob: dict[str, Any]) -> set[str]:
    return {x["type"] for x in (trainjob.get("status") or {}).get("conditions") or [] if x["status"] == "True"}

"""A TrainJob run end to end on the session cluster: the TrainJob controller builds the JobSet, the JobSet
controller its Jobs and pods, the process kubelet runs ``torchrun`` on two nodes that meet through the ``PET_``
environment and all-reduce a tensor with gloo; the TrainJob ends Complete with the JobSet's reason.

After kubeflow/trainer v2.3.0 ``examples/yaml/01-multi-node.yaml`` on ``manifests/base/runtimes/torch_distributed.yaml``.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from kubernetes import client

from airflow_trainjob_local.testing import waiting
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.runtimes import TORCH_DISTRIBUTED

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


def test_two_node_torchrun_all_reduce_completes(workloads, custom_objects, core_v1, namespace):
    body = {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": {"name": "allreduce"},
        "spec": {
            "runtimeRef": {"name": TORCH_DISTRIBUTED},
            "trainer": {"numNodes": 2, "command": ["torchrun", "--no-python", "python", "-c", ALL_REDUCE]},
        },
    }
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, body)

    def read() -> dict[str, Any]:
        return custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, "allreduce")

    def finished(tj: dict[str, Any]) -> bool:
        return any(
            x["type"] in ("Complete", "Failed") and x["status"] == "True"
            for x in (tj.get("status") or {}).get("conditions") or []
        )

    trainjob = wait_for(read, finished, what="the TrainJob Complete or Failed")
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


def _node_logs(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, str]:
    """The ``node`` container's log of each pod of the TrainJob's JobSet, by completion index."""
    pods = core.list_namespaced_pod(namespace, label_selector=f"jobset.sigs.k8s.io/jobset-name={name}").items
    return {
        pod.metadata.labels.get(
            "batch.kubernetes.io/job-completion-index", pod.metadata.name
        ): core.read_namespaced_pod_log(pod.metadata.name, namespace, container=c.NODE)
        for pod in pods
    }

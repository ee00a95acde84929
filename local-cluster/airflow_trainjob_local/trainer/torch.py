"""The torch plugin (``pkg/runtime/framework/plugins/torch/torch.go``, ``EnforceMLPolicy``): the trainer's node
count, ``numProcPerNode``, and the ``PET_`` environment torchrun reads, on the ``node`` container of the
``ancestor=trainer`` job (and on the containers ``mlPolicy.torch.envInjection`` names).

Local difference: every pod is a process on one host without DNS, so ``PET_MASTER_ADDR`` is ``127.0.0.1``
instead of ``<trainjob>-node-0-0.<trainjob>`` and ``PET_MASTER_PORT`` (and the container port) a free loopback
port given to this TrainJob instead of 29500.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.merge import upsert_env, upsert_ports
from airflow_trainjob_local.trainer.resources import cpus_per_node, gpus_per_node
from airflow_trainjob_local.trainer.template import (
    PodSet,
    ancestor_of,
    find_container,
    pod_spec,
    trainer_node_container,
)

if TYPE_CHECKING:
    from airflow_trainjob_local.trainer.spec import TrainJobView

__all__ = ["enforce_torch_policy", "is_torch", "num_proc_per_node", "runtime_node_resources"]


def is_torch(ml_policy: dict[str, Any] | None) -> bool:
    """True when the runtime's ``mlPolicy`` has a ``torch`` policy."""
    return (ml_policy or {}).get("torch") is not None


def runtime_node_resources(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The resources of the runtime's ``node`` container: in the first replicated job named ``node`` or labelled
    ``ancestor=trainer`` that has a ``node`` container with resources (``runtime.ExtractResourcePerNodeFromRuntime``)."""
    for replicated_job in spec.get("replicatedJobs") or []:
        if replicated_job.get("name") != c.NODE and ancestor_of(replicated_job) != c.ANCESTOR_TRAINER:
            continue
        node = find_container(pod_spec(replicated_job), c.NODE)
        if node is not None and node.get("resources") is not None:
            return node["resources"]
    return None


def num_proc_per_node(trainer: dict[str, Any] | None, resources: dict[str, Any] | None) -> str:
    """``PET_NPROC_PER_NODE``: the TrainJob's ``numProcPerNode``; otherwise ``auto``, which -- when the node has no
    GPU -- becomes the node's CPU count (request rounded up, else limit), at least 1.

    :param trainer: ``spec.trainer`` (or ``None``).
    :param resources: ``trainer.resourcesPerNode`` when set, else the runtime ``node`` container's resources.
    """
    if trainer is not None and trainer.get("numProcPerNode") is not None:
        return str(int(trainer["numProcPerNode"]))
    if gpus_per_node(resources) == 0:
        return str(max(1, cpus_per_node(resources)))
    return c.NUM_PROC_PER_NODE_AUTO


def enforce_torch_policy(
    spec: dict[str, Any],
    pod_sets: list[PodSet],
    ml_policy: dict[str, Any],
    trainjob: TrainJobView,
    *,
    master_port: int,
) -> None:
    """Apply the torch policy to ``spec`` (the JobSet spec, changed in place) and ``pod_sets``.

    :param spec: the JobSet spec being built.
    :param pod_sets: one per replicated job; the trainer's count becomes ``trainer.numNodes`` when set.
    :param ml_policy: the runtime's ``mlPolicy`` (with ``torch``).
    :param trainjob: the TrainJob.
    :param master_port: the loopback master port (upstream: 29500).
    """
    trainer = trainjob.raw_trainer
    trainer_set = next((ps for ps in pod_sets if ps.ancestor == c.ANCESTOR_TRAINER), None)
    if trainer_set is not None and trainer is not None and trainer.get("numNodes") is not None:
        trainer_set.count = int(trainer["numNodes"])
    resources = runtime_node_resources(spec)
    if trainer is not None and trainer.get("resourcesPerNode") is not None:
        resources = trainer["resourcesPerNode"]
    pet_env: list[dict[str, Any]] = [
        {"name": c.TORCH_ENV_NUM_NODES, "value": str(trainer_set.count if trainer_set else 1)},
        {"name": c.TORCH_ENV_NUM_PROC_PER_NODE, "value": num_proc_per_node(trainer, resources)},
        {
            "name": c.TORCH_ENV_NODE_RANK,
            "valueFrom": {"fieldRef": {"fieldPath": c.JOB_COMPLETION_INDEX_FIELD_PATH}},
        },
    ]
    master_env: list[dict[str, Any]] = [
        {"name": c.TORCH_ENV_MASTER_ADDR, "value": c.LOCAL_MASTER_ADDR},
        {"name": c.TORCH_ENV_MASTER_PORT, "value": str(master_port)},
    ]
    # Upstream finds the trainer container only when the TrainJob has a trainer section.
    node = trainer_node_container(spec) if trainer is not None else None
    if node is not None:
        upsert_env(node, (trainer or {}).get("env") or [])
        upsert_env(node, pet_env + master_env)
        upsert_ports(node, [{"containerPort": master_port}])
    jobs = {job.get("name"): job for job in spec.get("replicatedJobs") or []}
    for target in ((ml_policy.get("torch") or {}).get("envInjection") or {}).get("targets") or []:
        job = jobs.get(target.get("jobName"))
        for name in target.get("containerNames") or []:
            container = find_container(pod_spec(job), name, init_too=True) if job is not None else None
            if container is not None:  # a missing target is refused by validation first
                upsert_env(container, pet_env + master_env)

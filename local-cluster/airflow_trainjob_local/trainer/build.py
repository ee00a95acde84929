"""TrainJob + its runtime -> the JobSet (``jobset.x-k8s.io/v1alpha2``), as upstream builds it, pure.

The order is upstream's (``pkg/runtime/core/trainingruntime.go`` ``newRuntimeInfo``, the framework's plugins,
``pkg/runtime/framework/plugins/jobset/{jobset.go,builder.go}``):

1. the JobSet's labels and annotations: the runtime template's, then each runtime patch's template metadata;
2. the runtime patches' ``template.spec`` merged into the template's JobSet spec (replicated jobs keep the
   runtime's order);
3. one pod set per replicated job: its count is the Job's ``parallelism`` (1 by default), for the
   ``ancestor=trainer`` job the runtime's ``mlPolicy.numNodes`` (when the runtime has an mlPolicy); on that job's
   ``node`` container, ``trainer.resourcesPerNode`` merged into its resources;
4. the ML policy (:mod:`.torch`, or the plain one): ``trainer.numNodes`` as the trainer's count, the trainer env
   and, for torch, the ``PET_`` env and the master port on the ``node`` container; with the ``TrainJobStatus``
   gate on, the status server's env and token volume on the trainer's containers (:mod:`.trainjob_status`);
5. every replicated job's ``parallelism`` and ``completions`` set to its pod set's count;
6. the initializers (``replicas`` 1, ``STORAGE_URI``, env, ``secretRef``), the trainer (``replicas`` 1; image,
   command, args, env on ``node``), ``spec.suspend`` from the TrainJob;
7. the JobSet named like the TrainJob, its controller ownerReference.
"""

from __future__ import annotations

import copy
from typing import Any

from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.merge import strategic_merge, upsert_env
from airflow_trainjob_local.trainer.resources import merge_resources
from airflow_trainjob_local.trainer.spec import RuntimeView, TrainJobView
from airflow_trainjob_local.trainer.template import (
    PodSet,
    ancestor_of,
    find_container,
    owner_reference,
    pod_spec,
    trainer_node_container,
)
from airflow_trainjob_local.trainer.torch import enforce_torch_policy, is_torch
from airflow_trainjob_local.trainer.trainjob_status import StatusServerSettings, enforce_trainjob_status

__all__ = ["build_jobset", "patched_spec"]


def build_jobset(
    trainjob: TrainJobView,
    runtime: RuntimeView,
    *,
    master_port: int,
    status_server: StatusServerSettings | None = None,
) -> dict[str, Any]:
    """The JobSet that runs ``trainjob`` on ``runtime``.

    :param trainjob: the TrainJob (its spec: trainer, initializer, runtimePatches, suspend).
    :param runtime: the TrainingRuntime or ClusterTrainingRuntime it names (or its snapshot).
    :param master_port: the loopback port of the torch master (``PET_MASTER_PORT``; upstream's fixed 29500).
    :param status_server: the status server, when the ``TrainJobStatus`` feature gate is on: the trainer's
        containers get its env vars and token volume (:mod:`.trainjob_status`); ``None``: the gate is off.
    :returns: the JobSet in the API's JSON shape, without status.
    """
    template = copy.deepcopy(runtime.template)
    patches = trainjob.raw_spec.get("runtimePatches") or []
    labels, annotations = _propagated_metadata(template, patches)
    spec = patched_spec(template.get("spec") or {}, patches)
    ml_policy = runtime.ml_policy
    pod_sets = _pod_sets(spec, ml_policy, trainjob.raw_trainer)
    if is_torch(ml_policy):
        enforce_torch_policy(spec, pod_sets, ml_policy or {}, trainjob, master_port=master_port)
    elif _is_plain(ml_policy):
        _enforce_plain_policy(spec, pod_sets, trainjob.raw_trainer)
    if status_server is not None:
        enforce_trainjob_status(spec, trainjob, status_server)
    for replicated_job, pod_set in zip(spec.get("replicatedJobs") or [], pod_sets, strict=True):
        job_spec = replicated_job.setdefault("template", {}).setdefault("spec", {})
        job_spec["parallelism"] = job_spec["completions"] = pod_set.count
    _apply_initializers(spec, trainjob.raw_spec.get("initializer") or {})
    _apply_trainer(spec, trainjob.raw_trainer)
    if trainjob.spec.suspend is None:
        spec.pop("suspend", None)
    else:
        spec["suspend"] = trainjob.suspend
    metadata: dict[str, Any] = {
        "name": trainjob.name,
        "namespace": trainjob.namespace,
        "ownerReferences": [owner_reference(trainjob)],
    }
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": c.JOBSET_API_VERSION, "kind": c.JOBSET_KIND, "metadata": metadata, "spec": spec}


def _propagated_metadata(
    template: dict[str, Any], patches: list[dict[str, Any]]
) -> tuple[dict[str, str], dict[str, str]]:
    meta = template.get("metadata") or {}
    labels, annotations = dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
    for patch in patches:
        patch_meta = (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("metadata")) or {}
        labels.update(patch_meta.get("labels") or {})
        annotations.update(patch_meta.get("annotations") or {})
    return labels, annotations


def patched_spec(spec: dict[str, Any], patches: list[dict[str, Any]]) -> dict[str, Any]:
    """The runtime's JobSet spec with each runtime patch's ``trainingRuntimeSpec.template.spec`` merged in, in order
    (a strategic merge, :func:`.merge.strategic_merge`); the replicated jobs keep the runtime's order.

    :param spec: the runtime's ``spec.template.spec`` (not changed).
    :param patches: the TrainJob's ``spec.runtimePatches``.
    """
    order = {job.get("name"): i for i, job in enumerate(spec.get("replicatedJobs") or [])}
    merged = copy.deepcopy(spec)
    for patch in patches:
        spec_patch = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
        if spec_patch:
            merged = strategic_merge(merged, spec_patch)
    jobs = merged.get("replicatedJobs")
    if jobs:
        merged["replicatedJobs"] = sorted(jobs, key=lambda job: order.get(job.get("name"), len(order)))
    return merged


def _pod_sets(spec: dict[str, Any], ml_policy: dict[str, Any] | None, trainer: dict[str, Any] | None) -> list[PodSet]:
    pod_sets = []
    resources_per_node = (trainer or {}).get("resourcesPerNode")
    for replicated_job in spec.get("replicatedJobs") or []:
        count = ((replicated_job.get("template") or {}).get("spec") or {}).get("parallelism")
        count = 1 if count is None else int(count)
        ancestor = ancestor_of(replicated_job)
        is_trainer = ancestor == c.ANCESTOR_TRAINER and ml_policy is not None
        if is_trainer:
            count = int((ml_policy or {}).get("numNodes") or 1)
        if is_trainer and resources_per_node is not None:
            node = find_container(pod_spec(replicated_job), c.NODE)
            if node is not None:
                node["resources"] = merge_resources(node.get("resources"), resources_per_node)
        pod_sets.append(PodSet(str(replicated_job.get("name")), ancestor, max(count, 1)))
    return pod_sets


def _is_plain(ml_policy: dict[str, Any] | None) -> bool:
    # The plain plugin steps aside for torch, mpi and jax (pkg/runtime/framework/plugins/plainml).
    return not any((ml_policy or {}).get(framework) is not None for framework in ("torch", "mpi", "jax"))


def _enforce_plain_policy(spec: dict[str, Any], pod_sets: list[PodSet], trainer: dict[str, Any] | None) -> None:
    if trainer is None:
        return
    trainer_set = next((ps for ps in pod_sets if ps.ancestor == c.ANCESTOR_TRAINER), None)
    if trainer_set is not None and trainer.get("numNodes") is not None:
        trainer_set.count = int(trainer["numNodes"])
    node = trainer_node_container(spec)
    if node is not None:
        upsert_env(node, trainer.get("env") or [])


def _apply_initializers(spec: dict[str, Any], initializer: dict[str, Any]) -> None:
    steps = {c.DATASET_INITIALIZER: initializer.get("dataset"), c.MODEL_INITIALIZER: initializer.get("model")}
    for replicated_job in spec.get("replicatedJobs") or []:
        step = ancestor_of(replicated_job)
        if step not in steps:
            continue
        replicated_job["replicas"] = 1
        config = steps[step]
        container = find_container(pod_spec(replicated_job), step)
        if config is None or container is None:
            continue
        if config.get("storageUri") is not None:
            upsert_env(container, [{"name": c.INITIALIZER_ENV_STORAGE_URI, "value": config["storageUri"]}])
        upsert_env(container, config.get("env") or [])
        secret = (config.get("secretRef") or {}).get("name")
        if config.get("secretRef") is not None:
            container.setdefault("envFrom", []).append({"secretRef": {"name": secret}})


def _apply_trainer(spec: dict[str, Any], trainer: dict[str, Any] | None) -> None:
    for replicated_job in spec.get("replicatedJobs") or []:
        if ancestor_of(replicated_job) != c.ANCESTOR_TRAINER:
            continue
        replicated_job["replicas"] = 1
        node = find_container(pod_spec(replicated_job), c.NODE)
        if node is None or trainer is None:
            continue
        for field in ("image", "command", "args"):
            if trainer.get(field) is not None:
                node[field] = copy.deepcopy(trainer[field])
        upsert_env(node, trainer.get("env") or [])

"""What upstream's TrainJob admission webhook refuses (``pkg/webhooks/trainjob_webhook.go`` and the plugins'
``Validate``: ``pkg/runtime/framework/plugins/torch/torch.go``, ``.../jobset/jobset.go``), checked by the controller
because the local cluster has no webhooks, plus what the local trainer cannot run. Pure.

Like upstream, the runtime's template is checked after the TrainJob's runtime patches were merged into it.
"""

from __future__ import annotations

import re
from typing import Any

from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.spec import RuntimeView, TrainJobView
from airflow_trainjob_local.trainer.template import find_container, pod_spec
from airflow_trainjob_local.trainer.torch import is_torch

__all__ = ["UNSUPPORTED_ML_POLICIES", "validate"]

#: ML policies whose plugins the local trainer does not have.
UNSUPPORTED_ML_POLICIES = ("mpi", "jax", "xgboost", "flux")
#: Containers whose env only the trainer/initializer sections may set (not a runtime patch).
_ENV_FROM_API_ONLY = (c.DATASET_INITIALIZER, c.MODEL_INITIALIZER, c.NODE)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


def validate(trainjob: TrainJobView, runtime: RuntimeView, patched_spec: dict[str, Any]) -> list[str]:
    """The reasons ``trainjob`` would be refused, one line each (``field: problem``); empty when none.

    :param trainjob: the TrainJob.
    :param runtime: the runtime it names.
    :param patched_spec: the runtime's JobSet spec with the TrainJob's runtime patches merged in.
    """
    ml_policy = runtime.ml_policy or {}
    problems = [
        f"spec.runtimeRef: mlPolicy.{name} is not supported by the local trainer (torch and plain runtimes are)"
        for name in UNSUPPORTED_ML_POLICIES
        if ml_policy.get(name) is not None
    ]
    jobs = {str(job.get("name")): job for job in patched_spec.get("replicatedJobs") or []}
    if is_torch(ml_policy):
        problems += _torch_problems(trainjob, ml_policy, jobs)
    problems += _initializer_problems(trainjob, jobs)
    problems += _patch_problems(trainjob, jobs)
    return problems


def _container_names(job: dict[str, Any]) -> set[str]:
    spec = pod_spec(job)
    return {str(x.get("name")) for group in ("initContainers", "containers") for x in spec.get(group) or []}


def _torch_problems(trainjob: TrainJobView, ml_policy: dict[str, Any], jobs: dict[str, Any]) -> list[str]:
    problems = []
    for target in ((ml_policy.get("torch") or {}).get("envInjection") or {}).get("targets") or []:
        job = jobs.get(target.get("jobName"))
        for name in target.get("containerNames") or []:
            if job is None or find_container(pod_spec(job), name, init_too=True) is None:
                problems.append(
                    f"spec.runtimeRef: envInjection target podSet {target.get('jobName')!r} container {name!r} "
                    "not found in runtime template"
                )
    trainer = trainjob.raw_trainer or {}
    reserved = sorted({env.get("name") for env in trainer.get("env") or []} & c.TORCH_RESERVED_ENV)
    if reserved:
        problems.append(
            f"spec.trainer.env: must not have reserved envs, invalid envs configured: [{' '.join(reserved)}]"
        )
    if tuple(trainer.get("command") or ())[:2] == c.TORCHTUNE_ENTRYPOINT:
        problems.append("spec.trainer.command: torchtune ('tune run') is not supported by the local trainer")
    return problems


def _initializer_problems(trainjob: TrainJobView, jobs: dict[str, Any]) -> list[str]:
    problems = []
    initializer = trainjob.raw_spec.get("initializer") or {}
    for key, step, config_name in (
        ("dataset", c.DATASET_INITIALIZER, "datasetConfig"),
        ("model", c.MODEL_INITIALIZER, "modelConfig"),
    ):
        if initializer.get(key) is None:
            continue
        if step not in jobs:
            problems.append(
                f"spec.runtimeRef: must have {step} job when trainJob is configured with input {config_name}"
            )
        elif step not in _container_names(jobs[step]):
            problems.append(f"spec.runtimeRef: must have container with name - {step} in the {step} job")
    return problems


def _is_domain_prefixed_path(value: str) -> bool:
    host, _, path = value.partition("/")
    return bool(path) and len(host) <= 253 and bool(_DNS_SUBDOMAIN.match(host)) and bool(_PATH_SEGMENT.match(path))


def _patch_problems(trainjob: TrainJobView, jobs: dict[str, Any]) -> list[str]:
    problems = []
    for patch in trainjob.raw_spec.get("runtimePatches") or []:
        manager = str(patch.get("manager") or "")
        if not _is_domain_prefixed_path(manager):
            problems.append(
                f"spec.runtimePatches.manager: {manager!r} must be a domain-prefixed path (such as 'acme.io/foo')"
            )
        spec_patch = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}
        for job_patch in spec_patch.get("replicatedJobs") or []:
            job = jobs.get(job_patch.get("name"))
            if job is None:
                problems.append(
                    "spec.runtimePatches: must not have replicated job that doesn't exist in the runtime job template"
                )
                continue
            names = _container_names(job)
            patch_pod = (((job_patch.get("template") or {}).get("spec") or {}).get("template") or {}).get("spec") or {}
            for container in patch_pod.get("initContainers") or []:
                if container.get("name") not in names:
                    problems.append(
                        f"spec.runtimePatches: must not have initContainer that doesn't exist in the runtime job {job_patch.get('name')}"
                    )
            for container in patch_pod.get("containers") or []:
                if container.get("name") not in names:
                    problems.append(
                        f"spec.runtimePatches: must not have container that doesn't exist in the runtime job {job_patch.get('name')}"
                    )
                elif container.get("env") and container.get("name") in _ENV_FROM_API_ONLY:
                    problems.append(
                        "spec.runtimePatches: must not have envs for the dataset-initializer, model-initializer, node containers"
                    )
    return problems

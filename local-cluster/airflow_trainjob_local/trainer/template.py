"""Reading and finding things in a runtime's JobSet template (JSON): the replicated jobs' ancestor-step labels,
pod specs, containers; the pod sets the plugins work on (upstream's ``runtime.PodSet``, ``pkg/runtime/runtime.go``);
the TrainJob's controller ownerReference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.spec import TrainJobView

__all__ = ["PodSet", "ancestor_of", "find_container", "owner_reference", "pod_spec", "trainer_node_container"]


@dataclass
class PodSet:
    """A replicated job as the plugins see it (upstream's ``runtime.PodSet``).

    :param name: the replicated job's name.
    :param ancestor: its ``trainer.kubeflow.org/trainjob-ancestor-step`` label, ``None`` without one.
    :param count: pods per Job (becomes ``parallelism`` and ``completions``).
    """

    name: str
    ancestor: str | None
    count: int


def ancestor_of(replicated_job: dict[str, Any]) -> str | None:
    """The ancestor-step label of a replicated job's Job template, ``None`` without one."""
    labels = ((replicated_job.get("template") or {}).get("metadata") or {}).get("labels") or {}
    return labels.get(c.LABEL_ANCESTOR_STEP)


def pod_spec(replicated_job: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a replicated job (created empty where missing)."""
    job_template = replicated_job.setdefault("template", {})
    pod_template = job_template.setdefault("spec", {}).setdefault("template", {})
    return pod_template.setdefault("spec", {})


def find_container(spec: dict[str, Any], name: str, *, init_too: bool = False) -> dict[str, Any] | None:
    """The container ``name`` of a pod spec (then its init containers when ``init_too``), or ``None``."""
    groups = ("containers", "initContainers") if init_too else ("containers",)
    for group in groups:
        for container in spec.get(group) or []:
            if container.get("name") == name:
                return container
    return None


def owner_reference(trainjob: TrainJobView) -> dict[str, Any]:
    """The controller ownerReference naming ``trainjob`` (blocking its deletion until the owned object is gone)."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "name": trainjob.name,
        "uid": trainjob.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def trainer_node_container(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The ``node`` container of the first ``ancestor=trainer`` replicated job, or ``None``."""
    for replicated_job in spec.get("replicatedJobs") or []:
        if ancestor_of(replicated_job) == c.ANCESTOR_TRAINER:
            return find_container(pod_spec(replicated_job), c.NODE)
    return None

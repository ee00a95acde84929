"""The pod of one completion index of an Indexed Job, as the Kubernetes Job controller makes it
(``pkg/controller/job/job_controller.go`` ``manageJob``, ``indexed_job_utils.go``): the Job's pod template with
the completion index as label and annotation, the ``JOB_COMPLETION_INDEX`` variable read from that annotation,
hostname ``<job>-<index>``, the job-name and controller-uid labels, ``generateName`` ``<job>-<index>-``, and the
Job as controller owner. Pure.

Local: a pod whose volumes project a service-account token and that names no service account gets
``serviceAccountName: default`` -- what the ServiceAccount admission plugin, which the local apiserver runs
without, sets on every pod; without it the apiserver refuses such a pod (the TrainJobStatus token volume).
"""

from __future__ import annotations

import copy
from typing import Any

from airflow_trainjob_local.jobset import constants as c

__all__ = ["build_pod", "pod_index"]

#: The service account the ServiceAccount admission plugin names when a pod names none.
DEFAULT_SERVICE_ACCOUNT = "default"

_INDEX_ENV = {
    "name": c.JOB_COMPLETION_INDEX_ENV,
    "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{c.JOB_COMPLETION_INDEX}']"}},
}


def build_pod(job: dict[str, Any], index: int) -> dict[str, Any]:
    """The pod manifest for completion ``index`` of ``job`` (as read from the API; its uid is needed)."""
    meta = job["metadata"]
    name, uid = str(meta["name"]), str(meta["uid"])
    template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
    template_meta = template.get("metadata") or {}
    labels = {
        **(template_meta.get("labels") or {}),
        c.LABEL_JOB_NAME: name,
        c.LABEL_JOB_NAME_LEGACY: name,
        c.LABEL_CONTROLLER_UID: uid,
        c.LABEL_CONTROLLER_UID_LEGACY: uid,
        c.JOB_COMPLETION_INDEX: str(index),
    }
    annotations = {**(template_meta.get("annotations") or {}), c.JOB_COMPLETION_INDEX: str(index)}
    spec = template.get("spec") or {}
    spec["hostname"] = f"{name}-{index}"
    if not spec.get("serviceAccountName") and _projects_token(spec):
        spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            env = container.setdefault("env", [])
            if not any(e.get("name") == c.JOB_COMPLETION_INDEX_ENV for e in env):
                env.append(copy.deepcopy(_INDEX_ENV))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{name}-{index}-",
            "namespace": meta["namespace"],
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": c.BATCH_API_VERSION,
                    "kind": c.JOB_KIND,
                    "name": name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def _projects_token(spec: dict[str, Any]) -> bool:
    return any(
        "serviceAccountToken" in source
        for volume in spec.get("volumes") or []
        for source in (volume.get("projected") or {}).get("sources") or []
    )


def pod_index(pod: dict[str, Any]) -> int | None:
    """The completion index of a Job's pod (its annotation, else its label); ``None`` when missing or bad."""
    meta = pod.get("metadata") or {}
    value = (meta.get("annotations") or {}).get(c.JOB_COMPLETION_INDEX) or (meta.get("labels") or {}).get(
        c.JOB_COMPLETION_INDEX
    )
    try:
        index = int(str(value))
    except (TypeError, ValueError):
        return None
    return index if index >= 0 else None

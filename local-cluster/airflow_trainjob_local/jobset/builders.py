"""The objects a JobSet owns, as manifests (dicts in the API's spelling): its batch/v1 Jobs (upstream
``constructJob`` and ``labelAndAnnotateObject`` in ``pkg/controllers/jobset_controller.go``) and its headless
Service (``createHeadlessSvcIfNecessary``). Pure.
"""

from __future__ import annotations

import copy
from typing import Any

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.spec import JobSetView, job_hash_key, job_name

__all__ = [
    "build_job",
    "build_service",
    "coordinator_endpoint",
    "jobset_annotations",
    "jobset_labels",
    "owner_reference",
]


def owner_reference(view: JobSetView) -> dict[str, Any]:
    """The controller ownerReference naming the JobSet (``ctrl.SetControllerReference``)."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "name": view.name,
        "uid": view.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def jobset_labels(view: JobSetView, replicated_job: dict[str, Any], index: int) -> dict[str, str]:
    """The labels upstream puts on a Job and on its pod template (also written as annotations).

    :param replicated_job: one entry of ``spec.replicatedJobs`` (defaulted).
    :param index: the job's index within its replicated job (``job-index``).
    """
    rjob_name = str(replicated_job["name"])
    group = str(replicated_job["groupName"])
    labels = {
        c.LABEL_JOBSET_NAME: view.name,
        c.LABEL_JOBSET_UID: view.uid,
        c.LABEL_REPLICATED_JOB_NAME: rjob_name,
        c.LABEL_RESTART_ATTEMPT: str(view.restarts),
        c.LABEL_REPLICATED_JOB_REPLICAS: str(replicated_job["replicas"]),
        c.LABEL_GLOBAL_REPLICAS: str(view.global_replicas()),
        c.LABEL_JOB_INDEX: str(index),
        c.LABEL_JOB_KEY: job_hash_key(view.namespace, job_name(view.name, rjob_name, index)),
        c.LABEL_JOB_GLOBAL_INDEX: str(view.global_index(rjob_name, index)),
        c.LABEL_GROUP_NAME: group,
        c.LABEL_GROUP_REPLICAS: str(view.group_replicas(group)),
        c.LABEL_JOB_GROUP_INDEX: str(view.group_index(rjob_name, index)),
    }
    coordinator = coordinator_endpoint(view)
    if coordinator is not None:
        labels[c.LABEL_COORDINATOR] = coordinator
    return labels


def coordinator_endpoint(view: JobSetView) -> str | None:
    """``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>.<subdomain>`` of ``spec.coordinator`` (upstream
    ``CoordinatorEndpoint``), or ``None`` without a coordinator."""
    coordinator = view.spec.get("coordinator")
    if not coordinator:
        return None
    job = job_name(view.name, str(coordinator.get("replicatedJob", "")), int(coordinator.get("jobIndex") or 0))
    return f"{job}-{int(coordinator.get('podIndex') or 0)}.{view.subdomain}"


def jobset_annotations(view: JobSetView, replicated_job: dict[str, Any], index: int) -> dict[str, str]:
    """The annotations upstream puts on a Job and its pod template: the labels, plus the exclusive placement
    annotations of the JobSet, or else of the replicated job's template."""
    annotations = jobset_labels(view, replicated_job, index)
    template_annotations = ((replicated_job.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    for source in ((view.obj.get("metadata") or {}).get("annotations") or {}, template_annotations):
        if c.ANNOTATION_EXCLUSIVE_TOPOLOGY in source:
            annotations[c.ANNOTATION_EXCLUSIVE_TOPOLOGY] = source[c.ANNOTATION_EXCLUSIVE_TOPOLOGY]
            if c.ANNOTATION_NODE_SELECTOR_STRATEGY in source:
                annotations[c.ANNOTATION_NODE_SELECTOR_STRATEGY] = source[c.ANNOTATION_NODE_SELECTOR_STRATEGY]
    return annotations


def build_job(view: JobSetView, replicated_job: dict[str, Any], index: int) -> dict[str, Any]:
    """Job ``index`` of ``replicated_job``: the replicated job's template with the JobSet's labels and
    annotations on the Job and on its pod template, the subdomain when DNS hostnames are on, ``suspend`` as the
    JobSet's, owned by the JobSet.

    ``spec.suspend`` is also kept in the :data:`~.constants.ANNOTATION_JOB_SUSPEND` annotation, since the 1.20
    apiserver drops the field.
    """
    template = copy.deepcopy(replicated_job.get("template") or {})
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    stamp = jobset_labels(view, replicated_job, index)
    stamp_annotations = jobset_annotations(view, replicated_job, index)
    pod_template = spec.setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **stamp}
    pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **stamp_annotations}
    if view.dns_hostnames:
        pod_template.setdefault("spec", {})["subdomain"] = view.subdomain
    spec["suspend"] = view.suspended
    annotations = {**(meta.get("annotations") or {}), **stamp_annotations}
    annotations[c.ANNOTATION_JOB_SUSPEND] = "true" if view.suspended else "false"
    return {
        "apiVersion": c.BATCH_API_VERSION,
        "kind": c.JOB_KIND,
        "metadata": {
            "name": job_name(view.name, str(replicated_job["name"]), index),
            "namespace": view.namespace,
            "labels": {**(meta.get("labels") or {}), **stamp},
            "annotations": annotations,
            "ownerReferences": [owner_reference(view)],
        },
        "spec": spec,
    }


def build_service(view: JobSetView) -> dict[str, Any]:
    """The headless Service named like the subdomain, selecting the JobSet's pods."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": view.subdomain,
            "namespace": view.namespace,
            "ownerReferences": [owner_reference(view)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {c.LABEL_JOBSET_NAME: view.name},
            "publishNotReadyAddresses": view.publish_not_ready_addresses,
        },
    }

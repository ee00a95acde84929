"""TrainJobs, their statuses and their JobSet's pods in the shapes kubeflow/trainer v2.3.0 and kubernetes-sigs/jobset
v0.12.0 write them (``trainjob_controller.go``, the JobSet plugin's ``Status``; the JobSet's ``constructJob`` labels,
the Job controller's Indexed pods), as the local cluster's stand-in writes them too; each checked against the
``kubeflow_trainer_api`` models (:func:`upstream_shape`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

NAME, NAMESPACE, UID, JOBSET_UID = "digits", "ml", "tj-uid-1", "js-uid-1"
T0, T1, T2 = "2026-12-07T10:00:00Z", "2026-12-07T10:00:05Z", "2026-12-07T10:01:00Z"


def upstream_shape(model: type[BaseModel], obj: dict[str, Any]) -> dict[str, Any]:
    """``obj``, after checking that the model of its type reads it whole: every field known, typed as upstream's.

    :param model: a ``kubeflow_trainer_api.models`` class.
    :param obj: the object, an API JSON dict.
    """
    dumped = model.model_validate(obj).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert dumped == obj, f"not in upstream's shape: {dumped} != {obj}"
    return obj


def condition(type_: str, status: str, reason: str, message: str, when: str = T1) -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": when}


def jobs(**counts: dict[str, int]) -> list[dict[str, Any]]:
    """``status.jobsStatus``: replicated job -> its non-zero counts (the others 0, as the trainer writes them)."""
    fields = ("active", "failed", "ready", "succeeded", "suspended")
    return [{"name": name.replace("_", "-"), **{f: c.get(f, 0) for f in fields}} for name, c in counts.items()]


def train_job(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A TrainJob on the ``torch-distributed`` runtime with two nodes, as the API returns it."""
    job: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": UID, "creationTimestamp": T0},
        "spec": {
            "runtimeRef": {
                "name": "torch-distributed",
                "kind": "ClusterTrainingRuntime",
                "apiGroup": "trainer.kubeflow.org",
            },
            "trainer": {
                "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
                "command": ["torchrun", "train_digits.py", "--token", "s3cr3t"],
                "numNodes": 2,
            },
            "managedBy": "trainer.kubeflow.org/trainjob-controller",
            "suspend": False,
            **spec,
        },
    }
    if status is not None:
        job["status"] = status
    return job


SUSPENDED = {"conditions": [condition("Suspended", "True", "Suspended", "TrainJob is suspended", T0)]}
RESUMED_CREATED = {
    "conditions": [condition("Suspended", "False", "Resumed", "TrainJob is resumed", T1)],
    "jobsStatus": jobs(node={"active": 1}),
}
RESUMED_RUNNING = {
    "conditions": [condition("Suspended", "False", "Resumed", "TrainJob is resumed", T1)],
    "jobsStatus": jobs(node={"active": 1, "ready": 1}),
}
COMPLETE = {
    "conditions": [condition("Complete", "True", "AllJobsCompleted", "jobset completed successfully", T2)],
    "jobsStatus": jobs(node={"succeeded": 1}),
}
FAILED_JOBS = {
    "conditions": [
        condition(
            "Failed",
            "True",
            "FailedJobs",
            f"jobset failed due to one or more job failures (first failed job: {NAME}-node-0)",
            T2,
        )
    ],
    "jobsStatus": jobs(node={"failed": 1}),
}
DEADLINE_EXCEEDED = {
    "conditions": [condition("Failed", "True", "DeadlineExceeded", "TrainJob exceeded its active deadline", T2)],
    "jobsStatus": jobs(node={"active": 1}),
}
RUNTIME_NOT_SUPPORTED = {
    "conditions": [
        condition("Failed", "True", "TrainingRuntimeNotSupported", "unsupported runtime: MyRuntime.example.org", T1)
    ],
}


def pod(
    step: str,
    index: int,
    *,
    phase: str = "Running",
    containers: tuple[str, ...] = ("node",),
    init: tuple[str, ...] = (),
    container_statuses: list[dict[str, Any]] | None = None,
    init_statuses: list[dict[str, Any]] | None = None,
    job_index: int = 0,
    replicas: int = 1,
    attempt: int = 0,
    created: str = T1,
    suffix: str = "abcde",
) -> dict[str, Any]:
    """A pod of the TrainJob's JobSet: Job ``<name>-<step>-<job_index>``'s pod of completion ``index``, labelled
    and annotated as the JobSet and the Job controllers label it, owned by the Job."""
    job_name = f"{NAME}-{step}-{job_index}"
    stamp = {
        "jobset.sigs.k8s.io/jobset-name": NAME,
        "jobset.sigs.k8s.io/jobset-uid": JOBSET_UID,
        "jobset.sigs.k8s.io/replicatedjob-name": step,
        "jobset.sigs.k8s.io/replicatedjob-replicas": str(replicas),
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "jobset.sigs.k8s.io/restart-attempt": str(attempt),
        "jobset.sigs.k8s.io/job-key": "0123456789abcdef",
    }
    indexed = {"batch.kubernetes.io/job-completion-index": str(index)}
    status: dict[str, Any] = {"phase": phase}
    if container_statuses is not None:
        status["containerStatuses"] = container_statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    spec: dict[str, Any] = {"containers": [{"name": c, "image": "python:3.11"} for c in containers]}
    if init:
        spec["initContainers"] = [{"name": c, "image": "busybox"} for c in init]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job_name}-{index}-{suffix}",
            "namespace": NAMESPACE,
            "uid": f"pod-{step}-{job_index}-{index}-{suffix}",
            "creationTimestamp": created,
            "labels": {
                **stamp,
                **indexed,
                "batch.kubernetes.io/job-name": job_name,
                "batch.kubernetes.io/controller-uid": f"job-uid-{step}",
                "job-name": job_name,
                "controller-uid": f"job-uid-{step}",
            },
            "annotations": {**stamp, **indexed},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": job_name,
                    "uid": f"job-uid-{step}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": status,
    }


def terminated(name: str, exit_code: int, reason: str, finished: str = T2, **extra: Any) -> dict[str, Any]:
    """A container status whose container ended."""
    state = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": finished, **extra}}
    return {"name": name, "ready": False, "restartCount": 0, "image": "python:3.11", "imageID": "", "state": state}

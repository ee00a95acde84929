"""``spec.volumeClaimPolicies``: the PVCs a JobSet creates from its templates, and the volumes its Jobs get.

As kubernetes-sigs/jobset ``v0.12.0`` (``pkg/controllers/volume_claim_policy.go``): each template becomes a PVC
``<template>-<jobset>`` (the template's labels plus ``jobset.sigs.k8s.io/jobset-name``, its annotations and
spec), owned by the JobSet (controller reference) when the policy's ``retentionPolicy.whenDeleted`` is
``Delete`` (the webhook's default), kept when ``Retain``; a Job whose containers or init containers mount a
volume of the template's name gets a ``persistentVolumeClaim`` volume of that claim. The local cluster runs no
PersistentVolume controller, so the claims stay ``Pending``; the process kubelet ignores volumes, so the pods
run anyway (a real cluster binds the claim first, or leaves the pods Pending).
"""

from __future__ import annotations

from typing import Any

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.builders import owner_reference
from airflow_trainjob_local.jobset.spec import JobSetView

RETAIN = "Retain"


def claim_name(jobset: str, template: str) -> str:
    """``<template>-<jobset>``: the PVC name upstream's ``GeneratePVCName`` gives."""
    return f"{template}-{jobset}"


def _templates(view: JobSetView) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(policy, template) for every template of every volume claim policy of ``view``."""
    policies = (view.obj.get("spec") or {}).get("volumeClaimPolicies") or []
    return [(policy, template) for policy in policies for template in policy.get("templates") or []]


def build_claims(view: JobSetView) -> list[dict[str, Any]]:
    """The PVC manifests of ``view``'s volume claim policies."""
    claims = []
    for policy, template in _templates(view):
        meta = template.get("metadata") or {}
        name = str(meta.get("name") or "")
        metadata: dict[str, Any] = {
            "name": claim_name(view.name, name),
            "namespace": view.namespace,
            "labels": {**(meta.get("labels") or {}), c.LABEL_JOBSET_NAME: view.name},
        }
        if meta.get("annotations"):
            metadata["annotations"] = dict(meta["annotations"])
        if ((policy.get("retentionPolicy") or {}).get("whenDeleted") or "Delete") != RETAIN:
            metadata["ownerReferences"] = [owner_reference(view)]
        claims.append(
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": template.get("spec")}
        )
    return claims


def _mounted(pod_spec: dict[str, Any], volume: str) -> bool:
    containers = [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
    return any(m.get("name") == volume for ctr in containers for m in ctr.get("volumeMounts") or [])


def add_claim_volumes(view: JobSetView, job: dict[str, Any]) -> None:
    """Add to ``job`` (a Job manifest, changed in place) a claim volume per template one of its containers mounts."""
    pod_spec = job["spec"].setdefault("template", {}).setdefault("spec", {})
    for _policy, template in _templates(view):
        name = str((template.get("metadata") or {}).get("name") or "")
        if _mounted(pod_spec, name):
            volume = {"name": name, "persistentVolumeClaim": {"claimName": claim_name(view.name, name)}}
            pod_spec.setdefault("volumes", []).append(volume)

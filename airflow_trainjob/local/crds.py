"""CustomResourceDefinitions of the six ``kubeflow.org/v1`` job kinds, generated from ``constants.JOB_KINDS``.

Like the training operator's own CRDs (``manifests/base/crds/kubeflow.org_<plural>.yaml``): namespaced, one
served and stored version ``v1``, the ``status`` subresource, and the printer columns ``State``
(``.status.conditions[-1:].type``) and ``Age``. The schema is structural but checks only the top-level shape —
``spec`` an object that requires the kind's replica-specs map (each replica spec an object), ``runPolicy`` an
object, ``status`` an object — and keeps every other field (``x-kubernetes-preserve-unknown-fields``). It is
therefore more lenient than the real one: it does not type the fields inside replica specs, run policy or
status (the real CRD requires ``status.conditions`` and ``status.replicaStatuses``), and it has no ``scale``
subresource.
"""

from __future__ import annotations

from airflow_trainjob.constants import GROUP, JOB_KINDS, VERSION, JobKind

_OBJECT_ANY = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def crd_name(kind: JobKind) -> str:
    """``<plural>.<group>``, e.g. ``pytorchjobs.kubeflow.org``."""
    return f"{kind.plural}.{GROUP}"


def crd_manifest(kind: JobKind) -> dict:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of one job kind, as a plain dict."""
    spec_schema = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": [kind.replica_specs_key],
        "properties": {
            kind.replica_specs_key: {
                "type": "object",
                "description": f"A map of {kind.kind} replica type ({', '.join(kind.replica_types)}) to ReplicaSpec.",
                "additionalProperties": dict(_OBJECT_ANY),
            },
            "runPolicy": dict(_OBJECT_ANY),
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": crd_name(kind), "labels": {"app.kubernetes.io/managed-by": "airflow-trainjob-local"}},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": [
                        {"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"},
                        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": f"{kind.kind} represents a {kind.kind} resource.",
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec_schema,
                                "status": dict(_OBJECT_ANY),
                            },
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def all_crd_manifests() -> list[dict]:
    """The CRDs of every kind in ``JOB_KINDS``, in the table's order."""
    return [crd_manifest(kind) for kind in JOB_KINDS.values()]

"""CustomResourceDefinitions of the six ``kubeflow.org/v1`` job kinds, generated from ``constants.JOB_KINDS``.

Like the training operator's own CRDs (``manifests/base/crds/kubeflow.org_<plural>.yaml``): namespaced, one
served and stored version ``v1``, the ``status`` subresource, and the printer columns ``State``
(``.status.conditions[-1:].type``) and ``Age``. The schema (:mod:`.crd_schema`) is structural and types every
field of the v1 API — replica specs with the full pod template, run policy, the kind's own fields, status — so
the apiserver refuses a wrongly typed field (422) and prunes unknown ones, as a real cluster does. Differences
from the real CRDs are listed in :mod:`.crd_schema`; among them, there is no ``scale`` subresource.
"""

from __future__ import annotations

import hashlib
import json

from airflow_trainjob_local import crd_schema
from airflow_trainjob_local.constants import GROUP, JOB_KINDS, LOCAL_KEY_PREFIX, VERSION, JobKind

#: Annotation holding the SHA-256 of the CRD's ``spec`` as built here: ``install_crds`` replaces an installed CRD
#: only when it differs (a state dir made by an older version, whose CRDs may carry no hash under this key, gets the
#: current schema on its next ``up``).
SPEC_HASH_ANNOTATION = f"{LOCAL_KEY_PREFIX}/crd-spec-sha256"


def crd_name(kind: JobKind) -> str:
    """``<plural>.<group>``, e.g. ``pytorchjobs.kubeflow.org``."""
    return f"{kind.plural}.{GROUP}"


def crd_manifest(kind: JobKind) -> dict:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of one job kind, as a plain dict."""
    return manifest_of(crd_name(kind), _crd_spec(kind))


def manifest_of(name: str, spec: dict) -> dict:
    """A CustomResourceDefinition of the local cluster: ``spec`` under ``name``, labelled as the local cluster's,
    with the SHA-256 of ``spec`` in :data:`SPEC_HASH_ANNOTATION` (what ``install_crds`` compares).

    :param name: the CRD's name, ``<plural>.<group>``.
    :param spec: the CRD's ``spec`` (group, names, scope, versions).
    """
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "airflow-trainjob-local"},
            "annotations": {SPEC_HASH_ANNOTATION: digest},
        },
        "spec": spec,
    }


def _crd_spec(kind: JobKind) -> dict:
    """The CRD's ``spec``: names, scope, the one version with its schema, printer columns and subresources."""
    return {
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
                "schema": {"openAPIV3Schema": crd_schema.job_schema(kind.kind, kind.replica_specs_key)},
                "subresources": {"status": {}},
            }
        ],
    }


def all_crd_manifests() -> list[dict]:
    """The CRDs of every kind in ``JOB_KINDS``, in the table's order."""
    return [crd_manifest(kind) for kind in JOB_KINDS.values()]

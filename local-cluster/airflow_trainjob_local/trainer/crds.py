"""CustomResourceDefinitions of the Trainer v2 API (``trainer.kubeflow.org/v1alpha1``: TrainJob, TrainingRuntime,
ClusterTrainingRuntime) and of JobSet (``jobset.x-k8s.io/v1alpha2``), which ``up`` installs beside the six
``kubeflow.org/v1`` kinds (:mod:`airflow_trainjob_local.crds`, whose manifest and spec-hash scheme these share).

As upstream's CRDs (kubeflow/trainer v2.3.0 ``manifests/base/crds/trainer.kubeflow.org_*.yaml``, jobset v0.12.0
``config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml``): one served and stored version each; TrainJob and
JobSet with the ``status`` subresource and upstream's printer columns (TrainJob: ``State``, ``Age``; JobSet:
``TerminalState``, ``Restarts``, ``Completed``, ``Suspended``, ``Age``); the runtimes without a status
subresource or printer columns (they have no status); ClusterTrainingRuntime cluster-scoped, the others
namespaced; no short names or categories (upstream has none). The schemas and their differences from
upstream's: :mod:`.schema`.
"""

from __future__ import annotations

from kubeflow_trainer_api import models  # type: ignore[import-untyped]
from pydantic import BaseModel

from airflow_trainjob_local.crds import manifest_of
from airflow_trainjob_local.jobset import constants as jobset
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer import schema

_AGE = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
_TRAINJOB_COLUMNS = [{"jsonPath": ".status.conditions[-1:].type", "name": "State", "type": "string"}, _AGE]
_JOBSET_COLUMNS = [
    {
        "jsonPath": ".status.terminalState",
        "name": "TerminalState",
        "type": "string",
        "description": "Completed or Failed",
    },
    {"jsonPath": ".status.restarts", "name": "Restarts", "type": "string", "description": "Restarts so far"},
    {"jsonPath": '.status.conditions[?(@.type=="Completed")].status', "name": "Completed", "type": "string"},
    {"jsonPath": ".spec.suspend", "name": "Suspended", "type": "string", "description": "Whether suspended"},
    {**_AGE, "description": "When the JobSet was created"},
]


def _crd(
    group: str,
    version: str,
    kind: str,
    plural: str,
    model: type[BaseModel],
    *,
    cluster_scoped: bool = False,
    columns: list[dict] | None = None,
) -> dict:
    """One CRD manifest.

    :param group: the API group, e.g. ``trainer.kubeflow.org``.
    :param version: the one served and stored version, e.g. ``v1alpha1``.
    :param kind: the kind, e.g. ``TrainJob``; its singular is the kind in lower case, its list kind ``<kind>List``.
    :param plural: the resource name, e.g. ``trainjobs``.
    :param model: the kind's generated model the schema is derived from.
    :param cluster_scoped: ``Cluster`` scope instead of ``Namespaced``.
    :param columns: printer columns; given, the kind also has the ``status`` subresource.
    """
    served: dict = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": schema.structural_schema(model, description=f"{kind} of {group}/{version}.")},
    }
    if columns:
        served["additionalPrinterColumns"] = columns
        served["subresources"] = {"status": {}}
    spec = {
        "group": group,
        "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
        "scope": "Cluster" if cluster_scoped else "Namespaced",
        "versions": [served],
    }
    return manifest_of(f"{plural}.{group}", spec)


def trainjob_crd() -> dict:
    """``trainjobs.trainer.kubeflow.org``."""
    return _crd(
        c.GROUP, c.VERSION, c.TRAINJOB_KIND, c.TRAINJOBS, models.TrainerV1alpha1TrainJob, columns=_TRAINJOB_COLUMNS
    )


def training_runtime_crd() -> dict:
    """``trainingruntimes.trainer.kubeflow.org`` (namespaced)."""
    return _crd(c.GROUP, c.VERSION, c.TRAINING_RUNTIME_KIND, c.TRAINING_RUNTIMES, models.TrainerV1alpha1TrainingRuntime)


def cluster_training_runtime_crd() -> dict:
    """``clustertrainingruntimes.trainer.kubeflow.org`` (cluster-scoped)."""
    return _crd(
        c.GROUP,
        c.VERSION,
        c.CLUSTER_TRAINING_RUNTIME_KIND,
        c.CLUSTER_TRAINING_RUNTIMES,
        models.TrainerV1alpha1ClusterTrainingRuntime,
        cluster_scoped=True,
    )


def jobset_crd() -> dict:
    """``jobsets.jobset.x-k8s.io``."""
    return _crd(
        jobset.GROUP, jobset.VERSION, jobset.KIND, jobset.PLURAL, models.JobsetV1alpha2JobSet, columns=_JOBSET_COLUMNS
    )


def all_crd_manifests() -> list[dict]:
    """The four CRDs: JobSet first (what the trainer's kinds build on), then TrainJob and the two runtimes."""
    return [jobset_crd(), trainjob_crd(), training_runtime_crd(), cluster_training_runtime_crd()]

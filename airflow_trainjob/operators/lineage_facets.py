"""The provider's custom OpenLineage facets (attrs classes of the OpenLineage client, as the openlineage provider's
guide asks): imported only by :mod:`airflow_trainjob.operators.lineage`, inside the operators' OpenLineage methods,
so nothing imports OpenLineage where the openlineage provider is not installed.

Each facet's ``_schemaURL`` names its definition in ``docs/lineage-facets.json`` at the release that wrote it; each
is sent under a key with the provider's prefix (:data:`FACET_PREFIX`). The fields are
:mod:`airflow_trainjob.domain.lineage`'s, which says what they hold.
"""

from __future__ import annotations

from typing import Any

from attrs import Factory, define
from openlineage.client.facet_v2 import JobFacet, RunFacet

from airflow_trainjob import __version__

#: The repository the schemas are read from at a release's tag (``v<version>``): the project's public address.
SCHEMA_REPOSITORY = "https://raw.githubusercontent.com/airflow-trainjob/airflow-trainjob"
#: The prefix of the keys the provider's facets are sent under (OpenLineage: a custom facet's key names its producer).
FACET_PREFIX = "airflowTrainjob_"
#: The keys: the job facet, the run facet, the failure facet.
JOB_FACET_KEY = f"{FACET_PREFIX}job"
RUN_FACET_KEY = f"{FACET_PREFIX}run"
FAILURE_FACET_KEY = f"{FACET_PREFIX}failure"


def schema_url(definition: str) -> str:
    """The ``_schemaURL`` of a facet: its definition in ``docs/lineage-facets.json`` at this release's tag.

    :param definition: the facet's class name, its ``$defs`` key.
    """
    return f"{SCHEMA_REPOSITORY}/v{__version__}/docs/lineage-facets.json#/$defs/{definition}"


@define
class TrainingJobJobFacet(JobFacet):
    """The training job the task ran (:func:`airflow_trainjob.domain.lineage.describe_job` says each field).

    :param apiVersion: ``kubeflow.org/v1`` or ``trainer.kubeflow.org/v1alpha1``.
    :param kind: ``PyTorchJob`` ... ``JAXJob``, or ``TrainJob``.
    :param namespace: ``metadata.namespace``.
    :param replicas: replica type -> count (``spec.<kind>ReplicaSpecs[*].replicas``; a TrainJob's
        ``{"node": spec.trainer.numNodes}`` when set).
    :param images: replica type -> its containers' images (init containers first); a TrainJob's
        ``{"node": [spec.trainer.image]}`` when set.
    :param runPolicy: a v1 job's ``spec.runPolicy`` scalars as the user set them; a TrainJob's
        ``activeDeadlineSeconds``, ``suspend``, ``managedBy``.
    :param runtime: a TrainJob's ``spec.runtimeRef`` (``name``, ``kind``, ``apiGroup``); None for a v1 kind.
    :param initializers: a TrainJob's initializer steps set (``dataset``, ``model``); None for a v1 kind.
    :param processesPerNode: a TrainJob's ``spec.trainer.numProcPerNode``, when set.
    :param deleted: OpenLineage's ``_deleted`` of a job facet (never set here).
    :param producer: ``_producer``, the URI of what made the facet; default: the openlineage provider's.
    """

    apiVersion: str
    kind: str
    namespace: str
    replicas: dict[str, int] = Factory(dict)
    images: dict[str, list[str]] = Factory(dict)
    runPolicy: dict[str, Any] = Factory(dict)
    runtime: dict[str, str] | None = None
    initializers: list[str] | None = None
    processesPerNode: Any = None

    @staticmethod
    def _get_schema() -> str:
        return schema_url("TrainingJobJobFacet")


@define
class TrainingJobRunFacet(RunFacet):
    """The job object of this run, and how it ended (:func:`airflow_trainjob.domain.lineage.describe_run`).

    :param name: ``metadata.name``.
    :param namespace: ``metadata.namespace``.
    :param uid: ``metadata.uid``; None before the job exists.
    :param phase: the job's phase (``Succeeded``, ``Complete``, ``Failed``, ``Running``...).
    :param conditions: ``status.conditions`` (``type``, ``status``, ``reason``, ``message`` cut to 500 characters,
        ``lastTransitionTime``).
    :param startTime: RFC 3339, when the run started (a TrainJob: its last admission, else its creation).
    :param completionTime: RFC 3339, when it completed or failed.
    :param durationSeconds: seconds from ``startTime`` to ``completionTime``.
    :param producer: ``_producer``, the URI of what made the facet; default: the openlineage provider's.
    """

    name: str
    namespace: str
    uid: str | None = None
    phase: str | None = None
    conditions: list[dict[str, Any]] | None = None
    startTime: str | None = None
    completionTime: str | None = None
    durationSeconds: float | None = None

    @staticmethod
    def _get_schema() -> str:
        return schema_url("TrainingJobRunFacet")


@define
class TrainingJobFailureRunFacet(RunFacet):
    """The failed container runs the verdict judged the job by (:func:`airflow_trainjob.domain.lineage.describe_failure`).

    :param permanent: retrying cannot help (the first failure's exit code is 1-127): Airflow does not retry.
    :param failedReplicas: per failed replica (and init container), in the order they first failed, its first
        failed run: ``replica``, ``pod``, ``container``, ``exitCode``, ``reason``, ``exitClass``; and
        ``failedRuns``, how many of its runs failed.
    :param producer: ``_producer``, the URI of what made the facet; default: the openlineage provider's.
    """

    permanent: bool
    failedReplicas: list[dict[str, Any]]

    @staticmethod
    def _get_schema() -> str:
        return schema_url("TrainingJobFailureRunFacet")

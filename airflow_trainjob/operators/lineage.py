"""The operators' OpenLineage methods (``get_openlineage_facets_on_start``/``_on_complete``/``_on_failure`` call
these): the job facet, the run facets and the datasets, as :mod:`airflow_trainjob.domain.lineage` describes them from
what the task already holds -- no API call.

OpenLineage is imported here only inside the functions, and only when the openlineage provider is installed (its
listener is the only caller); without it each returns None (nothing to emit).

What the task holds at each call: at the start (the listener's ``on_task_instance_running``, after Airflow rendered
the fields, so the try's manifest is built: :attr:`TrainingJobOperator._manifest`), the manifest; at the end, also
the try's run (:class:`~airflow_trainjob.operators.run.TrainingJobRun`): the job as last read and the exception the
try ended with. A deferred task resumes in a new process: its run there is the one ``execute_complete`` made from
the trigger's event (the job read again, the verdict judged again), and its START is sent again by that process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from airflow_trainjob.domain.lineage import (
    DatasetName,
    describe_failure,
    describe_job,
    describe_run,
    initializer_datasets,
)
from airflow_trainjob.exceptions import decision_of
from airflow_trainjob.families import family_of

if TYPE_CHECKING:
    from airflow_trainjob.operators.run import TrainingJobRun


def openlineage_installed() -> bool:
    """Whether the openlineage provider (and the OpenLineage client it brings) can be imported."""
    try:
        import airflow.providers.openlineage.extractors  # noqa: F401
        import openlineage.client.event_v2  # noqa: F401
    except ImportError:
        return False
    return True


def lineage_on_start(manifest: Mapping[str, Any] | None, inlets: Iterable[Any], outlets: Iterable[Any]) -> Any:
    """What the START event carries: the job facet and the run facet of the manifest (its name and namespace), the
    TrainJob's initializer datasets and the task's ``inlets`` as inputs, its ``outlets`` as outputs.

    :param manifest: the try's manifest; None: the input is invalid (only the datasets then).
    :param inlets: the task's ``inlets`` (Airflow ``Asset``\\ s, OpenLineage ``Dataset``\\ s, ``File``/``Table``).
    :param outlets: the task's ``outlets``.
    :returns: an ``OperatorLineage``; None without the openlineage provider.
    """
    if not openlineage_installed():
        return None
    return _lineage(manifest, manifest, None, inlets, outlets)


def lineage_at_end(
    manifest: Mapping[str, Any] | None, run: TrainingJobRun | None, inlets: Iterable[Any], outlets: Iterable[Any]
) -> Any:
    """What the COMPLETE or FAIL event carries: as at the start, the run facet now of the job as the try last knew
    it (uid, phase, conditions, times), and after a failed job's verdict the failure facet.

    :param manifest: the try's manifest (else the job the try took up describes the job).
    :param run: the try's run; None: it never began (invalid input).
    :param inlets: the task's ``inlets``.
    :param outlets: the task's ``outlets``.
    :returns: an ``OperatorLineage``; None without the openlineage provider.
    """
    if not openlineage_installed():
        return None
    job = run.last_known_job if run is not None else None
    return _lineage(manifest or job, job or manifest, run.error if run is not None else None, inlets, outlets)


def _lineage(
    described: Mapping[str, Any] | None,
    job: Mapping[str, Any] | None,
    error: BaseException | None,
    inlets: Iterable[Any],
    outlets: Iterable[Any],
) -> Any:
    """The ``OperatorLineage`` of the job ``described`` (its spec) and ``job`` (its identity and status)."""
    from airflow.providers.openlineage.extractors import OperatorLineage

    from airflow_trainjob.operators import lineage_facets as facets

    run_facets: dict[str, Any] = {}
    job_facets: dict[str, Any] = {}
    if described is not None and described.get("kind"):
        family = family_of(str(described["kind"]))
        job_facets[facets.JOB_FACET_KEY] = facets.TrainingJobJobFacet(**describe_job(described, family))
    if job is not None and job.get("kind"):
        run_facets[facets.RUN_FACET_KEY] = facets.TrainingJobRunFacet(**describe_run(job, family_of(str(job["kind"]))))
    verdict = decision_of(error)
    if verdict is not None:
        fields = describe_failure(verdict.ends, verdict.permanent)
        run_facets[facets.FAILURE_FACET_KEY] = facets.TrainingJobFailureRunFacet(**fields)
    inputs = [_dataset(d) for d in initializer_datasets(described or {})]
    return OperatorLineage(
        inputs=_unique([*inputs, *_converted(inlets)]),
        outputs=_unique(_converted(outlets)),
        run_facets=run_facets,
        job_facets=job_facets,
    )


def _dataset(name: DatasetName) -> Any:
    """An OpenLineage input dataset of ``name``."""
    from openlineage.client.event_v2 import Dataset

    return Dataset(namespace=name.namespace, name=name.name)


def _converted(declared: Iterable[Any]) -> list[Any]:
    """The task's ``inlets`` or ``outlets`` as OpenLineage datasets, converted as the openlineage provider converts
    them for any operator (an ``Asset`` through its scheme's converter); those it cannot convert are left out."""
    from airflow.providers.openlineage.extractors.manager import ExtractorManager

    converted = (ExtractorManager.convert_to_ol_dataset(item) for item in declared or ())
    return [d for d in converted if d is not None]


def _unique(datasets: list[Any]) -> list[Any]:
    """``datasets`` without repeats (by namespace and name), in order."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for dataset in datasets:
        key = (dataset.namespace, dataset.name)
        if key not in seen:
            seen.add(key)
            kept.append(dataset)
    return kept

"""A whole ``kubeflow.org/v1`` job as users of the Kubeflow SDK and ``kubectl`` hold it.

:func:`parse_whole_job` reads a job document (a dict, YAML/JSON text, or an object of the Kubeflow
training SDK) into its :class:`TrainingJobSpec` and the metadata worth sending again. What the API
server writes (``status``, ``metadata.uid``, ``resourceVersion``...) is dropped and listed in
:attr:`WholeJob.ignored`, so the output of ``kubectl get -o yaml`` can be run again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob.constants import API_VERSION, JOB_KINDS, JobKind
from airflow_trainjob.domain.own_keys import is_own_key
from airflow_trainjob.domain.params import kind_problem
from airflow_trainjob.models.documents import V1_JOB_TEXT, one_document
from airflow_trainjob.models.errors import raise_if
from airflow_trainjob.models.job import MISSING, SpecPaths, TrainingJobSpec, parse_parts, to_plain
from airflow_trainjob.models.kinds import kind_field_names

__all__ = ["WholeJob", "parse_whole_job", "read_metadata"]

_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")
_METADATA_KEPT = ("name", "namespace", "labels", "annotations")
# Written by the API server (or a controller) about an existing object; meaningless in a new one.
_METADATA_SERVER_WRITTEN = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "selfLink",
)
# kubectl apply's record of the previous apply: a stale copy of the job, not the user's metadata.
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

#: Kubeflow training SDK class -> the kind it models (its ``kind`` attribute is often left unset).
SDK_KINDS = {k.sdk_class: k.kind for k in JOB_KINDS.values()}


@dataclass(frozen=True)
class WholeJob:
    """A job document, parsed.

    :param spec: the validated spec: kind, replica specs, run policy, kind fields, warnings.
    :param name: ``metadata.name``, if given.
    :param namespace: ``metadata.namespace``, if given.
    :param labels: ``metadata.labels`` (empty if none); the provider's own labels are left out.
    :param annotations: ``metadata.annotations`` (empty if none); kubectl's last-applied record and
        the provider's own annotations are left out.
    :param ignored: the paths of the fields dropped because the server, kubectl or the provider
        writes them: ``status``, then ``metadata.uid``, ``metadata.resourceVersion``... in the order
        found, then dropped labels and annotations.
    """

    spec: TrainingJobSpec
    name: str | None
    namespace: str | None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()


def parse_whole_job(job: Any, *, path: str = "job") -> WholeJob:
    """Read a whole ``kubeflow.org/v1`` job: ``apiVersion``, ``kind``, ``metadata``, ``spec``.

    ``spec`` holds the kind's replica specs (``pytorchReplicaSpecs``, ``tfReplicaSpecs``,
    ``mpiReplicaSpecs``, ``xgbReplicaSpecs``, ``paddleReplicaSpecs`` or ``jaxReplicaSpecs``),
    ``runPolicy`` and the kind's own fields, read as :meth:`TrainingJobSpec.parse` reads them.

    :param job: a dict; a YAML/JSON string holding exactly one document; or a Kubeflow training SDK
        object (``kubeflow.training.KubeflowOrgV1PyTorchJob`` etc.), read as its JSON form.
    :param path: the name of ``job`` in messages; every problem is named ``<path>.<field path>``.
    :raises InvalidJobSpecError: naming every problem at once: an ``apiVersion`` other than
        ``kubeflow.org/v1``, an unknown ``kind``, a missing ``spec`` or replica specs, an unknown field,
        ``metadata.generateName`` (the provider names jobs itself, so that a retry finds its job),
        labels or annotations that are not strings, and whatever the spec's models refuse.

    Dropped and listed in :attr:`WholeJob.ignored`: ``status``; the metadata the API server writes
    (``uid``, ``resourceVersion``, ``creationTimestamp``, ``deletionTimestamp``,
    ``deletionGracePeriodSeconds``, ``generation``, ``managedFields``, ``selfLink``); kubectl's
    ``kubectl.kubernetes.io/last-applied-configuration`` annotation; and the provider's own
    ``airflow-trainjob/`` labels and annotations (and those under ``airflow-trainjob.apache.org/``, the prefix
    of release 0.1.0), which describe the job it made and are written afresh for the new one. Other metadata fields (``ownerReferences``, ``finalizers``...) are
    refused.
    """
    problems: list[str] = []
    sdk_kind = SDK_KINDS.get(type(job).__name__)
    job = _as_mapping(job, path)
    ignored: list[str] = []
    problems += _top_level_problems(job, path, ignored)
    job_kind = _job_kind(job.get("kind", sdk_kind), path, problems)
    name, namespace, labels, annotations = read_metadata(job.get("metadata"), f"{path}.metadata", problems, ignored)
    spec = _spec_of(job.get("spec"), job_kind, f"{path}.spec", problems)
    raise_if(problems)
    assert spec is not None  # no problems means every part parsed
    return WholeJob(
        spec=spec,
        name=name,
        namespace=namespace,
        labels=labels,
        annotations=annotations,
        ignored=tuple(ignored),
    )


def _as_mapping(job: Any, path: str) -> dict[str, Any]:
    """The job document as a plain mapping: text read as its one YAML/JSON document, an SDK object as its JSON form.

    :raises InvalidJobSpecError: when the text is not one document, or the document is no mapping.
    """
    problems: list[str] = []
    job = _load_document(job, path, problems)
    if problems:
        raise_if(problems)
    job = to_plain(job)
    if not isinstance(job, dict):
        raise_if([f"{path}: must be a job (a mapping with apiVersion, kind, metadata, spec), got {type(job).__name__}"])
    return job


def _top_level_problems(job: dict[str, Any], path: str, ignored: list[str]) -> list[str]:
    """Unknown top-level fields and a foreign ``apiVersion``; a ``status`` is noted in ``ignored``."""
    problems = [
        f"{path}.{key}: unknown field; allowed fields: {', '.join(_TOP_LEVEL)}" for key in job if key not in _TOP_LEVEL
    ]
    if "status" in job:
        ignored.append("status")
    api_version = job.get("apiVersion")
    if api_version is not None and api_version != API_VERSION:
        problems.append(f"{path}.apiVersion: must be {API_VERSION!r} (or absent), got {api_version!r}")
    return problems


def _job_kind(kind: Any, path: str, problems: list[str]) -> JobKind | None:
    """The kind named by ``kind`` (the document's, else the SDK class's), or None after noting the problem."""
    problem = kind_problem(kind, f"{path}.kind")
    if problem:
        problems.append(problem)
        return None
    return JOB_KINDS[kind]


def _spec_of(raw: Any, job_kind: JobKind | None, path: str, problems: list[str]) -> TrainingJobSpec | None:
    """The parsed ``spec``, or None after noting why not (none is parsed without a known kind)."""
    if raw is None:
        problems.append(f"{path}: required (the job's replica specs, runPolicy and the kind's fields)")
    elif not isinstance(raw, dict):
        problems.append(f"{path}: must be a mapping of fields, got {type(raw).__name__}")
    elif job_kind is not None:
        spec, found = _spec(job_kind, raw, path)
        problems += found
        return spec
    return None


def _load_document(job: Any, path: str, problems: list[str]) -> Any:
    """Text to its one YAML/JSON document (:func:`~.documents.one_document`); anything else as it is."""
    if not isinstance(job, str):
        return job
    return one_document(job, path, problems, V1_JOB_TEXT)


def read_metadata(
    metadata: Any, path: str, problems: list[str], ignored: list[str]
) -> tuple[str | None, str | None, dict[str, str], dict[str, str]]:
    """A whole job's ``metadata`` as :func:`parse_whole_job` reads it (any API family's job).

    :param metadata: ``metadata`` as given (None: none).
    :param path: its name in messages (``job.metadata``).
    :param problems: where each problem is added (``generateName``, an unknown field, a value that is no string).
    :param ignored: where each dropped field's path is added (server-written metadata, kubectl's record, the
        provider's own labels and annotations).
    :returns: ``(name, namespace, labels, annotations)``.
    """
    if metadata is None:
        return None, None, {}, {}
    if not isinstance(metadata, dict):
        problems.append(f"{path}: must be a mapping of fields, got {type(metadata).__name__}")
        return None, None, {}, {}
    for key in metadata:
        if key in _METADATA_KEPT:
            continue
        if key in _METADATA_SERVER_WRITTEN:
            ignored.append(f"metadata.{key}")
        elif key == "generateName":
            problems.append(
                f"{path}.generateName: not supported: the provider names each job deterministically so "
                "that a retried task finds the job it created; set metadata.name (or the job_name argument)"
            )
        else:
            problems.append(
                f"{path}.{key}: not supported; allowed fields: {', '.join(_METADATA_KEPT)} "
                f"(ignored: {', '.join(_METADATA_SERVER_WRITTEN)})"
            )
    name = _optional_string(metadata.get("name"), f"{path}.name", problems)
    namespace = _optional_string(metadata.get("namespace"), f"{path}.namespace", problems)
    labels = _string_map(metadata.get("labels"), f"{path}.labels", problems, ignored, "metadata.labels")
    annotations = _string_map(
        metadata.get("annotations"), f"{path}.annotations", problems, ignored, "metadata.annotations"
    )
    return name, namespace, labels, annotations


def _optional_string(value: Any, path: str, problems: list[str]) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        problems.append(f"{path}: must be a non-empty string, got {type(value).__name__} {value!r}")
        return None
    return value


def _string_map(value: Any, path: str, problems: list[str], ignored: list[str], shown: str) -> dict[str, str]:
    """A labels/annotations map of strings (keys and values are checked again by build_manifest)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f"{path}: must be a mapping of strings to strings, got {type(value).__name__}")
        return {}
    kept = {}
    for key, item in value.items():
        # The provider's own labels and annotations (ownership, held run policy), under either prefix, describe
        # the job it made; a copy of that job gets fresh ones, never the stale ones.
        if key == _LAST_APPLIED or is_own_key(key):
            ignored.append(f"{shown}[{key!r}]")
            continue
        if not isinstance(key, str):
            problems.append(f"{path}[{key!r}]: key must be a string, got {type(key).__name__}")
        elif not isinstance(item, str):
            problems.append(f"{path}[{key!r}]: value must be a string, got {type(item).__name__} {item!r}")
        else:
            kept[key] = item
    return kept


def _spec(job_kind: JobKind, raw: dict[str, Any], path: str) -> tuple[TrainingJobSpec | None, list[str]]:
    key = job_kind.replica_specs_key
    field_names = kind_field_names(job_kind.kind, deprecated=True)
    allowed = [key, "runPolicy", *field_names]
    problems = [f"{path}.{k}: unknown field; allowed fields: {', '.join(allowed)}" for k in raw if k not in allowed]
    if key not in raw:
        problems.append(f"{path}.{key}: required (a {job_kind.kind}'s replica specs)")
    kind_fields = {k: v for k, v in raw.items() if k in field_names}
    paths = SpecPaths(
        replica_specs=f"{path}.{key}",
        run_policy=f"{path}.runPolicy",
        kind_fields=path,
        kind_fields_text=path,
    )
    # A missing replica-specs key is reported above; the rest is still checked, so all is named at once.
    replica_specs = raw.get(key, MISSING)
    spec, found = parse_parts(job_kind, replica_specs, raw.get("runPolicy"), kind_fields, paths)
    return spec, problems + found

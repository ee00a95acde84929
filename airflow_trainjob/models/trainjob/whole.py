"""A whole ``trainer.kubeflow.org/v1alpha1`` TrainJob, as ``kubectl get -o yaml``, the Kubeflow SDK or a file holds it.

:func:`parse_whole_trainjob` reads the document into its checked spec (:func:`~.spec.parse_spec`) and the metadata
worth sending again, as :func:`~airflow_trainjob.models.whole_job.parse_whole_job` reads a ``kubeflow.org/v1`` job:
``status`` and what the API server writes are dropped and listed, so a TrainJob read from a cluster runs again.
Dropped too: the provider's own runtime patch (it writes a new one, for the new task instance) and each patch's
``time`` (the Trainer webhook's stamp of when the patch was written).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob.constants import RUNTIME_PATCH_MANAGER, TRAINER_API_VERSION, TRAINJOB_KIND
from airflow_trainjob.domain.own_keys import is_own_key
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models.documents import TRAINJOB_TEXT
from airflow_trainjob.models.errors import raise_if
from airflow_trainjob.models.trainjob.spec import TrainJobSpec, parse_spec
from airflow_trainjob.models.trainjob.strict import api_form, load_text
from airflow_trainjob.models.whole_job import read_metadata

__all__ = ["WholeTrainJob", "parse_whole_trainjob"]

_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec", "status")


@dataclass(frozen=True)
class WholeTrainJob:
    """A TrainJob document, parsed.

    :param spec: the checked spec (without the provider's runtime patch).
    :param name: ``metadata.name``, if given.
    :param namespace: ``metadata.namespace``, if given.
    :param labels: ``metadata.labels`` (the provider's own left out).
    :param annotations: ``metadata.annotations`` (kubectl's record and the provider's own left out).
    :param ignored: the paths of the fields dropped, in the order found: ``status``, server-written metadata, the
        provider's labels, annotations and runtime patch, the patches' ``time``.
    """

    spec: TrainJobSpec
    name: str | None
    namespace: str | None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    ignored: tuple[str, ...] = ()


def parse_whole_trainjob(job: Any, *, path: str = "job") -> WholeTrainJob:
    """Read a whole TrainJob: ``apiVersion`` (``trainer.kubeflow.org/v1alpha1``), ``kind`` (``TrainJob``), ``metadata``,
    ``spec``; ``status`` dropped.

    :param job: a mapping (the spec's keys in API or attribute form), its YAML/JSON text (one document), or a
        ``kubeflow_trainer_api`` ``TrainerV1alpha1TrainJob``.
    :param path: the name of ``job`` in messages (``job``, ``job_template_file``): problems read
        ``<path>.spec.trainer.numNodes: ...``.
    :raises InvalidJobSpecError: every problem at once: another ``apiVersion`` or ``kind`` (a ``kubeflow.org/v1`` job
        runs with ``TrainingJobOperator``), an unknown field, ``metadata.generateName``, a missing ``spec``, and what
        the spec's checks refuse.
    """
    problems: list[str] = []
    document = api_form(load_text(job, path, problems, TRAINJOB_TEXT))
    raise_if(problems)
    if not isinstance(document, dict):
        raise_if(
            [
                f"{path}: must be a TrainJob (a mapping with apiVersion, kind, metadata, spec), got {type(document).__name__}"
            ]
        )
    ignored: list[str] = ["status"] if "status" in document else []
    problems += [
        f"{path}.{key}: unknown field; allowed fields: {', '.join(_TOP_LEVEL)}"
        for key in document
        if key not in _TOP_LEVEL
    ]
    problems += _type_problems(document, path)
    raise_if(problems)  # another kind's spec would only add noise
    name, namespace, labels, annotations = read_metadata(
        document.get("metadata"), f"{path}.metadata", problems, ignored
    )
    spec = _spec(document.get("spec"), path, problems, ignored)
    raise_if(problems)
    assert spec is not None  # no problems: the spec parsed
    return WholeTrainJob(spec, name, namespace, labels, annotations, tuple(ignored))


def _type_problems(document: dict[str, Any], path: str) -> list[str]:
    problems = []
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if api_version is not None and api_version != TRAINER_API_VERSION:
        problems.append(f"{path}.apiVersion: must be {TRAINER_API_VERSION!r} (or absent), got {api_version!r}")
    if kind is not None and kind != TRAINJOB_KIND:
        problems.append(
            f"{path}.kind: must be {TRAINJOB_KIND!r} (or absent), got {kind!r}; a kubeflow.org/v1 job "
            "(PyTorchJob...) runs with TrainingJobOperator"
        )
    return problems


def _spec(raw: Any, path: str, problems: list[str], ignored: list[str]) -> TrainJobSpec | None:
    if raw is None:
        problems.append(f"{path}.spec: required (runtimeRef, and the trainer, initializer... the TrainJob runs with)")
        return None
    if not isinstance(raw, dict):
        problems.append(f"{path}.spec: must be a mapping of fields, got {type(raw).__name__}")
        return None
    raw = {**raw}
    patches = raw.get("runtimePatches")
    if isinstance(patches, list):
        raw["runtimePatches"] = _kept_patches(patches, ignored) or None
    try:
        return parse_spec(raw, path)
    except InvalidJobSpecError as e:
        problems += e.problems
        return None


def _kept_patches(patches: list[Any], ignored: list[str]) -> list[Any]:
    """The patches but the provider's own (a copy of a TrainJob it made carries one), each without its ``time``."""
    kept = []
    for patch in patches:
        if isinstance(patch, dict) and (
            patch.get("manager") == RUNTIME_PATCH_MANAGER or is_own_key(patch.get("manager"))
        ):
            ignored.append(f"spec.runtimePatches[manager={patch['manager']!r}]")
            continue
        if isinstance(patch, dict) and "time" in patch:
            ignored.append(f"spec.runtimePatches[manager={patch.get('manager')!r}].time")
            patch = {k: v for k, v in patch.items() if k != "time"}
        kept.append(patch)
    return kept

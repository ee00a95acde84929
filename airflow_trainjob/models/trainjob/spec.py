"""A TrainJob's ``spec`` as the operator's parameters give it, or as a whole job holds it: checked with the
``kubeflow_trainer_api`` models (:mod:`.strict`) and upstream's rules (:mod:`.rules`), in the API's JSON form.

The runtime is named by ``runtime``: a name is a ``ClusterTrainingRuntime`` of Trainer's API group (upstream's
defaults, written out); a mapping is a whole ``runtimeRef``, whose unset ``kind`` and ``apiGroup`` get the same
defaults. The provider's own runtime patch is not part of this spec: the request adds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_api.models import (  # type: ignore[import-untyped]
    TrainerV1alpha1Initializer,
    TrainerV1alpha1RuntimePatch,
    TrainerV1alpha1RuntimeRef,
    TrainerV1alpha1Trainer,
    TrainerV1alpha1TrainJobSpec,
)
from pydantic import BaseModel

from airflow_trainjob.constants import TRAINER_GROUP
from airflow_trainjob.models.errors import raise_if
from airflow_trainjob.models.trainjob.rules import CLUSTER_TRAINING_RUNTIME, SpecPaths, spec_problems
from airflow_trainjob.models.trainjob.strict import api_form, check_field, load_text, read_part

__all__ = ["PATCH_METADATA_FIELDS", "TrainJobSpec", "parse_spec", "parse_spec_parts"]

#: Upstream's runtime patches take ``labels`` and ``annotations`` alone of an ``ObjectMeta`` (the CRD prunes the
#: rest): anything else in one is refused, not silently dropped.
PATCH_METADATA_FIELDS = {"IoK8sApimachineryPkgApisMetaV1ObjectMeta": ("labels", "annotations")}


@dataclass(frozen=True)
class TrainJobSpec:
    """A checked ``spec`` of a TrainJob, without the provider's runtime patch.

    :param spec: the API's JSON form (camelCase keys, no nulls): ``runtimeRef`` (with ``kind`` and ``apiGroup``),
        ``trainer``, ``initializer``, ``runtimePatches``, ``suspend``, ``managedBy``, ``activeDeadlineSeconds``, as
        given.
    """

    spec: Mapping[str, Any]

    @property
    def num_nodes(self) -> int | None:
        """``trainer.numNodes``, or None (the runtime's ``mlPolicy.numNodes`` applies)."""
        return (self.spec.get("trainer") or {}).get("numNodes")

    @property
    def initializer_steps(self) -> tuple[str, ...]:
        """The initializer steps the spec configures (``dataset-initializer``, ``model-initializer``): the runtime
        must have them."""
        return tuple(
            f"{step}-initializer" for step in ("dataset", "model") if (self.spec.get("initializer") or {}).get(step)
        )


def parse_spec_parts(
    runtime: Any,
    trainer: Any = None,
    initializer: Any = None,
    runtime_patches: Any = None,
    suspend: Any = None,
    managed_by: Any = None,
    active_deadline_seconds: Any = None,
) -> TrainJobSpec:
    """The spec from the operator's parameters, each named by its parameter in a problem (``trainer.numNodes``).

    :param runtime: a runtime's name (``ClusterTrainingRuntime``), or a ``runtimeRef``: a mapping, its YAML/JSON
        text, or a ``TrainerV1alpha1RuntimeRef``. ``spec.runtimeRef``.
    :param trainer: ``spec.trainer``: a mapping, YAML/JSON text, or a ``TrainerV1alpha1Trainer``; None: unset.
    :param initializer: ``spec.initializer``: as ``trainer``, or a ``TrainerV1alpha1Initializer``.
    :param runtime_patches: ``spec.runtimePatches``: a list of patches (each a mapping or a
        ``TrainerV1alpha1RuntimePatch``), or its YAML/JSON text.
    :param suspend: ``spec.suspend`` (True or False); None: unset.
    :param managed_by: ``spec.managedBy``; None: unset.
    :param active_deadline_seconds: ``spec.activeDeadlineSeconds`` (seconds, an integer); None: unset.
    :raises InvalidJobSpecError: every problem at once.
    """
    problems: list[str] = []
    spec: dict[str, Any] = {"runtimeRef": _runtime_ref(runtime, problems)}
    parts: tuple[tuple[str, type[BaseModel], Any], ...] = (
        ("trainer", TrainerV1alpha1Trainer, trainer),
        ("initializer", TrainerV1alpha1Initializer, initializer),
    )
    for key, model, value in parts:
        spec[key] = None if value is None else read_part(model, value, key, problems)
    spec["runtimePatches"] = _patches(runtime_patches, problems)
    scalars = (("suspend", suspend), ("managedBy", managed_by), ("activeDeadlineSeconds", active_deadline_seconds))
    for key, value in scalars:
        at = SpecPaths.of_parameters().names[key]
        spec[key] = check_field(TrainerV1alpha1TrainJobSpec, key, value, at, problems)
    return _checked({k: v for k, v in spec.items() if v is not None}, SpecPaths.of_parameters(), problems)


def parse_spec(raw: Any, source: str) -> TrainJobSpec:
    """A whole job's ``spec``, each problem named by its API path (``job.spec.trainer.numNodes``).

    :param raw: the ``spec`` mapping (API or attribute keys), or a ``TrainerV1alpha1TrainJobSpec``.
    :param source: ``job`` or ``job_template_file``: where the job was given.
    :raises InvalidJobSpecError: every problem at once.
    """
    problems: list[str] = []
    spec = read_part(TrainerV1alpha1TrainJobSpec, raw, f"{source}.spec", problems, only=PATCH_METADATA_FIELDS)
    if spec is not None and spec.get("runtimeRef") is not None:
        spec["runtimeRef"] = _with_defaults(spec["runtimeRef"])
    return _checked(spec or {}, SpecPaths.of_whole_job(source), problems)


def _checked(spec: dict[str, Any], at: SpecPaths, problems: list[str]) -> TrainJobSpec:
    """The spec, once upstream's rules found nothing more (they read what the models accepted of it)."""
    raise_if(problems + spec_problems(spec, at))
    return TrainJobSpec(spec)


def _runtime_ref(runtime: Any, problems: list[str]) -> dict[str, Any] | None:
    """``runtime`` as a ``runtimeRef``: a name (a string that is no YAML mapping) or a whole reference."""
    if runtime is None:
        problems.append("runtime: required: the name of the ClusterTrainingRuntime to run on (or a runtimeRef)")
        return None
    if isinstance(runtime, str) and not isinstance(load_text(runtime, "runtime", []), Mapping):
        if not runtime.strip():
            problems.append("runtime: must name a runtime, got ''")
            return None
        return _with_defaults({"name": runtime.strip()})
    if not isinstance(runtime, (str, Mapping, BaseModel)):
        problems.append(f"runtime: must be a runtime's name or a runtimeRef (a mapping), got {type(runtime).__name__}")
        return None
    ref = read_part(TrainerV1alpha1RuntimeRef, runtime, "runtime", problems)
    return None if ref is None else _with_defaults(ref)


def _with_defaults(ref: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream's defaults of a ``runtimeRef`` written out, so the object sent says what it runs on."""
    return {
        **ref,
        "kind": ref.get("kind") or CLUSTER_TRAINING_RUNTIME,
        "apiGroup": ref.get("apiGroup") or TRAINER_GROUP,
    }


def _patches(value: Any, problems: list[str]) -> list[Any] | None:
    found: list[str] = []
    value = api_form(load_text(value, "runtime_patches", found))
    if value is None or found:
        problems += found
        return None
    if not isinstance(value, list):
        problems.append(f"runtime_patches: must be a list of runtime patches, got {type(value).__name__}")
        return None
    return [
        read_part(TrainerV1alpha1RuntimePatch, patch, f"runtime_patches[{i}]", problems, only=PATCH_METADATA_FIELDS)
        for i, patch in enumerate(value)
    ]

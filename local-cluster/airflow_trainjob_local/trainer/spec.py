"""A TrainJob and a training runtime as the controller reads them: typed by the ``kubeflow_trainer_api`` models
(``TrainerV1alpha1TrainJobSpec``, ``TrainerV1alpha1TrainingRuntimeSpec``) for the fields it decides on, the raw
JSON kept for what it copies into the JobSet (env lists, resources, the JobSet template) so nothing is lost in a
round trip through a model. The status is read as raw JSON (lenient: a status another writer left is kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_api.models import TrainerV1alpha1TrainingRuntimeSpec, TrainerV1alpha1TrainJobSpec  # type: ignore[import-untyped]
from pydantic import ValidationError

from airflow_trainjob_local.kube import ObjectIdentity
from airflow_trainjob_local.trainer import constants as c

__all__ = ["RuntimeView", "SpecError", "TrainJobView"]


class SpecError(ValueError):
    """A TrainJob or runtime the models refuse (what the apiserver's schema or a webhook would have refused)."""


def _parse(model: Any, data: dict[str, Any], what: str) -> Any:
    try:
        return model.from_dict(data)
    except (ValidationError, ValueError, TypeError) as exc:
        raise SpecError(f"{what}: {exc}") from exc


@dataclass(frozen=True)
class TrainJobView(ObjectIdentity):
    """One TrainJob as read from the API.

    :param obj: the object (metadata, spec, status) in the API's JSON shape.
    :param spec: its spec, typed (``TrainerV1alpha1TrainJobSpec``).
    """

    obj: dict[str, Any]
    spec: TrainerV1alpha1TrainJobSpec

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> TrainJobView:
        """Read a TrainJob; :raises SpecError: its spec does not fit the API model."""
        return cls(obj, _parse(TrainerV1alpha1TrainJobSpec, obj.get("spec") or {}, "spec"))

    @property
    def raw_spec(self) -> dict[str, Any]:
        return self.obj.get("spec") or {}

    @property
    def raw_trainer(self) -> dict[str, Any] | None:
        """``spec.trainer`` as JSON, ``None`` when unset (upstream tells an unset trainer from an empty one)."""
        return self.raw_spec.get("trainer")

    @property
    def suspend(self) -> bool:
        return bool(self.spec.suspend)

    @property
    def managed_by(self) -> str:
        """``spec.managedBy``, the trainer's own value when unset."""
        return self.spec.managed_by or c.MANAGED_BY_TRAINER

    @property
    def runtime_api_group(self) -> str:
        """``runtimeRef.apiGroup``; the CRD defaults it to ``trainer.kubeflow.org``, an unset one reads as empty."""
        return self.spec.runtime_ref.api_group or ""

    @property
    def runtime_kind(self) -> str:
        """``runtimeRef.kind``; the CRD defaults it to ClusterTrainingRuntime, an unset one reads as empty."""
        return self.spec.runtime_ref.kind or ""

    @property
    def runtime_name(self) -> str:
        return self.spec.runtime_ref.name


@dataclass(frozen=True)
class RuntimeView:
    """A TrainingRuntime or ClusterTrainingRuntime.

    :param obj: the object in the API's JSON shape (``kind`` and ``metadata.name`` set).
    :param spec: its spec, typed (``TrainerV1alpha1TrainingRuntimeSpec``).
    """

    obj: dict[str, Any]
    spec: TrainerV1alpha1TrainingRuntimeSpec

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> RuntimeView:
        """Read a runtime; :raises SpecError: its spec does not fit the API model."""
        return cls(obj, _parse(TrainerV1alpha1TrainingRuntimeSpec, obj.get("spec") or {}, "runtime spec"))

    @property
    def template(self) -> dict[str, Any]:
        """``spec.template`` (the JobSet template: metadata and spec) as JSON."""
        return (self.obj.get("spec") or {}).get("template") or {}

    @property
    def ml_policy(self) -> dict[str, Any] | None:
        """``spec.mlPolicy`` as JSON, ``None`` when unset."""
        return (self.obj.get("spec") or {}).get("mlPolicy")

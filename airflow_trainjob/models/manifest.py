"""Builds the exact ``kubeflow.org/v1`` job object the API expects, or refuses before anything is sent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow_trainjob.constants import API_VERSION
from airflow_trainjob.domain.names import (
    job_name_problem,
    label_key_problem,
    label_value_problem,
    max_job_name_length,
    namespace_problem,
)
from airflow_trainjob.models.errors import raise_if
from airflow_trainjob.models.job import TrainingJobSpec


def build_manifest(
    *,
    spec: TrainingJobSpec,
    name: str,
    namespace: str,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The job object for ``spec``: camelCase, no nulls, ``cleanPodPolicy`` always explicit.

    :param spec: a validated spec, from :meth:`TrainingJobSpec.parse`.
    :param name: ``metadata.name``: a DNS-1035 label short enough for the pod names derived from it.
    :param namespace: ``metadata.namespace``: a DNS-1123 label.
    :param labels: ``metadata.labels``: valid label keys and values.
    :param annotations: ``metadata.annotations``: valid keys, string values.
    :raises InvalidJobSpecError: naming each invalid field and what it allows.
    """
    problems = []
    name_issue = job_name_problem(name, max_job_name_length(spec.highest_indexes()))
    if name_issue:
        problems.append(f"metadata.name: {name_issue}")
    namespace_issue = namespace_problem(namespace)
    if namespace_issue:
        problems.append(f"metadata.namespace: {namespace_issue}")
    problems += _map_problems("metadata.labels", labels, check_value=label_value_problem)
    problems += _map_problems("metadata.annotations", annotations, check_value=_annotation_value_problem)
    raise_if(problems)

    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    job_spec: dict[str, Any] = {
        "runPolicy": spec.run_policy.to_api(),
        spec.kind.replica_specs_key: {t: s.to_api() for t, s in spec.replica_specs.items()},
        **spec.kind_fields.to_api(),
    }
    return {"apiVersion": API_VERSION, "kind": spec.kind.kind, "metadata": metadata, "spec": job_spec}


def _annotation_value_problem(value: object) -> str | None:
    return None if isinstance(value, str) else f"value must be a string, got {type(value).__name__} {value!r}"


def _map_problems(path: str, mapping: object, check_value: Callable[[object], str | None]) -> list[str]:
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        return [f"{path}: must be a mapping of strings to strings, got {type(mapping).__name__}"]
    problems: list[str] = []
    for key, value in mapping.items():
        issue = label_key_problem(key) or check_value(value)
        if issue:
            problems.append(f"{path}[{key!r}]: {issue}")
    return problems

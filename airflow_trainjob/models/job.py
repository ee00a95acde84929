"""A whole job spec for one kind: replica specs, run policy and the kind's own fields, checked together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from airflow_trainjob.constants import JOB_KINDS, JobKind
from airflow_trainjob.models.base import WriteModel
from airflow_trainjob.models.common import ReplicaSpec, RunPolicy
from airflow_trainjob.models.errors import raise_if, validate_as
from airflow_trainjob.models.kinds import KIND_FIELDS_MODELS


@dataclass(frozen=True)
class TrainingJobSpec:
    """A validated job spec: what goes under ``spec`` of a ``kubeflow.org/v1`` job.

    Build it with :meth:`parse`; the constructor does not validate.
    """

    kind: JobKind
    replica_specs: dict[str, ReplicaSpec]
    run_policy: RunPolicy
    kind_fields: WriteModel

    @classmethod
    def parse(
        cls,
        kind: Any,
        replica_specs: Any,
        run_policy: Any = None,
        kind_fields: Any = None,
    ) -> TrainingJobSpec:
        """Validate the parts of a job spec and return them as models.

        :param kind: one of ``JOB_KINDS`` (``PyTorchJob``, ``TFJob``, ``MPIJob``, ``XGBoostJob``,
            ``PaddleJob``, ``JAXJob``).
        :param replica_specs: replica type -> :class:`ReplicaSpec` or dict; or that mapping as a
            YAML/JSON string. Maps to ``spec.<kind>ReplicaSpecs``.
        :param run_policy: :class:`RunPolicy`, dict, YAML/JSON string or None (defaults).
            Maps to ``spec.runPolicy``.
        :param kind_fields: the kind's own spec fields (e.g. ``{"nprocPerNode": "2"}``) as a model,
            dict, YAML/JSON string or None.
        :raises InvalidJobSpecError: naming every invalid field and what it allows.
        """
        job_kind = JOB_KINDS.get(kind) if isinstance(kind, str) else None
        if job_kind is None:
            raise_if([f"kind: {kind!r} is not a training job kind; allowed: {', '.join(JOB_KINDS)}"])
        problems: list[str] = []

        specs: dict[str, ReplicaSpec] = {}
        replica_specs = _load_text(replica_specs, "replicaSpecs", problems)
        if not isinstance(replica_specs, dict) or not replica_specs:
            if not problems:
                problems.append(
                    f"replicaSpecs: must map replica types ({', '.join(job_kind.replica_types)}) "
                    f"to replica specs, got {replica_specs!r}"
                )
        else:
            for replica_type, spec in replica_specs.items():
                path = f"replicaSpecs.{replica_type}"
                if replica_type not in job_kind.replica_types:
                    problems.append(
                        f"{path}: {replica_type!r} is not a {job_kind.kind} replica type; "
                        f"allowed: {', '.join(job_kind.replica_types)}"
                    )
                    continue
                model, found = validate_as(ReplicaSpec, spec, path)
                problems += found
                if model is not None:
                    specs[replica_type] = model

        policy = RunPolicy()
        if run_policy is not None:
            unparsed = len(problems)
            run_policy = _load_text(run_policy, "runPolicy", problems)
            if len(problems) == unparsed:  # text that is not YAML is one problem, not two
                model, found = validate_as(RunPolicy, run_policy, "runPolicy")
                problems += found
                policy = model or policy

        fields_model = KIND_FIELDS_MODELS[job_kind.kind]
        fields = fields_model()
        if kind_fields is not None:
            unparsed = len(problems)
            kind_fields = _load_text(kind_fields, "kindFields", problems)
            if len(problems) == unparsed:
                model, found = validate_as(fields_model, kind_fields, "spec")
                problems += found
                fields = model or fields

        problems += _kind_rule_problems(job_kind, specs)
        raise_if(problems)
        return cls(kind=job_kind, replica_specs=specs, run_policy=policy, kind_fields=fields)

    def highest_indexes(self) -> dict[str, int]:
        """Replica type -> highest pod index the job may reach (elastic ``maxReplicas`` included)."""
        elastic = getattr(self.kind_fields, "elastic_policy", None)
        elastic_max = elastic.max_replicas if elastic is not None and elastic.max_replicas else 0
        highest = {}
        for replica_type, spec in self.replica_specs.items():
            count = spec.replicas
            if replica_type == "Worker":
                count = max(count, elastic_max)
            if count > 0:
                highest[replica_type] = count - 1
        return highest


def _load_text(value: Any, path: str, problems: list[str]) -> Any:
    """Parse a YAML/JSON string (what a rendered template gives); pass anything else through."""
    if not isinstance(value, str):
        return value
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as exc:
        problems.append(f"{path}: not valid YAML/JSON: {exc}".replace("\n", " "))
        return None


def _kind_rule_problems(kind: JobKind, specs: dict[str, ReplicaSpec]) -> list[str]:
    """The training operator's own validation of a kind's replica specs, applied before sending."""
    problems = []
    for replica_type in kind.required_replica_types:
        if replica_type not in specs:
            problems.append(f"replicaSpecs.{replica_type}: a {kind.kind} needs a {replica_type} replica spec")
    for replica_type in kind.single_replica_types:
        if replica_type in specs and specs[replica_type].replicas != 1:
            problems.append(
                f"replicaSpecs.{replica_type}.replicas: must be 1 for a {kind.kind} "
                f"(got {specs[replica_type].replicas})"
            )
    if not any(t in specs for t in kind.lead_replica_types) and "Worker" in specs and specs["Worker"].replicas < 1:
        without = f"with no {' or '.join(kind.lead_replica_types)} replica spec, " if kind.lead_replica_types else ""
        problems.append(
            f"replicaSpecs.Worker.replicas: {without}worker 0 leads a {kind.kind}, so at least 1 is needed (got 0)"
        )
    exclusive = [t for t in kind.exclusive_replica_types if t in specs]
    if len(exclusive) > 1:
        problems.append(f"replicaSpecs: set only one of {', '.join(kind.exclusive_replica_types)}, not both")
    if kind.requires_default_container:
        for replica_type, spec in specs.items():
            names = [c["name"] for c in spec.template["spec"]["containers"]]
            if kind.default_container not in names:
                problems.append(
                    f"replicaSpecs.{replica_type}.template.spec.containers: a {kind.kind} needs a container "
                    f"named {kind.default_container!r} (found {', '.join(names)})"
                )
    return problems

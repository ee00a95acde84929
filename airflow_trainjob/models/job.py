"""A whole job spec for one kind: replica specs, run policy and the kind's own fields, checked together.

Input is taken as upstream writes it (the training operator's ``examples/``, its SDK, ``kubectl get``)
and normalised the way the operator or the cluster would read it (dropped template keys and a moved
``cleanPodPolicy`` are reported in :attr:`TrainingJobSpec.warnings`; a key's case is not):

- replica type keys match regardless of case (``worker`` is ``Worker``), as the operator's defaulting
  (``setTypeNameToCamelCase``) does; two keys for one type are refused. The API's spelling is sent,
  which every kind accepts: v1.9's webhooks check keys before that defaulting runs and refuse other
  spellings for PyTorchJob, XGBoostJob, PaddleJob and JAXJob, and MPIJob has no such defaulting;
- a pod template's ``apiVersion``/``kind`` are dropped (the CRD's schema prunes them);
- an MPIJob's deprecated ``spec.cleanPodPolicy`` moves to ``runPolicy.cleanPodPolicy``, as the v1.9
  MPIJob controller reads it;
- objects of the Kubeflow training SDK (``KubeflowOrgV1ReplicaSpec``, ``KubeflowOrgV1RunPolicy``...)
  are read as their JSON form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes.client import ApiClient
from pydantic import BaseModel

from airflow_trainjob.constants import JOB_KINDS, REPLICA_TYPE_WORKER, JobKind
from airflow_trainjob.domain.params import kind_problem
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models.base import WriteModel
from airflow_trainjob.models.common import ReplicaSpec, RunPolicy
from airflow_trainjob.models.errors import validate_as
from airflow_trainjob.models.kinds import DEPRECATED_FIELDS_MODELS, KIND_FIELDS_MODELS

#: ``replica_specs`` for :func:`parse_parts` when the caller has already reported them missing.
MISSING: Any = object()

#: Keys a pod template may carry that the CRD's schema prunes; dropped with a warning.
PRUNED_TEMPLATE_KEYS = ("apiVersion", "kind")


@dataclass(frozen=True)
class TrainingJobSpec:
    """A validated job spec: what goes under ``spec`` of a ``kubeflow.org/v1`` job.

    Build it with :meth:`parse`; the constructor does not validate.

    :param kind: the job kind, from ``JOB_KINDS``.
    :param replica_specs: replica type (the API's spelling) -> replica spec.
    :param run_policy: ``spec.runPolicy``.
    :param kind_fields: the kind's own ``spec`` fields (a model of ``KIND_FIELDS_MODELS``).
    :param warnings: what :meth:`parse` changed in the input, one line each naming the field path
        and what was done; empty when the input was taken as written.
    """

    kind: JobKind
    replica_specs: dict[str, ReplicaSpec]
    run_policy: RunPolicy
    kind_fields: WriteModel
    warnings: tuple[str, ...] = ()

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
        :param replica_specs: replica type -> :class:`ReplicaSpec`, dict or the Kubeflow SDK's
            ``KubeflowOrgV1ReplicaSpec``; or that mapping as a YAML/JSON string. Maps to
            ``spec.<kind>ReplicaSpecs``. Types match regardless of case.
        :param run_policy: :class:`RunPolicy`, dict, the SDK's ``KubeflowOrgV1RunPolicy``, YAML/JSON
            string or None (defaults). Maps to ``spec.runPolicy``.
        :param kind_fields: the kind's own spec fields (e.g. ``{"nprocPerNode": "2"}``) as a model,
            dict, YAML/JSON string or None.
        :raises InvalidJobSpecError: naming every invalid field and what it allows.
        """
        problem = kind_problem(kind)
        if problem:
            raise InvalidJobSpecError([problem])
        job_kind = JOB_KINDS[kind]
        spec, problems = parse_parts(job_kind, replica_specs, run_policy, kind_fields, SpecPaths())
        if spec is None or problems:
            raise InvalidJobSpecError(problems)
        return spec

    def highest_indexes(self) -> dict[str, int]:
        """Replica type -> highest pod index the job may reach (elastic ``maxReplicas`` included)."""
        elastic = getattr(self.kind_fields, "elastic_policy", None)
        elastic_max = elastic.max_replicas if elastic is not None and elastic.max_replicas else 0
        highest = {}
        for replica_type, spec in self.replica_specs.items():
            count = spec.replicas
            if replica_type == REPLICA_TYPE_WORKER:
                count = max(count, elastic_max)
            if count > 0:
                highest[replica_type] = count - 1
        return highest


@dataclass(frozen=True)
class SpecPaths:
    """Where each part sits, for messages: bare for :meth:`TrainingJobSpec.parse`, ``job.spec...`` for a
    whole job.

    :param replica_specs: path of the replica specs mapping.
    :param run_policy: path of the run policy.
    :param kind_fields: path under which the kind's own fields sit.
    :param kind_fields_text: path named when the kind fields are text that is not YAML.
    """

    replica_specs: str = "replicaSpecs"
    run_policy: str = "runPolicy"
    kind_fields: str = "spec"
    kind_fields_text: str = "kindFields"


def to_plain(value: Any, *, dump_models: bool = False) -> Any:
    """``value`` with every OpenAPI-generated object in it (the Kubeflow SDK's and the Kubernetes
    client's models) replaced by its JSON form; plain data is left as it is.

    :param value: any value: plain data, pydantic models, OpenAPI-generated objects, nested in dicts and lists.
    :param dump_models: also replace pydantic models (ours: their API form) by plain data, as an operator's
        template fields need for Jinja to render inside them; else they are left for validation to take."""
    if isinstance(value, BaseModel):
        if not dump_models:
            return value
        return value.to_api() if hasattr(value, "to_api") else value.model_dump(by_alias=True, exclude_none=True)
    if hasattr(type(value), "openapi_types") and hasattr(type(value), "attribute_map"):
        return ApiClient().sanitize_for_serialization(value)
    if isinstance(value, Mapping):
        return {k: to_plain(v, dump_models=dump_models) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v, dump_models=dump_models) for v in value]
    return value


def parse_parts(
    job_kind: JobKind,
    replica_specs: Any,
    run_policy: Any,
    kind_fields: Any,
    paths: SpecPaths,
) -> tuple[TrainingJobSpec | None, list[str]]:
    """Validate the parts of a spec of ``job_kind``; return ``(spec or None, problems)``.

    ``replica_specs`` may be :data:`MISSING`: the rest is checked, the kind's rules are not, no spec is
    returned.

    :param job_kind: the kind, from ``JOB_KINDS``.
    :param replica_specs: ``spec.<kind>ReplicaSpecs`` as for :meth:`TrainingJobSpec.parse`, or :data:`MISSING`.
    :param run_policy: ``spec.runPolicy`` as for :meth:`TrainingJobSpec.parse`; None: the defaults.
    :param kind_fields: the kind's own ``spec`` fields as for :meth:`TrainingJobSpec.parse`; None: none.
    :param paths: where each part sits, named in the problems.
    """
    problems: list[str] = []
    warnings: list[str] = []

    specs: dict[str, ReplicaSpec] = {}
    given: dict[str, str] = {}
    if replica_specs is not MISSING:
        specs, given = _replica_specs(job_kind, replica_specs, paths.replica_specs, problems, warnings)

    policy = RunPolicy()
    if run_policy is not None:
        unparsed = len(problems)
        run_policy = _load_text(to_plain(run_policy), paths.run_policy, problems)
        if len(problems) == unparsed:  # text that is not YAML is one problem, not two
            model, found = validate_as(RunPolicy, run_policy, paths.run_policy)
            problems += found
            policy = model or policy

    fields_model = KIND_FIELDS_MODELS[job_kind.kind]
    fields = fields_model()
    deprecated = None
    if kind_fields is not None:
        unparsed = len(problems)
        kind_fields = _load_text(to_plain(kind_fields), paths.kind_fields_text, problems)
        if len(problems) == unparsed:
            kind_fields, deprecated = _deprecated_fields(job_kind, kind_fields, paths.kind_fields, problems)
            model, found = validate_as(fields_model, kind_fields, paths.kind_fields)
            problems += found
            fields = model or fields

    policy = _move_deprecated_clean_pod_policy(policy, deprecated, paths, warnings)
    if replica_specs is not MISSING:
        problems += _kind_rule_problems(job_kind, specs, given, paths.replica_specs)
    if problems or replica_specs is MISSING:
        return None, problems
    spec = TrainingJobSpec(
        kind=job_kind, replica_specs=specs, run_policy=policy, kind_fields=fields, warnings=tuple(warnings)
    )
    return spec, []


def _canonical_type(kind: JobKind, key: Any) -> str | None:
    """The replica type ``key`` names, matched regardless of case as the operator's defaulting does."""
    if not isinstance(key, str):
        return None
    return next((t for t in kind.replica_types if t.lower() == key.lower()), None)


def _replica_specs(
    job_kind: JobKind, replica_specs: Any, path: str, problems: list[str], warnings: list[str]
) -> tuple[dict[str, ReplicaSpec], dict[str, str]]:
    """The valid replica specs by type, and every type given (even with an invalid spec) -> its key as
    written; problems and warnings are appended."""
    specs: dict[str, ReplicaSpec] = {}
    given: dict[str, str] = {}
    unparsed = len(problems)
    replica_specs = _load_text(to_plain(replica_specs), path, problems)
    if len(problems) > unparsed:
        return specs, given
    if not isinstance(replica_specs, dict) or not replica_specs:
        problems.append(
            f"{path}: must map replica types ({', '.join(job_kind.replica_types)}) "
            f"to replica specs, got {replica_specs!r}"
        )
        return specs, given
    for key, spec in replica_specs.items():
        where = f"{path}.{key}"
        replica_type = _canonical_type(job_kind, key)
        if replica_type is None:
            problems.append(
                f"{where}: {key!r} is not a {job_kind.kind} replica type; allowed: {', '.join(job_kind.replica_types)}"
            )
            continue
        if replica_type in given:
            problems.append(
                f"{path}: {given[replica_type]!r} and {key!r} both name the {replica_type} replica type "
                "(types match regardless of case); give it once"
            )
            continue
        given[replica_type] = key
        spec = _drop_pruned_template_keys(spec, where, warnings)
        model, found = validate_as(ReplicaSpec, spec, where)
        problems += found
        if model is not None:
            specs[replica_type] = model
    return specs, given


def _drop_pruned_template_keys(spec: Any, where: str, warnings: list[str]) -> Any:
    # Manifests written for v1alpha1 put apiVersion/kind: Pod in the template; the cluster drops them.
    template = spec.get("template") if isinstance(spec, dict) else None
    if not isinstance(template, dict):
        return spec
    dropped = [k for k in PRUNED_TEMPLATE_KEYS if k in template]
    if not dropped:
        return spec
    warnings.append(
        f"{where}.template: dropped {', '.join(dropped)} "
        "(a pod template has only metadata and spec; the cluster's schema prunes them)"
    )
    return {**spec, "template": {k: v for k, v in template.items() if k not in dropped}}


def _deprecated_fields(
    job_kind: JobKind, kind_fields: Any, path: str, problems: list[str]
) -> tuple[Any, WriteModel | None]:
    """Take the kind's deprecated fields out of ``kind_fields``; return the rest and them, validated."""
    model = DEPRECATED_FIELDS_MODELS.get(job_kind.kind)
    if model is None or not isinstance(kind_fields, dict):
        return kind_fields, None
    keys = {k for name, f in model.model_fields.items() for k in (name, f.alias)}
    taken = {k: v for k, v in kind_fields.items() if k in keys}
    if not taken:
        return kind_fields, None
    deprecated, found = validate_as(model, taken, path)
    problems += found
    return {k: v for k, v in kind_fields.items() if k not in keys}, deprecated


def _move_deprecated_clean_pod_policy(
    policy: RunPolicy, deprecated: WriteModel | None, paths: SpecPaths, warnings: list[str]
) -> RunPolicy:
    """An MPIJob's ``spec.cleanPodPolicy`` into ``runPolicy.cleanPodPolicy``, deciding as the v1.9 MPIJob
    controller does: the ``runPolicy`` value wins when set, else the deprecated one is used. (That
    controller's comment says validation rules out contradicting values; no such check exists, so a
    conflict is accepted with a warning, as the cluster accepts it.)"""
    value = getattr(deprecated, "clean_pod_policy", None)
    if value is None:
        return policy
    old = f"{paths.kind_fields}.cleanPodPolicy"
    new = f"{paths.run_policy}.cleanPodPolicy"
    if "clean_pod_policy" not in policy.model_fields_set:
        warnings.append(f"{old}: deprecated; moved to {new} ({value!r}), where the operator reads it")
        return policy.model_copy(update={"clean_pod_policy": value})
    if policy.clean_pod_policy == value:
        warnings.append(f"{old}: deprecated; dropped, {new} says the same ({value!r})")
    else:
        warnings.append(
            f"{old}: deprecated; {value!r} ignored because {new} ({policy.clean_pod_policy!r}) is set "
            "and wins, as the MPIJob controller decides"
        )
    return policy


def _load_text(value: Any, path: str, problems: list[str]) -> Any:
    """Parse a YAML/JSON string (what a rendered template gives); pass anything else through."""
    if not isinstance(value, str):
        return value
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as exc:
        problems.append(f"{path}: not valid YAML/JSON: {exc}".replace("\n", " "))
        return None


def _kind_rule_problems(kind: JobKind, specs: dict[str, ReplicaSpec], given: dict[str, str], path: str) -> list[str]:
    """The training operator's own validation of a kind's replica specs, applied before sending.

    ``given`` holds every type given, even one whose spec was invalid (already reported), so that a
    bad spec is not reported a second time as missing."""
    problems = []
    for replica_type in kind.required_replica_types:
        if replica_type not in given:
            problems.append(f"{path}.{replica_type}: a {kind.kind} needs a {replica_type} replica spec")
    for replica_type in kind.single_replica_types:
        if replica_type in specs and specs[replica_type].replicas != 1:
            problems.append(
                f"{path}.{given[replica_type]}.replicas: must be 1 for a {kind.kind} "
                f"(got {specs[replica_type].replicas})"
            )
    worker = specs.get(REPLICA_TYPE_WORKER)
    if not any(t in given for t in kind.lead_replica_types) and worker is not None and worker.replicas < 1:
        without = f"with no {' or '.join(kind.lead_replica_types)} replica spec, " if kind.lead_replica_types else ""
        problems.append(
            f"{path}.{given[REPLICA_TYPE_WORKER]}.replicas: {without}worker 0 leads a {kind.kind}, "
            "so at least 1 is needed (got 0)"
        )
    exclusive = [t for t in kind.exclusive_replica_types if t in given]
    if len(exclusive) > 1:
        problems.append(f"{path}: set only one of {', '.join(kind.exclusive_replica_types)}, not both")
    if kind.requires_default_container:
        for replica_type, spec in specs.items():
            names = [c["name"] for c in spec.template["spec"]["containers"]]
            if kind.default_container not in names:
                problems.append(
                    f"{path}.{given[replica_type]}.template.spec.containers: a {kind.kind} needs a container "
                    f"named {kind.default_container!r} (found {', '.join(names)})"
                )
    return problems

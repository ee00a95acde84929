"""What kubeflow/trainer v2.3.0 refuses in a TrainJob's spec that its models do not: the CRD's rules
(``manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml``: CEL, minimum, maxItems, list-map keys) and the
admission webhook's that need no runtime (``pkg/webhooks/trainjob_webhook.go``, the JobSet plugin's ``Validate`` in
``pkg/runtime/framework/plugins/jobset/jobset.go``), plus the provider's own: its runtime patch is its own. Pure.

Each rule reads the spec in the API's JSON form and names a field by the path :class:`SpecPaths` gives it: the
operator's parameter (``trainer.numNodes``) or the whole job's API path (``job.spec.trainer.numNodes``). What the
webhook checks against the runtime (its replicated jobs, an initializer step, torch's reserved ``PET_`` variables)
cannot be known before the API call: the API refuses it, and the task says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import RUNTIME_PATCH_MANAGER, TRAINER_GROUP
from airflow_trainjob.domain.names import label_key_problem, label_value_problem
from airflow_trainjob.domain.own_keys import is_own_key

__all__ = [
    "CLUSTER_TRAINING_RUNTIME",
    "MANAGED_BY_VALUES",
    "MAX_RUNTIME_PATCHES",
    "RUNTIME_KINDS",
    "SpecPaths",
    "map_problems",
    "spec_problems",
]

CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
#: ``spec.runtimeRef.kind``: the runtimes the trainer serves (another kind is ``TrainingRuntimeNotSupported``).
RUNTIME_KINDS = (CLUSTER_TRAINING_RUNTIME, "TrainingRuntime")
#: ``spec.managedBy``: the CRD's CEL rule.
MANAGED_BY_VALUES = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
#: ``spec.runtimePatches``' ``maxItems``; the provider's own patch is one of them.
MAX_RUNTIME_PATCHES = 16
#: The containers whose env a runtime patch may not set (the trainer and initializer sections do).
_ENV_ONLY_FROM_SPEC = ("dataset-initializer", "model-initializer", "node")
_STORAGE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INT32_MAX, _INT64_MAX = 2**31 - 1, 2**63 - 1


@dataclass(frozen=True)
class SpecPaths:
    """How each of the spec's fields is named in messages.

    :param names: API field (``runtimeRef``) -> its name (``runtime``, or ``job.spec.runtimeRef``).
    """

    names: Mapping[str, str]

    @classmethod
    def of_parameters(cls) -> SpecPaths:
        """The operator's parameters: ``runtime``, ``trainer``, ``runtime_patches``..."""
        return cls(PARAMETER_OF_FIELD)

    @classmethod
    def of_whole_job(cls, source: str) -> SpecPaths:
        """A whole job's API paths (``job.spec.trainer``).

        :param source: ``job`` or ``job_template_file``.
        """
        return cls({key: f"{source}.spec.{key}" for key in PARAMETER_OF_FIELD})

    def __call__(self, field: str, *rest: str) -> str:
        return ".".join((self.names[field], *rest)).replace(".[", "[")


#: ``spec`` field -> the operator's parameter that gives it.
PARAMETER_OF_FIELD: Mapping[str, str] = {
    "runtimeRef": "runtime",
    "trainer": "trainer",
    "initializer": "initializer",
    "runtimePatches": "runtime_patches",
    "suspend": "suspend",
    "managedBy": "managed_by",
    "activeDeadlineSeconds": "active_deadline_seconds",
}


def spec_problems(spec: Mapping[str, Any], at: SpecPaths) -> list[str]:
    """Every problem of ``spec`` (already checked by the models: types and fields), one line each.

    :param spec: ``spec`` in the API's JSON form (the provider's own patch not in it).
    :param at: how the fields are named.
    """
    rules: tuple[Callable[[Mapping[str, Any], SpecPaths], list[str]], ...] = (
        _runtime_ref,
        _trainer,
        _initializer,
        _runtime_patches,
        _scalars,
    )
    return [problem for rule in rules for problem in rule(spec, at)]


def _runtime_ref(spec: Mapping[str, Any], at: SpecPaths) -> list[str]:
    ref = spec.get("runtimeRef")
    if ref is None:
        return []  # reported by the model, or as the runtime parameter
    problems = []
    name = ref.get("name")
    if name is not None and (not name or len(name) > 253):
        problems.append(f"{at('runtimeRef', 'name')}: must be a runtime's name (1 to 253 characters), got {name!r}")
    kind = ref.get("kind")
    if kind is not None and kind not in RUNTIME_KINDS:
        problems.append(
            f"{at('runtimeRef', 'kind')}: {kind!r} is not a runtime kind; allowed: {', '.join(RUNTIME_KINDS)}"
        )
    group = ref.get("apiGroup")
    if group is not None and group != TRAINER_GROUP:
        problems.append(f"{at('runtimeRef', 'apiGroup')}: must be {TRAINER_GROUP!r} (or unset), got {group!r}")
    return problems


def _trainer(spec: Mapping[str, Any], at: SpecPaths) -> list[str]:
    trainer = spec.get("trainer") or {}
    problems = []
    nodes = trainer.get("numNodes")
    if nodes is not None and not 1 <= nodes <= _INT32_MAX:
        problems.append(f"{at('trainer', 'numNodes')}: must be 1 or more (nodes), got {nodes!r}")
    procs = trainer.get("numProcPerNode")
    if procs is not None and not 1 <= procs <= _INT32_MAX:
        problems.append(f"{at('trainer', 'numProcPerNode')}: must be 1 or more (processes per node), got {procs!r}")
    return problems + _env_names(trainer.get("env"), at("trainer", "env"))


def _initializer(spec: Mapping[str, Any], at: SpecPaths) -> list[str]:
    problems = []
    for step, config in (spec.get("initializer") or {}).items():
        if not isinstance(config, Mapping):
            continue
        uri = (config or {}).get("storageUri")
        if uri and not _STORAGE_URI.match(uri):
            problems.append(
                f"{at('initializer', step, 'storageUri')}: must be empty or a URI (scheme://..., such as "
                f"hf://org/model or s3://bucket/path), got {uri!r}"
            )
        problems += _env_names((config or {}).get("env"), at("initializer", step, "env"))
    return problems


def _runtime_patches(spec: Mapping[str, Any], at: SpecPaths) -> list[str]:
    patches = spec.get("runtimePatches") or []
    problems = []
    if len(patches) > MAX_RUNTIME_PATCHES - 1:
        problems.append(
            f"{at('runtimePatches')}: at most {MAX_RUNTIME_PATCHES - 1} patches (the API takes "
            f"{MAX_RUNTIME_PATCHES}, one is this provider's), got {len(patches)}"
        )
    managers: set[str] = set()
    for i, patch in enumerate(patches):
        if not isinstance(patch, Mapping):
            continue  # refused by the model
        where = f"{at('runtimePatches')}[{i}]"
        manager = patch.get("manager", "")
        problems += _manager_problems(manager, f"{where}.manager", managers)
        managers.add(manager)
        template = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
        problems += _metadata_problems(template.get("metadata"), f"{where}.trainingRuntimeSpec.template.metadata")
        jobs_path = f"{where}.trainingRuntimeSpec.template.spec.replicatedJobs"
        problems += _replicated_jobs_problems((template.get("spec") or {}).get("replicatedJobs") or [], jobs_path)
    return problems


def _manager_problems(manager: str, where: str, seen: set[str]) -> list[str]:
    """The webhook's ``IsDomainPrefixedPath``, the list-map key's uniqueness, and the provider's own manager."""
    if manager == RUNTIME_PATCH_MANAGER or is_own_key(manager):
        return [
            f"{where}: {manager!r} is this provider's: it writes that patch itself (the task instance's labels "
            "on the pods); give yours another manager, such as example.com/my-team"
        ]
    host, _, rest = manager.partition("/")
    if not host or not rest or len(host) > 253 or not _DNS_SUBDOMAIN.match(host):
        return [f"{where}: must be a domain-prefixed path (such as example.com/my-team), got {manager!r}"]
    if manager in seen:
        return [f"{where}: {manager!r} is given twice; each manager has one patch"]
    return []


def map_problems(path: str, mapping: Any, *, labels: bool) -> list[str]:
    """The problems of a ``labels`` or ``annotations`` map: a key that is no label key, a value that is no string
    (or, for labels, no label value).

    :param path: its name in messages (``metadata.labels``).
    :param mapping: the map as given (None: none).
    :param labels: check the values as label values (else as annotation values: any string).
    """
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        return [f"{path}: must be a mapping of strings to strings, got {type(mapping).__name__}"]
    problems = []
    for key, value in mapping.items():
        issue = label_key_problem(key)
        if issue is None and labels:
            issue = label_value_problem(value)
        elif issue is None and not isinstance(value, str):
            issue = f"value must be a string, got {type(value).__name__} {value!r}"
        if issue:
            problems.append(f"{path}[{key!r}]: {issue}")
    return problems


def _metadata_problems(metadata: Mapping[str, Any] | None, where: str) -> list[str]:
    metadata = metadata or {}
    return map_problems(f"{where}.labels", metadata.get("labels"), labels=True) + map_problems(
        f"{where}.annotations", metadata.get("annotations"), labels=False
    )


def _replicated_jobs_problems(jobs: list[Mapping[str, Any]], where: str) -> list[str]:
    problems = []
    names = [job.get("name") if isinstance(job, Mapping) else None for job in jobs]
    for i, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            continue
        if job.get("name") is not None and names.index(job.get("name")) != i:
            problems.append(f"{where}[{i}].name: {job.get('name')!r} is patched twice; one entry per replicated job")
        template = job.get("template") or {}
        problems += _metadata_problems(template.get("metadata"), f"{where}[{i}].template.metadata")
        pod = ((template.get("spec") or {}).get("template")) or {}
        problems += _metadata_problems(pod.get("metadata"), f"{where}[{i}].template.spec.template.metadata")
        for k, container in enumerate((pod.get("spec") or {}).get("containers") or []):
            if isinstance(container, Mapping) and container.get("name") in _ENV_ONLY_FROM_SPEC and container.get("env"):
                problems.append(
                    f"{where}[{i}].template.spec.template.spec.containers[{k}].env: the {container['name']!r} "
                    "container's env is set by trainer.env / initializer.<step>.env, not by a runtime patch"
                )
    return problems


def _scalars(spec: Mapping[str, Any], at: SpecPaths) -> list[str]:
    problems = []
    managed_by = spec.get("managedBy")
    if managed_by is not None and managed_by not in MANAGED_BY_VALUES:
        problems.append(f"{at('managedBy')}: {managed_by!r} is not allowed; allowed: {', '.join(MANAGED_BY_VALUES)}")
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= _INT64_MAX:
        problems.append(f"{at('activeDeadlineSeconds')}: must be 1 or more (seconds), got {deadline!r}")
    return problems


def _env_names(env: list[Mapping[str, Any]] | None, where: str) -> list[str]:
    """``env`` is a list map keyed by ``name``: the API refuses a name given twice."""
    names = [item.get("name") if isinstance(item, Mapping) else None for item in env or []]
    return [
        f"{where}[{i}].name: {name!r} is given twice; give each variable once"
        for i, name in enumerate(names)
        if name is not None and names.index(name) != i
    ]

"""Which jobs the controller reconciles at all, and whether a job's spec is one it can reconcile.

**managedBy** (``pkg/controller.v1/common/job.go`` ``ManagedByExternalController``, called first thing in every
kind's ``Reconcile``): a job whose ``spec.runPolicy.managedBy`` is set to anything but
``kubeflow.org/training-operator`` belongs to another controller (MultiKueue: ``kueue.x-k8s.io/multikueue``) and
is not reconciled at all: no condition, no event, no pod. The real webhooks admit only those two values for
every kind but MPIJob (``pkg/common/util/webhooks.go`` ``ValidateRunPolicy``); here, without webhooks, any
other value fails validation for those kinds, and an MPIJob carrying one is skipped as the real MPI controller
skips it.

**Validation.** The real operator refuses invalid PyTorch, TF, XGBoost, Paddle and JAX jobs at admission
(``pkg/webhooks/<kind>/*_webhook.go``) and checks an MPIJob in its ``Reconcile``
(``pkg/apis/kubeflow.org/v1/mpi_validation.go``), recording a Warning ``MPIJobFailedValidation`` event
"MPIJob failed validation because <error>". There are no webhooks here, so :func:`validate_job` applies the
webhook rules (and the MPI ones for MPIJob) in the controller, and adds the type checks a typed Go client
gets from decoding: a job that someone else's client wrote with, say, ``replicas: "two"`` or a replica spec
that is not an object must never make the controller raise. The errors read like the webhooks'
(``field.ErrorList``: ``<path>: <kind of error>: <detail>``; MPIJob: the MPI validation's sentences).

Local rules beyond the webhooks' (documented in the package docstring): a replica spec's ``restartPolicy``
must be one of the four the operator knows (the real one would pass an unknown one to the pod, which the
apiserver refuses), and ``replicas`` may not be negative. As in the real operator's defaulting, an unset
``replicas`` means 1 (an MPIJob worker: 0) and replica type names match case-insensitively
(``setTypeNameToCamelCase``), which the webhooks, running before defaulting, do not allow.
"""

from __future__ import annotations

import json
import re
from typing import Any

from airflow_trainjob_local import constants as c

__all__ = [
    "KUBEFLOW_JOBS_CONTROLLER",
    "MULTIKUEUE_CONTROLLER",
    "external_manager",
    "format_errors",
    "validate_job",
]

#: ``runPolicy.managedBy`` of a job the training operator reconciles (also the meaning of no value).
KUBEFLOW_JOBS_CONTROLLER = "kubeflow.org/training-operator"
#: ``runPolicy.managedBy`` of a job MultiKueue dispatches to a worker cluster.
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
SUPPORTED_MANAGERS = (KUBEFLOW_JOBS_CONTROLLER, MULTIKUEUE_CONTROLLER)

RESTART_POLICIES = (
    c.RESTART_POLICY_ALWAYS,
    c.RESTART_POLICY_ON_FAILURE,
    c.RESTART_POLICY_NEVER,
    c.RESTART_POLICY_EXIT_CODE,
)
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def external_manager(obj: dict[str, Any]) -> str | None:
    """The controller that manages the job instead of this one, or ``None`` when this one does.

    Only a string other than ``kubeflow.org/training-operator`` names another controller; for every kind but
    MPIJob only MultiKueue's value does (any other value is a validation error, see :func:`validate_job`).
    """
    spec = obj.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    manager = run_policy.get("managedBy") if isinstance(run_policy, dict) else None
    if not isinstance(manager, str) or manager == KUBEFLOW_JOBS_CONTROLLER:
        return None
    if obj.get("kind") == "MPIJob" or manager == MULTIKUEUE_CONTROLLER:
        return manager
    return None


def format_errors(errors: list[str]) -> str:
    """One error as itself, several as ``[a, b]`` (``field.ErrorList.ToAggregate``)."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def validate_job(obj: dict[str, Any]) -> list[str]:
    """The reasons the controller cannot reconcile this job; empty when it can.

    Never raises, whatever the object holds (the caller has checked ``kind`` is one of the six).
    """
    kind = c.JOB_KINDS[obj["kind"]]
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_invalid("spec", spec, "must be an object")]
    errors: list[str] = []
    name = str((obj.get("metadata") or {}).get("name", ""))
    if kind.kind != "MPIJob" and not (len(name) <= c.MAX_NAME_LENGTH and _DNS1035.match(name)):
        errors.append(_invalid("metadata.name", name, "should match: a lowercase DNS-1035 label"))
    errors += _run_policy_errors(kind, spec.get("runPolicy"))
    errors += _kind_field_errors(kind, spec)
    replica_specs = spec.get(kind.replica_specs_key)
    path = f"spec.{kind.replica_specs_key}"
    if replica_specs is None:
        errors.append("MPIReplicaSpecs is not valid" if kind.kind == "MPIJob" else _required(path, "must be required"))
        return errors
    if not isinstance(replica_specs, dict):
        return errors + [_invalid(path, replica_specs, "must be an object")]
    shape_errors = []
    for rtype, rspec in replica_specs.items():
        shape_errors += _replica_shape_errors(f"{path}[{rtype}]", rspec)
    if shape_errors:
        return errors + shape_errors
    if kind.kind == "MPIJob":
        mpi = _mpi_error(replica_specs)
        return errors + ([mpi] if mpi else [])
    return errors + _webhook_errors(kind, spec, replica_specs)


# --- shapes (what decoding into the Go types would refuse) ------------------------------------------------


def _run_policy_errors(kind: c.JobKind, run_policy: Any) -> list[str]:
    path = "spec.runPolicy"
    if run_policy is None:
        return []
    if not isinstance(run_policy, dict):
        return [_invalid(path, run_policy, "must be an object")]
    errors = []
    for key in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        errors += _int_error(f"{path}.{key}", run_policy.get(key), minimum=0)
    errors += _type_error(f"{path}.cleanPodPolicy", run_policy.get("cleanPodPolicy"), str, "a string")
    errors += _type_error(f"{path}.suspend", run_policy.get("suspend"), bool, "a boolean")
    manager = run_policy.get("managedBy")
    errors += _type_error(f"{path}.managedBy", manager, str, "a string")
    if isinstance(manager, str) and manager not in SUPPORTED_MANAGERS and kind.kind != "MPIJob":
        supported = ", ".join(json.dumps(m) for m in SUPPORTED_MANAGERS)
        errors.append(f"{path}.managedBy: Unsupported value: {json.dumps(manager)}: supported values: {supported}")
    scheduling = run_policy.get("schedulingPolicy")
    errors += _type_error(f"{path}.schedulingPolicy", scheduling, dict, "an object")
    if isinstance(scheduling, dict):
        errors += _int_error(f"{path}.schedulingPolicy.minAvailable", scheduling.get("minAvailable"), minimum=0)
    return errors


def _kind_field_errors(kind: c.JobKind, spec: dict[str, Any]) -> list[str]:
    errors: list[str] = []
    if kind.kind == "PyTorchJob":
        errors += _type_error("spec.nprocPerNode", spec.get("nprocPerNode"), str, "a string")
        elastic = spec.get("elasticPolicy")
        errors += _type_error("spec.elasticPolicy", elastic, dict, "an object")
        if isinstance(elastic, dict):
            for key in ("minReplicas", "maxReplicas", "rdzvPort", "maxRestarts", "nProcPerNode"):
                errors += _int_error(f"spec.elasticPolicy.{key}", elastic.get(key), minimum=0)
            for key in ("rdzvBackend", "rdzvHost", "rdzvId"):
                errors += _type_error(f"spec.elasticPolicy.{key}", elastic.get(key), str, "a string")
            errors += _type_error("spec.elasticPolicy.standalone", elastic.get("standalone"), bool, "a boolean")
            conf = elastic.get("rdzvConf")
            if conf is not None and not (
                isinstance(conf, list)
                and all(
                    isinstance(kv, dict) and all(isinstance(kv.get(k, ""), str) for k in ("key", "value"))
                    for kv in conf
                )
            ):
                errors.append(_invalid("spec.elasticPolicy.rdzvConf", conf, "must be a list of {key, value} strings"))
    elif kind.kind == "TFJob":
        errors += _type_error("spec.enableDynamicWorker", spec.get("enableDynamicWorker"), bool, "a boolean")
        errors += _type_error("spec.successPolicy", spec.get("successPolicy"), str, "a string")
    elif kind.kind == "MPIJob":
        errors += _int_error("spec.slotsPerWorker", spec.get("slotsPerWorker"), minimum=0)
        errors += _type_error("spec.cleanPodPolicy", spec.get("cleanPodPolicy"), str, "a string")
        errors += _type_error("spec.mainContainer", spec.get("mainContainer"), str, "a string")
    return errors


def _replica_shape_errors(path: str, rspec: Any) -> list[str]:
    """Type errors of one replica spec (``None`` passes: the webhooks report it as missing containers)."""
    if rspec is None:
        return []
    if not isinstance(rspec, dict):
        return [_invalid(path, rspec, "must be an object")]
    errors = _int_error(f"{path}.replicas", rspec.get("replicas"), minimum=0)
    policy = rspec.get("restartPolicy")
    if policy not in (None, "") and policy not in RESTART_POLICIES:
        supported = ", ".join(json.dumps(p) for p in RESTART_POLICIES)
        errors.append(f"{path}.restartPolicy: Unsupported value: {json.dumps(policy)}: supported values: {supported}")
    template = rspec.get("template")
    errors += _type_error(f"{path}.template", template, dict, "an object")
    if not isinstance(template, dict):
        return errors
    meta = template.get("metadata")
    errors += _type_error(f"{path}.template.metadata", meta, dict, "an object")
    if isinstance(meta, dict):
        for key in ("labels", "annotations"):
            value = meta.get(key)
            if value is not None and not (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())):
                errors.append(_invalid(f"{path}.template.metadata.{key}", value, "must map strings to strings"))
        finalizers = meta.get("finalizers")
        if finalizers is not None and not _list_of(finalizers, str):
            errors.append(_invalid(f"{path}.template.metadata.finalizers", finalizers, "must be a list of strings"))
    pod_spec = template.get("spec")
    errors += _type_error(f"{path}.template.spec", pod_spec, dict, "an object")
    if not isinstance(pod_spec, dict):
        return errors
    containers = pod_spec.get("containers")
    cpath = f"{path}.template.spec.containers"
    if containers is not None and not _list_of(containers, dict):
        return errors + [_invalid(cpath, containers, "must be a list of objects")]
    for i, container in enumerate(containers or []):
        errors += _type_error(f"{cpath}[{i}].name", container.get("name"), str, "a string")
        errors += _type_error(f"{cpath}[{i}].image", container.get("image"), str, "a string")
        for key in ("command", "args"):
            value = container.get(key)
            if value is not None and not _list_of(value, str):
                errors.append(_invalid(f"{cpath}[{i}].{key}", value, "must be a list of strings"))
        env = container.get("env")
        if env is not None and not (_list_of(env, dict) and all(isinstance(e.get("name"), str) for e in env)):
            errors.append(_invalid(f"{cpath}[{i}].env", env, "must be a list of objects with a name"))
        ports = container.get("ports")
        if ports is not None and not _list_of(ports, dict):
            errors.append(_invalid(f"{cpath}[{i}].ports", ports, "must be a list of objects"))
    return errors


# --- the operator's own rules ------------------------------------------------------------------------------


def _canonical(kind: c.JobKind, rtype: str) -> str | None:
    return next((t for t in kind.replica_types if t.lower() == rtype.lower()), None)


def _containers(rspec: Any) -> list[dict[str, Any]]:
    if not isinstance(rspec, dict):
        return []
    return ((rspec.get("template") or {}).get("spec") or {}).get("containers") or []


def _replicas(kind: c.JobKind, rtype: str, rspec: Any) -> int:
    value = rspec.get("replicas") if isinstance(rspec, dict) else None
    if value is None:
        return 0 if (kind.kind == "MPIJob" and rtype == "Worker") else 1
    return int(value)


def _webhook_errors(kind: c.JobKind, spec: dict[str, Any], replica_specs: dict[str, Any]) -> list[str]:
    """``validate<Kind>ReplicaSpecs`` and ``validateSpec`` of the kind's webhook."""
    path = f"spec.{kind.replica_specs_key}"
    errors: list[str] = []
    canonical = {rtype: _canonical(kind, str(rtype)) for rtype in replica_specs}
    if kind.kind == "PyTorchJob" and isinstance(spec.get("elasticPolicy"), dict):
        if "Worker" not in canonical.values():
            errors.append(_required(f"{path}[Worker]", "must be configured if elastic policy is used"))
        if spec["elasticPolicy"].get("nProcPerNode") is not None and spec.get("nprocPerNode") is not None:
            errors.append("spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode")
    chief_or_master = 0
    for rtype, rspec in replica_specs.items():
        role = f"{path}[{rtype}]"
        cpath = f"{role}.template.spec.containers"
        known = canonical[rtype]
        # The TF webhook accepts any replica type (the TF controller gives an unknown one pods too).
        if known is None and kind.kind != "TFJob":
            supported = ", ".join(json.dumps(t) for t in kind.replica_types)
            errors.append(f"{role}: Unsupported value: {json.dumps(str(rtype))}: supported values: {supported}")
        containers = _containers(rspec)
        if not containers:
            errors.append(_required(cpath, "must be specified"))
        for i, container in enumerate(containers):
            if not container.get("image"):
                errors.append(_required(f"{cpath}[{i}].image", "must be required"))
        if not any(ctr.get("name") == kind.default_container for ctr in containers):
            shown = f'"{kind.default_container}"' if kind.kind == "PaddleJob" else kind.default_container
            errors.append(_required(cpath, f"must have at least one container with name {shown}"))
        replicas = _replicas(kind, known or "", rspec)
        if known in kind.single_replica_types and kind.kind in ("PyTorchJob", "XGBoostJob") and replicas != 1:
            errors.append(f"{role}.replicas: Forbidden: must be 1")
        if kind.kind == "PyTorchJob" and known == "Worker" and replicas < 1:
            errors.append(f"{role}.replicas: Forbidden: must be at least 1")
        if kind.kind == "TFJob" and known in ("Chief", "Master"):
            chief_or_master += 1
    if chief_or_master > 1:
        errors.append(f"{path}: Forbidden: must not have more than 1 Chief or Master role")
    if kind.kind == "XGBoostJob" and "Master" not in canonical.values():
        errors.append(_required(f"{path}[Master]", "must be present"))
    return errors


def _mpi_error(replica_specs: dict[str, Any]) -> str | None:
    """``ValidateV1MpiJobSpec``: the first problem, in its words."""
    launcher = False
    valid = ["Launcher", "Worker"]
    for rtype, rspec in replica_specs.items():
        containers = _containers(rspec)
        if rspec is None or not containers:
            return f"MPIReplicaSpecs is not valid: containers definition expected in {rtype}"
        known = _canonical(c.MPI_JOB, str(rtype))
        if known is None:
            return f"MPIReplicaType is {rtype} but must be one of [{' '.join(valid)}]"
        for container in containers:
            if not container.get("image"):
                return f"MPIReplicaSpec is not valid: Image is undefined in the container of {rtype}"
            if not container.get("name"):
                return f"MPIReplicaSpec is not valid: ImageName is undefined in the container of {rtype}"
        if known == "Launcher":
            launcher = True
            if _replicas(c.MPI_JOB, known, rspec) != 1:
                return "MPIReplicaSpec is not valid: There must be only 1 launcher replica"
    if not launcher:
        return "MPIReplicaSpec is not valid: Master ReplicaSpec must be present"
    return None


# --- helpers ---------------------------------------------------------------------------------------------


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_show(value)}: {detail}"


def _required(path: str, detail: str) -> str:
    return f"{path}: Required value: {detail}"


def _type_error(path: str, value: Any, typ: type, what: str) -> list[str]:
    if value is None or (isinstance(value, typ) and not (typ is not bool and isinstance(value, bool))):
        return []
    return [_invalid(path, value, f"must be {what}")]


def _int_error(path: str, value: Any, minimum: int | None = None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int):
        return [_invalid(path, value, "must be an integer")]
    if minimum is not None and value < minimum:
        return [_invalid(path, value, f"must be greater than or equal to {minimum}")]
    return []


def _list_of(value: Any, typ: type) -> bool:
    return isinstance(value, list) and all(isinstance(x, typ) for x in value)

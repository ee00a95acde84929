"""A job as the controller reads it: the API object plus the defaults the real operator applies
(``SetDefaults_<Kind>`` in ``pkg/apis/kubeflow.org/v1/*_defaults.go``), and the names and labels derived from it.

Defaults are applied to an in-memory copy only, as the operator's ``scheme.Default`` does; the stored
spec is never rewritten.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.kube import ObjectIdentity

__all__ = ["JobView", "pod_name", "replica_key"]


def replica_key(replica_type: str, index: int) -> str:
    """``<replicatype lowercase>-<index>``: the suffix of a replica's pod and service names."""
    return f"{replica_type.lower()}-{index}"


def pod_name(job_name: str, replica_type: str, index: int) -> str:
    """The real operator's ``GenGeneralName``: ``<job>-<replicatype lowercase>-<index>``.

    An MPIJob's launcher is the exception, ``<job>-launcher`` (see :meth:`JobView.pod_name`).
    """
    return f"{job_name}-{replica_key(replica_type, index)}".replace("/", "-")


@dataclass
class JobView(ObjectIdentity):
    """One training job with its kind's defaults applied.

    :param obj: the job as read from the API (never modified).
    :param kind: the kind's row of :data:`airflow_trainjob_local.constants.JOB_KINDS`.
    :param replica_specs: replica type (canonical spelling) -> defaulted ReplicaSpec copy.
    :param run_policy: defaulted ``spec.runPolicy`` copy.
    """

    obj: dict[str, Any]
    kind: c.JobKind
    replica_specs: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_policy: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> JobView:
        """Build the view of a job object.

        :raises KeyError: ``obj['kind']`` is not one of the six kinds.
        """
        kind = c.JOB_KINDS[obj["kind"]]
        spec = _dict(obj.get("spec"))
        raw_specs = _dict(spec.get(kind.replica_specs_key))
        replica_specs: dict[str, dict[str, Any]] = {}
        for rtype, rspec in raw_specs.items():
            if rspec is not None and not isinstance(rspec, dict):
                continue  # malformed: the job fails validation (see .validation) and is never given pods
            # setTypeNameToCamelCase: "worker" or "WORKER" means Worker.
            canonical = next((t for t in kind.replica_types if t.lower() == str(rtype).lower()), str(rtype))
            rspec = copy.deepcopy(rspec or {})
            if rspec.get("replicas") is None:
                # MPIJob workers default to 0 replicas, every other replica spec to 1.
                rspec["replicas"] = 0 if (kind.kind == "MPIJob" and canonical == "Worker") else 1
            elif isinstance(rspec["replicas"], bool) or not isinstance(rspec["replicas"], int):
                rspec["replicas"] = 0  # malformed (fails validation)
            if not rspec.get("restartPolicy"):
                rspec["restartPolicy"] = kind.default_restart_policy
            if not isinstance(rspec.get("template"), dict):
                rspec["template"] = {}
            replica_specs[canonical] = rspec
        run_policy = copy.deepcopy(_dict(spec.get("runPolicy")))
        if kind.kind == "MPIJob":
            # The MPI controller's Reconcile: runPolicy.cleanPodPolicy wins when set, else the deprecated
            # spec.cleanPodPolicy; both unset default to None (SetDefaults_MPIJob).
            if run_policy.get("cleanPodPolicy") is None:
                run_policy["cleanPodPolicy"] = spec.get("cleanPodPolicy")
        if run_policy.get("cleanPodPolicy") is None:
            run_policy["cleanPodPolicy"] = c.CLEAN_POD_POLICY_NONE
        return cls(obj=obj, kind=kind, replica_specs=replica_specs, run_policy=run_policy)

    @property
    def spec(self) -> dict[str, Any]:
        return _dict(self.obj.get("spec"))

    @property
    def annotations(self) -> dict[str, str]:
        return self.obj["metadata"].get("annotations") or {}

    @property
    def controller_name(self) -> str:
        """``<kind lowercase>-controller``: the operator-name label value and the event source."""
        return self.kind.controller_name

    # --- replicas -------------------------------------------------------------------------------
    def replica_types(self) -> list[str]:
        """The job's replica types, the kind's known ones first in the API's order, then unknown ones."""
        known = [t for t in self.kind.replica_types if t in self.replica_specs]
        return known + sorted(t for t in self.replica_specs if t not in known)

    def replicas(self, replica_type: str) -> int:
        """``replicas`` of a replica type (0 when the job has no such type)."""
        spec = self.replica_specs.get(replica_type)
        return int(spec["replicas"]) if spec else 0

    def total_replicas(self) -> int:
        return sum(self.replicas(t) for t in self.replica_specs)

    def restart_policy(self, replica_type: str) -> str:
        return str(self.replica_specs[replica_type]["restartPolicy"])

    def pod_name(self, replica_type: str, index: int) -> str:
        """The pod (and service) name of one replica; ``<job>-launcher`` for an MPIJob launcher."""
        if self.kind.kind == "MPIJob" and replica_type == "Launcher":
            return f"{self.name}-launcher"
        return pod_name(self.name, replica_type, index)

    def is_master_role(self, replica_type: str, index: int) -> bool:
        """Whether the pod gets ``job-role=master`` (each kind's ``IsMasterRole``)."""
        kind = self.kind.kind
        if kind == "TFJob":
            if "Chief" in self.replica_specs or "Master" in self.replica_specs:
                return replica_type in ("Chief", "Master")
            return replica_type == "Worker" and index == 0
        if kind == "JAXJob":
            return index == 0
        if kind == "MPIJob":
            return replica_type == "Launcher"
        if kind == "PyTorchJob" and "Master" not in self.replica_specs:
            return replica_type == "Worker" and index == 0
        # PyTorchJob with a Master, XGBoostJob, PaddleJob.
        return replica_type == "Master"

    @property
    def suspended(self) -> bool:
        """``runPolicy.suspend`` is true (``train.IsJobSuspended``)."""
        return self.run_policy.get("suspend") is True

    # --- labels ---------------------------------------------------------------------------------
    def base_labels(self) -> dict[str, str]:
        """``GenLabels``: job-name and operator-name, on every pod and service of the job."""
        return {
            c.LABEL_OPERATOR_NAME: self.controller_name,
            c.LABEL_JOB_NAME: self.name.replace("/", "-"),
        }

    def replica_labels(self, replica_type: str, index: int) -> dict[str, str]:
        """Labels of one replica's pod and service (without ``job-role``)."""
        labels = self.base_labels()
        labels[c.LABEL_REPLICA_TYPE] = replica_type.lower()
        labels[c.LABEL_REPLICA_INDEX] = str(index)
        return labels

    def replica_selector(self, replica_type: str) -> str:
        """``metav1.FormatLabelSelector`` of a replica type's pods: ``k=v`` pairs sorted by key."""
        labels = self.base_labels()
        labels[c.LABEL_REPLICA_TYPE] = replica_type.lower()
        return ",".join(f"{k}={labels[k]}" for k in sorted(labels))

    def owner_reference(self) -> dict[str, Any]:
        """The controller ownerReference every pod and service of the job carries."""
        return {
            "apiVersion": c.API_VERSION,
            "kind": self.kind.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else ``{}`` (a malformed part of a job; validation reports it)."""
    return value if isinstance(value, dict) else {}

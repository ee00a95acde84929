"""A JobSet as the controller reads it: its spec with the defaults upstream's webhook and CRD would have set
(``pkg/webhooks/jobset_webhook.go`` ``Default``, the ``+kubebuilder:default`` markers of
``api/jobset/v1alpha2/jobset_types.go``), applied on read because no webhook runs. Pure: no API calls.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from typing import Any

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.kube import ObjectIdentity

__all__ = ["JobSetView", "job_hash_key", "job_name"]


def job_name(jobset: str, replicated_job: str, index: int) -> str:
    """``<jobset>-<replicatedJob>-<index>`` (upstream ``placement.GenJobName``)."""
    return f"{jobset}-{replicated_job}-{index}"


def job_hash_key(namespace: str, name: str) -> str:
    """The ``job-key`` label: SHA-1 (hex) of ``<namespace>/<job name>``, as upstream's ``jobHashKey``."""
    return hashlib.sha1(f"{namespace}/{name}".encode()).hexdigest()


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


@dataclass
class JobSetView(ObjectIdentity):
    """A JobSet object (as read from the API, a dict) with defaults applied to a copy of its spec.

    :param obj: the JobSet as the API returns it.
    """

    obj: dict[str, Any]

    def __post_init__(self) -> None:
        self.spec = _defaulted_spec(self.obj.get("spec") or {})

    @property
    def status(self) -> dict[str, Any]:
        return self.obj.get("status") or {}

    @property
    def restarts(self) -> int:
        """``status.restarts``: the current restart attempt."""
        return _int(self.status.get("restarts"), 0)

    def replicated_jobs(self) -> list[dict[str, Any]]:
        """``spec.replicatedJobs`` in spec order, each with ``replicas`` and ``groupName`` defaulted."""
        return list(self.spec.get("replicatedJobs") or [])

    def replicas(self, replicated_job: str) -> int:
        """``replicas`` of one replicated job (0 when there is none of that name)."""
        return next((int(r["replicas"]) for r in self.replicated_jobs() if r["name"] == replicated_job), 0)

    @property
    def suspended(self) -> bool:
        """``spec.suspend``."""
        return bool(self.spec.get("suspend"))

    @property
    def managed_by(self) -> str:
        """``spec.managedBy`` (the JobSet controller's own name when unset)."""
        return str(self.spec.get("managedBy") or c.MANAGED_BY_JOBSET)

    @property
    def dns_hostnames(self) -> bool:
        """``spec.network.enableDNSHostnames`` (default true)."""
        return bool(self.spec["network"]["enableDNSHostnames"])

    @property
    def publish_not_ready_addresses(self) -> bool:
        """``spec.network.publishNotReadyAddresses`` (default true)."""
        return bool(self.spec["network"]["publishNotReadyAddresses"])

    @property
    def subdomain(self) -> str:
        """``spec.network.subdomain``, else the JobSet's name (upstream ``GetSubdomain``)."""
        return str(self.spec["network"].get("subdomain") or self.name)

    @property
    def in_order_startup(self) -> bool:
        """``spec.startupPolicy.startupPolicyOrder`` is ``InOrder``."""
        return (self.spec.get("startupPolicy") or {}).get("startupPolicyOrder") == c.STARTUP_IN_ORDER

    @property
    def success_policy(self) -> dict[str, Any]:
        """``spec.successPolicy`` (default: operator All over every replicated job)."""
        return dict(self.spec["successPolicy"])

    @property
    def failure_policy(self) -> dict[str, Any] | None:
        """``spec.failurePolicy`` with ``maxRestarts`` (0) and rule names (``failurePolicyRule<i>``) defaulted."""
        return self.spec.get("failurePolicy")

    @property
    def ttl_seconds_after_finished(self) -> int | None:
        """``spec.ttlSecondsAfterFinished``."""
        value = self.spec.get("ttlSecondsAfterFinished")
        return None if value is None else _int(value, 0)

    def global_replicas(self) -> int:
        """Jobs of all replicated jobs together."""
        return sum(int(r["replicas"]) for r in self.replicated_jobs())

    def global_index(self, replicated_job: str, index: int) -> int:
        """The job's index among all the JobSet's jobs, replicated jobs in spec order (``globalJobIndex``)."""
        before = 0
        for rjob in self.replicated_jobs():
            if rjob["name"] == replicated_job:
                return before + index
            before += int(rjob["replicas"])
        raise KeyError(replicated_job)

    def group_replicas(self, group: str) -> int:
        """Jobs of the replicated jobs of one group (``groupReplicas``)."""
        return sum(int(r["replicas"]) for r in self.replicated_jobs() if r["groupName"] == group)

    def group_index(self, replicated_job: str, index: int) -> int:
        """The job's index within its group (``groupJobIndex``)."""
        rjobs = self.replicated_jobs()
        group = next(r["groupName"] for r in rjobs if r["name"] == replicated_job)
        before = 0
        for rjob in rjobs:
            if rjob["groupName"] != group:
                continue
            if rjob["name"] == replicated_job:
                return before + index
            before += int(rjob["replicas"])
        raise KeyError(replicated_job)


def _defaulted_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``spec`` with the webhook's and the CRD's defaults."""
    spec = copy.deepcopy(spec)
    spec.setdefault("successPolicy", {"operator": c.OPERATOR_ALL})
    spec["successPolicy"].setdefault("operator", c.OPERATOR_ALL)
    spec.setdefault("startupPolicy", {"startupPolicyOrder": "AnyOrder"})
    network = spec.setdefault("network", {})
    if network.get("enableDNSHostnames") is None:
        network["enableDNSHostnames"] = True
    if network.get("publishNotReadyAddresses") is None:
        network["publishNotReadyAddresses"] = True
    for rjob in spec.setdefault("replicatedJobs", []) or []:
        rjob["replicas"] = _int(rjob.get("replicas", 1), 1)
        rjob["groupName"] = rjob.get("groupName") or c.DEFAULT_GROUP_NAME
        job_spec = rjob.setdefault("template", {}).setdefault("spec", {})
        job_spec.setdefault("completionMode", "Indexed")
        pod_spec = job_spec.setdefault("template", {}).setdefault("spec", {})
        if not pod_spec.get("restartPolicy"):
            pod_spec["restartPolicy"] = "OnFailure"
    policy = spec.get("failurePolicy")
    if policy is not None:
        policy["maxRestarts"] = _int(policy.get("maxRestarts", 0), 0)
        for i, rule in enumerate(policy.get("rules") or []):
            rule["name"] = rule.get("name") or f"failurePolicyRule{i}"
    return spec

"""A made-up second API family, ``ToyJob`` of ``toy.example.org/v1alpha1``, shaped like Kubeflow Trainer v2's
``TrainJob`` (its own group, pod label and condition words ``Complete``/``Failed``; one replica type, ``node``): the
drivers must work with it as they do with ``kubeflow.org/v1``, naming no kind. Registered for a test by
:func:`registered`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pytest

from airflow_trainjob import families
from airflow_trainjob.domain.cleanup_hold import UserRunPolicy
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.family import JobFamily, JobResource
from airflow_trainjob.domain.pods import Pod, pod_name

KIND = "ToyJob"
LABEL_JOB = "toy.example.org/job-name"
LABEL_INDEX = "toy.example.org/node-index"


def _true(status: Any) -> set[str]:
    return {c["type"] for c in (status or {}).get("conditions") or [] if c.get("status") == "True"}


def _index(pod: Pod) -> int:
    return int(((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_INDEX, "0"))


class ToyFamily:
    """The port, answered in the toy family's own words."""

    kind = KIND
    resource = JobResource("toy.example.org", "v1alpha1", "toyjobs")
    replica_types = ("node",)
    lead_order = ("node",)
    cleanup_policy_field = "podRetention"
    pod_keys = (LABEL_JOB, LABEL_INDEX)
    success_condition = "Complete"
    target_conditions = ("Complete",)
    suspend_field = "spec.hold"

    def prerequisites(self, manifest: Mapping[str, Any]) -> tuple:
        return ()

    def is_spec_suspended(self, job: Mapping[str, Any]) -> bool:
        return (job.get("spec") or {}).get("hold") is True

    def has_started(self, status: Any) -> bool:
        return self.is_terminal(status) or "Running" in _true(status)

    def started_since_admission(self, status: Any, admitted_at: float | None) -> bool:
        return self.has_started(status)

    def job_name_of(self, pod: Pod) -> str | None:
        return ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_JOB)

    def owns_pod(self, job: Mapping[str, Any], pod: Pod) -> bool:
        return self.job_name_of(pod) == (job.get("metadata") or {}).get("name")

    def restart_policies(self, job: Mapping[str, Any]) -> Mapping[str, Any]:
        return {}

    def permanent_by_reason(self, status: Any) -> bool | None:
        return None

    def run_times(self, job: Mapping[str, Any]) -> tuple[str | None, str | None]:
        return None, None

    def no_controller_hint(self, namespace: str) -> str:
        return f"the toy controller may not be running in {namespace}"

    def is_failed(self, status: Any) -> bool:
        return "Failed" in _true(status)

    def is_succeeded(self, status: Any) -> bool:
        return "Complete" in _true(status)

    def is_terminal(self, status: Any) -> bool:
        return self.is_failed(status) or self.is_succeeded(status)

    def has_condition(self, status: Any, condition_type: str) -> bool:
        return condition_type in _true(status)

    def phase(self, status: Any) -> str:
        return "Failed" if self.is_failed(status) else "Complete" if self.is_succeeded(status) else "Running"

    def summary(self, status: Any, desired: Mapping[str, int] | None = None) -> str:
        return f"{self.phase(status)} (toy)"

    def controller_has_acted(self, status: Any) -> bool:
        return bool((status or {}).get("conditions"))

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        return {"node": int(((job or {}).get("spec") or {}).get("numNodes", 1))}

    def event_names(self, job: Mapping[str, Any]) -> set[str]:
        return {job["metadata"]["name"]}

    def lead_pod(self, pods: Iterable[Pod]) -> Pod | None:
        return next((p for p in pods if _index(p) == 0), None)

    def pending_reasons(self, pods: Iterable[Pod]) -> list[str]:
        return []

    def pod_selector(self, name: str, replica_index: int | None = None) -> str:
        return f"{LABEL_JOB}={name}" + ("" if replica_index is None else f",{LABEL_INDEX}={replica_index}")

    @property
    def any_job_pod_selector(self) -> str:
        return LABEL_JOB

    def replica_of(self, pod: Pod) -> tuple[str, int]:
        return "node", _index(pod)

    def log_container(self, pod: Pod) -> str:
        return "node"

    def container_ends(self, pods: Iterable[Pod]) -> list[ContainerEnd]:
        return [ContainerEnd(pod_name(p), f"node-{_index(p)}", "node", 1, "Error", "") for p in pods]

    def ends_from_events(self, events: Iterable[Mapping[str, Any]], job: Mapping[str, Any]) -> list[ContainerEnd]:
        return []

    def user_run_policy(self, job: Mapping[str, Any]) -> UserRunPolicy:
        return UserRunPolicy("None", None, held=False)

    def status_from_events(self, events: Any, uid: str | None) -> dict[str, Any] | None:
        return None

    def deciding_condition(self, status: Any) -> Mapping[str, Any] | None:
        return None

    def replica_statuses(self, status: Any) -> dict[str, dict[str, int]]:
        return {}

    def steps(self, status: Any, desired: Mapping[str, int] | None = None) -> list[dict[str, Any]] | None:
        return None

    def trainer_progress(self, status: Any) -> dict[str, Any] | None:
        return None

    def runtime_name(self, job: Mapping[str, Any]) -> str | None:
        return None

    def spec_summary(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        return {"numNodes": spec.get("numNodes")}


TOY: JobFamily = ToyFamily()  # (mypy checks the toy against the port)


def _lookup(kind: str) -> JobFamily:
    if kind != KIND:
        raise KeyError(kind)
    return TOY


@contextmanager
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[JobFamily]:
    """The toy family, known to :func:`airflow_trainjob.families.family_of` while the block runs."""
    monkeypatch.setattr(families, "_FAMILIES", (*families._FAMILIES, (_lookup, lambda: (KIND,))))
    yield TOY


def toy_job(*true: str, name: str = "t") -> dict[str, Any]:
    """A ToyJob as the API would return it, with conditions ``true`` holding."""
    return {
        "apiVersion": "toy.example.org/v1alpha1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": "ml", "uid": "u-1"},
        "spec": {"numNodes": 2, "podTemplate": {"spec": {"containers": [{"name": "node", "env": "secret"}]}}},
        "status": {"conditions": [{"type": t, "status": "True"} for t in true]},
    }

"""What the lifecycle core (:mod:`airflow_trainjob.domain.lifecycle`) and the drivers (the operator's run and its
synchronous wait, the lead log's follower, the trigger, the sensor, the hooks' addressing, the links, the UI) read of a
job's API family, and nothing else: the port its adapters implement (:mod:`airflow_trainjob.families`; today's one,
``kubeflow.org/v1``'s six kinds, is :mod:`airflow_trainjob.families.kubeflow_v1`). The core names no kind and reads no
condition type of its own, the drivers no kind table (``tests/test_architecture.py`` checks): a second family (Kubeflow
Trainer v2's ``TrainJob``) is a second adapter, not a fourth copy of the judging.

Defined here, beside the core that reads it, so that the domain imports nothing above it; the adapters import the
domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_trainjob.domain.cleanup_hold import UserRunPolicy
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.pods import Pod


@dataclass(frozen=True)
class JobResource:
    """Where a kind's objects live on the Kubernetes API (a custom resource).

    :param group: the API group, e.g. ``kubeflow.org``.
    :param version: the API version within the group, e.g. ``v1``.
    :param plural: the resource name in URLs, e.g. ``pytorchjobs``.
    """

    group: str
    version: str
    plural: str

    @property
    def api_version(self) -> str:
        """``kubeflow.org/v1``: the objects' ``apiVersion``."""
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        """``pytorchjobs.kubeflow.org``: the resource as ``kubectl`` and RBAC name it."""
        return f"{self.plural}.{self.group}"


class JobFamily(Protocol):
    """One kind of one API family, as the lifecycle core and the drivers read it."""

    @property
    def kind(self) -> str:
        """The kind's name, e.g. ``PyTorchJob``."""
        ...

    @property
    def resource(self) -> JobResource:
        """Where the kind's objects live: group, version, plural."""
        ...

    @property
    def cleanup_policy_field(self) -> str:
        """The job's field saying which pods go when it finishes (``cleanPodPolicy``), as messages name it."""
        ...

    def pod_selector(self, name: str, replica_index: int | None = None) -> str:
        """The label selector of the pods the family's controller creates for job ``name``, of one replica index
        if given (index 0 holds the lead replica).

        :param name: the job's ``metadata.name``.
        :param replica_index: only the pods of this replica index (0, 1, ...); None: all.
        """
        ...

    @property
    def any_job_pod_selector(self) -> str:
        """The label selector of the pods the family's controller creates for any job (a watch shared by the jobs
        of a namespace: the trigger's failed pods, :mod:`~airflow_trainjob.domain.failed_pods`)."""
        ...

    def replica_of(self, pod: Pod) -> tuple[str, int]:
        """``(replica type in the API's spelling, index)`` of one of the job's pods.

        :param pod: the pod, an API JSON dict (its labels).
        """
        ...

    @property
    def lead_order(self) -> tuple[str, ...]:
        """The replica types whose pod 0 leads the job, in order of preference."""
        ...

    def log_container(self, pod: Pod) -> str:
        """The container whose log speaks for the pod's replica (quoted, followed); ``""`` for a pod without any.

        :param pod: the pod, an API JSON dict.
        """
        ...

    def container_ends(self, pods: Iterable[Pod]) -> list[ContainerEnd]:
        """How the containers worth quoting of the job's pods ended (the replicas' containers, not sidecars).

        :param pods: the job's pods, API JSON dicts.
        """
        ...

    def ends_from_events(self, events: Iterable[Mapping[str, Any]], job_name: str) -> list[ContainerEnd]:
        """The replicas' ends the controller's events record (their pods may be gone).

        :param events: core/v1 events about the job, API JSON dicts.
        :param job_name: the job's ``metadata.name``.
        """
        ...

    def user_run_policy(self, job: Mapping[str, Any]) -> UserRunPolicy:
        """What the user asked of the job's cleanup, and whether the provider holds it (the controller was told to
        keep everything until the task has read what it needs).

        :param job: the job, an API JSON dict (its spec and annotations).
        """
        ...

    def status_from_events(self, events: Any, uid: str | None) -> dict[str, Any] | None:
        """The terminal status the controller announced in its events for job ``uid``, for a job gone before its
        terminal state was seen; None when no such event is there.

        :param events: the namespace's events about the job, API JSON dicts, any order.
        :param uid: the job's ``metadata.uid``.
        """
        ...

    def spec_summary(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """What a resumed task needs of the job's ``spec`` when the job is gone by then: each replica type's
        ``replicas``, ``restartPolicy`` and container names; never a pod template.

        :param spec: the job's ``spec``, an API JSON dict.
        """
        ...

    @property
    def replica_types(self) -> tuple[str, ...]:
        """The replica types the kind accepts, in the API's spelling."""
        ...

    def is_failed(self, status: Any) -> bool:
        """The job failed: it will not run again.

        :param status: the job's ``status`` as the API returns it (a dict, or None before a controller wrote one).
        """
        ...

    def is_succeeded(self, status: Any) -> bool:
        """The job finished successfully.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def is_terminal(self, status: Any) -> bool:
        """The job finished, successfully or not.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def has_condition(self, status: Any, condition_type: str) -> bool:
        """A condition of ``condition_type`` holds (the family's vocabulary: a wait's target).

        :param status: the job's ``status`` (a dict, or None).
        :param condition_type: a condition type of the family, e.g. ``Running``.
        """
        ...

    def phase(self, status: Any) -> str:
        """One word for where the job is (``Running``, ``Succeeded``, ...).

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def summary(self, status: Any, desired: Mapping[str, int] | None = None) -> str:
        """A one-line summary: the phase, why, and the replica counts.

        :param status: the job's ``status`` (a dict, or None).
        :param desired: replica type -> replicas asked for (count); shows ``active/desired`` when given.
        """
        ...

    def controller_has_acted(self, status: Any) -> bool:
        """A controller has written any condition or replica status to the job.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        """Replica type -> the replicas its spec asks for; {} for a job without a spec.

        :param job: the job or its manifest, an API JSON dict of the kind; or None.
        """
        ...

    def lead_pod(self, pods: Iterable[Pod]) -> Pod | None:
        """The pod whose log tells the job's story (the lead replica's pod 0), or None.

        :param pods: the job's pods, API JSON dicts.
        """
        ...

    def pending_reasons(self, pods: Iterable[Pod]) -> list[str]:
        """Why pods are not running yet, one line per pending pod.

        :param pods: the job's pods, API JSON dicts.
        """
        ...

"""The ``kubeflow.org/v1`` family (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob) as the lifecycle core
and the drivers read it (:class:`~airflow_trainjob.domain.family.JobFamily`): the kubeflow/common v1 conditions are
:mod:`airflow_trainjob.domain.conditions`' to read, each kind's address, replica types, lead replica and default
container its :class:`~airflow_trainjob.constants.JobKind`'s, its pods those labelled with the training operator's
``JobNameLabel``, and its held cleanup (``runPolicy.cleanPodPolicy``) :mod:`airflow_trainjob.domain.cleanup_hold`'s.

Pure: no I/O, no client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from airflow_trainjob.constants import (
    API_VERSION,
    GROUP,
    JOB_KINDS,
    LABEL_JOB_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    VERSION,
    JobConditionType,
    JobKind,
)
from airflow_trainjob.domain import cleanup_hold, conditions, failures, pods
from airflow_trainjob.domain.failed_pods import owner_of
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.family import JobResource, Prerequisite
from airflow_trainjob.domain.pods import Pod

__all__ = ["API_VERSION", "KubeflowV1Kind", "family", "kinds", "pod_selector"]


def pod_selector(name: str, replica_index: int | None = None) -> str:
    """The label selector of the pods the training operator creates for job ``name``
    (``training.kubeflow.org/job-name=<name>``: the same for the six kinds), of one replica index if given
    (``training.kubeflow.org/replica-index=<index>``).

    :param name: the job's ``metadata.name``.
    :param replica_index: only the pods of this replica index (0, 1, ...); None: all.
    """
    selector = f"{LABEL_JOB_NAME}={name}"
    return selector if replica_index is None else f"{selector},{LABEL_REPLICA_INDEX}={replica_index}"


@dataclass(frozen=True)
class KubeflowV1Kind:
    """One ``kubeflow.org/v1`` kind, as the port :class:`~airflow_trainjob.domain.family.JobFamily` asks.

    :param job_kind: the kind's entry of :data:`~airflow_trainjob.constants.JOB_KINDS`.
    """

    job_kind: JobKind

    # What a status means: the same for the six kinds (kubeflow/common v1).
    is_failed = staticmethod(conditions.is_failed)
    is_succeeded = staticmethod(conditions.is_succeeded)
    is_terminal = staticmethod(conditions.is_terminal)
    has_condition = staticmethod(conditions.has_condition)
    phase = staticmethod(conditions.phase)
    summary = staticmethod(conditions.summary)
    controller_has_acted = staticmethod(conditions.controller_has_acted)
    deciding_condition = staticmethod(conditions.deciding_condition)
    # The pods and the held cleanup: the same for the six kinds too.
    pod_selector = staticmethod(pod_selector)
    user_run_policy = staticmethod(cleanup_hold.user_run_policy)
    has_started = staticmethod(conditions.has_started)
    started_since_admission = staticmethod(conditions.started_since_admission)
    restart_policies = staticmethod(failures.restart_policies)

    def replica_statuses(self, status: Any) -> dict[str, dict[str, int]]:
        """``status.replicaStatuses``: replica type -> its ``active``, ``succeeded`` and ``failed`` pod counts (ints; a
        missing one is 0), in the controller's order.

        :param status: the job's ``status`` (API JSON dict, or None).
        """
        found = (status or {}).get("replicaStatuses") if isinstance(status, Mapping) else None
        return {
            str(t): {k: int(c.get(k) or 0) for k in ("active", "succeeded", "failed")}
            for t, c in (found.items() if isinstance(found, Mapping) else ())
            if isinstance(c, Mapping)
        }

    def steps(self, status: Any, desired: Mapping[str, int] | None = None) -> list[dict[str, Any]] | None:
        """None: a v1 job runs as replicas, counted per type (:meth:`replica_statuses`), not as steps.

        :param status: the job's ``status``.
        :param desired: replica type -> replicas asked for.
        """
        return None

    def trainer_progress(self, status: Any) -> dict[str, Any] | None:
        """None: a v1 controller reports no training progress.

        :param status: the job's ``status``.
        """
        return None

    def runtime_name(self, job: Mapping[str, Any]) -> str | None:
        """None: a v1 job names no runtime (its replica specs are its whole shape).

        :param job: the job, an API JSON dict.
        """
        return None

    @property
    def success_condition(self) -> str:
        """``Succeeded``."""
        return JobConditionType.SUCCEEDED.value

    @property
    def target_conditions(self) -> tuple[str, ...]:
        """Every kubeflow/common v1 condition type but ``Failed`` (``Created``, ``Running``, ``Restarting``,
        ``Succeeded``, ``Suspended``...)."""
        return tuple(c.value for c in JobConditionType if c is not JobConditionType.FAILED)

    @property
    def suspend_field(self) -> str:
        """``runPolicy.suspend``."""
        return "runPolicy.suspend"

    def is_spec_suspended(self, job: Mapping[str, Any]) -> bool:
        """``spec.runPolicy.suspend`` is true.

        :param job: the job, an API JSON dict.
        """
        run_policy = (job.get("spec") or {}).get("runPolicy")
        return isinstance(run_policy, Mapping) and run_policy.get("suspend") is True

    @property
    def pod_keys(self) -> tuple[str, ...]:
        """The operator's replica type and index labels (which job object: the owner reference, kept apart)."""
        return LABEL_REPLICA_TYPE, LABEL_REPLICA_INDEX

    def job_name_of(self, pod: Pod) -> str | None:
        """The job its controller owner reference names, when of this kind
        (:func:`~airflow_trainjob.domain.failed_pods.owner_of`).

        :param pod: the pod, an API JSON dict.
        """
        owner = owner_of(pod)
        return owner.name if owner is not None and owner.kind == self.kind else None

    def owns_pod(self, job: Mapping[str, Any], pod: Pod) -> bool:
        """The pod has an owner reference to the job's uid (:func:`~airflow_trainjob.domain.pods.owned_by`).

        :param job: the job, an API JSON dict or an observation (its ``metadata.uid``).
        :param pod: the pod, an API JSON dict.
        """
        return pods.owned_by(pod, (job.get("metadata") or {}).get("uid"))

    def run_times(self, job: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """``status.startTime`` (reset at each admission) and ``status.completionTime``, as the operator writes them.

        :param job: the job, an API JSON dict.
        """
        status = job.get("status") or {}
        return status.get("startTime"), status.get("completionTime")

    def permanent_by_reason(self, status: Any) -> bool | None:
        """None: a v1 job's failure is judged by its replicas' exits.

        :param status: the failed job's ``status``.
        """
        return None

    def prerequisites(self, manifest: Mapping[str, Any]) -> tuple[Prerequisite, ...]:
        """None: a ``kubeflow.org/v1`` job names no object it needs (its pod templates are its own).

        :param manifest: the job to create, an API JSON dict.
        """
        return ()

    def no_controller_hint(self, namespace: str) -> str:
        """The Kubeflow training operator may not be running, watching the namespace, or serving the kind.

        :param namespace: the job's namespace.
        """
        return (
            f"the Kubeflow training operator may not be running, or not watching namespace {namespace} (its "
            f"--namespace flag), or not serving {self.kind} (--enable-scheme)"
        )

    @property
    def kind(self) -> str:
        """The kind's name, e.g. ``PyTorchJob``."""
        return self.job_kind.kind

    @property
    def resource(self) -> JobResource:
        """``kubeflow.org``, ``v1``, the kind's plural (``pytorchjobs``)."""
        return JobResource(GROUP, VERSION, self.job_kind.plural)

    @property
    def cleanup_policy_field(self) -> str:
        """``cleanPodPolicy`` (``spec.runPolicy.cleanPodPolicy``)."""
        return "cleanPodPolicy"

    @property
    def any_job_pod_selector(self) -> str:
        """``training.kubeflow.org/job-name`` (the label is there: the pods of every job, the six kinds')."""
        return LABEL_JOB_NAME

    @property
    def replica_types(self) -> tuple[str, ...]:
        """The replica types the kind accepts (``Master``, ``Worker``...)."""
        return self.job_kind.replica_types

    @property
    def lead_order(self) -> tuple[str, ...]:
        """:attr:`JobKind.lead_order`: the kind's lead replica types, then ``Worker``."""
        return self.job_kind.lead_order

    def event_names(self, job: Mapping[str, Any]) -> set[str]:
        """The job's own name: the training operator records its pods' creation on the job itself.

        :param job: the job, an API JSON dict.
        """
        return {job["metadata"]["name"]}

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        """:meth:`JobKind.desired_replicas`.

        :param job: the job or its manifest, an API JSON dict of this kind; or None.
        """
        return self.job_kind.desired_replicas(job)

    def replica_of(self, pod: Pod) -> tuple[str, int]:
        """:func:`~airflow_trainjob.domain.pods.replica_of` (the operator's replica type and index labels).

        :param pod: the pod, an API JSON dict.
        """
        return pods.replica_of(pod, self.job_kind)

    def lead_pod(self, found: Iterable[Pod]) -> Pod | None:
        """:func:`~airflow_trainjob.domain.pods.lead_pod` of the kind (Master, Chief, Launcher; else Worker 0).

        :param found: the job's pods, API JSON dicts.
        """
        return pods.lead_pod(found, self.job_kind)

    def log_container(self, pod: Pod) -> str:
        """:func:`~airflow_trainjob.domain.pods.log_container` (the kind's default container, ``pytorch``...).

        :param pod: the pod, an API JSON dict.
        """
        return pods.log_container(pod, self.job_kind)

    def container_ends(self, found: Iterable[Pod]) -> list[ContainerEnd]:
        """:func:`~airflow_trainjob.domain.failures.container_ends` of the kind's replicas.

        :param found: the job's pods, API JSON dicts.
        """
        return failures.container_ends(found, self.job_kind)

    def ends_from_events(self, events: Iterable[Mapping[str, Any]], job: Mapping[str, Any]) -> list[ContainerEnd]:
        """:func:`~airflow_trainjob.domain.failures.ends_from_events` (the operator's ``ExitedWithCode`` events), each
        container named from the job's pod template of its replica type, as for a live pod.

        :param events: core/v1 events about the job, API JSON dicts.
        :param job: the job, an API JSON dict (``metadata.name``, ``spec.<kind>ReplicaSpecs``).
        """
        name = str((job.get("metadata") or {}).get("name") or "")
        return [
            replace(e, container=e.container or self._template_container(job, e.replica))
            for e in failures.ends_from_events(events, name, self.job_kind)
        ]

    def _template_container(self, job: Mapping[str, Any], replica: str) -> str:
        """The container that speaks for ``replica`` (``Worker-0``) by the job's pod template."""
        specs = (job.get("spec") or {}).get(self.job_kind.replica_specs_key) or {}
        spec = specs.get(replica.rpartition("-")[0]) if isinstance(specs, Mapping) else None
        return pods.log_container((spec or {}).get("template") or {}, self.job_kind)

    def pending_reasons(self, found: Iterable[Pod]) -> list[str]:
        """:func:`~airflow_trainjob.domain.failures.pending_reasons` of the kind's replicas.

        :param found: the job's pods, API JSON dicts.
        """
        return failures.pending_reasons(found, self.job_kind)

    def status_from_events(self, events: Any, uid: str | None) -> dict[str, Any] | None:
        """:func:`~airflow_trainjob.domain.conditions.status_from_events` (the operator's ``<Kind>Succeeded`` and
        ``<Kind>Failed`` events).

        :param events: the namespace's events about the job, API JSON dicts, any order.
        :param uid: the job's ``metadata.uid``.
        """
        return conditions.status_from_events(events, self.kind, uid)

    def spec_summary(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """The replica specs (``spec.<kind>ReplicaSpecs``), each with its ``replicas``, ``restartPolicy`` and
        container names only; ``runPolicy.suspend`` when true (a queued job: the timeout's message says so).

        :param spec: the job's ``spec``, an API JSON dict.
        """
        summary: dict[str, Any] = {}
        if (spec.get("runPolicy") or {}).get("suspend") is True:
            summary["runPolicy"] = {"suspend": True}
        replica_specs = spec.get(self.job_kind.replica_specs_key)
        if isinstance(replica_specs, Mapping):
            summary[self.job_kind.replica_specs_key] = {
                rtype: _replica_summary(rspec or {}) for rtype, rspec in replica_specs.items()
            }
        return summary


def _replica_summary(rspec: Mapping[str, Any]) -> dict[str, Any]:
    containers = ((rspec.get("template") or {}).get("spec") or {}).get("containers") or []
    return {
        **{k: rspec[k] for k in ("replicas", "restartPolicy") if rspec.get(k) is not None},
        "template": {"spec": {"containers": [{"name": c.get("name")} for c in containers]}},
    }


def kinds() -> tuple[str, ...]:
    """The family's kinds, in :data:`~airflow_trainjob.constants.JOB_KINDS`' order."""
    return tuple(JOB_KINDS)


def family(kind: str) -> KubeflowV1Kind:
    """The adapter of ``kind``.

    :param kind: a ``kubeflow.org/v1`` kind, e.g. ``PyTorchJob``.
    :raises KeyError: the kind is not one of the six (:data:`~airflow_trainjob.constants.JOB_KINDS`).
    """
    return KubeflowV1Kind(JOB_KINDS[kind])

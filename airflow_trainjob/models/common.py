"""The kubeflow/common v1 API (``pkg/apis/kubeflow.org/v1/common_types.go`` in the training operator).

The enums of its values (:class:`RestartPolicy`, :class:`CleanPodPolicy`, :class:`ManagedBy`,
:class:`JobConditionType`) are defined in :mod:`airflow_trainjob.constants` and re-exported here.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from airflow_trainjob.constants import CleanPodPolicy, JobConditionType, ManagedBy, RestartPolicy
from airflow_trainjob.models.base import (
    NonNegativeInt32,
    PositiveInt64,
    ReadModel,
    WriteModel,
)
from airflow_trainjob.models.pod_template import normalize_pod_template, quantities_as_text

__all__ = [
    "CleanPodPolicy",
    "JobCondition",
    "JobConditionType",
    "JobStatus",
    "ManagedBy",
    "ReplicaSpec",
    "ReplicaStatus",
    "RestartPolicy",
    "RunPolicy",
    "SchedulingPolicy",
]


class SchedulingPolicy(WriteModel):
    """``RunPolicy.schedulingPolicy``: gang-scheduling hints for Volcano / scheduler-plugins.

    :param min_available: ``minAvailable``, pods that must be schedulable together (count).
    :param queue: ``queue``, the scheduler queue name.
    :param min_resources: ``minResources``, resource name -> quantity (e.g. ``{"cpu": "4"}``).
    :param priority_class: ``priorityClass``, a PriorityClass name.
    :param schedule_timeout_seconds: ``scheduleTimeoutSeconds``, seconds the gang may wait.
    """

    min_available: NonNegativeInt32 | None = None
    queue: str | None = None
    min_resources: dict[str, str | int | float] | None = None
    priority_class: str | None = None
    schedule_timeout_seconds: NonNegativeInt32 | None = None

    @field_validator("min_resources", mode="after")
    @classmethod
    def _quantities_as_text(cls, value: Any) -> Any:
        quantities_as_text(value)  # 0.5 -> "0.5": the CRD takes an integer or a string, not a float
        return value


class RunPolicy(WriteModel):
    """``spec.runPolicy``: how the job is run, limited and cleaned up.

    :param clean_pod_policy: ``cleanPodPolicy``, pods deleted when the job finishes: ``Running`` those
        still running, ``All`` all, ``None`` none. When none is given the provider writes ``Running``,
        the default the kubeflow/common API documents; training-operator v1.9 would default ``None``
        for every kind instead (an MPIJob takes its deprecated ``spec.cleanPodPolicy`` first, see
        :class:`~airflow_trainjob.models.kinds.MPIJobFields`). Always written explicitly so the
        behaviour does not depend on the operator's version; the provider sends the controller
        ``None`` and applies this value itself once it has read the pods (``cleanup_hold``).
    :param ttl_seconds_after_finished: ``ttlSecondsAfterFinished``, seconds after completion before
        the operator deletes the job; unset keeps it.
    :param active_deadline_seconds: ``activeDeadlineSeconds``, seconds from ``startTime`` before the
        operator fails the job; positive.
    :param backoff_limit: ``backoffLimit``, pod restarts allowed before the job fails; not negative.
    :param scheduling_policy: ``schedulingPolicy``, see :class:`SchedulingPolicy`.
    :param suspend: ``suspend``, True to create the job without pods: the operator creates none (and
        deletes those running if it is set later) until it is False again, and a resumed job gets a
        new ``startTime``. Kueue's webhook sets it for a job labelled ``kueue.x-k8s.io/queue-name``,
        and Kueue unsets it when it admits the job. Unset is written as nothing (the CRD defaults it
        to False).
    :param managed_by: ``managedBy``, the controller that reconciles the job, see :class:`ManagedBy`:
        ``kubeflow.org/training-operator`` (the same as unset) or ``kueue.x-k8s.io/multikueue``, with
        which the training operator leaves the job to Kueue (MultiKueue runs it on a worker cluster
        and copies its status back). Immutable once the job exists. An empty string is refused: the
        operator's webhook refuses it, and its controllers would treat it as some other manager's.
    """

    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.RUNNING
    ttl_seconds_after_finished: NonNegativeInt32 | None = None
    active_deadline_seconds: PositiveInt64 | None = None
    backoff_limit: NonNegativeInt32 | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool | None = None
    managed_by: ManagedBy | None = None

    @field_validator("managed_by", mode="before")
    @classmethod
    def _managed_by_not_empty(cls, value: Any) -> Any:
        if value == "":
            allowed = " or ".join(repr(m.value) for m in ManagedBy)
            raise ValueError(
                f"must be {allowed}, not empty: the operator's webhook refuses an empty managedBy, "
                "and its controllers would leave such a job to a manager that does not exist"
            )
        return value


class ReplicaSpec(WriteModel):
    """One entry of a job's replica specs (``pytorchReplicaSpecs.Worker`` etc.).

    :param replicas: ``replicas``, number of pods of this type; not negative. When none is given the
        provider writes 1, as training-operator v1.9 defaults for every kind except an MPIJob's
        ``Worker`` (0). Written explicitly because v1.9's PyTorchJob and XGBoostJob webhooks check a
        ``Master`` before any defaulting and refuse one without ``replicas: 1``.
    :param template: ``template``, the pod template: a dict in the API's camelCase form or a
        ``kubernetes.client.V1PodTemplateSpec``; normalised to a plain dict. It needs at least one
        container, each with a ``name`` and an ``image``. (:meth:`TrainingJobSpec.parse` also drops a
        template's ``apiVersion``/``kind`` with a warning; this model refuses them.)
    :param restart_policy: ``restartPolicy``, see :class:`RestartPolicy`. When none is given the
        provider writes ``Never``, the default the kubeflow/common API documents; training-operator
        v1.9 would default ``OnFailure`` for PyTorchJob and PaddleJob and ``Never`` for TFJob, MPIJob,
        XGBoostJob and JAXJob (``<Kind>DefaultRestartPolicy``, kept as
        :attr:`~airflow_trainjob.constants.JobKind.default_restart_policy`).
    """

    replicas: NonNegativeInt32 = 1
    template: dict[str, Any]
    restart_policy: RestartPolicy = RestartPolicy.NEVER

    @field_validator("template", mode="before")
    @classmethod
    def _normalize_template(cls, value: Any) -> dict[str, Any]:
        return normalize_pod_template(value)


class JobCondition(ReadModel):
    """One entry of ``status.conditions``. ``type`` stays a string so unknown types survive.

    :param type: ``type``: ``Created``, ``Running``, ``Restarting``, ``Succeeded``, ``Failed``, ``Suspended``...
    :param status: ``status``: ``"True"``, ``"False"`` or ``"Unknown"`` (only ``"True"`` counts).
    :param reason: ``reason``, one CamelCase word, e.g. ``PyTorchJobFailed``.
    :param message: ``message``, the controller's sentence about it.
    :param last_update_time: ``lastUpdateTime``, RFC 3339.
    :param last_transition_time: ``lastTransitionTime``, RFC 3339: when ``status`` last changed.
    """

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_update_time: str | None = None
    last_transition_time: str | None = None


class ReplicaStatus(ReadModel):
    """One entry of ``status.replicaStatuses``: pod counts of one replica type.

    :param initial: ``initial``, pods not started yet (count); training-operator v1.9 does not write it.
    :param pending: ``pending``, pods pending (count); training-operator v1.9 does not write it.
    :param active: ``active``, pods running (count).
    :param succeeded: ``succeeded``, pods that reached phase ``Succeeded`` (count).
    :param failed: ``failed``, pods that reached phase ``Failed`` (count).
    :param label_selector: ``labelSelector``, the ``LabelSelector`` of the replica type's pods (a dict).
    """

    initial: int | None = None
    pending: int | None = None
    active: int | None = None
    succeeded: int | None = None
    failed: int | None = None
    label_selector: dict[str, Any] | None = None


class JobStatus(ReadModel):
    """A job's ``status`` as any controller version writes it; ``null`` lists and maps read as empty.

    :param conditions: ``conditions``, see :class:`JobCondition`, in the order the controller wrote them.
    :param replica_statuses: ``replicaStatuses``, replica type -> :class:`ReplicaStatus`.
    :param start_time: ``startTime``, RFC 3339: when the controller started the job (reset when it is resumed).
    :param completion_time: ``completionTime``, RFC 3339: when the job finished.
    :param last_reconcile_time: ``lastReconcileTime``, RFC 3339: the controller's last reconcile of the job.
    """

    conditions: list[JobCondition] = Field(default_factory=list)
    replica_statuses: dict[str, ReplicaStatus] = Field(default_factory=dict)
    start_time: str | None = None
    completion_time: str | None = None
    last_reconcile_time: str | None = None

    @field_validator("conditions", "replica_statuses", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return [] if info.field_name == "conditions" else {}
        return value

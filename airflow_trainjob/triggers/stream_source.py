"""What identifies a shared stream (:class:`StreamSource`, the triggers' ``shared_stream_key``) and the stream's
timing the triggers plan by.

Light on purpose: the triggerer computes a trigger's key on its event loop, right after importing the trigger's
module there; the stream itself (:mod:`~airflow_trainjob.triggers.job_stream`) and its hook are reached through
:mod:`~airflow_trainjob.triggers.kubernetes_side`, loaded in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_trainjob.hooks.addressing import JobAddress
from airflow_trainjob.triggers import kubernetes_side

if TYPE_CHECKING:
    from airflow_trainjob.api_errors import ApiCall
    from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook

#: Longest single watch request (seconds); the server ends it and the stream re-opens it.
WATCH_SECONDS = 300

#: Why a trigger's stream lists and watches (said when RBAC forbids it).
TRIGGER_PURPOSE = "wait for a training job in the triggerer"


@dataclass(frozen=True)
class StreamSource:
    """Where a stream's jobs come from: the shared-stream key of the triggers that share it.

    The connection fields are resolved by :class:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook`
    (through the cncf.kubernetes ``AsyncKubernetesHook``) exactly as the synchronous hook resolves them.

    :param kubernetes_conn_id: the cncf.kubernetes connection; None: no connection (in-cluster or default
        kubeconfig).
    :param cluster_context: the kubeconfig context to use; None: the connection's (or the kubeconfig's current).
    :param config_file: path of a kubeconfig file; None: the connection's.
    :param in_cluster: use the pod's service account; None: the connection's setting.
    :param namespace: the namespace of the jobs.
    :param kind: the jobs' kind, a key of ``JOB_KINDS`` (``PyTorchJob``).
    """

    kubernetes_conn_id: str | None
    cluster_context: str | None
    config_file: str | None
    in_cluster: bool | None
    namespace: str
    kind: str

    @classmethod
    def from_trigger_kwargs(cls, kwargs: dict[str, Any]) -> StreamSource:
        """The source of a trigger's stream.

        :param kwargs: the trigger's serialized kwargs (:meth:`TrainingJobTrigger.serialize`); other keys are
            ignored, a missing one is None.
        """
        values: dict[str, Any] = {name: kwargs.get(name) for name in cls.__dataclass_fields__}
        return cls(**values)

    def hook(self) -> AsyncTrainingJobHook:
        """The async hook for this source's connection (a new one; its client is opened by ``connect()``).
        Constructing it reads nothing: the connection is read, asynchronously, when it connects.

        :raises RuntimeError: on an event loop before :func:`~airflow_trainjob.triggers.kubernetes_side.load`.
        """
        return kubernetes_side.AsyncTrainingJobHook(
            conn_id=self.kubernetes_conn_id,
            cluster_context=self.cluster_context,
            config_file=self.config_file,
            in_cluster=self.in_cluster,
        )

    @property
    def address(self) -> JobAddress:
        """The jobs of the source's kind in its namespace."""
        return JobAddress(self.kind, self.namespace)

    def call(self, purpose: str = TRIGGER_PURPOSE) -> ApiCall:
        """The stream's request, as its errors name it.

        :param purpose: why the stream lists and watches (said when RBAC forbids it).
        :raises RuntimeError: on an event loop before :func:`~airflow_trainjob.triggers.kubernetes_side.load`.
        """
        return kubernetes_side.ApiCall.for_job("list or watch", self.kind, self.namespace, purpose=purpose)

    def __str__(self) -> str:
        return str(self.address)

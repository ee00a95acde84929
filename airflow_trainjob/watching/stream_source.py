"""What identifies a shared stream (:class:`StreamSource`, the triggers' ``shared_stream_key``) and the stream's
timing the triggers plan by.

Light on purpose: the triggerer computes a trigger's key on its event loop, right after importing the trigger's
module there; the stream itself (:mod:`~airflow_trainjob.watching.job_stream`) makes a source's hook
(:func:`~airflow_trainjob.watching.job_stream.stream_hook`), reached through
:mod:`~airflow_trainjob.triggers.kubernetes_side`, loaded in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_trainjob.hooks.addressing import JobAddress

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
    :param kind: the jobs' kind (``PyTorchJob``), one of :func:`~airflow_trainjob.families.known_kinds`.
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

    @property
    def address(self) -> JobAddress:
        """The jobs of the source's kind in its namespace."""
        return JobAddress(self.kind, self.namespace)

    def __str__(self) -> str:
        return str(self.address)

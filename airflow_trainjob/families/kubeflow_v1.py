"""The ``kubeflow.org/v1`` family (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob) as the lifecycle core
reads it (:class:`~airflow_trainjob.domain.family.JobFamily`): the kubeflow/common v1 conditions are
:mod:`airflow_trainjob.domain.conditions`' to read, each kind's replica types and lead replica its
:class:`~airflow_trainjob.constants.JobKind`'s.

Pure: no I/O, no client.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import JOB_KINDS, JobKind
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.failures import pending_reasons
from airflow_trainjob.domain.pods import Pod, lead_pod


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

    @property
    def kind(self) -> str:
        """The kind's name, e.g. ``PyTorchJob``."""
        return self.job_kind.kind

    @property
    def replica_types(self) -> tuple[str, ...]:
        """The replica types the kind accepts (``Master``, ``Worker``...)."""
        return self.job_kind.replica_types

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        """:meth:`JobKind.desired_replicas`.

        :param job: the job or its manifest, an API JSON dict of this kind; or None.
        """
        return self.job_kind.desired_replicas(job)

    def lead_pod(self, pods: Iterable[Pod]) -> Pod | None:
        """:func:`~airflow_trainjob.domain.pods.lead_pod` of the kind (Master, Chief, Launcher; else Worker 0).

        :param pods: the job's pods, API JSON dicts.
        """
        return lead_pod(pods, self.job_kind)

    def pending_reasons(self, pods: Iterable[Pod]) -> list[str]:
        """:func:`~airflow_trainjob.domain.failures.pending_reasons` of the kind's replicas.

        :param pods: the job's pods, API JSON dicts.
        """
        return pending_reasons(pods, self.job_kind)


def family(kind: str) -> KubeflowV1Kind:
    """The adapter of ``kind``.

    :param kind: a ``kubeflow.org/v1`` kind, e.g. ``PyTorchJob``.
    :raises KeyError: the kind is not one of the six (:data:`~airflow_trainjob.constants.JOB_KINDS`).
    """
    return KubeflowV1Kind(JOB_KINDS[kind])

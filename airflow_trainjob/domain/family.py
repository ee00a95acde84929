"""What the lifecycle core (:mod:`airflow_trainjob.domain.lifecycle`) reads of a job's API family, and nothing else:
the port its adapters implement (:mod:`airflow_trainjob.families`; today's one, ``kubeflow.org/v1``'s six kinds, is
:mod:`airflow_trainjob.families.kubeflow_v1`). The core names no kind and reads no condition type of its own: a second
family (Kubeflow Trainer v2's ``TrainJob``) is a second adapter, not a fourth copy of the judging.

Defined here, beside the core that reads it, so that the domain imports nothing above it; the adapters import the
domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from airflow_trainjob.domain.pods import Pod


class JobFamily(Protocol):
    """One kind of one API family, as the lifecycle core reads it."""

    @property
    def kind(self) -> str:
        """The kind's name, e.g. ``PyTorchJob``."""
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

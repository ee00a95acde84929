"""The API families a training job may belong to, each behind the port the lifecycle core and the drivers read
(:class:`~airflow_trainjob.domain.family.JobFamily`): the job's address, the label selector of its pods, what counts
as terminal, failed or succeeded, the condition vocabulary, the replica types and the lead replica, the containers
worth quoting, what its held cleanup means. Two: :mod:`.kubeflow_v1` (the six ``kubeflow.org/v1`` kinds) and
:mod:`.trainer_v2` (Kubeflow Trainer v2's ``TrainJob``).

The drivers get a job's family here, by its kind (:func:`family_of`), and name no kind themselves: a family is one
more module and one more entry in :data:`_FAMILIES`.
"""

from __future__ import annotations

from airflow_trainjob.domain.family import JobFamily, JobResource
from airflow_trainjob.families import kubeflow_v1, trainer_v2

__all__ = [
    "JobFamily",
    "JobResource",
    "family_of",
    "family_or_none",
    "is_known",
    "known_kinds",
    "success_conditions",
]

#: Each family's lookup of its kinds (``kind -> adapter``, ``KeyError`` for a kind not its own), and its kinds.
_FAMILIES = ((kubeflow_v1.family, kubeflow_v1.kinds), (trainer_v2.family, trainer_v2.kinds))


def known_kinds() -> tuple[str, ...]:
    """Every kind of every family, e.g. ``("PyTorchJob", "TFJob", ...)``."""
    return tuple(kind for _, kinds in _FAMILIES for kind in kinds())


def is_known(kind: object) -> bool:
    """``kind`` is a kind of one of the families.

    :param kind: anything read as a job's ``kind`` (a str, or what an API object or a user gave).
    """
    return isinstance(kind, str) and kind in known_kinds()


def family_of(kind: str) -> JobFamily:
    """The adapter of ``kind``, whichever family holds it.

    :param kind: the job's ``kind``, e.g. ``PyTorchJob``.
    :raises KeyError: no family holds ``kind``.
    """
    for lookup, kinds in _FAMILIES:
        if kind in kinds():
            return lookup(kind)
    raise KeyError(kind)


def success_conditions() -> frozenset[str]:
    """Every family's word for a job's success (``Succeeded``, ``Complete``): a phase that says a job succeeded,
    whichever its kind (Airflow's ``ResumableJobMixin`` hands the operator the phase alone)."""
    return frozenset(family_of(kind).success_condition for kind in known_kinds())


def family_or_none(kind: object) -> JobFamily | None:
    """:func:`family_of`, or None for a kind no family holds (or no kind at all).

    :param kind: the job's ``kind`` as read (a str, or None when absent).
    """
    return family_of(kind) if isinstance(kind, str) and is_known(kind) else None

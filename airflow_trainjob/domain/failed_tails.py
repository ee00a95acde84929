"""Which failed runs' log tails a wait reads while its job runs (pure): a pod its controller deletes with the job's
failure takes its log with it (a Kubeflow Trainer ``TrainJob``'s node Job deletes its pod restarting in place at its
``backoffLimit``; a v1 job's ``cleanPodPolicy: All``), so the tail the verdict quotes is read when the wait first sees
the run fail, not at the verdict.

The verdict quotes the tails of the first :data:`TAILS_QUOTED` containers to fail
(:func:`~airflow_trainjob.hooks.evidence.read_tails`); the wait reads no more than that many either, one read per
run's source (:attr:`~airflow_trainjob.domain.failures.ContainerEnd.source`), whatever the pods' updates.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from airflow_trainjob.domain.failures import ContainerEnd

#: Failed replicas whose log tail is quoted (the first ones to fail).
TAILS_QUOTED = 8


def tails_to_read(ends: Iterable[ContainerEnd], done: Collection[str], limit: int = TAILS_QUOTED) -> list[ContainerEnd]:
    """The failed runs among ``ends`` whose tail is still to be read: of each source not in ``done``, its first
    failed run with a container (an evicted pod's end has no log), in the order of ``ends``, at most ``limit`` minus
    the sources ``done``.

    :param ends: container runs, oldest first (the family's ``container_ends`` of the pods as last seen: a run
        restarted since reads with ``previous``, :attr:`~airflow_trainjob.domain.failures.ContainerEnd.restarted`).
    :param done: the sources read already, or tried (a source is read once).
    :param limit: the sources read in all, at most (count).
    :returns: the runs to read, one per source.
    """
    room = limit - len(done)
    wanted: dict[str, ContainerEnd] = {}
    for end in ends:
        if len(wanted) >= room:
            break
        if end.failed and end.container and end.source not in done:
            wanted.setdefault(end.source, end)
    return list(wanted.values())

"""Which failed runs' log tails a wait reads while its job runs (pure): a pod its controller deletes with the job's
failure takes its log with it (a Kubeflow Trainer ``TrainJob``'s node Job deletes its pod restarting in place at its
``backoffLimit``; a v1 job's ``cleanPodPolicy: All``), so the tail the verdict quotes is read when the wait first sees
the run fail, not at the verdict.

The verdict quotes the tails of the first :data:`TAILS_QUOTED` containers to fail
(:func:`~airflow_trainjob.hooks.evidence.read_tails`); the wait reads no more than that many either, one read per
run's source (:attr:`~airflow_trainjob.domain.failures.ContainerEnd.source`), whatever the pods' updates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from airflow_trainjob.domain.failures import ContainerEnd

#: Failed replicas whose log tail is quoted (the first ones to fail).
TAILS_QUOTED = 8
#: Reads of one source that come back blank before its tail counts as read (blank): a run restarted in place between
#: the wait's sight of its end and the read (the kubelet restarts it within a second) reads the new run's log, often
#: empty yet; the pod's next state (the failure in ``lastState``) reads the failed run, as ``previous``.
BLANK_READS_PER_SOURCE = 3


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


def settled_tails(read: Mapping[str, str], blank: Counter[str]) -> dict[str, str]:
    """Of the tails just ``read``, those that settle their source (it is not read again): each that is not blank,
    and a blank one at its source's :data:`BLANK_READS_PER_SOURCE` th blank read; the others are read again at the
    pod's next state.

    :param read: source -> the text its read returned.
    :param blank: source -> its blank reads so far; counted here.
    :returns: source -> its tail, of the sources settled.
    """
    for source, text in read.items():
        if not text.strip():
            blank[source] += 1
    return {source: text for source, text in read.items() if text.strip() or blank[source] >= BLANK_READS_PER_SOURCE}

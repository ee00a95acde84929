"""The failed pods a deferred wait saw while its job ran (pure): what the trigger's shared pod watch keeps, so that
the verdict names the failed replicas even when their pods are gone before the job's terminal condition arrives.

The synchronous wait watches its job's pods and keeps each one as last seen
(:class:`~airflow_trainjob.operators.sync_wait.SynchronousWait`'s ``seen_pods``); the verdict reads those with the
pods still there (:func:`~airflow_trainjob.domain.verdict.failure_ends`). A trigger reads its job from a stream shared
by every job of a kind: when the controller deletes the failed pods with the job's failure (its ``backoffLimit``,
``cleanPodPolicy``), the pods the trigger lists at the failure are gone, and a container restarted in place
(``OnFailure``) leaves no ``ExitedWithCode`` event when the controller never saw it terminated. So the stream also
watches the kind's pods, and :class:`FailedPodsSeen` keeps, of the jobs a trigger follows only, each pod whose
containers show a failed run (the family's :meth:`~airflow_trainjob.domain.family.JobFamily.container_ends`, the
verdict's own reading), trimmed as a record keeps a pod (:func:`~airflow_trainjob.domain.records.trim_pod`). The
trigger's event carries them, and the resumed task judges them as the synchronous wait judges its ``seen_pods``.

It also knows which pods of a followed job the watch last saw alive (name and uid): a pod the trigger's list at the
failure no longer has, but the watch still thinks alive, went with news the watch has not delivered yet
(:func:`~airflow_trainjob.domain.pods.vanished_unseen`), and the verdict waits for it.

Bounded: nothing of a job no trigger follows, only pods with a failed run, at most :data:`FAILED_PODS_KEPT` per job
(the first ones seen failing: the root cause is among the earliest), a name and a uid per live pod, dropped when the
last follower leaves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_trainjob.domain.failures import EndsOfContainers
from airflow_trainjob.domain.pods import Pod, pod_name
from airflow_trainjob.domain.records import trim_pod

#: Pods kept per job, at most (an event carries a few of them: its budget is 2,000 characters).
FAILED_PODS_KEPT = 16


@dataclass(frozen=True)
class Owner:
    """The job that controls a pod (its controller ``ownerReference``).

    :param kind: the job's kind (``PyTorchJob``).
    :param name: the job's ``metadata.name``.
    :param uid: the job's ``metadata.uid``.
    """

    kind: str
    name: str
    uid: str


def owner_of(pod: Pod) -> Owner | None:
    """The job that controls ``pod``: its ``ownerReference`` with ``controller: true``; None when it has none.

    :param pod: the pod, an API JSON dict (``metadata.ownerReferences``).
    """
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("name") and ref.get("uid"):
            return Owner(str(ref.get("kind") or ""), str(ref["name"]), str(ref["uid"]))
    return None


class FailedPodsSeen:
    """The pods with a failed container run seen of each followed job of one kind (see the module's docstring).

    :param family: the kind's family: which job a pod is of (``job_name_of``), which runs failed
        (``container_ends``), which job object a pod is of (``owns_pod``).
    """

    def __init__(self, family: _Family) -> None:
        self.family = family
        self._followers: Counter[str] = Counter()  # job name -> triggers following it
        self._kept: dict[str, dict[str, dict[str, Any]]] = {}  # job name -> pod name -> the pod, trimmed
        self._alive: dict[str, dict[str, str]] = {}  # job name -> pod name -> uid, of the pods not seen deleted

    def follow(self, name: str) -> None:
        """A wait follows job ``name``: its pods' failures are kept from now on.

        :param name: the job's ``metadata.name``.
        """
        self._followers[name] += 1

    def unfollow(self, name: str) -> None:
        """A wait that followed job ``name`` ended; when it was the last one, what was kept of the job goes.

        :param name: the job's ``metadata.name``.
        """
        if self._followers[name] > 1:
            self._followers[name] -= 1
            return
        self._followers.pop(name, None)
        self._kept.pop(name, None)
        self._alive.pop(name, None)

    def following(self, name: str) -> bool:
        """Whether a wait follows job ``name``.

        :param name: the job's ``metadata.name``.
        """
        return name in self._followers

    def saw(self, pod: Pod, *, deleted: bool = False) -> bool:
        """Take in ``pod`` as a watch or a list delivered it (a deleted pod's final state included). Kept when its
        job is followed and it shows a failed run; a later state without one (a recreated namesake, a state read
        after the kubelet restarted the container twice) never replaces a failure kept. Returns whether it was kept.

        :param pod: the pod, an API JSON dict.
        :param deleted: the pod's final state (a ``DELETED`` event): it is no longer among :meth:`alive_of`.
        """
        job = self.family.job_name_of(pod)
        if job is None or job not in self._followers:
            return False
        alive, name = self._alive.setdefault(job, {}), pod_name(pod)
        if deleted:
            alive.pop(name, None)
        else:
            alive[name] = str((pod.get("metadata") or {}).get("uid") or "")
        if not any(end.failed for end in self.family.container_ends([pod])):
            return False
        kept = self._kept.setdefault(job, {})
        if name not in kept and len(kept) >= FAILED_PODS_KEPT:
            return False
        kept[name] = _kept_form(pod)
        return True

    def relisting(self) -> None:
        """The watch lists again (it may have missed deletions): the pods alive are the list's from now on."""
        self._alive.clear()

    def alive_of(self, name: str) -> dict[str, str]:
        """The pods of followed job ``name`` delivered and not seen deleted since (the last list's included), pod name
        -> ``metadata.uid`` (:func:`~airflow_trainjob.domain.pods.vanished_unseen`).

        :param name: the job's ``metadata.name``.
        """
        return dict(self._alive.get(name) or {})

    def pods_of(self, name: str, job: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """The failed pods kept of job ``name`` (of the object ``job``: never a same-named predecessor's), trimmed,
        by pod name.

        :param name: the job's ``metadata.name``.
        :param job: the job object (an API JSON dict or an observation: what :meth:`JobFamily.owns_pod` reads); None:
            the pods of any object of that name.
        """
        kept = self._kept.get(name) or {}
        return [pod for _, pod in sorted(kept.items()) if job is None or self.family.owns_pod(job, pod)]

    def __len__(self) -> int:
        """Pods kept, of every job."""
        return sum(len(pods) for pods in self._kept.values())


def _kept_form(pod: Pod) -> dict[str, Any]:
    """What is kept of a pod: :func:`~airflow_trainjob.domain.records.trim_pod`, and its owners' uids (which job
    object it is of, for a v1 job: :meth:`JobFamily.owns_pod`)."""
    kept = trim_pod(pod)
    owners = [{"uid": o["uid"]} for o in (pod.get("metadata") or {}).get("ownerReferences") or [] if o.get("uid")]
    if owners:
        kept["metadata"]["ownerReferences"] = owners
    return kept


class _Family(EndsOfContainers, Protocol):
    """What :class:`FailedPodsSeen` reads of the family: whose pod it is, and how its containers ended."""

    def job_name_of(self, pod: Pod) -> str | None: ...

    def owns_pod(self, job: Mapping[str, Any], pod: Pod) -> bool: ...

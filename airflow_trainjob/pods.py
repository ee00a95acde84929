"""Pure functions over a job's pods, in the API's JSON form (dicts as the API returns them).

What replica a pod is, how its containers ended, why it is still pending, which pods a
``cleanPodPolicy`` removes, and which pod leads the job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import (
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    REASON_EVICTED,
    REASON_EXITED_WITH_CODE,
    CleanPodPolicy,
    JobKind,
    PodPhase,
)
from airflow_trainjob.failures import ExitClass, exit_class

Pod = Mapping[str, Any]


def _labels(pod: Pod) -> Mapping[str, str]:
    return (pod.get("metadata") or {}).get("labels") or {}


def pod_name(pod: Pod) -> str:
    """The pod's ``metadata.name`` (``""`` when it has none).

    :param pod: the pod, an API JSON dict.
    """
    return (pod.get("metadata") or {}).get("name", "")


def phase_of(pod: Pod) -> str:
    """The pod's ``status.phase``; ``Pending`` until the kubelet reports one.

    :param pod: the pod, an API JSON dict.
    """
    return (pod.get("status") or {}).get("phase") or PodPhase.PENDING


def is_active(pod: Pod) -> bool:
    """True while the pod is ``Pending`` or ``Running``: what ``cleanPodPolicy: Running`` deletes.

    :param pod: the pod, an API JSON dict.
    """
    return phase_of(pod) in (PodPhase.PENDING, PodPhase.RUNNING)


def is_finished(pod: Pod) -> bool:
    """True once every container of the pod has ended for good (``Succeeded`` or ``Failed``).

    :param pod: the pod, an API JSON dict.
    """
    return phase_of(pod) in (PodPhase.SUCCEEDED, PodPhase.FAILED)


def replica_of(pod: Pod, kind: JobKind) -> tuple[str, int]:
    """``(replica type in the API's spelling, index)`` from the operator's labels on the pod.

    :param pod: the pod, an API JSON dict (labels ``training.kubeflow.org/replica-type`` and
        ``training.kubeflow.org/replica-index``).
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types, in the API's spelling).
    """
    labels = _labels(pod)
    raw_type = labels.get(LABEL_REPLICA_TYPE, "")
    replica_type = next((t for t in kind.replica_types if t.lower() == raw_type.lower()), raw_type)
    try:
        index = int(labels.get(LABEL_REPLICA_INDEX, "0"))
    except ValueError:
        index = 0
    return replica_type, index


@dataclass(frozen=True)
class ContainerEnd:
    """How one container run of a replica ended.

    :param pod: the pod's ``metadata.name``.
    :param replica: the replica, ``<type>-<index>`` (``Worker-1``).
    :param container: the container's name (``""`` for an evicted pod: the pod's end, not a container's).
    :param exit_code: the process's exit code, or None when it never ran (e.g. an evicted pod).
    :param reason: the kubelet's reason: ``Error``, ``OOMKilled``, ``Completed``, ``Evicted`` ...
    :param message: the kubelet's message (``state.terminated.message``, or the evicted pod's ``status.message``).
    :param finished_at: RFC 3339 time it ended, when known.
    :param restarted: True when this run was followed by a restart (from ``lastState``).
    """

    pod: str
    replica: str
    container: str
    exit_code: int | None
    reason: str
    message: str = ""
    finished_at: str = ""
    restarted: bool = False

    @property
    def exit_class(self) -> ExitClass:
        """What this end means: :func:`airflow_trainjob.failures.exit_class` of its exit code and reason."""
        return exit_class(self.exit_code, self.reason)

    @property
    def failed(self) -> bool:
        return self.exit_class.failed

    def describe(self) -> str:
        code = f"exit code {self.exit_code}" if self.exit_code is not None else "no exit code"
        why = f", {self.reason}" if self.reason else ""
        where = f"pod {self.pod}, container {self.container}" if self.container else f"pod {self.pod}"
        text = f"{self.replica} ({where}): {code}{why}"
        return f"{text}: {self.message.strip()}" if self.message and self.message.strip() else text


def container_ends(pods: Iterable[Pod], kind: JobKind) -> list[ContainerEnd]:
    """Every container run that has ended, current and previous (before a restart), oldest first.

    :param pods: the job's pods, API JSON dicts.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    ends = []
    for pod in pods:
        replica_type, index = replica_of(pod, kind)
        replica = f"{replica_type}-{index}"
        status = pod.get("status") or {}
        if status.get("reason") == REASON_EVICTED:
            ends.append(ContainerEnd(pod_name(pod), replica, "", None, REASON_EVICTED, status.get("message") or ""))
        for container in status.get("containerStatuses") or []:
            for key, restarted in (("lastState", True), ("state", False)):
                terminated = (container.get(key) or {}).get("terminated")
                if terminated:
                    ends.append(
                        ContainerEnd(
                            pod=pod_name(pod),
                            replica=replica,
                            container=container.get("name", ""),
                            exit_code=terminated.get("exitCode"),
                            reason=terminated.get("reason") or "",
                            message=terminated.get("message") or "",
                            finished_at=terminated.get("finishedAt") or "",
                            restarted=restarted,
                        )
                    )
    return sorted(ends, key=lambda e: e.finished_at)


_EXITED_WITH_CODE = re.compile(r"(?P<pod>[a-z0-9][-a-z0-9.]*) exited with code (?P<code>\d+)")


def ends_from_events(events: Iterable[Mapping[str, Any]], job_name: str, kind: JobKind) -> list[ContainerEnd]:
    """Container exits the training operator reported as ``ExitedWithCode`` events
    ("Pod: <ns>.<pod> exited with code N"): what is left to know once ``cleanPodPolicy`` has
    deleted the pods themselves.

    :param events: the events about the job, API JSON dicts (``reason``, ``message``, ``lastTimestamp``).
    :param job_name: the job's ``metadata.name``, the prefix of its pods' names.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    ends = []
    for event in events:
        if event.get("reason") != REASON_EXITED_WITH_CODE:
            continue
        match = _EXITED_WITH_CODE.search(event.get("message") or "")
        if not match:
            continue
        pod = match.group("pod").rsplit(".", 1)[-1] if "." in match.group("pod") else match.group("pod")
        suffix = pod[len(job_name) + 1 :] if pod.startswith(job_name + "-") else ""
        raw_type, _, index = suffix.rpartition("-")
        replica_type = next((t for t in kind.replica_types if t.lower() == raw_type), raw_type or "?")
        when = event.get("lastTimestamp") or event.get("eventTime") or ""
        ends.append(ContainerEnd(pod, f"{replica_type}-{index or '?'}", "", int(match.group("code")), "", "", when))
    return sorted(ends, key=lambda e: e.finished_at)


def restart_counts(pods: Iterable[Pod]) -> dict[str, int]:
    """Pod name -> restarts of all its containers (count).

    :param pods: the pods, API JSON dicts (``status.containerStatuses[].restartCount``).
    """
    return {
        pod_name(pod): sum(c.get("restartCount") or 0 for c in (pod.get("status") or {}).get("containerStatuses") or [])
        for pod in pods
    }


def pending_reasons(pods: Iterable[Pod], kind: JobKind) -> list[str]:
    """Why pods are not running yet: unschedulable conditions and waiting containers' reasons.

    :param pods: the job's pods, API JSON dicts.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    reasons = []
    for pod in pods:
        if phase_of(pod) != PodPhase.PENDING:
            continue
        replica_type, index = replica_of(pod, kind)
        status = pod.get("status") or {}
        found = [
            f"{c.get('reason')}: {c.get('message', '')}".rstrip(": ")
            for c in status.get("conditions") or []
            if c.get("status") == "False" and c.get("reason")
        ]
        for container in status.get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting")
            if waiting and waiting.get("reason"):
                found.append(f"{container.get('name')} {waiting['reason']}: {waiting.get('message', '')}".rstrip(": "))
        reasons.append(f"{replica_type}-{index} ({pod_name(pod)}) Pending" + (f": {'; '.join(found)}" if found else ""))
    return reasons


def pods_to_clean(pods: Iterable[Pod], clean_pod_policy: str) -> list[Pod]:
    """The pods ``cleanPodPolicy`` removes: ``All`` every one, ``Running`` those still Pending or
    Running, ``None`` (and the undefined ``""``) none.

    :param pods: the job's pods, API JSON dicts.
    :param clean_pod_policy: the user's ``spec.runPolicy.cleanPodPolicy``.
    """
    if clean_pod_policy == CleanPodPolicy.ALL:
        return list(pods)
    if clean_pod_policy == CleanPodPolicy.RUNNING:
        return [p for p in pods if is_active(p)]
    return []


def owned_by(pod: Pod, job_uid: str | None) -> bool:
    """True when ``pod`` has an owner reference to the job object with ``job_uid`` (never a same-named successor's).

    :param pod: the pod, an API JSON dict (its ``metadata.ownerReferences``).
    :param job_uid: the job's ``metadata.uid``; None or empty: owned by nothing.
    """
    return bool(job_uid) and any(
        o.get("uid") == job_uid for o in (pod.get("metadata") or {}).get("ownerReferences") or []
    )


def lead_pod(pods: Iterable[Pod], kind: JobKind) -> Pod | None:
    """The pod whose log tells the job's story: the kind's lead replica (Master, Chief, Launcher),
    else worker 0.

    :param pods: the job's pods, API JSON dicts.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types and lead replica types).
    """
    by_replica = {replica_of(p, kind): p for p in pods}
    for replica_type in kind.lead_order:
        if (replica_type, 0) in by_replica:
            return by_replica[(replica_type, 0)]
    return None


def log_container(pod: Pod, kind: JobKind) -> str:
    """The container whose log speaks for the replica: the kind's default container (``pytorch``,
    ``tensorflow``, ...) when the pod has one, else its first container.

    :param pod: the pod, an API JSON dict.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its default container).
    """
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    return kind.default_container if kind.default_container in names else (names[0] if names else "")

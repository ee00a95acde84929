"""Pure functions over a job's pods, in the API's JSON form (dicts as the API returns them).

What replica a pod is, how its containers ended, why it is still pending, which pods a
``cleanPodPolicy`` removes, and which pod leads the job.

Every container of a pod counts: its init containers (``status.initContainerStatuses``, run one after the other
before the main containers) as much as its main containers (``status.containerStatuses``). A failed init container
(a data fetch, a permissions step) is a replica's failure like any other, named as one (``initContainer
fetch-data``). A sidecar — an init container with ``restartPolicy: Always``, Kubernetes 1.28+ — runs beside the main
containers and is stopped by the kubelet once they end: that last end is no failure (its crashes before are
restarts).
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
    REASON_POD_INITIALIZING,
    SIDECAR_RESTART_POLICY,
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


def is_being_deleted(pod: Pod) -> bool:
    """True once the pod's deletion was asked (``metadata.deletionTimestamp``) and until it is gone: its containers
    are being stopped (within ``terminationGracePeriodSeconds``), or have been and the kubelet has yet to remove it.

    :param pod: the pod, an API JSON dict.
    """
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


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


def _sidecars(pod: Pod) -> frozenset[str]:
    """Names of the pod's sidecars: init containers with ``restartPolicy: Always`` (Kubernetes 1.28+)."""
    return frozenset(
        c.get("name", "")
        for c in (pod.get("spec") or {}).get("initContainers") or []
        if c.get("restartPolicy") == SIDECAR_RESTART_POLICY
    )


def sidecar_markers(pod: Pod) -> list[dict[str, str]]:
    """``[{"name": ..., "restartPolicy": "Always"}]`` for each sidecar of the pod: all a pod summary needs to keep of
    its ``spec.initContainers`` for :func:`container_ends` to tell a sidecar's stop from a failure.

    :param pod: the pod, an API JSON dict.
    """
    return [{"name": name, "restartPolicy": SIDECAR_RESTART_POLICY} for name in sorted(_sidecars(pod))]


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
    :param init: the container is one of the pod's init containers (``spec.initContainers``).
    :param sidecar: ... with ``restartPolicy: Always``: a sidecar (Kubernetes 1.28+).
    """

    pod: str
    replica: str
    container: str
    exit_code: int | None
    reason: str
    message: str = ""
    finished_at: str = ""
    restarted: bool = False
    init: bool = False
    sidecar: bool = False

    @property
    def exit_class(self) -> ExitClass:
        """What this end means: :func:`airflow_trainjob.failures.exit_class` of its exit code and reason."""
        return exit_class(self.exit_code, self.reason)

    @property
    def failed(self) -> bool:
        """A failure of the replica: any class but ``Succeeded`` — except a sidecar's last end, the kubelet
        stopping it (SIGTERM: 143) once the main containers have ended."""
        return self.exit_class.failed and not (self.sidecar and not self.restarted)

    @property
    def container_label(self) -> str:
        """``initContainer fetch-data`` or ``container pytorch``; ``""`` for a pod's end (evicted)."""
        if not self.container:
            return ""
        return f"{'initContainer' if self.init else 'container'} {self.container}"

    @property
    def source(self) -> str:
        """Whose run this was, as messages name a log: the replica (``Master-0``), with its init container when
        it was one (``Master-0 (initContainer fetch-data)``)."""
        return f"{self.replica} ({self.container_label})" if self.init else self.replica

    def describe(self) -> str:
        """``Master-0 (pod j-master-0, initContainer fetch-data): exit code 2 (Permanent), Error: <message>``:
        the replica, where, the exit code with its :class:`~airflow_trainjob.failures.ExitClass` (unless the
        reason says it), the kubelet's reason and message."""
        code = f"exit code {self.exit_code}" if self.exit_code is not None else "no exit code"
        if self.exit_class.value != self.reason:
            code += f" ({self.exit_class.value})"
        why = f", {self.reason}" if self.reason else ""
        where = f"pod {self.pod}, {self.container_label}" if self.container else f"pod {self.pod}"
        text = f"{self.replica} ({where}): {code}{why}"
        return f"{text}: {self.message.strip()}" if self.message and self.message.strip() else text


def _statuses(pod: Pod) -> list[tuple[Mapping[str, Any], bool]]:
    """``(container status, is init)`` for every container of the pod: init containers first, in order."""
    status = pod.get("status") or {}
    return [(c, True) for c in status.get("initContainerStatuses") or []] + [
        (c, False) for c in status.get("containerStatuses") or []
    ]


def container_ends(pods: Iterable[Pod], kind: JobKind) -> list[ContainerEnd]:
    """Every container run that has ended, current and previous (before a restart), oldest first: of the init
    containers (``status.initContainerStatuses``) and of the main containers (``status.containerStatuses``).

    :param pods: the job's pods, API JSON dicts (``spec.initContainers[].restartPolicy`` tells a sidecar, when
        the pod has its spec).
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    ends = []
    for pod in pods:
        replica_type, index = replica_of(pod, kind)
        replica = f"{replica_type}-{index}"
        status = pod.get("status") or {}
        if status.get("reason") == REASON_EVICTED:
            ends.append(ContainerEnd(pod_name(pod), replica, "", None, REASON_EVICTED, status.get("message") or ""))
        sidecars = _sidecars(pod)
        for container, init in _statuses(pod):
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
                            init=init,
                            sidecar=init and container.get("name", "") in sidecars,
                        )
                    )
    return sorted(ends, key=lambda e: e.finished_at)


def replica_end(pod: Pod, kind: JobKind) -> ContainerEnd | None:
    """How the pod's replica last ended, in one answer (the replicas table's exit columns): its latest container
    run that ended, not counting init containers that completed (steps, not ends) nor a sidecar's stop; None when
    none has.

    :param pod: the pod, an API JSON dict.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    ends = [e for e in container_ends([pod], kind) if e.failed or not e.init]
    return ends[-1] if ends else None


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
    """Pod name -> restarts of all its containers, init containers included (count), as ``kubectl get pods``
    counts them.

    :param pods: the pods, API JSON dicts (``status.initContainerStatuses[].restartCount``,
        ``status.containerStatuses[].restartCount``).
    """
    return {pod_name(pod): sum(c.get("restartCount") or 0 for c, _ in _statuses(pod)) for pod in pods}


def _init_steps(pod: Pod) -> tuple[list[Mapping[str, Any]], int]:
    """The statuses of the init containers the pod waits for (not its sidecars), in order, and how many it has."""
    sidecars = _sidecars(pod)
    steps = [c for c in (pod.get("status") or {}).get("initContainerStatuses") or [] if c.get("name") not in sidecars]
    declared = [c for c in (pod.get("spec") or {}).get("initContainers") or [] if c.get("name") not in sidecars]
    return steps, max(len(declared), len(steps))


def init_status(pod: Pod) -> str | None:
    """Where the pod's init containers stand, in ``kubectl get pods``' words: ``Init:Error`` (one failed),
    ``Init:CrashLoopBackOff``, ``Init:ImagePullBackOff``... (one waits for that reason), ``Init:1/2`` (the
    second runs or waits to start); None once all have completed, or when the pod has none.

    :param pod: the pod, an API JSON dict (``status.initContainerStatuses``; ``spec.initContainers`` for the count
        and the sidecars, when the pod has its spec).
    """
    steps, total = _init_steps(pod)
    for done, container in enumerate(steps):
        state = container.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting") or {}
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            return "Init:" + (terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}")
        if waiting.get("reason") and waiting["reason"] != REASON_POD_INITIALIZING:
            return f"Init:{waiting['reason']}"
        return f"Init:{done}/{total}"
    return f"Init:{len(steps)}/{total}" if len(steps) < total else None


def _stuck_init_container(pod: Pod) -> str | None:
    """The init container the pod is held at, once it has run: running, failed, or waiting to restart after a
    failure; None when none is (all completed, or the next has not started)."""
    steps, _ = _init_steps(pod)
    for container in steps:
        state = container.get("state") or {}
        terminated = state.get("terminated")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if state.get("running") or terminated or (container.get("lastState") or {}).get("terminated"):
            return str(container.get("name", ""))
        return None
    return None


def _container_line(container: Mapping[str, Any], init: bool) -> str | None:
    """``initContainer fetch-data CrashLoopBackOff: <message>; last exit code 2 (Permanent), Error``: a container
    of a pending pod that waits for a reason worth telling (not merely for the init containers before it), or an
    init container that runs, with its last end if it had one; None for others."""
    state = container.get("state") or {}
    waiting = state.get("waiting") or {}
    label = f"{'initContainer' if init else 'container'} {container.get('name')}"
    if waiting.get("reason") and waiting["reason"] != REASON_POD_INITIALIZING:
        text = f"{label} {waiting['reason']}" + (f": {waiting['message']}" if waiting.get("message") else "")
    elif init and state.get("running"):
        text = f"{label} running"
    else:
        return None
    last = (container.get("lastState") or {}).get("terminated")
    if last:
        code, why = last.get("exitCode"), last.get("reason") or ""
        text += f"; last exit code {code} ({exit_class(code, why).value})" + (f", {why}" if why else "")
    return text


#: The kubelet's pod conditions that only restate its containers' states (:func:`pending_reasons` says those).
_CONTAINER_CONDITIONS = frozenset({"Initialized", "ContainersReady", "Ready"})


def pending_reasons(pods: Iterable[Pod], kind: JobKind) -> list[str]:
    """Why pods are not running yet, one line per ``Pending`` pod: where its init containers stand
    (:func:`init_status`), its unschedulable conditions, and its containers — init ones included, named as such —
    that wait for a reason, or the init container that runs, with their last exit (``Master-0 (j-master-0)
    Pending: Init:CrashLoopBackOff; initContainer fetch-data CrashLoopBackOff: back-off 20s ...; last exit code 2
    (Permanent), Error``).

    :param pods: the job's pods, API JSON dicts.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    reasons = []
    for pod in pods:
        if phase_of(pod) != PodPhase.PENDING:
            continue
        replica_type, index = replica_of(pod, kind)
        status = pod.get("status") or {}
        found = [init_status(pod) or ""]
        found += [
            f"{c.get('reason')}: {c.get('message', '')}".rstrip(": ")
            for c in status.get("conditions") or []
            if c.get("status") == "False" and c.get("reason") and c.get("type") not in _CONTAINER_CONDITIONS
        ]
        found += [_container_line(c, init) or "" for c, init in _statuses(pod)]
        found = [f for f in found if f]
        reasons.append(f"{replica_type}-{index} ({pod_name(pod)}) Pending" + (f": {'; '.join(found)}" if found else ""))
    return reasons


def pending_failures(pods: Iterable[Pod], kind: JobKind) -> list[ContainerEnd]:
    """The failed runs of the containers of pods still ``Pending`` — an init container that fails and is restarted
    (``Init:CrashLoopBackOff``) — oldest first: whose logs explain :func:`pending_reasons`.

    :param pods: the job's pods, API JSON dicts.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    pending = [p for p in pods if phase_of(p) == PodPhase.PENDING]
    return [e for e in container_ends(pending, kind) if e.failed]


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
    """The container whose log speaks for the replica: the init container the pod is held at once it has run
    (running, failed, or crash-looping: a data fetch that fails), else the kind's default container (``pytorch``,
    ``tensorflow``, ...) when the pod has one, else its first container.

    :param pod: the pod, an API JSON dict (its ``status.initContainerStatuses`` and ``spec.containers``).
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its default container).
    """
    stuck = _stuck_init_container(pod)
    if stuck:
        return stuck
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    return kind.default_container if kind.default_container in names else (names[0] if names else "")

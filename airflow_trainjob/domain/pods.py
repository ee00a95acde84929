"""Pure functions over a job's pods, in the API's JSON form (dicts as the API returns them).

What replica a pod is, its phase, its containers' statuses and restarts, where its init containers stand, which
pods a ``cleanPodPolicy`` removes, which pod leads the job and which container speaks for it.

Every container of a pod counts: its init containers (``status.initContainerStatuses``, run one after the other
before the main containers) as much as its main containers (``status.containerStatuses``). A sidecar is an init
container with ``restartPolicy: Always`` (Kubernetes 1.28+): it runs beside the main containers.

What a container's end means (its exit class, a failure or not, why a pending pod waits) is
:mod:`airflow_trainjob.domain.failures`', which reads these shapes; this module imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_trainjob.constants import (
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    REASON_POD_INITIALIZING,
    SIDECAR_RESTART_POLICY,
    CleanPodPolicy,
    JobKind,
    PodPhase,
)

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


def sidecar_names(pod: Pod) -> frozenset[str]:
    """Names of the pod's sidecars: init containers with ``restartPolicy: Always`` (Kubernetes 1.28+).

    :param pod: the pod, an API JSON dict (its ``spec.initContainers``).
    """
    return frozenset(
        c.get("name", "")
        for c in (pod.get("spec") or {}).get("initContainers") or []
        if c.get("restartPolicy") == SIDECAR_RESTART_POLICY
    )


def sidecar_markers(pod: Pod) -> list[dict[str, str]]:
    """``[{"name": ..., "restartPolicy": "Always"}]`` for each sidecar of the pod: all a pod summary needs to keep of
    its ``spec.initContainers`` for :func:`airflow_trainjob.domain.failures.container_ends` to tell a sidecar's stop from a
    failure.

    :param pod: the pod, an API JSON dict.
    """
    return [{"name": name, "restartPolicy": SIDECAR_RESTART_POLICY} for name in sorted(sidecar_names(pod))]


def container_statuses(pod: Pod) -> list[tuple[Mapping[str, Any], bool]]:
    """``(container status, is init)`` for every container of the pod: its init containers first, in order
    (``status.initContainerStatuses``), then its main containers (``status.containerStatuses``).

    :param pod: the pod, an API JSON dict.
    """
    status = pod.get("status") or {}
    return [(c, True) for c in status.get("initContainerStatuses") or []] + [
        (c, False) for c in status.get("containerStatuses") or []
    ]


def restart_counts(pods: Iterable[Pod]) -> dict[str, int]:
    """Pod name -> restarts of all its containers, init containers included (count), as ``kubectl get pods``
    counts them.

    :param pods: the pods, API JSON dicts (``status.initContainerStatuses[].restartCount``,
        ``status.containerStatuses[].restartCount``).
    """
    return {pod_name(pod): sum(c.get("restartCount") or 0 for c, _ in container_statuses(pod)) for pod in pods}


def _init_steps(pod: Pod) -> tuple[list[Mapping[str, Any]], int]:
    """The statuses of the init containers the pod waits for (not its sidecars), in order, and how many it has."""
    sidecars = sidecar_names(pod)
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


def held_init_container(pod: Pod) -> str | None:
    """The init container the pod is held at once it has run (running, failed, or waiting to restart after a
    failure: a data fetch that fails), whose log speaks for the pod then; None when none is.

    :param pod: the pod, an API JSON dict (its ``status.initContainerStatuses``, ``spec.initContainers``).
    """
    return _stuck_init_container(pod)


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


def with_pods_seen(listed: Iterable[dict[str, Any]], seen: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods listed now, then those seen earlier that the list no longer has (by name): a job's pods as a verdict
    reads them, whether its wait watched them (the synchronous wait's ``seen_pods``) or its trigger's shared pod
    watch kept the failed ones (:class:`~airflow_trainjob.domain.failed_pods.FailedPodsSeen`).

    :param listed: the job's pods as listed now (API JSON dicts).
    :param seen: its pods as seen earlier, the same shape or trimmed (API JSON dicts).
    """
    listed = list(listed)
    present = {pod_name(p) for p in listed}
    return [*listed, *(p for p in seen if pod_name(p) not in present)]


def vanished_unseen(alive: Mapping[str, str], listed: Iterable[Pod]) -> list[str]:
    """The pods a watch last saw alive that a list made since no longer has (deleted), or has as another uid (deleted
    and created again), by name: their deletion, and whatever happened to them before it (a failed run), is still on
    its way down that watch. None: what the watch lacks, the list has (each pod's state now).

    :param alive: the pods the watch has delivered and not yet seen deleted, pod name -> ``metadata.uid``.
    :param listed: the pods as listed since (API JSON dicts).
    """
    now = {pod_name(p): (p.get("metadata") or {}).get("uid") for p in listed}
    return sorted(name for name, uid in alive.items() if now.get(name, "") != uid)

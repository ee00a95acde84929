"""Why a job failed, and whether retrying it can help: the one home of the exit-code and reason classes.

:func:`classify_exit` takes how one container run ended (exit code, the kubelet's reason) and its replica's
``restartPolicy`` and returns its :class:`ExitClass` and whether the training operator (or the kubelet) starts
the replica again. The rules are training-operator v1.9's (``pkg/controller.v1/common/pod.go``,
``pkg/util/train/train_util.go`` ``IsRetryableExitCode``): exit code 1-127 is a permanent error (the program
itself failed; retrying the same code fails again), 128 and above a retryable one (killed by a signal: 137
SIGKILL or the OOM killer, 139 SIGSEGV, 143 SIGTERM). Airflow retries any failure but a permanent one: a
retryable exit, ``OOMKilled``, ``Evicted``, and a failure of no known cause.

Every container of a replica's pod counts, its init containers included: a failed init container (a data fetch,
a permissions step) fails its replica like a main container, under the same classes. The replica's
``restartPolicy`` restarts it as it would a main container, but for ``ExitCode``: its pod has ``restartPolicy:
Never``, so it fails, and the operator, reading no exit code of the default container (its ``0xbeef``, retryable),
recreates it. A sidecar (an init container with ``restartPolicy: Always``) is always restarted, and its last end —
the kubelet stopping it once the main containers have ended — is no failure.

How each container run ended is read here, as :class:`ContainerEnd`: from the pods' statuses
(:func:`container_ends`, over :mod:`airflow_trainjob.domain.pods`' shapes) and, once ``cleanPodPolicy`` has deleted the
pods, from the training operator's ``ExitedWithCode`` events (:func:`ends_from_events`). Why a pod is still
``Pending`` (:func:`pending_reasons`) quotes its containers' last exits with their class, and
:func:`pending_failures` names the runs whose logs explain it.

The cause of a failed job is the first failure its replica's ``restartPolicy`` did not recover from (the
operator restarted the others), else — every failure was restarted, until ``backoffLimit`` or
``activeDeadlineSeconds`` failed the job — the first failure: when a worker's bug (exit 1) brings down the
master with it (killed, 137), the bug decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_trainjob.constants import (
    JOB_KINDS,
    REASON_EVICTED,
    REASON_EXITED_WITH_CODE,
    REASON_OOM_KILLED,
    REASON_POD_INITIALIZING,
    JobKind,
    PodPhase,
    RestartPolicy,
    ValueEnum,
)
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.pods import (
    Pod,
    container_statuses,
    init_status,
    phase_of,
    pod_name,
    replica_of,
    sidecar_names,
)

#: Most events quoted in a failure message (the most recent ones).
EVENTS_SHOWN = 10

#: The lowest exit code ``train.IsRetryableExitCode`` calls retryable (``exitCode >= 128``).
RETRYABLE_EXIT_CODE_MIN = 128
#: Exit codes of a container stopped from outside: SIGTERM (143) and, after the grace period, SIGKILL (137).
STOP_SIGNAL_EXIT_CODES = frozenset({137, 143})


def is_retryable_exit_code(exit_code: int) -> bool:
    """True for exit codes of 128 and above (``train.IsRetryableExitCode``): killed by a signal, e.g. 137 for
    SIGKILL or OOM. The ``ExitCode`` restart policy recreates such a pod; the provider lets Airflow retry.

    :param exit_code: a container's ``state.terminated.exitCode`` (0-255).
    """
    return exit_code >= RETRYABLE_EXIT_CODE_MIN


def is_permanent_exit_code(exit_code: int) -> bool:
    """True for exit codes 1-127: the program itself failed (1 error, 2 misuse, 126 not executable, 127 not
    found); the ``ExitCode`` restart policy fails the job, and retrying the same code fails again.

    :param exit_code: a container's ``state.terminated.exitCode`` (0-255).
    """
    return 1 <= exit_code < RETRYABLE_EXIT_CODE_MIN


class ExitClass(ValueEnum):
    """What one container run's end means (the value is what failure messages and XCom show)."""

    #: Exit code 0 (and no OOM kill): not a failure.
    SUCCEEDED = "Succeeded"
    #: Exit code 1-127: permanent, Airflow does not retry.
    PERMANENT = "Permanent"
    #: Exit code 128 or above: killed by a signal; retryable.
    RETRYABLE = "Retryable"
    #: The kubelet's reason ``OOMKilled``, whatever the exit code: retryable (e.g. on a node with more memory).
    OOM_KILLED = "OOMKilled"
    #: The pod was evicted (``Evicted``), usually before any exit code: retryable.
    EVICTED = "Evicted"
    #: A failure with no exit code and no known reason: retryable.
    UNKNOWN = "Unknown"

    @property
    def failed(self) -> bool:
        """Every class but :attr:`SUCCEEDED` is a failure."""
        return self is not ExitClass.SUCCEEDED

    @property
    def permanent(self) -> bool:
        """Only :attr:`PERMANENT` is not retried by Airflow."""
        return self is ExitClass.PERMANENT


@dataclass(frozen=True)
class ExitVerdict:
    """:func:`classify_exit`'s answer.

    :param exit_class: what the end means, see :class:`ExitClass`.
    :param restarted: the replica's ``restartPolicy`` starts it again, so this end does not fail the job by
        itself (``backoffLimit`` counts the restarts): ``Always`` whatever the end, ``OnFailure`` on a non-zero
        exit or none (an evicted pod is recreated), ``ExitCode`` on 128 and above or none (the operator reads
        ``0xbeef``, retryable, when its default container has no exit code), ``Never`` never.
    """

    exit_class: ExitClass
    restarted: bool

    @property
    def failed(self) -> bool:
        return self.exit_class.failed

    @property
    def permanent(self) -> bool:
        return self.exit_class.permanent


def exit_class(exit_code: int | None, reason: str | None = "") -> ExitClass:
    """The class of a container run that ended with ``exit_code`` (None: none known) and the kubelet's
    ``reason`` (``state.terminated.reason``, or the pod's ``Evicted``). ``OOMKilled`` and ``Evicted`` win over
    the exit code (an OOM-killed child may leave its parent to exit 1 or even 0).

    :param exit_code: ``state.terminated.exitCode`` (0-255), or None when none is known (an evicted pod).
    :param reason: ``state.terminated.reason`` (``Error``, ``OOMKilled``, ``Completed``...), or ``Evicted``.
    """
    if reason == REASON_OOM_KILLED:
        return ExitClass.OOM_KILLED
    if reason == REASON_EVICTED:
        return ExitClass.EVICTED
    if exit_code is None:
        return ExitClass.UNKNOWN
    if exit_code == 0:
        return ExitClass.SUCCEEDED
    if is_permanent_exit_code(exit_code):
        return ExitClass.PERMANENT
    if is_retryable_exit_code(exit_code):
        return ExitClass.RETRYABLE
    return ExitClass.UNKNOWN  # a negative code: no such exit on Linux


def _restarted(exit_code: int | None, policy: RestartPolicy | None, init: bool, sidecar: bool) -> bool:
    if sidecar:
        return True  # the kubelet restarts a sidecar whatever its exit and whatever the pod's restartPolicy
    if init and policy is RestartPolicy.EXIT_CODE:
        return True  # the pod (restartPolicy Never) fails with no exit code of its default container: recreated
    if policy is RestartPolicy.ALWAYS:
        return True
    if policy is RestartPolicy.ON_FAILURE:
        return exit_code != 0
    if policy is RestartPolicy.EXIT_CODE:
        return exit_code is None or is_retryable_exit_code(exit_code)
    return False


def _as_policy(value: Any) -> RestartPolicy | None:
    try:
        return RestartPolicy(value)
    except ValueError:
        return None


def classify_exit(
    exit_code: int | None,
    reason: str | None,
    restart_policy: RestartPolicy | str | None,
    *,
    init: bool = False,
    sidecar: bool = False,
) -> ExitVerdict:
    """The one decision on a container run's end: its class, and whether its replica's ``restart_policy``
    starts it again (see :class:`ExitVerdict`).

    :param exit_code: ``state.terminated.exitCode`` (0-255), or None when the run has none (an evicted pod).
    :param reason: ``state.terminated.reason`` (``Error``, ``OOMKilled``, ``Completed``...), or ``Evicted``.
    :param restart_policy: the replica's ``restartPolicy``, as :func:`restart_policies` reads it (the kind's
        default when the spec has none); None or an unknown value restarts nothing, like ``Never``.
    :param init: the run was an init container's (``status.initContainerStatuses``): under ``ExitCode`` its
        failed pod is recreated.
    :param sidecar: ... a sidecar's (``restartPolicy: Always`` on the init container): always restarted.
    """
    restarted = _restarted(exit_code, _as_policy(restart_policy), init, sidecar)
    return ExitVerdict(exit_class(exit_code, reason), restarted)


def restart_policies(job: Mapping[str, Any]) -> dict[str, RestartPolicy]:
    """Replica type (the API's spelling) -> the ``restartPolicy`` it runs with: its spec's, else the kind's
    default (:attr:`~airflow_trainjob.constants.JobKind.default_restart_policy`, for a job made elsewhere).

    :param job: the job as the API returns it (``kind``, ``spec.<kind>ReplicaSpecs``); an unknown kind gives {}.
    """
    kind_name = job.get("kind")
    kind = JOB_KINDS.get(kind_name) if isinstance(kind_name, str) else None
    if kind is None:
        return {}
    specs = (job.get("spec") or {}).get(kind.replica_specs_key)
    policies: dict[str, RestartPolicy] = {}
    for key, spec in specs.items() if isinstance(specs, Mapping) else ():
        replica_type = next((t for t in kind.replica_types if t.lower() == str(key).lower()), str(key))
        given = spec.get("restartPolicy") if isinstance(spec, Mapping) else None
        policies[replica_type] = _as_policy(given) or kind.default_restart_policy
    return policies


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
        """What this end means: :func:`exit_class` of its exit code and reason."""
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
        the replica, where, the exit code with its :class:`ExitClass` (unless the reason says it), the kubelet's
        reason and message."""
        code = f"exit code {self.exit_code}" if self.exit_code is not None else "no exit code"
        if self.exit_class.value != self.reason:
            code += f" ({self.exit_class.value})"
        why = f", {self.reason}" if self.reason else ""
        where = f"pod {self.pod}, {self.container_label}" if self.container else f"pod {self.pod}"
        text = f"{self.replica} ({where}): {code}{why}"
        return f"{text}: {self.message.strip()}" if self.message and self.message.strip() else text


def container_ends(pods: Iterable[Pod], kind: JobKind) -> list[ContainerEnd]:
    """Every container run that has ended, current and previous (before a restart), oldest first: of the init
    containers (``status.initContainerStatuses``) and of the main containers (``status.containerStatuses``).

    :param pods: the job's pods, API JSON dicts (``spec.initContainers[].restartPolicy`` tells a sidecar, when
        the pod has its spec).
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    return container_ends_by(pods, lambda pod: replica_of(pod, kind))


def container_ends_by(pods: Iterable[Pod], replica_of_pod: Callable[[Pod], tuple[str, int]]) -> list[ContainerEnd]:
    """:func:`container_ends` of a family that tells its pods' replicas its own way (another API family's labels).

    :param pods: the job's pods, API JSON dicts.
    :param replica_of_pod: ``(replica type, index)`` of a pod (the family's ``replica_of``).
    """
    ends = []
    for pod in pods:
        replica_type, index = replica_of_pod(pod)
        replica = f"{replica_type}-{index}"
        status = pod.get("status") or {}
        if status.get("reason") == REASON_EVICTED:
            ends.append(ContainerEnd(pod_name(pod), replica, "", None, REASON_EVICTED, status.get("message") or ""))
        sidecars = sidecar_names(pod)
        for container, init in container_statuses(pod):
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
    return last_replica_end(container_ends([pod], kind))


def last_replica_end(ends: Iterable[ContainerEnd]) -> ContainerEnd | None:
    """:func:`replica_end` of one pod's container ends (its family's ``container_ends``): the latest, not counting
    init containers that completed nor a sidecar's stop; None when none is left.

    :param ends: one pod's container ends, oldest first.
    """
    kept = [e for e in ends if e.failed or not e.init]
    return kept[-1] if kept else None


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


def _container_line(container: Mapping[str, Any], init: bool, *, with_message: bool = False) -> str | None:
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
        said = " ".join(str(last.get("message") or "").split()) if with_message else ""
        text += f": {said[:MESSAGE_SHOWN]}" if said else ""
    return text


#: Characters quoted of a container's last end ``message`` (a start error's) in a line of :func:`pending_reasons_by`.
MESSAGE_SHOWN = 300
#: The kubelet's pod conditions that only restate its containers' states (:func:`pending_reasons` says those).
_CONTAINER_CONDITIONS = frozenset({"Initialized", "ContainersReady", "Ready"})


def pending_reasons(pods: Iterable[Pod], kind: JobKind) -> list[str]:
    """Why pods are not running yet, one line per ``Pending`` pod: where its init containers stand
    (:func:`~airflow_trainjob.domain.pods.init_status`), its unschedulable conditions, and its containers — init ones
    included, named as such — that wait for a reason, or the init container that runs, with their last exit and its
    class (``Master-0 (j-master-0) Pending: Init:CrashLoopBackOff; initContainer fetch-data CrashLoopBackOff:
    back-off 20s ...; last exit code 2 (Permanent), Error``).

    :param pods: the job's pods, API JSON dicts.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its replica types).
    """
    return pending_reasons_by(pods, lambda pod: replica_of(pod, kind))


def pending_reasons_by(
    pods: Iterable[Pod], replica_of_pod: Callable[[Pod], tuple[str, int]], *, restarting: bool = False
) -> list[str]:
    """:func:`pending_reasons` of a family that tells its pods' replicas its own way (another API family's labels).

    :param pods: the job's pods, API JSON dicts.
    :param replica_of_pod: ``(replica type, index)`` of a pod (the family's ``replica_of``).
    :param restarting: also a ``Running`` pod whose container waits to start again (``CrashLoopBackOff``): the
        kubelet phases a pod whose containers stopped and restart in place (``restartPolicy: OnFailure``, a Job's
        pods) ``Running`` even when none ever started (a missing executable: ``StartError``); and each last end's
        ``message`` (a start error's words).
    """
    reasons = []
    for pod in pods:
        phase = phase_of(pod)
        if phase != PodPhase.PENDING and not (restarting and phase == PodPhase.RUNNING):
            continue
        replica_type, index = replica_of_pod(pod)
        status = pod.get("status") or {}
        found = [init_status(pod) or ""]
        found += [
            f"{c.get('reason')}: {c.get('message', '')}".rstrip(": ")
            for c in status.get("conditions") or []
            if c.get("status") == "False" and c.get("reason") and c.get("type") not in _CONTAINER_CONDITIONS
        ]
        found += [_container_line(c, init, with_message=restarting) or "" for c, init in container_statuses(pod)]
        found = [f for f in found if f]
        if phase == PodPhase.RUNNING and not found:
            continue  # running as it should
        reasons.append(
            f"{replica_type}-{index} ({pod_name(pod)}) {PodPhase(phase).value}"
            + (f": {'; '.join(found)}" if found else "")
        )
    return reasons


class EndsOfContainers(Protocol):
    """What reads how a job's containers ended: its family (:class:`~airflow_trainjob.domain.family.JobFamily`)."""

    def container_ends(self, pods: Iterable[Pod]) -> list[ContainerEnd]:
        """How the containers worth quoting of the job's pods ended, oldest first (the replicas' containers).

        :param pods: the job's pods, API JSON dicts.
        """
        ...


def pending_failures(pods: Iterable[Pod], family: EndsOfContainers) -> list[ContainerEnd]:
    """The failed runs of the containers of pods still ``Pending`` — an init container that fails and is restarted
    (``Init:CrashLoopBackOff``) — oldest first: whose logs explain :func:`pending_reasons`.

    :param pods: the job's pods, API JSON dicts.
    :param family: the job's family (its :meth:`~EndsOfContainers.container_ends`: its replicas' containers).
    """
    pending = [p for p in pods if phase_of(p) == PodPhase.PENDING]
    return [e for e in family.container_ends(pending) if e.failed]


def _replica_type(end: ContainerEnd) -> str:
    return end.replica.rpartition("-")[0] or end.replica


def _classify(end: ContainerEnd, policies: Mapping[str, RestartPolicy | str] | None) -> ExitVerdict:
    policy = (policies or {}).get(_replica_type(end))
    return classify_exit(end.exit_code, end.reason, policy, init=end.init, sidecar=end.sidecar)


def root_cause(
    ends: Sequence[ContainerEnd],
    policies: Mapping[str, RestartPolicy | str] | None = None,
    failed_at: str | None = None,
) -> ContainerEnd | None:
    """The container run that failed the job (``ends`` oldest first, as :func:`container_ends` orders them):
    the earliest failure its replica's restart policy did not restart, else the earliest failure.

    A run that ended after the job had failed is a consequence (a pod that cleanup stopped), never the cause; and
    within one second (the resolution of the API's times) an end by a stop signal (SIGTERM 143, SIGKILL 137 without
    OOM) ranks after any other, so a stopped master never hides the worker's exit that failed the job.

    :param ends: the replicas' container runs, oldest first, as :func:`container_ends` orders them.
    :param policies: replica type -> ``restartPolicy`` (:func:`restart_policies`); None: no restart assumed.
    :param failed_at: the job's ``Failed`` condition ``lastTransitionTime`` (RFC 3339), if known.
    """
    failed = failures_in_order(ends, failed_at)
    kept = [e for e in failed if not _classify(e, policies).restarted]
    ranked = kept or failed
    return ranked[0] if ranked else None


def failures_in_order(ends: Sequence[ContainerEnd], failed_at: str | None = None) -> list[ContainerEnd]:
    """The failed runs among ``ends`` that could have failed the job, oldest first, as :func:`root_cause` ranks
    them: none that ended after ``failed_at`` (unless all did), stop-signal ends last within one second, and runs that
    ended in the same second by pod name (``finishedAt`` has whole seconds: the order the pods were read in must not
    decide, or the task's error and the Training job tab, which read them in different orders, could name different
    first failures).

    :param ends: the replicas' container runs, oldest first, as :func:`container_ends` orders them.
    :param failed_at: the job's ``Failed`` condition ``lastTransitionTime`` (RFC 3339), if known.
    """
    failed = [e for e in ends if e.failed]
    if failed_at:
        failed = [e for e in failed if not e.finished_at or e.finished_at <= failed_at] or failed
    return sorted(failed, key=lambda e: (e.finished_at, _stopped(e), e.pod))


def _stopped(end: ContainerEnd) -> bool:
    """The run ended by a signal that stopping a pod sends, not by the program or the OOM killer."""
    return end.exit_code in STOP_SIGNAL_EXIT_CODES and end.reason != REASON_OOM_KILLED


def is_permanent(
    ends: Sequence[ContainerEnd],
    policies: Mapping[str, RestartPolicy | str] | None = None,
    failed_at: str | None = None,
) -> bool:
    """True when the job's :func:`root_cause` is permanent (exit code 1-127, not OOMKilled, not evicted).

    :param ends: the replicas' container runs, oldest first, as :func:`container_ends` orders them.
    :param policies: replica type -> ``restartPolicy`` (:func:`restart_policies`); None: no restart assumed.
    :param failed_at: the job's ``Failed`` condition ``lastTransitionTime`` (RFC 3339), if known.
    """
    cause = root_cause(ends, policies, failed_at)
    return cause is not None and cause.exit_class.permanent


def failure_message(
    job_ref: str,
    status: Mapping[str, Any] | None,
    ends: Sequence[ContainerEnd],
    events: Sequence[str] = (),
    log_tails: Mapping[str, str] | None = None,
    policies: Mapping[str, RestartPolicy | str] | None = None,
) -> str:
    """A multi-line message: the deciding condition, each failed replica's exit (the cause first; the replicas
    stopped by a signal once the job had failed last, as ``stopped with the job``), recent events, and the tail of
    each failed replica's log.

    :param job_ref: ``"<Kind> <namespace>/<name>"``.
    :param status: the job's ``status`` (API JSON dict), whose deciding condition heads the message.
    :param ends: the replicas' container runs, oldest first, as :func:`container_ends` orders them.
    :param events: event lines, oldest first.
    :param log_tails: whose log (:attr:`ContainerEnd.source`) -> its last lines.
    :param policies: replica type -> ``restartPolicy``, as for :func:`root_cause`.
    """
    condition = conditions.deciding_condition(status) or {}
    reason = condition.get("reason") or conditions.phase(status)
    lines = [f"{job_ref} failed: {reason}" + (f": {condition['message']}" if condition.get("message") else "")]
    failed_at = conditions.failed_at(status)
    ranked = failures_in_order(ends, failed_at)
    failed = ranked + [e for e in ends if e.failed and e not in ranked]
    cause = root_cause(ends, policies, failed_at)
    if cause is not None:
        verdict = "permanent: not retried" if cause.exit_class.permanent else "retryable"
        if cause is failed[0]:
            lines.append(f"First failure ({verdict}): {cause.describe()}")
        else:
            lines.append(f"Failure not restarted by its restartPolicy ({verdict}): {cause.describe()}")
        others = [e for e in failed if e is not cause]
        stopped = [e for e in others if _stopped_with_the_job(e, failed_at)]
        lines += _also_failed(cause, [e for e in others if e not in stopped])
        lines += [f"  stopped with the job: {e.describe()}" for e in stopped]
    if events:
        lines.append("Recent events:")
        lines += [f"  {e}" for e in list(events)[-EVENTS_SHOWN:]]
    lines += quoted_tails(log_tails or {})
    return "\n".join(lines)


def _stopped_with_the_job(end: ContainerEnd, failed_at: str | None) -> bool:
    """The run was stopped because the job had failed: a stop signal (:func:`_stopped`) at or after the job's
    ``Failed`` (the controller, or a JobSet's Job, stops the other replicas then), not a failure of its own."""
    return bool(failed_at and end.finished_at and end.finished_at >= failed_at) and _stopped(end)


def _also_failed(cause: ContainerEnd, others: Sequence[ContainerEnd]) -> list[str]:
    """``  also failed: <end>`` for each other failure, runs that read the same once (``(2 runs)``); the cause's own
    repeats (a container restarted until ``backoffLimit``) as one ``  failed the same way again: N more run(s)``."""
    counts: dict[str, int] = {}
    for end in others:
        counts[end.describe()] = counts.get(end.describe(), 0) + 1
    again = counts.pop(cause.describe(), 0)
    lines = [f"  also failed: {text}" + (f" ({n} runs)" if n > 1 else "") for text, n in counts.items()]
    return ([f"  failed the same way again: {again} more run(s)"] if again else []) + lines


def quoted_tails(log_tails: Mapping[str, str]) -> list[str]:
    """Message lines quoting each log tail: ``Last log lines of <source>:``, then ``  | <line>`` each; none for an
    empty tail.

    :param log_tails: whose log (:attr:`ContainerEnd.source`: ``Master-0``, ``Master-0 (initContainer
        fetch-data)``) -> its last lines.
    """
    lines = []
    for source, tail in log_tails.items():
        if tail.strip():
            lines.append(f"Last log lines of {source}:")
            lines += [f"  | {line}" for line in tail.rstrip("\n").splitlines()]
    return lines

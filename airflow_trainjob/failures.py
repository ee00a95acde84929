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
recreates it. A sidecar (an init container with ``restartPolicy: Always``) is always restarted.

The cause of a failed job is the first failure its replica's ``restartPolicy`` did not recover from (the
operator restarted the others), else — every failure was restarted, until ``backoffLimit`` or
``activeDeadlineSeconds`` failed the job — the first failure: when a worker's bug (exit 1) brings down the
master with it (killed, 137), the bug decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_trainjob import conditions
from airflow_trainjob.constants import (
    JOB_KINDS,
    REASON_EVICTED,
    REASON_OOM_KILLED,
    RestartPolicy,
    ValueEnum,
)

if TYPE_CHECKING:
    from airflow_trainjob.pods import ContainerEnd

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
    """The container run that failed the job (``ends`` oldest first, as :func:`pods.container_ends` orders them):
    the earliest failure its replica's restart policy did not restart, else the earliest failure.

    A run that ended after the job had failed is a consequence (a pod that cleanup stopped), never the cause; and
    within one second (the resolution of the API's times) an end by a stop signal (SIGTERM 143, SIGKILL 137 without
    OOM) ranks after any other, so a stopped master never hides the worker's exit that failed the job.

    :param ends: the replicas' container runs, oldest first, as :func:`pods.container_ends` orders them.
    :param policies: replica type -> ``restartPolicy`` (:func:`restart_policies`); None: no restart assumed.
    :param failed_at: the job's ``Failed`` condition ``lastTransitionTime`` (RFC 3339), if known.
    """
    failed = failures_in_order(ends, failed_at)
    kept = [e for e in failed if not _classify(e, policies).restarted]
    ranked = kept or failed
    return ranked[0] if ranked else None


def failures_in_order(ends: Sequence[ContainerEnd], failed_at: str | None = None) -> list[ContainerEnd]:
    """The failed runs among ``ends`` that could have failed the job, oldest first, as :func:`root_cause` ranks
    them: none that ended after ``failed_at`` (unless all did), stop-signal ends last within one second.

    :param ends: the replicas' container runs, oldest first, as :func:`pods.container_ends` orders them.
    :param failed_at: the job's ``Failed`` condition ``lastTransitionTime`` (RFC 3339), if known.
    """
    failed = [e for e in ends if e.failed]
    if failed_at:
        failed = [e for e in failed if not e.finished_at or e.finished_at <= failed_at] or failed
    return sorted(failed, key=lambda e: (e.finished_at, _stopped(e)))


def _stopped(end: ContainerEnd) -> bool:
    """The run ended by a signal that stopping a pod sends, not by the program or the OOM killer."""
    return end.exit_code in STOP_SIGNAL_EXIT_CODES and end.reason != REASON_OOM_KILLED


def is_permanent(
    ends: Sequence[ContainerEnd],
    policies: Mapping[str, RestartPolicy | str] | None = None,
    failed_at: str | None = None,
) -> bool:
    """True when the job's :func:`root_cause` is permanent (exit code 1-127, not OOMKilled, not evicted).

    :param ends: the replicas' container runs, oldest first, as :func:`pods.container_ends` orders them.
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
    """A multi-line message: the deciding condition, each failed replica's exit (the cause first), recent
    events, and the tail of each failed replica's log.

    :param job_ref: ``"<Kind> <namespace>/<name>"``.
    :param status: the job's ``status`` (API JSON dict), whose deciding condition heads the message.
    :param ends: the replicas' container runs, oldest first, as :func:`pods.container_ends` orders them.
    :param events: event lines, oldest first.
    :param log_tails: whose log (:attr:`pods.ContainerEnd.source`) -> its last lines.
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
        lines += _also_failed(cause, [e for e in failed if e is not cause])
    if events:
        lines.append("Recent events:")
        lines += [f"  {e}" for e in list(events)[-EVENTS_SHOWN:]]
    lines += quoted_tails(log_tails or {})
    return "\n".join(lines)


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

    :param log_tails: whose log (:attr:`pods.ContainerEnd.source`: ``Master-0``, ``Master-0 (initContainer
        fetch-data)``) -> its last lines.
    """
    lines = []
    for source, tail in log_tails.items():
        if tail.strip():
            lines.append(f"Last log lines of {source}:")
            lines += [f"  | {line}" for line in tail.rstrip("\n").splitlines()]
    return lines

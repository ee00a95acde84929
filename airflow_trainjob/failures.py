"""Why a job failed, and whether retrying it can help (the ``ExitCode`` rule applied to Airflow).

The first replica to fail is taken as the cause: when a worker's bug (exit 1) brings down the
master with it (killed, 137), the bug decides. A permanent failure (exit code 1-127) is not
retried by Airflow; a retryable one (128-255, OOMKilled, Evicted) or one with no known cause is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_trainjob import conditions
from airflow_trainjob.models.common import is_permanent_exit_code
from airflow_trainjob.pods import REASON_EVICTED, ContainerEnd

#: Most events quoted in a failure message (the most recent ones).
EVENTS_SHOWN = 10


def root_cause(ends: Sequence[ContainerEnd]) -> ContainerEnd | None:
    """The earliest failed container run (``ends`` as :func:`pods.container_ends` orders them)."""
    return next((e for e in ends if e.failed), None)


def is_permanent(ends: Sequence[ContainerEnd]) -> bool:
    """True when the root cause exited with 1-127 on its own (not OOMKilled, not evicted)."""
    cause = root_cause(ends)
    return (
        cause is not None
        and cause.exit_code is not None
        and is_permanent_exit_code(cause.exit_code)
        and cause.reason not in ("OOMKilled", REASON_EVICTED)
    )


def failure_message(
    job_ref: str,
    status: Mapping[str, Any] | None,
    ends: Sequence[ContainerEnd],
    events: Sequence[str] = (),
    log_tails: Mapping[str, str] | None = None,
) -> str:
    """A multi-line message: the deciding condition, each failed replica's exit, recent events,
    and the tail of each failed replica's log.

    :param job_ref: ``"<Kind> <namespace>/<name>"``.
    :param events: event lines, oldest first.
    :param log_tails: replica -> the last lines of its log.
    """
    condition = conditions.deciding_condition(status) or {}
    reason = condition.get("reason") or conditions.phase(status)
    lines = [f"{job_ref} failed: {reason}" + (f": {condition['message']}" if condition.get("message") else "")]
    failed = [e for e in ends if e.failed]
    if failed:
        cause = failed[0]
        verdict = "permanent: not retried" if is_permanent(ends) else "retryable"
        lines.append(f"First failure ({verdict}): {cause.describe()}")
        lines += [f"  also failed: {e.describe()}" for e in failed[1:]]
    if events:
        lines.append("Recent events:")
        lines += [f"  {e}" for e in list(events)[-EVENTS_SHOWN:]]
    for replica, tail in (log_tails or {}).items():
        if tail.strip():
            lines.append(f"Last log lines of {replica}:")
            lines += [f"  | {line}" for line in tail.rstrip("\n").splitlines()]
    return "\n".join(lines)

"""Whether a job waits in a queue, and which of a task's deadlines has passed: one place for the synchronous
wait, the trigger and the sensor.

Kueue holds a ``kubeflow.org`` job through ``spec.runPolicy.suspend``: its webhook creates a job that carries the
``kueue.x-k8s.io/queue-name`` label suspended, Kueue sets ``suspend`` false when the queue admits the job, and true
again when it preempts it. While suspended the training operator (v1.7+) creates no pods and reports the condition
``Suspended``; on resumption it turns ``Suspended`` False (reason ``<Kind>Resumed``) and resets ``startTime``.

A task's deadlines therefore count as follows (:class:`Deadlines`):

- ``timeout``: from when this try created or attached to the job, time in the queue included (the whole job);
- ``queue_timeout``: from when the job entered its queue (created suspended, or suspended again), while it stays;
- ``startup_timeout``: from admission (creation, for a job never suspended) until it is ``Running``; it does not
  run while the job is queued, and starts again when a preempted job is admitted again.

Times read from the job are the API server's; none is taken as earlier than the try's start or later than now. A
transition the wait sees happen (the job enters or leaves its queue between two of its looks) starts its clock when
it is seen: the server's whole-second timestamp, or a late event, would start it up to seconds early.

When to look again is decided here too (:meth:`Deadlines.next_look`): just past the nearest deadline as it stands
after the latest state seen. Every wait asks again after each state it feeds in, so a change that starts a nearer
deadline (a job suspended into its queue, admitted again) moves its next look, whatever it heard before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME, ConditionStatus
from airflow_trainjob.domain.family import JobFamily
from airflow_trainjob.domain.timestamps import epoch

TIMEOUT, STARTUP_TIMEOUT, QUEUE_TIMEOUT = "timeout", "startup_timeout", "queue_timeout"
#: The condition type of a suspension, in both families.
SUSPENDED = "Suspended"
#: Seconds between two "still waiting in its queue" lines.
QUEUE_LINE_SECONDS = 300.0
#: Seconds after a deadline's time at which a wait looks: a deadline has passed once its time is exceeded.
LOOK_MARGIN = 0.05


def look_again_in(every: float | None, seconds_left: float | None) -> float | None:
    """Seconds until a wait that looks every ``every`` seconds looks again: never later than just past the nearest
    deadline (:data:`LOOK_MARGIN`), however long its own interval.

    :param every: the wait's own interval in seconds (a poke interval, the longest watch); None: none.
    :param seconds_left: seconds until the nearest deadline (:meth:`Deadlines.seconds_left`); None: no deadline runs.
    :returns: seconds (0 or more), or None when neither bounds the wait.
    """
    bounds = [
        b for b in (every, None if seconds_left is None else max(0.0, seconds_left) + LOOK_MARGIN) if b is not None
    ]
    return max(0.0, min(bounds)) if bounds else None


@dataclass(frozen=True)
class QueueState:
    """Where a job stands with its queue, as its object says.

    :param queued: the job waits to be admitted: condition ``Suspended`` is true, or its spec suspends it
        (``runPolicy.suspend``, a TrainJob's ``spec.suspend``), and it has not finished.
    :param queue_name: its ``kueue.x-k8s.io/queue-name`` label, or None.
    :param queued_since: epoch seconds of the ``Suspended`` condition's turn to true, when the job is queued and
        the operator has said so; else None.
    :param admitted_at: epoch seconds of the ``Suspended`` condition's turn to false (its last admission), when
        the job was suspended once and is no longer; else None.
    :param suspend_field: the job's field that suspends it, as messages name it (:attr:`JobFamily.suspend_field`).
    """

    queued: bool
    queue_name: str | None
    queued_since: float | None
    admitted_at: float | None
    suspend_field: str = "runPolicy.suspend"

    def where(self) -> str:
        """``Kueue queue 'team-a'``, or what holds the job when it names no queue."""
        return f"Kueue queue {self.queue_name!r}" if self.queue_name else f"its queue ({self.suspend_field} is true)"


def _latest_suspended(status: Any) -> Mapping[str, Any] | None:
    """The last ``Suspended`` condition, true or not: both families name it so (kubeflow/common v1's, and a
    TrainJob's ``metav1.Condition``), True while suspended and turned False (``<Kind>Resumed``, ``Resumed``) at
    admission."""
    found = [
        c
        for c in ((status if isinstance(status, Mapping) else {}).get("conditions") or [])
        if isinstance(c, Mapping) and c.get("type") == SUSPENDED
    ]
    return found[-1] if found else None


def queue_state(job: Mapping[str, Any], family: JobFamily) -> QueueState:
    """The queue state of a job.

    :param job: the job as an API JSON dict; reads ``metadata.labels`` (``kueue.x-k8s.io/queue-name``), the spec's
        suspension (:meth:`JobFamily.is_spec_suspended`) and the ``Suspended`` condition of ``status.conditions``.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`).
    """
    status = job.get("status") if isinstance(job.get("status"), Mapping) else {}
    condition = _latest_suspended(status)
    condition_true = condition is not None and condition.get("status") == ConditionStatus.TRUE
    queued = (family.is_spec_suspended(job) or condition_true) and not family.is_terminal(status)  # nothing to admit
    turned = epoch((condition or {}).get("lastTransitionTime"))
    labels = (job.get("metadata") or {}).get("labels") or {}
    return QueueState(
        queued=queued,
        queue_name=labels.get(LABEL_KUEUE_QUEUE_NAME) or None,
        queued_since=turned if queued and condition_true else None,
        admitted_at=turned
        if not queued and condition is not None and condition.get("status") == ConditionStatus.FALSE
        else None,
        suspend_field=family.suspend_field,
    )


class Deadlines:
    """The task's three deadlines over one job, fed each state of the job as it is seen.

    :param started_at: epoch seconds when this try created or attached to the job.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`): what suspends it and
        what says it started.
    :param timeout: seconds the whole job may take from ``started_at``; None: no limit.
    :param startup_timeout: seconds from admission until ``Running``; None: no limit.
    :param queue_timeout: seconds the job may wait in its queue each time it enters it; None: no limit.
    """

    def __init__(
        self,
        *,
        started_at: float,
        family: JobFamily,
        timeout: float | None = None,
        startup_timeout: float | None = None,
        queue_timeout: float | None = None,
    ) -> None:
        self.started_at = started_at
        self.family = family
        self.limits = {TIMEOUT: timeout, STARTUP_TIMEOUT: startup_timeout, QUEUE_TIMEOUT: queue_timeout}
        self.state: QueueState | None = None
        self._status: Any = None
        self._queued_since: float | None = None  # when the job entered the queue it is in (clamped)
        self._admitted_at: float | None = None  # when it left the queue last (clamped); None: never queued
        self._admitted_raw: float | None = None  # the same as the server wrote it, to compare with its conditions
        self._queued_since_shown: float | None = None  # when it entered the queue, as the server says (for the log)
        self._entry_seen = False  # this wait saw the job enter the queue it is in: its clock started when seen
        # The job ran since its last admission (creation, for one never queued): startup_timeout is over until it is
        # queued again. Kept, not read afresh: a TrainJob's status says "ready" only while a pod is ready, and a pod
        # the kubelet restarts in place is not for a while.
        self._ran = False
        self._line_at = float("-inf")  # when the queue was last logged

    def observe(self, job: Mapping[str, Any], now: float) -> str | None:
        """Take in the job as seen at ``now``.

        :param job: the job as an API JSON dict (its labels, the spec's suspension and ``status``).
        :param now: epoch seconds of the look.
        :returns: ``"queued"`` when it entered its queue, ``"requeued"`` when it entered it again after it had been
            admitted or had run (Kueue preempted or evicted it), ``"admitted"`` when it left it, else None."""
        state = queue_state(job, self.family)
        before = self.state
        self.state, self._status = state, job.get("status")
        if state.queued:
            self._ran = False
            return self._observe_queued(state, before, now)
        turn = self._observe_not_queued(state, before, now)
        if turn == "admitted":
            self._ran = False
        self._ran = self._ran or self.family.started_since_admission(self._status, self._admitted_raw)
        return turn

    def _clamped(self, timestamp: float | None, now: float) -> float:
        """A server time within this try: never before its start nor after ``now`` (None: ``now``)."""
        return min(max(timestamp if timestamp is not None else now, self.started_at), now)

    def _observe_queued(self, state: QueueState, before: QueueState | None, now: float) -> str | None:
        """The job is queued: start or keep the queue clock; ``queued``/``requeued`` when it entered the queue."""
        entering = before is None or not before.queued
        if entering:
            self._entry_seen = before is not None  # seen entering, not found queued at the first look
        self._queued_since = self._queue_clock_start(state, entering, now)
        if entering or state.queued_since is not None:
            self._queued_since_shown = min(state.queued_since or now, now)
        if not entering:
            return None
        ran = self._admitted_raw is not None or self.family.has_started(self._status)
        return "requeued" if ran else "queued"

    def _queue_clock_start(self, state: QueueState, entering: bool, now: float) -> float | None:
        """When the ``queue_timeout`` clock of the queue the job is in started: when this wait saw it enter; for a job
        found queued, the operator's timestamp (clamped) once it writes one; else as it stood."""
        if entering and self._entry_seen:
            return now
        if not self._entry_seen and (entering or self._queued_since is None or state.queued_since is not None):
            return self._clamped(state.queued_since, now)  # the operator's timestamp, once it writes one
        return self._queued_since

    def _observe_not_queued(self, state: QueueState, before: QueueState | None, now: float) -> str | None:
        """The job is not queued: date its admission; ``admitted`` when this wait saw it leave the queue."""
        seen_leaving = before is not None and before.queued
        if seen_leaving:
            # Seen leaving the queue: the startup clock starts now (the server's whole-second timestamp, or a late
            # watch event, would start it up to seconds early); its timestamp still dates its later conditions.
            self._admitted_at = now
            self._admitted_raw = state.admitted_at if state.admitted_at is not None else now
            return "admitted"
        if state.admitted_at is not None and self._admitted_raw is None:  # admitted before this wait began
            self._admitted_raw = state.admitted_at
            self._admitted_at = self._clamped(state.admitted_at, now)
        return None

    def queued_for(self, now: float) -> float:
        """Seconds the job has waited in the queue it is in, on the ``queue_timeout`` clock (0 when not queued).

        :param now: epoch seconds.
        """
        if self.state is None or not self.state.queued or self._queued_since is None:
            return 0.0
        return max(0.0, now - self._queued_since)

    def waited(self, now: float) -> float:
        """Seconds the job has waited in the queue it is in, as the server dates its entry (0 when not queued);
        unlike :meth:`queued_for`, also from before this wait began.

        :param now: epoch seconds.
        """
        if self.state is None or not self.state.queued:
            return 0.0
        since = self._queued_since_shown
        return max(0.0, now - since) if since is not None else self.queued_for(now)

    def due(self, turn: str | None, now: float, every: float = QUEUE_LINE_SECONDS) -> bool:
        """Whether to log the queue now: at each turn, and every ``every`` seconds while the job stays queued.

        :param turn: what :meth:`observe` returned (``queued``, ``requeued``, ``admitted`` or None).
        :param now: epoch seconds.
        :param every: seconds between two lines while the job stays queued.
        """
        if turn is None and not (self.state is not None and self.state.queued and now - self._line_at >= every):
            return False
        self._line_at = now
        return True

    def _counting(self, now: float) -> dict[str, float]:
        """Deadline -> seconds elapsed on its clock, for the clocks that run now."""
        running = {TIMEOUT: now - self.started_at}
        if self.state is not None and self.state.queued:
            running[QUEUE_TIMEOUT] = self.queued_for(now)
        elif not self._ran:
            running[STARTUP_TIMEOUT] = now - (self._admitted_at or self.started_at)
        return running

    def passed(self, now: float) -> tuple[str, float] | None:
        """``(which, seconds)`` of a deadline that has passed (``timeout`` first), or None.

        :param now: epoch seconds.
        """
        for which, elapsed in self._counting(now).items():
            limit = self.limits[which]
            if limit and elapsed > limit:
                return which, limit
        return None

    def seconds_left(self, now: float) -> float | None:
        """Seconds until the nearest deadline whose clock runs (0 once one passed), or None when none runs.

        :param now: epoch seconds.
        """
        left = [limit - elapsed for which, elapsed in self._counting(now).items() if (limit := self.limits[which])]
        return max(0.0, min(left)) if left else None

    def next_look(self, now: float, every: float | None = None) -> float | None:
        """Seconds from ``now`` until the wait must look at the job again, whether or not anything changes: just past
        the nearest deadline whose clock runs, and while the job is queued, when its next queue line is due
        (:meth:`due`). A wait asks again after each state it feeds to :meth:`observe`: a change may bring a deadline
        nearer (the job suspended into its queue: ``queue_timeout``; admitted again: ``startup_timeout``).

        :param now: epoch seconds.
        :param every: the wait's own longest interval in seconds (e.g. one watch's length); None: none.
        :returns: seconds (0 or more), or None when nothing but a change calls for a look.
        """
        if self.state is not None and self.state.queued:
            line_in = self._line_at + QUEUE_LINE_SECONDS - now if self._line_at > float("-inf") else QUEUE_LINE_SECONDS
            every = line_in if every is None else min(every, line_in)
        return look_again_in(every, self.seconds_left(now))


def queue_line(ref: str, deadlines: Deadlines, turn: str | None, now: float) -> str:
    """The log line of a queued job (when it enters the queue, and while it waits), of a job suspended again, or of
    its admission. Names only the deadlines that are set (a sensor has none).

    :param ref: the job, e.g. ``PyTorchJob ns/name``.
    :param deadlines: the wait's :class:`Deadlines`, fed the job's latest state.
    :param turn: what :meth:`Deadlines.observe` returned (``queued``, ``requeued``, ``admitted`` or None).
    :param now: epoch seconds."""
    state = deadlines.state
    where = state.where() if state else "its queue"
    startup, limit = deadlines.limits[STARTUP_TIMEOUT], deadlines.limits[QUEUE_TIMEOUT]
    if turn == "admitted":  # its spec no longer suspends it: the queue by name, if any
        where = f"Kueue queue {state.queue_name!r}" if state and state.queue_name else "its queue"
        return f"{ref} was admitted from {where}" + (
            f"; startup_timeout of {startup:g} s counts from now" if startup else ""
        )
    bounds = []
    if limit:
        bounds.append(f"queue_timeout {limit:g} s ({max(0.0, limit - deadlines.queued_for(now)):.0f} s left)")
    elif startup:
        bounds.append("no queue_timeout")
    if startup:
        bounds.append("startup_timeout counts from admission")
    waited = deadlines.waited(now)
    tail = "".join(f"; {b}" for b in bounds)
    if turn == "requeued":
        return (
            f"{ref} was suspended again after it had been admitted (Kueue preempted or evicted it, or someone set "
            f"{deadlines.family.suspend_field}): its pods are stopped and it waits in {where} to be admitted again; its "
            f"training starts over then, unless the program resumes from a checkpoint{tail}"
        )
    return f"{ref} is waiting in {where} (suspended: not admitted yet) for {waited:.0f} s{tail}"

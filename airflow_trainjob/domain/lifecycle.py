"""What a look at a training job means for the task that waits on it: one decision, decided here once for the three
waits -- the synchronous one (:mod:`airflow_trainjob.operators.sync_wait`, a watch in a thread), the trigger
(:mod:`airflow_trainjob.triggers.training_job`, the triggerer's shared stream) and the sensor's poke.

No I/O: a driver fetches (the job as last read; when it is gone, its last state the driver kept, or the end the
training operator announced in its events), feeds it in with the clock, and acts on the decision -- logs its lines,
raises, fires the event, deletes the pods it names. Each decision is a frozen dataclass:

- :class:`KeepWaiting`: the lines to log (the progress line when it changed, the queue line when due) and when to look
  again at the latest (just past the next deadline: no driver sleeps past one);
- :class:`Finished`: the job failed or reached a target condition (also when it was deleted right after);
- :class:`TimedOut`: which deadline passed, in the words the task prints;
- :class:`Gone`: deleted before it finished, or replaced by another object of its name.

:class:`JobWait` is one wait over one job (its memory: the try's :class:`~airflow_trainjob.domain.deadlines.Deadlines`
and the progress line logged last); :func:`one_look` is a look with no memory (a sensor's poke);
:func:`judge_gone` judges a job that is gone; :func:`pods_stopped_at_terminal` names the pods the user's
``cleanPodPolicy`` stops at the terminal transition (:mod:`~airflow_trainjob.domain.cleanup_hold`).

The words are today's, each where a task prints it: the synchronous wait logs a job deleted right after it finished
as :attr:`Finished.deleted_line`, the trigger's event says it as :attr:`Finished.message`; a sensor's poke, which
owns nothing, says a deletion without "outside this task".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from airflow_trainjob.domain.cleanup_hold import UserRunPolicy, pods_to_stop
from airflow_trainjob.domain.deadlines import QUEUE_TIMEOUT, Deadlines, QueueState, queue_line
from airflow_trainjob.domain.family import JobFamily
from airflow_trainjob.domain.pods import Pod, pod_name
from airflow_trainjob.domain.progress import metrics_words

#: The job as a driver read it: an API JSON dict, or any mapping of its shape; a decision hands back the same object.
JobT = TypeVar("JobT", bound=Mapping[str, Any])


@dataclass(frozen=True)
class Lines:
    """What to log of a look, each None when there is nothing new to say.

    :param progress: :func:`~airflow_trainjob.domain.conditions.progress_line`, when it differs from the one logged
        last (a wait) or always (a poke).
    :param queue: :func:`~airflow_trainjob.domain.deadlines.queue_line`, when the job entered or left its queue, or
        waits in it and the next line is due.
    :param queue_warns: log ``queue`` as a warning: the job was suspended again after it had been admitted.
    """

    progress: str | None = None
    queue: str | None = None
    queue_warns: bool = False


@dataclass(frozen=True)
class KeepWaiting:
    """The job goes on: log :attr:`lines`, look again at a change, or after :attr:`look_again_in` at the latest.

    :param lines: what to log of this look.
    :param look_again_in: seconds from the look until the next deadline (just past it) or the next queue line is
        due; None: only a change of the job calls for a look.
    """

    lines: Lines = Lines()
    look_again_in: float | None = None


@dataclass(frozen=True)
class Finished(Generic[JobT]):
    """The job failed, or reached one of the wait's target conditions.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param job: the job in that state (for a job gone: its last known state).
    :param failed: it failed (:meth:`JobFamily.is_failed`), rather than reached a target.
    :param summary: its state in one line (:meth:`JobFamily.summary`).
    :param lines: what to log of this look (none for a job gone).
    :param gone: the job was deleted right after it finished: judged by its last known state.
    """

    ref: str
    job: JobT
    failed: bool
    summary: str
    lines: Lines = Lines()
    gone: bool = False

    @property
    def message(self) -> str:
        """``<ref>: <summary>`` (the trigger's event, the resumed task's first line); for a job gone, with
        `` (then deleted outside this task)``."""
        said = f"{self.ref}: {self.summary}"
        return f"{said} (then deleted outside this task)" if self.gone else said

    @property
    def deleted_line(self) -> str:
        """The synchronous wait's line for a job deleted right after it finished."""
        return f"{self.ref} was deleted outside this task right after it finished: {self.summary}"


@dataclass(frozen=True)
class TimedOut(Generic[JobT]):
    """A deadline passed before the job finished.

    :param which: ``timeout``, ``startup_timeout`` or ``queue_timeout``
        (:data:`~airflow_trainjob.domain.deadlines.TIMEOUT`...).
    :param seconds: the deadline's limit (seconds).
    :param message: the trigger's words: ``<ref>: <which> passed; last state: <summary>``, or ``<ref> was not
        created before the deadline`` (the synchronous task's are :func:`explained_timeout`'s, with the evidence).
    :param job: the job as last read; None: it was never created.
    :param queue: where the job stood with its queue (for ``queue_timeout``'s words); None: never seen.
    :param lines: what to log of this look.
    """

    which: str
    seconds: float
    message: str
    job: JobT | None = None
    queue: QueueState | None = None
    lines: Lines = Lines()


@dataclass(frozen=True)
class Gone(Generic[JobT]):
    """The job is gone and had not finished (by its last known state), or another object of its name replaced it.

    :param message: what the task says of it (its ``JobDeletedError``, the trigger's event).
    :param last_known: its last state known (as last read, or announced), or None.
    :param replaced: a same-named object with another ``metadata.uid`` took its place.
    """

    message: str
    last_known: JobT | None = None
    replaced: bool = False


#: One decision of the core over a job of type ``JobT``.
Decision = KeepWaiting | Finished[JobT] | TimedOut[JobT] | Gone[JobT]


def progress_line(ref: str, family: JobFamily, status: Any, desired: Mapping[str, int] | None = None) -> str:
    """The line a wait logs of the job each time it changes: ``<ref>: <summary>`` (:meth:`JobFamily.summary`, with a
    TrainJob's percentage and estimate), then the metrics the training reports (a TrainJob's
    ``trainerStatus.metrics``: ``; loss 0.2347, accuracy 0.9876``, :func:`~airflow_trainjob.domain.progress.metrics_words`);
    the words of :func:`~airflow_trainjob.domain.conditions.progress_line` for a v1 job.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param family: the job's API family.
    :param status: the job's ``status`` (a dict, or None).
    :param desired: replica type (or step) -> replicas (nodes) asked for, shown beside the counts; None: none.
    """
    line = f"{ref}: {family.summary(status, desired)}"
    reported = family.trainer_progress(status)
    metrics = metrics_words({m["name"]: m["value"] for m in reported["metrics"]}) if reported else ""
    return f"{line}; {metrics}" if metrics else line


def _ends_wait(family: JobFamily, job: Mapping[str, Any], targets: Sequence[str] | None) -> tuple[bool, bool]:
    """``(finished, failed)``: the job failed, or has one of ``targets`` (None: it succeeded)."""
    status = job.get("status")
    failed = family.is_failed(status)
    if targets is None:
        return failed or family.is_succeeded(status), failed
    return failed or any(family.has_condition(status, t) for t in targets), failed


def judge_gone(
    ref: str,
    last_known: JobT | None,
    family: JobFamily,
    targets: Sequence[str] | None = None,
    *,
    replaced: bool = False,
    said_of_task: bool = True,
) -> Finished[JobT] | Gone[JobT]:
    """A job that is gone, judged by its last known state: finished (deleted right after), or deleted before it
    finished; or replaced by another object of its name, whatever it was.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param last_known: its last state known: as last read (the watch's ``DELETED`` object, the stream's cache), or
        the end the training operator announced in its events
        (:func:`~airflow_trainjob.domain.conditions.status_from_events`); None: none is known.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`).
    :param targets: the condition types that end the wait successfully; None: its success (the operator's wait).
    :param replaced: a same-named object with another uid took its place.
    :param said_of_task: the waiting task made or owns the job: a deletion is "outside this task" (False: a
        sensor's poke, which owns nothing).
    """
    if replaced:
        return Gone(f"{ref} was deleted outside this task and replaced by another object", replaced=True)
    if last_known is None:
        return Gone(f"{ref} was deleted outside this task before it finished")
    finished, failed = _ends_wait(family, last_known, targets)
    summary = family.summary(last_known.get("status"))
    if finished:
        return Finished(ref, last_known, failed, summary, gone=True)
    outside = " outside this task" if said_of_task else ""
    return Gone(f"{ref} was deleted{outside} before it finished (last seen {summary})", last_known)


class JobWait:
    """One wait over one job, fed each state of it as it is seen; its memory is the try's deadlines and the progress
    line logged last.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param deadlines: the try's :class:`~airflow_trainjob.domain.deadlines.Deadlines` (this wait feeds them).
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`): what its status means.
    :param targets: the condition types that end the wait successfully; None: the job's success (the operator's
        wait). A failure always ends it.
    :param desired: replica type -> ``replicas``, for ``active/desired`` counts in the progress line (the
        synchronous wait's, from its manifest); None: from the job as seen (:meth:`JobFamily.desired_replicas`).
    """

    def __init__(
        self,
        ref: str,
        deadlines: Deadlines,
        family: JobFamily,
        targets: Sequence[str] | None = None,
        desired: Mapping[str, int] | None = None,
    ) -> None:
        self.ref = ref
        self.deadlines = deadlines
        self.family = family
        self.targets = None if targets is None else tuple(targets)
        self.desired = desired
        self._last_line: str | None = None

    def seen(self, job: JobT, now: float) -> KeepWaiting | Finished[JobT] | TimedOut[JobT]:
        """The job as read at ``now``: finished, a deadline passed, or keep waiting; with the lines to log.

        :param job: the job, an API JSON dict (its labels, the spec's suspension and ``status``).
        :param now: epoch seconds of the look.
        """
        status, family = job.get("status"), self.family
        turn = self.deadlines.observe(job, now)  # first: a job admitted and finished between two looks was admitted
        queue = queue_line(self.ref, self.deadlines, turn, now) if self.deadlines.due(turn, now) else None
        desired = family.desired_replicas(job) if self.desired is None else self.desired
        line = progress_line(self.ref, family, status, desired)
        lines = Lines(None if line == self._last_line else line, queue, queue_warns=turn == "requeued")
        self._last_line = line
        finished, failed = _ends_wait(family, job, self.targets)
        if finished:
            return Finished(self.ref, job, failed, family.summary(status), lines)
        passed = self.deadlines.passed(now)
        if passed is not None:
            which, seconds = passed
            message = f"{self.ref}: {which} passed; last state: {family.summary(status)}"
            return TimedOut(which, seconds, message, job, self.deadlines.state, lines)
        return KeepWaiting(lines, self.deadlines.next_look(now))

    def absent(self, now: float) -> KeepWaiting | TimedOut[Any]:
        """The job does not exist yet (a wait for its creation: a sensor's): a deadline passed, or keep waiting.

        :param now: epoch seconds of the look.
        """
        passed = self.deadlines.passed(now)
        if passed is None:
            return KeepWaiting(look_again_in=self.deadlines.next_look(now))
        return TimedOut(passed[0], passed[1], f"{self.ref} was not created before the deadline")

    def gone(self, last_known: JobT | None, *, replaced: bool = False) -> Finished[JobT] | Gone[JobT]:
        """The job is gone: :func:`judge_gone` by the wait's ref and targets.

        :param last_known: its last state known, or None.
        :param replaced: a same-named object with another uid took its place.
        """
        return judge_gone(self.ref, last_known, self.family, self.targets, replaced=replaced)

    def next_look(self, now: float, every: float | None = None) -> float | None:
        """Seconds until the wait must look again whatever happens
        (:meth:`~airflow_trainjob.domain.deadlines.Deadlines.next_look`): just past the nearest deadline as it stands
        after the last state seen, the next queue line, or ``every``.

        :param now: epoch seconds.
        :param every: the driver's own longest interval in seconds (a watch's length); None: none.
        """
        return self.deadlines.next_look(now, every=every)

    def overdue(self, now: float) -> bool:
        """A deadline has passed for the job as last seen (a driver that could not judge it yet looks again soon).

        :param now: epoch seconds.
        """
        return self.deadlines.seconds_left(now) == 0


def one_look(
    ref: str, job: JobT, family: JobFamily, targets: Sequence[str], now: float
) -> KeepWaiting | Finished[JobT]:
    """A look with no memory (a sensor's poke): its progress line every time, the queue line whenever the job waits
    in its queue; no deadline of its own.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param job: the job, an API JSON dict.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`).
    :param targets: the condition types that end the wait successfully.
    :param now: epoch seconds of the look.
    """
    summary = family.summary(job.get("status"))
    seen = Deadlines(started_at=now, family=family)
    seen.observe(job, now)
    queued = seen.state is not None and seen.state.queued  # Kueue holds it: waiting, not failed
    lines = Lines(progress_line(ref, family, job.get("status")), queue_line(ref, seen, None, now) if queued else None)
    finished, failed = _ends_wait(family, job, targets)
    if finished:
        return Finished(ref, job, failed, summary, lines)
    return KeepWaiting(lines)


def explained_timeout(
    ref: str,
    which: str,
    seconds: float,
    *,
    status: Any,
    queue: QueueState | None,
    family: JobFamily,
    namespace: str,
    pods: Sequence[Pod],
    warnings: Sequence[str] = (),
    tails: Sequence[str] = (),
) -> str:
    """The synchronous task's words for a deadline passed (:class:`TimedOut`), with the evidence its driver read: why
    pods are pending, the job's last warning events, the quoted log tails of the containers that keep a pod pending
    by failing; or, when nothing acted on the job, that the training operator may not be running.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param which: the deadline: ``timeout``, ``startup_timeout`` or ``queue_timeout``.
    :param seconds: its limit (seconds).
    :param status: the job's last ``status`` (API JSON dict, or None).
    :param queue: where the job stood with its queue (:attr:`TimedOut.queue`), or None.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`: its kind's name, what
        its status and pending pods say).
    :param namespace: the job's namespace.
    :param pods: the job's pods, API JSON dicts.
    :param warnings: its last ``Warning`` events, ``<reason>: <message>`` each (at most 3).
    :param tails: :func:`~airflow_trainjob.domain.failures.quoted_tails` of those containers' logs.
    """
    warned = f"; warnings: {' | '.join(warnings)}" if warnings else ""
    if which == QUEUE_TIMEOUT:
        return _queue_timeout_words(ref, seconds, queue, namespace, family.suspend_field) + warned
    if not family.controller_has_acted(status) and not pods:
        return (
            f"{ref}: {which} of {seconds:g} s passed and no controller has acted on the job (no status, no "
            f"pods): {family.no_controller_hint(namespace)}; the job was deleted" + warned
        )
    pending = family.pending_reasons(pods)
    return (
        f"{ref}: {which} of {seconds:g} s passed; last state: {family.summary(status)}"
        + (f"; pending: {' | '.join(pending)}" if pending else "")
        + warned
        + "".join(f"\n{line}" for line in tails)
    )


def _queue_timeout_words(ref: str, seconds: float, queue: QueueState | None, namespace: str, field: str) -> str:
    """``queue_timeout``'s words: Kueue's command for its reason only when the job names a Kueue queue; a job that
    names none was held by its spec's suspension alone (``runPolicy.suspend``, ``spec.suspend``), which nothing
    turned false."""
    if queue is not None and queue.queue_name:
        return (
            f"{ref}: queue_timeout of {seconds:g} s passed while the job waited in {queue.where()}, suspended and not "
            f"admitted (for Kueue's reason: kubectl get workloads.kueue.x-k8s.io -n {namespace}); the job was deleted"
        )
    return (
        f"{ref}: queue_timeout of {seconds:g} s passed while the job waited suspended: its {field} is true "
        f"and nothing resumed it (it names no Kueue queue: set {field} to false, or let a queue controller "
        "admit it); the job was deleted"
    )


@dataclass(frozen=True)
class PodStop:
    """The pods to stop at the terminal transition, as the user's ``cleanPodPolicy`` would have had the controller
    stop them (the provider holds it: :mod:`~airflow_trainjob.domain.cleanup_hold`).

    :param pods: the job's own pods (:meth:`JobFamily.owns_pod`) still Pending or Running, for ``Running`` and
        ``All``; empty when nothing is held.
    :param policy: the user's cleanup, as the job records it.
    :param line: what to log once they are deleted, or None when there are none.
    """

    pods: tuple[Pod, ...]
    policy: UserRunPolicy
    line: str | None


def pods_stopped_at_terminal(ref: str, job: Mapping[str, Any], pods: Iterable[Pod], family: JobFamily) -> PodStop:
    """The pods to delete now that the job is terminal, and the line that says so.

    :param ref: the job, ``<Kind> <namespace>/<name>``.
    :param job: the job, terminal, an API JSON dict (its ``metadata.uid``, annotations, ``spec.runPolicy``, status).
    :param pods: its pods as listed, API JSON dicts (a successor's are left alone).
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`: its phase's word, what
        its held cleanup asks, the name of its cleanup policy's field).
    """
    policy = family.user_run_policy(job)
    stopping = tuple(p for p in pods_to_stop(pods, policy) if family.owns_pod(job, p))
    line = (
        f"{ref} is {family.phase(job.get('status'))}: stopping {', '.join(pod_name(p) for p in stopping)} "
        f"(pods deleted), as {family.cleanup_policy_field} {policy.clean_pod_policy} asks"
        if stopping
        else None
    )
    return PodStop(stopping, policy, line)

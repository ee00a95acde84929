"""``TrainingJobTrigger``: waits in the triggerer for a training job to end, from a watch shared by all jobs.

Every trigger on the same connection, namespace and kind joins one shared stream (Airflow 3.3's
``BaseEventTrigger.shared_stream_key`` / ``open_shared_stream`` / ``filter_shared_stream``): one
:class:`~airflow_trainjob.watching.job_stream.JobStream` lists and watches that kind's jobs, and each trigger
reads its own job from the stream's cache when the stream says the job changed. The API server sees one
LIST and one WATCH per namespace and kind, not one per job; how the stream reconnects, re-lists on 410 and
falls back to polling is described in :mod:`~airflow_trainjob.watching.job_stream`.

Deadlines count from ``started_at`` (epoch seconds in the kwargs) and from the job's own queue transitions (see
:mod:`airflow_trainjob.domain.deadlines`), so a triggerer restart neither resets nor falsely trips them; they are judged
only on a cache that is in sync with the server. No event fires sooner than ``[trainjob] min_deferral_seconds`` after
``started_at`` (:mod:`airflow_trainjob.domain.deferral_hold`: Airflow's race around the resume). What the status means
is decided by :mod:`airflow_trainjob.domain.conditions`, as on the synchronous path; whether a job is still this task's
by :mod:`airflow_trainjob.domain.ownership`. Every request goes through the stream's
:class:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook`: the trigger builds no client.

The triggerer imports this module on its event loop, so it imports only light modules: the stream, the hook and the
API's errors are reached through :mod:`~airflow_trainjob.triggers.kubernetes_side`, which each entry point
(``open_shared_stream``, ``run``, ``filter_shared_stream``, ``on_kill``) first loads in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_trainjob.constants import JobConditionType
from airflow_trainjob.domain.deadlines import Deadlines
from airflow_trainjob.domain.deferral_hold import DEFAULT_MIN_DEFERRAL_SECONDS, hold_seconds
from airflow_trainjob.domain.lead_log import (
    ANNOTATION_LEAD_LOG_CURSOR,
    LIVE_READ_BYTES,
    LOG_NOT_THERE,
    LeadLogCopy,
    LogCursor,
    LogOut,
    LogRead,
    cursor_annotation,
    cursor_on_job,
    secrets_at,
    write_lines,
)
from airflow_trainjob.domain.lifecycle import (
    Decision,
    Finished,
    Gone,
    JobWait,
    KeepWaiting,
    TimedOut,
    pods_stopped_at_terminal,
)
from airflow_trainjob.domain.ownership import why_not_followed
from airflow_trainjob.domain.pods import pod_name, with_pods_seen
from airflow_trainjob.domain.progress import with_report
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.addressing import JobAddress
from airflow_trainjob.triggers import kubernetes_side, log_pacing
from airflow_trainjob.triggers.args import TriggerArgs
from airflow_trainjob.triggers.events import DELETED, ERROR, FINISHED, TIMED_OUT, event_payload
from airflow_trainjob.triggers.failed_tails import FailedTailsReader
from airflow_trainjob.triggers.progress_writes import ProgressWrites
from airflow_trainjob.watching import cancel_safe
from airflow_trainjob.watching.stream_source import WATCH_SECONDS, StreamSource

if TYPE_CHECKING:
    from airflow_trainjob.domain.failures import ContainerEnd
    from airflow_trainjob.hooks.api_errors import ApiCall
    from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook
    from airflow_trainjob.watching.job_stream import JobChanges, JobStream

#: Seconds ``on_kill`` keeps back of Airflow's ``[triggerer] on_kill_timeout`` (30 s by default): its last step (the
#: try's end recorded again for a next try) ends this much before Airflow stops waiting.
RECORD_END_MARGIN_SECONDS = 1.0
#: Seconds of ``on_kill_timeout`` kept for the deletion of the job (a GET and a DELETE, and a retry): the record of the
#: try's end before it (the triggerer's first call to Airflow's API starts its in-process API server, which took 19 s
#: on a loaded test machine) and the copy of the lead's log stop in time for it.
DELETION_RESERVE_SECONDS = 3.0
#: Share of Airflow's ``[triggerer] on_kill_timeout`` that ``on_kill`` gives the copy of the rest of the lead replica's
#: log, at most, after it has recorded the try's end and before it deletes the job (never into
#: :data:`DELETION_RESERVE_SECONDS`). 0 turns the copy off.
ON_KILL_COPY_SHARE = 0.5
#: Phases in which the lead replica may be writing its log: the trigger looks at it then.
LOG_PHASES = frozenset({JobConditionType.RUNNING, JobConditionType.RESTARTING, JobConditionType.SCALING})
#: Seconds between two records of the copy's cursor on the job (:data:`ANNOTATION_LEAD_LOG_CURSOR`) while lines are
#: copied, at least: at most this much of the log is copied twice after a triggerer restart. (A triggerer that stops
#: closes its shared streams before it cancels its triggers, so a trigger cannot record its cursor as it stops; a
#: trigger cancelled on its own, its stream still open, does.)
CURSOR_RECORD_SECONDS = 120.0
#: ... and at least this many looks apart (when many jobs share the triggerer's log budget, looks are rarer).
CURSOR_RECORD_LOOKS = 2
#: Seconds a cancelled trigger waits for its cursor's record, at most.
CURSOR_RECORD_TIMEOUT = 5.0


class TrainingJobTrigger(BaseEventTrigger):
    """Fires one event when the job reaches a target condition or ``Failed``, disappears, passes a
    deadline, or cannot be read.

    Made from the keyword arguments of :class:`~airflow_trainjob.triggers.args.TriggerArgs` (the job, its
    connection, deadlines and owner; documented there), which :meth:`serialize` returns as they are.

    While it waits, it logs :func:`conditions.progress_line` each time the job's phase or replica counts change (Airflow shows
    a trigger's log lines in the task's log), as the synchronous wait does. With ``follow_lead_log`` it also copies
    the lead replica's new lines (``[Master-0] ...``) while the job runs, a look every
    :func:`~airflow_trainjob.triggers.log_pacing.LogReadBudget.look_interval` seconds (60 s, longer when many jobs
    share the triggerer's budget: :mod:`~airflow_trainjob.triggers.log_pacing`), each look short requests and no
    stream; :class:`~airflow_trainjob.domain.lead_log.LeadLogCopy` decides what is new. The copy's cursor is recorded on
    the job (annotation :data:`~airflow_trainjob.domain.lead_log.ANNOTATION_LEAD_LOG_CURSOR`, at the first lines and then
    every :data:`CURSOR_RECORD_SECONDS`, and when the trigger is cancelled), so the trigger run again after a
    triggerer restart goes on from there; the resumed task copies the rest.

    With ``failed_tails`` (an operator's try that quotes tails), each failed run's log tail is read when the stream's
    pod watch first keeps the failure (:mod:`~airflow_trainjob.triggers.failed_tails`): the controller may delete the
    pod with the job's failure, log and all; a failed job's event carries them (``tails``), masked.

    A TrainJob's own progress (``status.trainerStatus``) is kept as points over the wait
    (:mod:`~airflow_trainjob.domain.progress`), handed over in the event; an operator's try's trigger also writes them to
    the task instance's XCom while it waits, for the Training job tab (:mod:`~airflow_trainjob.triggers.progress_writes`:
    a new report within 30 s, at most one write per 30 s).

    Its event's payload (``outcome``: finished, deleted, timeout or error; ``message``; ``job``; ``pods``;
    ``lead_log``; ``tails``; ``which``) is :func:`~airflow_trainjob.triggers.events.event_payload`: within
    :data:`~airflow_trainjob.triggers.events.EVENT_BUDGET` characters of JSON, whatever the job's pod templates hold.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        #: What this trigger waits for, and how: its kwargs (an unknown one raises ``TypeError``).
        self.args = TriggerArgs(**kwargs)
        args = self.args
        self._deadlines = Deadlines(
            started_at=args.started_at,
            family=family_of(args.kind),
            timeout=args.timeout,
            startup_timeout=args.startup_timeout,
            queue_timeout=args.queue_timeout,
        )
        self._masked = False  # the job's secrets were handed to Airflow's masker
        self._seen_uid: str | None = None  # the job's uid once seen (a sensor's wait starts without one)
        self._seen_job: Mapping[str, Any] | None = None  # the job as last seen: which pods are its (owns_pod)
        #: The training's own progress over the wait, oldest first (:mod:`airflow_trainjob.domain.progress`).
        self._progress: list[dict[str, Any]] = []
        #: Writes them where the Training job tab reads them while the task waits (an operator's try only: a sensor's
        #: wait has no record to show them with).
        self._progress_writes: ProgressWrites | None = None
        if args.owner_labels and args.try_number is not None:
            self._progress_writes = ProgressWrites(args.try_number, self._address.ref, self.log, _record_modules)
        # What each look at the job means (the progress line logged last and the deadlines are its memory).
        self._wait = JobWait(self._address.ref, self._deadlines, family_of(args.kind), args.target_conditions or None)
        # The copy of the lead replica's log: where it stands, the task that looks at it, when the job may be writing.
        self._lead_copy: LeadLogCopy | None = None
        self._reader: asyncio.Task[None] | None = None
        self._lead_may_write: asyncio.Event | None = None
        self._announced = False  # the task log was told that the lead's lines are copied
        self._recorded: tuple[LogCursor | None, float] = (None, 0.0)  # the cursor last recorded on the job, and when
        self._pods_followed_on: JobStream | None = None  # the stream whose pod watch keeps this job's failed pods
        #: Reads each failed run's log tail when the pod watch first keeps it (``failed_tails``), for the event.
        self._tails_reader: FailedTailsReader | None = None
        if args.failed_tails and args.log_tail_lines > 0 and args.owner_labels:
            self._tails_reader = FailedTailsReader(args.namespace, args.log_tail_lines, self._mask_secrets)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return "airflow_trainjob.triggers.training_job.TrainingJobTrigger", self.args.kwargs()

    # --- the kwargs this trigger's code reads, by their names (defined by TriggerArgs) ------------------------------

    @property
    def kind(self) -> str:
        return self.args.kind

    @property
    def name(self) -> str:
        return self.args.name

    @property
    def namespace(self) -> str:
        return self.args.namespace

    @property
    def uid(self) -> str | None:
        return self.args.uid

    @property
    def target_conditions(self) -> Sequence[str]:
        return self.args.target_conditions

    @property
    def poll_interval(self) -> float:
        return self.args.poll_interval

    @property
    def wait_for_creation(self) -> bool:
        return self.args.wait_for_creation

    @property
    def owner_labels(self) -> Mapping[str, str]:
        return self.args.owner_labels

    @property
    def try_number(self) -> int | None:
        return self.args.try_number

    @property
    def log_tail_lines(self) -> int:
        return self.args.log_tail_lines

    @property
    def follow_lead_log(self) -> bool | None:
        return self.args.follow_lead_log

    @property
    def secret_spans(self) -> Sequence[Sequence[Any]]:
        return self.args.secret_spans

    @property
    def _address(self) -> JobAddress:
        return JobAddress(self.kind, self.namespace, self.name)

    def _call(self, verb: str) -> ApiCall:
        return kubernetes_side.ApiCall.for_job(verb, self.kind, self.namespace, self.name)

    @property
    def _ref(self) -> str:
        return self._address.ref

    def _event(
        self, outcome: str, message: str, job: Mapping[str, Any] | None = None, pods: Sequence[dict] = (), **extra: Any
    ) -> TriggerEvent:
        if self._lead_copy is not None and "lead_log" not in extra:
            extra["lead_log"] = self._lead_copy.cursor.to_dict()  # a few hundred characters
        if self._progress:
            extra["progress"] = self._whole_progress(self._progress)  # for the resumed task's record (no store here)
        return TriggerEvent(event_payload(outcome, message, job, pods, **extra))

    # --- the shared stream ---------------------------------------------------------------------------

    def shared_stream_key(self) -> StreamSource:
        """Triggers on the same connection, namespace and kind share one watch."""
        return StreamSource.from_trigger_kwargs(self.serialize()[1])

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[JobChanges]:
        """Run the one :class:`JobStream` of these kwargs' source; the triggerer calls it once per source."""
        await kubernetes_side.load()
        stream = kubernetes_side.JobStream(
            StreamSource.from_trigger_kwargs(kwargs), kwargs.get("poll_interval") or 10.0, failed_pods=True
        )
        with kubernetes_side.registered(stream):
            async for changes in stream.changes():
                yield changes

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Wait on a stream of its own: the triggerer does so when ``shared_stream_key()`` fails; tests do."""
        await kubernetes_side.load()
        stream = kubernetes_side.JobStream(self.shared_stream_key(), self.poll_interval, failed_pods=True)
        changes = stream.changes()
        try:
            async for event in self.filter_shared_stream(changes):
                yield event
                return
        finally:
            await changes.aclose()

    async def filter_shared_stream(self, shared_stream: AsyncIterator[JobChanges]) -> AsyncIterator[TriggerEvent]:
        """Fire one event when this trigger's job ends, disappears, passes a deadline, or cannot be read."""
        await kubernetes_side.load()  # (first, and outside the try below: what turns errors into events is loaded here)
        stream = kubernetes_side.live_stream(
            self.shared_stream_key()
        )  # a running stream's cache may already know the job
        woken = asyncio.Event()

        async def sift() -> None:
            # Every change of every job of the stream passes here: a set lookup, and back to sleep.
            nonlocal stream
            async for changes in shared_stream:
                if changes.names is None or self.name in changes.names:
                    stream = changes.stream
                    woken.set()

        sifter = asyncio.create_task(sift(), name=f"sift changes for {self._ref}")
        sifter.add_done_callback(lambda _: woken.set())  # the shared stream failing wakes the wait too
        if self._follows_lead_log:
            running = self._lead_may_write = asyncio.Event()
            self._reader = asyncio.create_task(
                self._follow_lead_log(lambda: stream, running), name=f"lead log of {self._ref}"
            )
        if self._tails_reader is not None:
            self._tails_reader.start(self._failed_runs_kept, name=f"failed runs' log tails of {self._ref}")
        event: TriggerEvent | None = None
        try:
            self._follow_failed_pods(stream)
            event = await self._judge(stream) if _readable(stream) else None
            while event is None:
                await cancel_safe.set_within(woken, self._seconds_to_deadline())
                woken.clear()
                if sifter.done():
                    sifter.result()  # raises why the shared stream ended
                    raise RuntimeError("the shared stream ended")
                self._follow_failed_pods(stream)
                if _readable(stream):
                    await stream.take_turn()  # a list wakes every trigger of the stream: a few judge at a time
                    event = await self._judge(stream)
        except Exception as e:
            event = self._event(
                ERROR, f"waiting for {self._ref} failed: {kubernetes_side.one_line(e, self._call('get'))}"
            )
        finally:
            self._follow_failed_pods(None)
            await self._stop_following()
            if self._progress_writes is not None:
                await self._progress_writes.stop()
            if self._tails_reader is not None:
                await self._tails_reader.stop()
            if event is None and _readable(stream):
                # Cancelled (the triggerer stops): the trigger's next run goes on from here. Recorded before the
                # sifter stops: a stream of the trigger's own closes with it.
                await self._record_cursor(stream, now=True)
            await cancel_safe.stop(sifter)
        await self._wait_out_deferral()
        yield event

    async def _wait_out_deferral(self) -> None:
        """Hold the event until ``[trainjob] min_deferral_seconds`` have passed since the task deferred: a try that
        resumes sooner may meet Airflow's race around the resume (:mod:`~airflow_trainjob.domain.deferral_hold`)."""
        min_deferral = _min_deferral_seconds()
        hold = hold_seconds(self.args.started_at, time.time(), min_deferral)
        if hold > 0:
            self.log.info(
                "%s: the task resumes in %.1f s, %g s after the task deferred ([trainjob] min_deferral_seconds: a "
                "task that resumes sooner may meet Airflow's race around the resume, apache/airflow#72716)",
                self._ref,
                hold,
                min_deferral,
            )
            await asyncio.sleep(hold)

    async def _judge(self, stream: JobStream) -> TriggerEvent | None:
        """This trigger's event, from the stream's cache, or None to keep waiting: what the job's state means is the
        lifecycle core's (:mod:`~airflow_trainjob.domain.lifecycle`); this reads the job and acts on the decision."""
        if stream.error:
            return self._event(ERROR, f"waiting for {self._ref}: {stream.error}")
        decision = await self._look(stream)
        if decision is None or isinstance(decision, KeepWaiting):
            self._offer_progress()
            return None
        if isinstance(decision, Gone):
            return self._event(DELETED, decision.message, decision.last_known)
        if isinstance(decision, TimedOut):
            return self._event(TIMED_OUT, decision.message, decision.job, which=decision.which)
        if decision.gone:  # deleted right after it finished: its last state is the verdict's
            return self._event(FINISHED, decision.message, decision.job)
        return await self._finish(stream, decision)

    async def _look(self, stream: JobStream) -> Decision[Mapping[str, Any]] | None:
        """The core's decision on the job as the stream's cache has it; when the cache does not have it (or has a
        namesake), on its last state the stream kept, its absence (a wait for its creation), or what a GET says.
        None: it cannot tell now (the hook's retries are spent): judged again at the next change or deadline."""
        job: Mapping[str, Any] | None = stream.jobs.get(self.name)
        if job is not None and not (self.uid and job["metadata"].get("uid") != self.uid):
            return self._judge_seen(job)
        final = stream.final_state(self.name, self.uid or self._seen_uid)
        if final is not None and not self.wait_for_creation:  # (a sensor's first look: an old namesake's)
            return self._wait.gone(final)
        if job is None and self.wait_for_creation:
            return self._wait.absent(time.time())
        # The cache may not have seen the job's creation yet (or its predecessor's deletion): ask.
        try:
            job = await self._read(stream)
        except kubernetes_side.TRANSIENT_ERRORS:
            return None
        except kubernetes_side.QuietApiException as e:
            if e.status in kubernetes_side.TRANSIENT_STATUS_CODES:
                return None
            raise
        if job is None:  # gone before this trigger saw it end: the operator's events may say how
            return self._wait.gone(await self._announced_end(stream))
        if self.uid and job["metadata"].get("uid") != self.uid:
            return self._wait.gone(None, replaced=True)
        return self._judge_seen(job)

    def _judge_seen(self, job: Mapping[str, Any]) -> Decision[Mapping[str, Any]]:
        """Take in the job as read now (the lead's log follows its phase) and log what the core says of it: its
        entering and leaving its queue, and its progress line when it changed, as the synchronous wait does."""
        self._seen(job)
        self._note_phase(job)
        now = time.time()
        self._progress = with_report(self._progress, self._wait.family, job.get("status"), _iso(now))
        decision = self._wait.seen(job, now)
        lines = decision.lines
        if lines.queue is not None:
            (self.log.warning if lines.queue_warns else self.log.info)("%s", lines.queue)
        if lines.progress is not None:
            self.log.info("%s", lines.progress)
        return decision

    def _offer_progress(self) -> None:
        """The job goes on: its points over time to the task instance's XCom, when a write is due
        (:class:`~airflow_trainjob.triggers.progress_writes.ProgressWrites`)."""
        ti = getattr(self, "task_instance", None)  # set by the triggerer; None when the trigger runs on its own
        if self._progress_writes is not None and ti is not None:
            self._progress_writes.offer(ti, self._progress)

    def _whole_progress(self, points: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``points`` with those an earlier run of this trigger wrote for the try (a triggerer restarted)."""
        return self._progress_writes.whole(points) if self._progress_writes is not None else points

    async def _finish(self, stream: JobStream, finished: Finished[Mapping[str, Any]]) -> TriggerEvent:
        """The job failed or reached a target condition: the event, with a failed job's pods, read before anything
        stops or deletes them (their exit codes must not depend on the pods outliving the resume: someone may
        delete the job meanwhile), after stopping the pods the user's held ``cleanPodPolicy`` stops now."""
        await self._stop_following()  # its cursor stands still from here: the event carries it
        job, failed = finished.job, finished.failed
        stops = self._wait.family.user_run_policy(job).held and bool(self.owner_labels)
        listed = await self._pods(stream) if failed or stops else []
        pods = await self._with_failed_pods_seen(job, listed) if failed else []
        tails = await self._failed_tails(failed)
        lead_log = await self._stop_pods_at_terminal(stream, job, listed) if stops else None
        extra = {**({"lead_log": lead_log} if lead_log else {}), **({"tails": tails} if tails else {})}
        return self._event(FINISHED, finished.message, job, pods=pods, **extra)

    async def _failed_tails(self, failed: bool) -> dict[str, str]:
        """The failed runs' tails read while the job ran, and those due now (within the reader's grace), for a job
        that failed; none else."""
        reader = self._tails_reader
        if reader is None:
            return {}
        if not failed:
            await reader.stop()
            return {}
        return await reader.finish()

    def _failed_runs_kept(self) -> tuple[AsyncTrainingJobHook | None, list[ContainerEnd]]:
        """What the tails' reader reads with: the hook of the stream that follows this job's pods (None: no
        connection now) and the failed runs its pod watch keeps of the job as last seen, oldest first."""
        stream, job = self._pods_followed_on, self._seen_job
        if stream is None or stream.failed_pods is None or job is None:
            return None, []
        ends = self._wait.family.container_ends(stream.failed_pods.seen.pods_of(self.name, job))
        return (stream.hook if stream.connected else None), ends

    def _follow_failed_pods(self, stream: JobStream | None) -> None:
        """Have ``stream``'s pod watch keep this job's failed pods (None: stop): the trigger reads its job from
        whichever stream the triggerer runs for its source now, and follows the job on that one only."""
        if stream is self._pods_followed_on:
            return
        before, news = self._pods_followed_on, self._tails_reader.news if self._tails_reader is not None else None
        if before is not None and before.failed_pods is not None:
            before.failed_pods.unfollow(self.name, news)
        self._pods_followed_on = stream
        if stream is not None and stream.failed_pods is not None:
            stream.failed_pods.follow(self.name, news)
            if news is not None:
                news.set()  # what the new stream's watch keeps is read from now on

    async def _with_failed_pods_seen(
        self, job: Mapping[str, Any], listed: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The failed job's pods for its verdict: as listed now, then the failed ones the following pod watch saw
        while the job ran that the list no longer has (the controller deletes them with the job's failure, often
        before the trigger lists them), once that watch has delivered what happened up to the job's ``Failed`` (two
        streams, two paces: :meth:`FailedPodsWatch.failed_pods`)."""
        # The watch of the stream that follows the job's pods (as the tails' reader reads): the change that ended the
        # wait may have come through another stream of the same source (the triggerer's, or a live one found first).
        followed = self._pods_followed_on
        watch = followed.failed_pods if followed is not None else None
        if watch is None:
            return listed
        mine = self._own_pods(listed, job)
        have_failures = any(end.failed for end in self._wait.family.container_ends(mine))
        seen = await watch.failed_pods(self.name, job, listed, have_failures=have_failures)
        return with_pods_seen(listed, seen)

    async def _stop_pods_at_terminal(
        self, stream: JobStream, job: Mapping[str, Any], pods: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """Stop the pods the user's ``cleanPodPolicy`` has stopped at the terminal transition (the controller was
        sent ``None``: see :mod:`~airflow_trainjob.domain.cleanup_hold`; which ones:
        :func:`~airflow_trainjob.domain.lifecycle.pods_stopped_at_terminal`), now rather than when the task resumes;
        first copy the rest of the lead replica's log into the task log if its pod is among them (it is gone at
        resume).

        :returns: the copy's cursor (``"complete": true``) when the lead's log was read to its end, or None. Best
            effort: the task's cleanup deletes whatever is left."""
        if not stream.connected:
            return None
        copied: dict[str, Any] | None = None
        try:
            stop = pods_stopped_at_terminal(self._ref, job, pods, self._wait.family)
            lead = self._wait.family.lead_pod(pods)
            if lead is not None and self._follows_lead_log and any(p is lead for p in stop.pods):
                # Copied here, not carried in the event: the event is stored and printed whole, and stays small.
                copied = await self._copy_rest_of_lead_log(stream.hook, job, pods)
            for pod in stop.pods:
                # 404 counts as done; 409: a successor's (the uid precondition); a refusal: the task's cleanup's.
                with contextlib.suppress(*kubernetes_side.RAISED_ERRORS):
                    await stream.hook.delete_pod_async(
                        pod["metadata"]["name"], self.namespace, uid=pod["metadata"]["uid"]
                    )
        except (*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS) as e:
            self.log.warning(
                "Could not stop the running pods of %s now (%s); the task's cleanup will",
                self._ref,
                kubernetes_side.one_line(e),
            )
            return copied
        if stop.line is not None:
            self.log.info("%s", stop.line)
        return copied

    # --- the lead replica's log ----------------------------------------------------------------------

    @property
    def _follows_lead_log(self) -> bool:
        if self.follow_lead_log is None:  # the kwargs of an earlier version: it quoted the tail when it was not 0
            return bool(self.log_tail_lines) and bool(self.owner_labels)
        return self.follow_lead_log

    def _seen(self, job: Mapping[str, Any]) -> None:
        """The job exists: from now on its absence is a deletion (a sensor waited for its creation until now)."""
        if self.wait_for_creation:
            self.args = dataclasses.replace(self.args, wait_for_creation=False)
        self._seen_uid = job["metadata"].get("uid")
        self._seen_job = job

    def _own_pods(self, pods: list[dict[str, Any]], job: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The pods of ``job`` (else of the job as last seen; none before it was seen), not a same-named
        predecessor's or successor's (:meth:`~airflow_trainjob.domain.family.JobFamily.owns_pod`)."""
        job = job if job is not None else self._seen_job
        return [p for p in pods if job is not None and self._wait.family.owns_pod(job, p)]

    def _note_phase(self, job: Mapping[str, Any]) -> None:
        """Tell the log's reader whether the lead may be writing (the job runs)."""
        if not self._follows_lead_log:
            return
        self._copy_for(job)
        if self._lead_may_write is not None:
            if self._wait.family.phase(job.get("status")) in LOG_PHASES:
                self._lead_may_write.set()
            else:
                self._lead_may_write.clear()

    def _copy_for(self, job: Mapping[str, Any]) -> LeadLogCopy:
        """The copy of the lead's log; made at the first sight of the job, from the cursor an earlier run of this wait
        recorded on it for this try (a triggerer restart), else from the log's start."""
        if self._lead_copy is not None:
            return self._lead_copy
        recorded = cursor_on_job(job, self.try_number)
        copy = self._lead_copy = LeadLogCopy(self._wait.family, recorded)
        self._recorded = (copy.cursor, time.monotonic())
        if recorded is not None and recorded.lines and not (recorded.complete or recorded.cut):
            interval = log_pacing.budget().look_interval()
            self.log.info(
                "Going on with the lead replica's log from the point an earlier run of this wait recorded (%d lines "
                "copied, the last written at %s): lines it copied after that record, at most about %.0f s of them, "
                "appear again below",
                recorded.lines,
                recorded.since,
                max(CURSOR_RECORD_SECONDS, CURSOR_RECORD_LOOKS * interval) + interval,
            )
        return copy

    async def _follow_lead_log(self, current_stream: Callable[[], JobStream | None], running: asyncio.Event) -> None:
        """While the task waits: look at the lead's log each time the budget's interval has passed, while the job
        runs (``running``). Ends by cancellation (the job ended, the trigger stops), or when the API refuses."""
        budget = log_pacing.budget()
        while True:
            await running.wait()
            with budget.reading():  # only while the job runs: jobs queued for hours share nothing
                due = time.monotonic() + budget.look_interval()  # the wait for a place in the rate counts in it
                stream = current_stream()
                if stream is not None and stream.connected and self._lead_copy is not None:
                    try:
                        await self._look_at_lead_log(stream, self._lead_copy, budget)
                    except kubernetes_side.RAISED_ERRORS as e:  # e.g. RBAC without pods/log: said once, then left
                        self.log.warning(
                            "Cannot copy the lead replica's log of %s while the task waits (%s); the resumed task "
                            "tries again",
                            self._ref,
                            kubernetes_side.one_line(e),
                        )
                        return
                    except kubernetes_side.TRANSIENT_ERRORS:
                        pass  # the API is away: the next look tries again
                await asyncio.sleep(max(0.0, due - time.monotonic()))

    async def _look_at_lead_log(self, stream: JobStream, copy: LeadLogCopy, budget: log_pacing.LogReadBudget) -> None:
        """One look: its place in the rate, then LIST the job's index-0 pods and read what is new of the lead's log."""
        if not stream.connected:
            raise ConnectionError(f"the stream has no connection to read {self._ref} with right now")
        if not await self._mask_secrets(stream.hook):
            return  # the job is gone: no line is copied unmasked
        await budget.reserve(log_pacing.REQUESTS_PER_LOOK)
        made = budget.requests
        try:
            async with budget.request():
                pods = await stream.hook.list_job_pods_async(self.name, self.namespace, replica_index=0, kind=self.kind)
            self._write(copy.look(self._own_pods(pods)))
            if not self._announced and copy.next_read() is not None:
                self._announced = True
                self.log.info(
                    "Copying the lead replica's new lines into this log every %.0f s while the task waits",
                    budget.look_interval(),
                )
            await self._read_lead_log(stream.hook, copy, budget)
            await self._record_cursor(stream)  # when due: part of the look, charged with its extra requests
        finally:
            budget.charge(budget.requests - made - log_pacing.REQUESTS_PER_LOOK)

    async def _read_lead_log(
        self, hook: AsyncTrainingJobHook, copy: LeadLogCopy, budget: log_pacing.LogReadBudget
    ) -> bool:
        """Make the reads ``copy`` asks for and write what it returns (each answer's lines at once: a cancellation
        between two reads leaves the cursor at the last line written). Returns whether any read answered."""
        answered = False
        while (read := copy.next_read()) is not None:
            try:
                async with budget.request():
                    data = await self._read_log(hook, read)
            except kubernetes_side.RAISED_ERRORS as e:  # a 400 comes as a JobRejectedError, with its status
                if getattr(e, "status", None) not in LOG_NOT_THERE:
                    raise
                self._write(copy.missing(read, kubernetes_side.one_line(e)))
                continue
            answered = True
            self._write(copy.take(read, data))
        return answered

    async def _read_log(self, hook: AsyncTrainingJobHook, read: LogRead) -> bytes:
        return await hook.read_timestamped_log_async(
            read.pod,
            self.namespace,
            read.container,
            previous=read.previous,
            since_time=read.since_time,
            limit_bytes=read.limit_bytes,
            tail_lines=read.tail_lines,
        )

    async def _copy_rest_of_lead_log(
        self, hook: AsyncTrainingJobHook, job: Mapping[str, Any], pods: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """The job has ended, or is about to be deleted (:meth:`on_kill`), and the lead's pod is about to be stopped:
        copy the rest of its log now (up to the size bound, in reads of
        :data:`~airflow_trainjob.domain.lead_log.LIVE_READ_BYTES`, so that the loop runs between them), the job's
        secrets handed to the masker first.

        :returns: the cursor (``complete``), or None when the log could not be read (the resumed task says so)."""
        try:
            masked = await self._mask_secrets(hook)
        except (*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS):
            masked = False
        if not masked:
            return None  # no line copied unmasked: the resumed task copies the rest, with its own masker
        copy = LeadLogCopy(
            self._wait.family,
            self._copy_for(job).cursor,
            final=True,
            tail_lines=self.log_tail_lines,
            read_bytes=LIVE_READ_BYTES,
        )
        self._lead_copy = copy
        self._write(copy.look(self._own_pods(pods, job)))
        budget = log_pacing.budget()
        made = budget.requests
        try:  # now, not in line: the pod is about to go; charged to the rate afterwards
            if not await self._read_lead_log(hook, copy, budget):
                return None
        finally:
            budget.charge(budget.requests - made)
        copy.mark_complete()
        return copy.cursor.to_dict()

    async def _mask_secrets(self, hook: AsyncTrainingJobHook) -> bool:
        """Before the first line is copied: hand the secrets of the job (where :attr:`secret_spans` says) to Airflow's
        masker, in this process and in the triggerer's supervisor, which writes the task's log
        (``amask_secret``). They are in the pod templates, which the stream's cache does not keep: the job is read by
        GET, once. Returns whether they are handed over (False: the job is gone); raises what the read raises (then
        nothing is masked yet, and no line should be copied)."""
        if self._masked:
            return True
        if not self.secret_spans:
            self._masked = True
            return True
        job = await self._job_if_any(hook)
        if job is None:
            return False
        self._masked = True
        from airflow.sdk.log import amask_secret

        for secret in secrets_at(job, self.secret_spans):
            await amask_secret(secret)
        return True

    async def _stop_following(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            await cancel_safe.stop(reader)

    async def _record_cursor(self, stream: JobStream, now: bool = False) -> None:
        """Record the copy's cursor on the job (annotation), if it moved, every :data:`CURSOR_RECORD_SECONDS` (or
        :data:`CURSOR_RECORD_LOOKS` looks) from the copy's start (at the end of a look, which charges it to the
        budget's rate), or ``now`` (charged here). Best effort: a lost record costs lines copied twice."""
        copy, (recorded, at) = self._lead_copy, self._recorded
        if copy is None or copy.cursor == recorded or not stream.connected:
            return
        budget = log_pacing.budget()
        if not now and time.monotonic() - at < max(CURSOR_RECORD_SECONDS, CURSOR_RECORD_LOOKS * budget.look_interval()):
            return
        uid = self.uid or self._seen_uid
        patch = {
            "metadata": {
                "uid": uid,
                "annotations": {ANNOTATION_LEAD_LOG_CURSOR: cursor_annotation(copy.cursor, self.try_number)},
            }
        }
        cursor = copy.cursor
        failures: tuple[type[BaseException], ...] = (
            asyncio.TimeoutError,
            *kubernetes_side.RAISED_ERRORS,
            *kubernetes_side.TRANSIENT_ERRORS,
        )
        if now:
            budget.charge(1)
        try:
            async with budget.request():
                await cancel_safe.within(
                    stream.hook.patch_job_async(self.kind, self.name, self.namespace, patch), CURSOR_RECORD_TIMEOUT
                )
        except failures:
            return
        self._recorded = (cursor, time.monotonic())

    def _write(self, lines: Sequence[LogOut]) -> None:
        write_lines(self.log, lines)

    async def _announced_end(self, stream: JobStream) -> dict[str, Any] | None:
        """For a job that is gone: a stand-in object with the terminal condition the training operator announced
        in its events (its family's ``status_from_events``), or None."""
        uid = self.uid or self._seen_uid
        if not stream.connected or not uid:
            return None
        try:
            events = await stream.hook.list_events_async(self.namespace, {self.name})
        except (*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS):
            return None
        status = self._wait.family.status_from_events(events, uid)
        if status is None:
            return None
        return {
            "apiVersion": self._address.api_version,
            "kind": self.kind,
            "status": status,
            "metadata": {"name": self.name, "namespace": self.namespace, "uid": uid},
        }

    async def _read(self, stream: JobStream) -> dict[str, Any] | None:
        """GET the job on the stream's connection; None if it does not exist."""
        if not stream.connected:
            raise ConnectionError(f"the stream has no connection to read {self._ref} with right now")
        try:
            return await stream.hook.get_job_async(self.kind, self.name, self.namespace)
        except kubernetes_side.QuietApiException as e:
            if e.status == 404:
                return None
            raise

    async def _pods(self, stream: JobStream) -> list[dict[str, Any]]:
        """The failed job's pods, for exit codes that must not depend on the pods outliving the resume."""
        if not stream.connected:
            return []
        try:
            return await stream.hook.list_job_pods_async(self.name, self.namespace, kind=self.kind)
        except (*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS):
            return []  # the verdict still has the job's status and its events

    def _seconds_to_deadline(self) -> float:
        """Seconds until the next look the core calls for (:meth:`JobWait.next_look`: just after the nearest deadline
        as it stands after the last change judged, or the next queue line), at most WATCH_SECONDS; once one has
        passed (and the cache could not be trusted to judge it), ``poll_interval``: a resync wakes the trigger
        anyway."""
        now = time.time()
        if self._wait.overdue(now):
            return max(1.0, self.poll_interval)
        look = self._wait.next_look(now, every=float(WATCH_SECONDS))
        return float(WATCH_SECONDS) if look is None else look

    async def on_kill(self) -> None:
        """The user killed the deferred task (Airflow runs this in the triggerer: marked failed or success, or
        cleared). In this order (:meth:`_end_the_try`), within Airflow's ``[triggerer] on_kill_timeout``:

        1. read the job's pods, then the job;
        2. record the try's end as this trigger read the job (:meth:`_record_end`), at once: the Training job tab
           needs it first, and nothing before it waits;
        3. with ``follow_lead_log``, on a job that is still this try's: copy the rest of the lead replica's log into
           the task log (the lines printed since the trigger's last look would go with the pods:
           :meth:`_copy_before_deletion`), within :data:`ON_KILL_COPY_SHARE` of ``on_kill_timeout`` and never into
           the :data:`DELETION_RESERVE_SECONDS`; then read the job again;
        4. delete the job, if it is still the one this task's try follows
           (:func:`~airflow_trainjob.domain.ownership.why_not_followed`: its uid, its owner labels, the try that follows
           it), at once after that read: nothing widens the window in which a later try may take it over;
        5. when a next try is coming (a clear), wait until it has started and record the end again (its start cleared
           the first record), within what remains.

        Airflow cancels the trigger's task again at each sync with its supervisor (about every second) until
        ``on_kill`` has ended: the steps go on through those cancellations
        (:func:`~airflow_trainjob.watching.cancel_safe.despite_cancellation`), each bounded as above.

        A wait without ``owner_labels`` (a sensor's, on a job made elsewhere) owns nothing and deletes nothing.

        :raises KubernetesAccessError: and the hook's other refusals, as the sync hook raises them.
        """
        if not self.owner_labels:
            self.log.info("Not deleting %s/%s: this wait does not own the job", self.namespace, self.name)
            return
        on_kill_seconds, started = _on_kill_seconds(), time.monotonic()
        await cancel_safe.despite_cancellation(self._end_the_try(started, on_kill_seconds), on_kill_seconds)

    async def _end_the_try(self, started: float, on_kill_seconds: float) -> None:
        """:meth:`on_kill`'s steps, in its order; ``started`` (monotonic seconds) and ``on_kill_seconds`` bound them."""
        until = started + on_kill_seconds - RECORD_END_MARGIN_SECONDS
        await kubernetes_side.load()
        hook = kubernetes_side.stream_hook(self.shared_stream_key())
        async with hook.connect():
            pods = await self._pods_if_any(hook)
            job = await self._job_if_any(hook)
            parked = await self._record_end(
                hook, self._this_tries(job), pods, max(1.0, until - DELETION_RESERVE_SECONDS - time.monotonic())
            )
            if ON_KILL_COPY_SHARE and job is not None and self._follows_lead_log and self._why_not_ours(job) is None:
                left = until - DELETION_RESERVE_SECONDS - time.monotonic()
                seconds = max(0.0, min(on_kill_seconds * ON_KILL_COPY_SHARE, left))
                await self._copy_before_deletion(hook, job, pods, seconds)
                job = await self._job_if_any(hook)  # again: the deletion follows this read at once
            try:
                await self._delete_if_ours(hook, job)
            finally:
                if parked is not None:
                    await self._record_again_for_next_try(parked, until)

    async def _delete_if_ours(self, hook: AsyncTrainingJobHook, job: Mapping[str, Any] | None) -> None:
        """Delete ``job`` (as just read; None: gone) if it is still this try's, with its uid as precondition."""
        if job is None:
            return
        why_not = self._why_not_ours(job)
        if why_not is not None:
            self.log.warning("Not deleting %s/%s: %s", self.namespace, self.name, why_not)
        elif await hook.delete_job_async(self.kind, self.name, self.namespace, uid=job["metadata"]["uid"]):
            self.log.info("Deleted %s %s/%s: the deferred task was killed", self.kind, self.namespace, self.name)

    async def _job_if_any(self, hook: AsyncTrainingJobHook) -> dict[str, Any] | None:
        """GET the job; None if it does not exist."""
        try:
            return await hook.get_job_async(self.kind, self.name, self.namespace)
        except kubernetes_side.QuietApiException as e:
            if e.status != 404:
                raise
            return None

    def _why_not_ours(self, job: Mapping[str, Any]) -> str | None:
        return why_not_followed(job, self.owner_labels, uid=self.uid, try_number=self.try_number)

    async def _copy_before_deletion(
        self, hook: AsyncTrainingJobHook, job: Mapping[str, Any], pods: list[dict[str, Any]], seconds: float
    ) -> None:
        """Copy the rest of the lead replica's log into the task log before :meth:`on_kill` deletes the job: the copy
        the trigger makes at a terminal transition (:meth:`_copy_rest_of_lead_log`: the job's secrets masked, up to
        the size bound), stopped after ``seconds`` (the deletion must come within Airflow's ``on_kill_timeout``).
        Best effort: a failure or a stop is a warning, and the deletion follows all the same."""
        try:
            await cancel_safe.within(self._copy_rest_of_lead_log(hook, job, pods), seconds)
        except asyncio.TimeoutError:
            self.log.warning(
                "Stopped copying the lead replica's log of %s after %.0f s, before its end: the job is deleted now, "
                "and the rest of the log with its pods",
                self._ref,
                seconds,
            )
        except Exception as e:  # the deletion is what on_kill is for
            self.log.warning(
                "Could not copy the rest of the lead replica's log of %s before deleting the job: %s",
                self._ref,
                kubernetes_side.one_line(e),
            )

    def _this_tries(self, job: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``job`` if it is the object this wait is about; else (gone, or a successor) the last state the shared
        stream of this process saw of it, if any."""
        uid = self.uid or self._seen_uid
        if job is not None and (not uid or job["metadata"].get("uid") == uid):
            return job
        stream = kubernetes_side.live_stream(self.shared_stream_key())
        if stream is None:
            return None
        cached = stream.jobs.get(self.name)
        if cached is not None and (not uid or cached["metadata"].get("uid") == uid):
            return cached.thaw()  # a plain copy, the record's own
        return stream.final_state(self.name, uid)

    async def _pods_if_any(self, hook: AsyncTrainingJobHook) -> list[dict[str, Any]]:
        try:
            return await hook.list_job_pods_async(self.name, self.namespace, kind=self.kind)
        except (*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS):
            return []  # the record is best effort; the deletion is what on_kill is for

    async def _record_end(
        self, hook: AsyncTrainingJobHook, job: Mapping[str, Any] | None, pods: list[dict[str, Any]], seconds: float
    ) -> _Parked | None:
        """Leave the killed try's end -- ``job`` (None: gone before this trigger could read it), its pods and the
        events about them -- where the Training job tab finds it: the task instance's XCom
        (:data:`~airflow_trainjob.domain.records.PARKED_KEY`), since the triggerer cannot reach ``task_state_store``;
        then look once whether a next try is coming. Best effort, within ``seconds``: a failure is a warning.

        :returns: what was written, to write again once a next try has started (:meth:`_record_again_for_next_try`);
            None when nothing was written."""
        ti = getattr(self, "task_instance", None)  # set by the triggerer; None when the trigger runs on its own
        if ti is None or self.try_number is None:
            return None
        until = time.monotonic() + seconds
        try:
            write = await cancel_safe.within(self._park_end(hook, ti, job, pods), seconds)
        except Exception as e:  # the record serves the UI: a failure to write it is no failure of on_kill
            self._warn_not_recorded(e)
            return None
        try:  # seen now, before the copy and the deletion: a next try may start (and clear the record) meanwhile
            coming = await cancel_safe.within(self._next_try_coming(ti), max(0.0, until - time.monotonic()))
        except asyncio.TimeoutError:
            coming = False
        return _Parked(write, coming)

    async def _record_again_for_next_try(self, parked: _Parked, until: float) -> None:
        """When a next try was coming: wait until it has started (it cleared the task instance's XComs, the record
        with them) and write the record again, by ``until`` (monotonic seconds). Best effort: a failure is a
        warning."""
        ti = self.task_instance
        try:
            if await self._next_try_started(ti, until - NEXT_TRY_WRITE_SECONDS, coming=parked.next_try_coming):
                await cancel_safe.within(parked.write(), max(1.0, until - time.monotonic()))
        except Exception as e:  # the record serves the UI: a failure to write it is no failure of on_kill
            self._warn_not_recorded(e)

    def _warn_not_recorded(self, e: Exception) -> None:
        self.log.warning(
            "Could not record how try %s of the deferred task ended: %s",
            self.try_number,
            kubernetes_side.one_line(e),
        )

    async def _park_end(
        self, hook: AsyncTrainingJobHook, ti: Any, job: Mapping[str, Any] | None, pods: list[dict[str, Any]]
    ) -> Callable[[], Awaitable[None]]:
        """Write the try's end to XCom once; returns what writes it again."""
        # Imported in a thread: the record's module (and the XCom backend's) must not stall the triggerer's loop.
        record, redact, xcom = await asyncio.to_thread(_record_modules)
        pods = self._own_pods(pods, job) if job is not None else []
        events: list[dict[str, Any]] = []
        if job is not None:
            with contextlib.suppress(*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS):
                events = await hook.list_events_async(self.namespace, {self.name, *(pod_name(p) for p in pods)})
        final = record.final_state(
            "stopped",
            job,
            pods,
            events,
            message=(
                f"Airflow stopped the deferred task (marked it failed or success, or cleared it) while its trigger "
                f"waited for {self._ref}"
            ),
            recorded_by="trigger",
            redact=redact,
            family=self._wait.family,
            progress=self._progress_with(job),
        )
        value = record.parked_end(self.try_number, final)
        where = {"dag_id": ti.dag_id, "task_id": ti.task_id, "run_id": ti.run_id, "map_index": ti.map_index}
        write = functools.partial(xcom.aset, record.PARKED_KEY, value, **where)
        await write()  # at once: a task instance marked failed or success
        seen = self._wait.family.phase(job.get("status")) if job is not None else "gone"
        self.log.info(
            "Recorded how try %s ended, for the Training job tab: %s was %s", self.try_number, self._ref, seen
        )
        return write

    def _progress_with(self, job: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """The progress points of the wait, with the one ``job`` (as just read; None: gone) reports."""
        if job is None:
            return self._whole_progress(self._progress)
        return self._whole_progress(
            with_report(self._progress, self._wait.family, job.get("status"), _iso(time.time()))
        )

    async def _next_try_coming(self, ti: Any) -> bool:
        """Whether the task instance's state says a next try is coming (:data:`NEXT_TRY_COMING`); False when it
        cannot be read."""
        read, state = await self._task_state(ti)
        return read and state in NEXT_TRY_COMING

    async def _next_try_started(self, ti: Any, until: float, coming: bool = False) -> bool:
        """Whether a next try of the task instance was coming (it was cleared, or is to be retried: ``coming`` when
        an earlier look saw it) and has started since: it cleared the task instance's XComs as it started (Airflow
        lists the keys to clear then), so an end recorded before is gone. Looks at its state until ``until``
        (monotonic seconds); False at once for one marked failed or success that was not seen coming (no next try
        comes), and when its state cannot be read."""
        while time.monotonic() < until:
            read, state = await self._task_state(ti)
            if not read:
                return False
            if state not in NEXT_TRY_COMING:
                return coming
            coming = True
            await asyncio.sleep(min(NEXT_TRY_LOOK_SECONDS, max(0.0, until - time.monotonic())))
        return False

    async def _task_state(self, ti: Any) -> tuple[bool, str | None]:
        """``(read, state)``: Airflow's state of the task instance, asked of the triggerer's supervisor; ``read`` is
        False when it could not answer (no comms: a trigger run on its own)."""
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

        mapped = ti.map_index is not None and ti.map_index >= 0
        key = f"{ti.task_id}_{ti.map_index}" if mapped else ti.task_id
        try:
            states = await asyncio.to_thread(
                RuntimeTaskInstance.get_task_states,
                dag_id=ti.dag_id,
                map_index=ti.map_index if mapped else None,
                task_ids=[ti.task_id],
                run_ids=[ti.run_id],
            )
        except Exception as e:  # no comms (a trigger run on its own) or no answer: what was recorded stays
            self.log.debug("Could not read the task instance's state: %s", e)
            return False, None
        return True, (states.get(ti.run_id) or {}).get(key)


@dataclasses.dataclass(frozen=True)
class _Parked:
    """A killed try's end as :meth:`TrainingJobTrigger._park_end` wrote it to XCom."""

    #: Writes the same record again (a next try's start cleared it).
    write: Callable[[], Awaitable[None]]
    #: A look right after the write saw a next try coming (cleared, or to be retried).
    next_try_coming: bool


#: Airflow states of a task instance whose next try is coming: cleared (None, then scheduled and queued), or to be
#: retried. The next try clears the task instance's XComs when it starts (``xcom_keys_to_clear``).
NEXT_TRY_COMING = frozenset({None, "scheduled", "queued", "restarting", "up_for_retry"})
#: Seconds between two looks at the task instance's state while its next try is coming.
NEXT_TRY_LOOK_SECONDS = 1.0
#: Seconds of ``on_kill``'s time kept for recording the end again once the next try has started.
NEXT_TRY_WRITE_SECONDS = 3.0


def _min_deferral_seconds() -> float:
    """``[trainjob] min_deferral_seconds`` as the triggerer has it; a value that is not a number: the default."""
    from airflow.providers.common.compat.sdk import conf

    value = conf.get("trainjob", "min_deferral_seconds", fallback="") or ""
    try:
        return float(value) if value.strip() else DEFAULT_MIN_DEFERRAL_SECONDS
    except ValueError:
        return DEFAULT_MIN_DEFERRAL_SECONDS


def _on_kill_seconds() -> float:
    """Airflow's ``[triggerer] on_kill_timeout``: the seconds the triggerer gives ``on_kill``."""
    from airflow.providers.common.compat.sdk import conf

    return float(conf.getint("triggerer", "on_kill_timeout", fallback=30))


def _record_modules() -> tuple[Any, Any, Any]:
    """:mod:`airflow_trainjob.domain.records`, the redaction every record gets
    (:func:`airflow_trainjob.operators.recorder.redact`: Airflow's masker), and the XCom class of the configured
    backend."""
    from airflow.sdk.execution_time.xcom import XCom

    recorder = importlib.import_module("airflow_trainjob.operators.recorder")
    return importlib.import_module("airflow_trainjob.domain.records"), recorder.redact, XCom


def _iso(epoch_seconds: float) -> str:
    """RFC 3339 UTC of ``epoch_seconds``, to the second, with a ``Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_seconds))


def _readable(stream: JobStream | None) -> TypeGuard[JobStream]:
    """The stream's cache can be judged: it is in sync with the server, or the server refuses it."""
    return stream is not None and (stream.synced or stream.error is not None)

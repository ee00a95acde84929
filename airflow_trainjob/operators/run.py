"""``TrainingJobRun``: one try of a :class:`~airflow_trainjob.operators.training_job.TrainingJobOperator` task, from
the job's creation to its XCom summary. It keeps the try's state (:mod:`~airflow_trainjob.operators.try_state`) and
calls :mod:`~airflow_trainjob.operators.take_up` (the job created, attached to, replaced or reconnected to, or an
earlier try's success returned), :mod:`~airflow_trainjob.operators.sync_wait` (the synchronous wait),
:mod:`~airflow_trainjob.operators.resume` (the deferred try) and :mod:`~airflow_trainjob.operators.ending` (the try's
record, the cleanup). The operator's entry points build one per try and call it in this order:

- both modes (``durable``): ``execute`` -> :meth:`~TrainingJobRun.earlier_success` (an earlier try's success, if
  the records make it this try's result: returned, nothing created); else
- synchronous (Airflow's ``ResumableJobMixin``): ``submit_job`` -> :meth:`~TrainingJobRun.create_or_attach` and
  :attr:`~TrainingJobRun.external_id`, or ``get_job_status`` -> :meth:`~TrainingJobRun.reconnect` (Airflow submits
  after all for a failed, gone or not reused job); ``poll_until_complete`` -> :meth:`~TrainingJobRun.wait` (follow
  the job, its pods and the lead's log to its end, the verdict, the record, the cleanup); ``get_job_result`` ->
  :meth:`~TrainingJobRun.result`;
- deferrable: ``execute`` -> :meth:`~TrainingJobRun.create_or_attach`, :meth:`~TrainingJobRun.trigger` (deferred to);
  ``execute_complete`` -> :meth:`~TrainingJobRun.complete` (the event's verdict, the rest of the lead's log, the
  record, the cleanup);
- at any time, ``on_kill`` -> :meth:`~TrainingJobRun.kill`: the wait ends as stopped by Airflow; the job is deleted
  unless a later try follows it. The end is recorded, and the job cleaned up, once: by the first way out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from airflow_trainjob.domain.earlier_success import Reuse
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.params import RunSettings
from airflow_trainjob.domain.summary import job_summary
from airflow_trainjob.domain.verdict import job_ref
from airflow_trainjob.exceptions import JobDeletedError, TrainingJobError
from airflow_trainjob.families import family_of
from airflow_trainjob.operators import ending, resume
from airflow_trainjob.operators.recorder import KILL_WRITE_SECONDS, JobRecorder, redact_error
from airflow_trainjob.operators.sync_wait import SynchronousWait
from airflow_trainjob.operators.take_up import JOB_GONE, JOB_NOT_REUSED, TakeUp, is_earlier_result, with_summary
from airflow_trainjob.operators.try_state import TryProgress
from airflow_trainjob.triggers.events import DELETED
from airflow_trainjob.watching.job_watch import JobWatch, PodFeed
from airflow_trainjob.watching.lead_log_follower import LeadLogFollower

if TYPE_CHECKING:
    from airflow_trainjob.triggers.training_job import TrainingJobTrigger

__all__ = ["JOB_GONE", "JOB_NOT_REUSED", "RunSettings", "TrainingJobRun", "job_summary"]


class TrainingJobRun:
    """One try of a training job task (the module's docstring says in which order the operator calls it).

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook` (or anything with its methods).
    :param identity: the task instance and try this run is for.
    :param settings: the operator's parameters that govern the try.
    :param manifest: the job to create, or a callable that builds it (the operator's checks, input notes and
        ``job_name``/``job_namespace`` XComs); called once, when the run first needs it — never for a deferred
        task's resume unless the trigger could not tell the job's state.
    :param log: the task's logger.
    :param watch: builds the synchronous wait's job watch (:class:`~airflow_trainjob.operators.sync_wait.SynchronousWait`).
    :param follower: builds the lead replica's log follower (the same).
    :param pod_feed: builds what follows the job's pods during the synchronous wait (the same).
    :param recorder: writes the try's record (:class:`~airflow_trainjob.operators.recorder.JobRecorder`); None: none.
    """

    def __init__(
        self,
        hook: Any,
        identity: TaskInstanceIdentity,
        settings: RunSettings,
        *,
        manifest: dict[str, Any] | Callable[[], dict[str, Any]],
        log: Any,
        watch: Callable[..., Any] = JobWatch,
        follower: Callable[..., Any] = LeadLogFollower,
        pod_feed: Callable[..., Any] = PodFeed,
        recorder: JobRecorder | None = None,
    ) -> None:
        self.hook, self.identity, self.settings, self.log = hook, identity, settings, log
        self._build_manifest = manifest if callable(manifest) else (lambda: manifest)
        self._manifest: dict[str, Any] | None = None
        self._kind: str | None = None
        #: The summary, once the job succeeded (the XCom ``return_value``).
        self.summary: dict[str, Any] | None = None
        #: The job at its end, as the verdict judged it (None before, or when the try ended otherwise).
        self.final_job: dict[str, Any] | None = None
        #: The exception the try ended with (the verdict, a deadline, a deletion...); None: none (yet).
        self.error: BaseException | None = None
        self._recorder = recorder
        self._progress = TryProgress()  # where the try is, the job it holds, the end it recorded
        self._earlier: Reuse | None = None  # what earlier_success found: an earlier try's success, maybe this try's
        self._take_up = TakeUp(hook, identity, log)
        self._end = ending.TryEnd(
            hook,
            identity,
            settings.on_finish,
            log,
            recorder=recorder,
            progress=self._progress,
            kind=lambda: self.kind,
            seen_pods=lambda: list(self._sync.seen_pods.values()),
        )
        self._sync = SynchronousWait(
            hook,
            settings,
            log,
            kind=lambda: self.kind,
            watch=watch,
            follower=follower,
            pod_feed=pod_feed,
            stopped_by_airflow=lambda: self._progress.stopped_by_airflow,
            on_seen=self._end.saw,
            record_seen=self._end.seen,
            record_due_in=lambda: self._recorder.seen_due_in() if self._recorder is not None else None,
        )

    @property
    def manifest(self) -> dict[str, Any]:
        """The job this try sends (built on first use)."""
        if self._manifest is None:
            self._manifest = self._build_manifest()
            self._kind = self._manifest["kind"]
        return self._manifest

    @property
    def kind(self) -> str:
        """The job's kind: the manifest's, or the job's (a resumed task that did not build its manifest)."""
        return self._kind or self.manifest["kind"]

    @property
    def job(self) -> dict[str, Any] | None:
        """The job this try created or attached to, until its cleanup; None before (and after)."""
        return self._progress.job

    @job.setter
    def job(self, job: dict[str, Any]) -> None:
        self._progress.take_up(job)
        self._kind = job.get("kind") or self._kind

    @property
    def external_id(self) -> dict[str, Any]:
        """The job's identity as ``task_state_store`` keeps it: ``{name, namespace, uid}``."""
        meta = self._progress.held()["metadata"]
        return {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")}

    # ---- 1. take up the job --------------------------------------------------------------------------

    def create_or_attach(self) -> dict[str, Any]:
        """Create this try's job, or attach to / replace the one of that name this task instance left
        (:meth:`~airflow_trainjob.operators.take_up.TakeUp.create_or_attach`, which says what it raises); record it.

        :returns: the job, as created or attached to."""
        settings = self.settings
        self.job = job = self._take_up.create_or_attach(
            self.manifest, self.kind, reattach_on_restart=settings.reattach_on_restart, earlier=self._earlier
        )
        ending.record_start(self._recorder, self.identity, job, self._manifest)
        return job

    def earlier_success(self) -> dict[str, Any] | None:
        """The success of an earlier try's job, returned as this try's when the records say so (called first;
        :meth:`TakeUp.earlier_success <airflow_trainjob.operators.take_up.TakeUp.earlier_success>` says when).

        :returns: the summary (the XCom ``return_value``), or None: this try trains (creates or attaches as usual).
        :raises ApiException: the job could not be read (not a 404): the retry decides again."""
        found = self._take_up.earlier_success(self._recorder, lambda: self.manifest)
        if found is None:
            return None
        self._earlier, job = found
        if job is not None and not family_of(job["kind"]).is_succeeded(job.get("status")):
            return None  # its try was lost while it ran: followed as usual (a failed one is replaced)
        return self._return_earlier(self._earlier, job)

    def _return_earlier(self, decision: Reuse, job: dict[str, Any] | None) -> dict[str, Any]:
        """Return the earlier try's success as this try's (``job``: as read now, or None when gone): say so, record
        it, clean up the job if it is still there."""
        if job is not None:
            self.job = job
        summary = self.summary = self._end.reused(with_summary(decision, job), job, self.identity.try_number)
        self._end.clean_up("succeeded")
        return summary

    def reconnect(self, external_id: Mapping[str, Any]) -> str:
        """Take up the job an earlier try stored in ``task_state_store`` (:meth:`TakeUp.reconnect
        <airflow_trainjob.operators.take_up.TakeUp.reconnect>`), and record it unless it failed (it is replaced).

        :param external_id: the stored identity, ``{name, namespace, uid}`` (see :attr:`external_id`).
        :returns: its phase, :data:`JOB_GONE` or :data:`JOB_NOT_REUSED` (unless :meth:`earlier_success`, which runs
            first, made it this try's result: then ``Succeeded``, and :meth:`result` returns it)."""
        _ = self.manifest  # built first: the task's rendered fields show it, and the kind comes from it
        job, status = self._take_up.reconnect(external_id, self.kind, self._earlier)
        if job is not None:
            self.job = job
            # A failed one is replaced: its successor is recorded.
            if not family_of(self.kind).is_failed(job.get("status")):
                ending.record_start(self._recorder, self.identity, job, self._manifest)
        return status

    # ---- 2. wait (synchronous), verdict, record, cleanup -------------------------------------------------

    def wait(self, external_id: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Follow the job to its end, give the verdict, and clean up on every way out.

        :param external_id: the stored job, read when neither :meth:`create_or_attach` nor :meth:`reconnect` ran.
        :returns: the summary (:func:`job_summary`).
        :raises AirflowFailException, TrainingJobError: the job failed (see :func:`~airflow_trainjob.hooks.evidence.failure_exception`).
        :raises TrainingJobTimeoutError: a deadline passed (the job is deleted).
        :raises JobDeletedError: the job was deleted or replaced outside this task before it finished.
        :raises TrainingJobStoppedError: :meth:`kill` ran (Airflow stopped the task).
        """
        manifest = self.manifest
        self.job = job = self._take_up.require(self._progress.job, external_id, self.kind)
        ref = job_ref(job)
        self._progress.start_waiting()

        def follow() -> tuple[dict[str, Any], Iterable[dict[str, Any]]]:
            followed = self._take_up.follow(job, self.kind)  # reconnected through task_state_store: followed now
            self._progress.hold(followed)
            final = self._sync.follow_to_end(ref, manifest, followed)
            self._end.saw(final)
            self._sync.finish(final)
            return final, self._sync.seen_pods.values()

        return self._judged(ref, follow, on_error=self._sync.stop)

    def _judged(
        self,
        ref: str,
        judge: Callable[[], tuple[dict[str, Any], Iterable[dict[str, Any]]]],
        on_error: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """The verdict on the job at its end (``judge()``: the job and its pods, or raises), the try's end recorded
        and the job cleaned up on every way out (``on_error`` first, when it raises); returns the summary."""
        outcome = "killed"
        try:
            final, pods = judge()
            self.final_job = final
            outcome = "failed" if not family_of(final["kind"]).is_succeeded(final.get("status")) else outcome
            summary = self.summary = ending.verdict(
                self.hook, self.log, ref, final, pods, self.settings.log_tail_lines, self._sync.early_tails
            )
        except BaseException as e:
            self.error = redact_error(e)
            if on_error is not None:
                on_error()
            self._end.record(e, summary=self.summary)
            self._end.clean_up(outcome, keep_verdict=True)
            raise
        self._end.record(None, summary=self.summary)
        self._end.clean_up("succeeded")
        return summary

    # ---- 3. the result -----------------------------------------------------------------------------

    def result(self) -> dict[str, Any]:
        """The summary :meth:`wait` returned (``get_job_result`` follows ``poll_until_complete``); or, when
        :meth:`reconnect` found an earlier try's job succeeded and :meth:`earlier_success` made it this try's result,
        that job's summary, with the cleanup its try did not live to do.

        :raises TrainingJobError: neither happened in this run."""
        if self.summary is not None:
            return self.summary
        job, earlier = self._progress.job, self._earlier
        if job is not None and earlier is not None and is_earlier_result(job, earlier):
            return self._return_earlier(earlier, job)
        raise TrainingJobError("no summary: wait() comes first")

    # ---- deferrable: the trigger, then its event ------------------------------------------------

    def trigger(self) -> TrainingJobTrigger:
        """The trigger that waits for this run's job (:func:`~airflow_trainjob.operators.resume.trigger_for`)."""
        metadata, manifest = self._progress.held()["metadata"], lambda: self.manifest
        return resume.trigger_for(self.settings, self.identity, self.kind, metadata, manifest)

    def complete(self, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: the same verdict, messages and cleanup as :meth:`wait`.

        :param event: the trigger's event payload (see :class:`TrainingJobTrigger`).
        :returns: the summary. Raises as :meth:`wait` does; ``TrainingJobError`` with the event's message when
            the trigger could not watch a job that is still running (the job is deleted)."""
        metadata = lambda: self.manifest["metadata"]
        event, job, live = resume.event_job(self.hook, self.identity, self.kind, metadata, event)
        if event["outcome"] == DELETED or job is None:
            error = self.error = redact_error(JobDeletedError(event["message"]))
            self._end.record(error, job, summary=None, look=False)  # gone: its last state is the event's
            raise error
        self.job = job if live else resume.current_job(self.hook, self.identity, job, self.log)
        if self._recorder is not None:
            self._recorder.took_over(event.get("progress"))  # the trigger's: the triggerer has no store to write
        self._end.saw(self._progress.held())
        self._progress.start_waiting()
        job = self._progress.held()

        def end() -> tuple[dict[str, Any], list[dict[str, Any]]]:
            number, timeout = self.identity.try_number, self._sync.timeout
            pods = resume.event_end(self.hook, self.log, job, event, self.settings, try_number=number, timeout=timeout)
            self._sync.saw(pods)
            self._sync.read_before(event.get("tails"))  # the trigger's: the failed pods may be gone with their logs
            return job, pods

        return self._judged(job_ref(job), end)

    @property
    def last_known_job(self) -> dict[str, Any] | None:
        """The job as this try last knew it: at its end (:attr:`final_job`), else as the wait (or the trigger's event)
        last showed it, else as taken up; None when the try holds none (read by the task's OpenLineage facets)."""
        return self.final_job or self._end.last_seen or self._progress.job

    # ---- stopped by Airflow ------------------------------------------------------------------------

    def kill(self) -> None:
        """Airflow stopped the task (marked failed/success, cleared, timed out, worker shutdown): end the wait as
        stopped, stop following the log, delete the job (unless a later try follows it now)."""
        self._progress.stop()
        self._sync.stop()
        self._end.record(None, summary=self.summary, wait_seconds=KILL_WRITE_SECONDS)
        self._end.clean_up("killed")

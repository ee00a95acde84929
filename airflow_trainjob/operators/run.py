"""``TrainingJobRun``: one try of a :class:`~airflow_trainjob.operators.training_job.TrainingJobOperator` task,
from the job's creation to its XCom summary.

The operator checks its parameters and builds the manifest; what happens to the job during a try happens here,
in one object per try. The operator's entry points build it (``TrainingJobOperator._run_for``: a new run when the
context names another try) and call it in this order:

First, in both modes (``durable``, the default): ``execute`` -> :meth:`TrainingJobRun.earlier_success`: when the
records say an earlier try of the same series (no clear since) saw its job succeed, the try returns that summary and
creates nothing (see :mod:`~airflow_trainjob.domain.earlier_success`); else it goes on:

Synchronous (``execute`` -> Airflow's ``ResumableJobMixin.execute_resumable``):

1. ``submit_job`` -> :meth:`TrainingJobRun.create_or_attach`, then :attr:`~TrainingJobRun.external_id`: create the
   job; on 409 attach to this try's job, or to an earlier try's running one (``reattach_on_restart``), or replace
   one that has finished or is being deleted; when the job vanished between the 409 and the read, create again.
   *Or*, when ``task_state_store`` holds an earlier try's job, ``get_job_status`` ->
   :meth:`TrainingJobRun.reconnect` (its phase, :data:`JOB_GONE`, or :data:`JOB_NOT_REUSED`); Airflow then
   reconnects (step 2), or, for a failed, gone or not reused job, submits (step 1) after all.
2. ``poll_until_complete`` -> :meth:`TrainingJobRun.wait`: record on the job that this try follows it, follow its
   pods (:class:`~airflow_trainjob.watching.job_watch.PodFeed`) and the lead replica's log, wait by
   :class:`~airflow_trainjob.watching.job_watch.JobWatch` (the deadlines of
   :mod:`~airflow_trainjob.domain.deadlines`, API outages ridden out for :data:`API_OUTAGE_TOLERANCE`), stop the pods the
   user's ``cleanPodPolicy`` stops at the end, give the verdict (:mod:`~airflow_trainjob.domain.verdict`,
   :mod:`~airflow_trainjob.domain.conditions`), clean up; returns the summary.
3. ``get_job_result`` -> :meth:`TrainingJobRun.result`: the summary of step 2.

Deferrable:

1. ``execute`` -> :meth:`TrainingJobRun.create_or_attach` (as above), then :meth:`TrainingJobRun.trigger`, which
   the operator defers to.
2. ``execute_complete`` -> :meth:`TrainingJobRun.complete` with the trigger's event: the verdict, the rest of the
   lead replica's log (what the trigger did not copy while it waited), cleanup; returns the summary.

At any time, ``on_kill`` -> :meth:`TrainingJobRun.kill`: the wait ends as "stopped by Airflow", and the job is
deleted if this try still follows it.

The try's record (:mod:`~airflow_trainjob.operators.recorder`, when the context has a ``task_state_store``) is written when
step 1 takes up the job (``create_or_attach``, or ``reconnect`` to a job that is not ``Failed``), as the synchronous
wait sees the job change (its last sight), and once more when the try ends, by whichever way out comes first, before
the cleanup removes anything: the job, its pods and their events as they were then, and after a success the summary
returned. A try that returns an earlier try's success writes one record, naming that try (``reused_from_try``).

Cleanup (the held ``cleanPodPolicy``, ``on_finish``, the released ``runPolicy``) runs once per run, on every way
out of :meth:`~TrainingJobRun.wait`, :meth:`~TrainingJobRun.complete` and :meth:`~TrainingJobRun.earlier_success`,
or in :meth:`~TrainingJobRun.kill`, whichever comes first. After a verdict that is an exception, a failed cleanup is
logged and the verdict raised; after a success it is raised (the retry returns that success and finishes it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.constants import GROUP, JOB_KINDS
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.cleanup_hold import pods_left, release_patch, user_run_policy
from airflow_trainjob.domain.deadlines import (
    Deadlines,
    QueueState,
    queue_state,
)
from airflow_trainjob.domain.earlier_success import Reuse, StartOver, decide, reuse_lines
from airflow_trainjob.domain.failures import container_ends, pending_failures, quoted_tails
from airflow_trainjob.domain.lead_log import (
    LOG_NOT_THERE,
    SECRET_MARK,
    LeadLogCopy,
    LogCursor,
    cursor_on_job,
    quote_log,
    secret_spans,
    write_lines,
)
from airflow_trainjob.domain.lifecycle import (
    Finished,
    Gone,
    JobWait,
    TimedOut,
    explained_timeout,
    judge_gone,
    pods_stopped_at_terminal,
)
from airflow_trainjob.domain.ownership import (
    ANNOTATION_FOLLOWED_BY_TRY,
    TaskInstanceIdentity,
    created_by_try,
    following_try,
)
from airflow_trainjob.domain.params import RunSettings
from airflow_trainjob.domain.pods import is_active, owned_by, pods_to_clean, restart_counts
from airflow_trainjob.domain.records import JobRecord, TrySeries, outcome_of, spec_digest
from airflow_trainjob.domain.verdict import job_ref
from airflow_trainjob.exceptions import (
    JobDeletedError,
    JobNotOwnedError,
    TrainingJobError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.families import kubeflow_v1
from airflow_trainjob.hooks.api_errors import RAISED_ERRORS, one_line
from airflow_trainjob.hooks.evidence import announced_end, failure_exception, read_tails
from airflow_trainjob.hooks.retries import is_transient
from airflow_trainjob.operators.recorder import KILL_WRITE_SECONDS, JobRecorder
from airflow_trainjob.triggers.args import TriggerArgs
from airflow_trainjob.triggers.events import DELETED, ERROR, FINISHED, TIMED_OUT
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from airflow_trainjob.watching.job_watch import JobWatch, PodFeed
from airflow_trainjob.watching.lead_log_follower import LeadLogFollower

#: Status of a stored job that no longer exists as this task instance's (deleted or replaced).
JOB_GONE = "Gone"
#: Status of a stored job that succeeded under an earlier try whose success is not this try's result (see
#: :meth:`TrainingJobRun.earlier_success`): the task was cleared since, or no record says it was not.
JOB_NOT_REUSED = "Succeeded, not this try's result"
#: Seconds to wait for a replaced job to be gone before creating its successor.
REPLACE_TIMEOUT = 120.0
#: Seconds between two reads of a replaced job while it is being deleted.
REPLACE_POLL_SECONDS = 1.0
#: Seconds between two LISTs of a waiting job's pods while watching them fails (refused, e.g. a Role without ``watch``
#: on pods, or failing again and again); while the watch works, every change of a pod is seen as it happens.
POD_LOOK_SECONDS = 60.0
#: Seconds the status polling rides out an API that keeps failing transiently (an apiserver restart, a long
#: run of 5xx/resets) after each call's own retries are spent, before the task fails with the last error.
API_OUTAGE_TOLERANCE = 300.0
#: Seconds the end of the task waits for the pods it removed to be gone (their containers stopped and the pods
#: removed by the kubelet): above the default ``terminationGracePeriodSeconds`` (30 s), after which the kubelet kills
#: a container that ignores SIGTERM. A pod still there then is named in a warning; its deletion stands.
PODS_GONE_SECONDS = 60.0
#: Seconds between the end of the task's LISTs of the pods it waits for: the first, doubled up to the last.
PODS_GONE_POLL_SECONDS = (0.2, 1.0)


def job_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """The task's XCom ``return_value``: kind, name, namespace, conditions, replicaStatuses, startTime,
    completionTime, duration (seconds, None until both times are known). JSON-safe.

    :param job: the job as last read, an API JSON dict (``status.startTime``, ``status.completionTime``...).
    """
    status = job.get("status") or {}
    start, end = status.get("startTime"), status.get("completionTime")
    duration = None
    if start and end:
        duration = (
            datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
        ).total_seconds()
    return {
        "kind": job["kind"],
        "name": job["metadata"]["name"],
        "namespace": job["metadata"]["namespace"],
        "conditions": status.get("conditions") or [],
        "replicaStatuses": status.get("replicaStatuses") or {},
        "startTime": start,
        "completionTime": end,
        "duration": duration,
    }


def _marked_secrets(text: str) -> str:
    """``text`` with each secret the task's masker knows replaced by :data:`~airflow_trainjob.domain.lead_log.SECRET_MARK`
    (Airflow's ``redact``)."""
    from airflow.providers.common.compat.sdk import redact

    redacted = redact(text, replacement=SECRET_MARK)
    return redacted if isinstance(redacted, str) else text


def _seconds_until_ttl(job: Mapping[str, Any], ttl: int) -> float | None:
    """Seconds until ``completionTime + ttl`` (negative once passed); None without a completionTime."""
    done = ((job.get("status") or {}).get("completionTime")) or ""
    try:
        finished = datetime.fromisoformat(done.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (finished - datetime.now(timezone.utc)).total_seconds() + ttl


class TrainingJobRun:
    """One try of a training job task: create or attach, wait, verdict, cleanup, summary (see the module's
    docstring for the order the operator calls them in).

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook` (or anything with its methods).
    :param identity: the task instance and try this run is for.
    :param settings: the operator's parameters that govern the try.
    :param manifest: the job to create, or a callable that builds it (the operator's checks, input notes and
        ``job_name``/``job_namespace`` XComs); called once, when the run first needs it — never for a deferred
        task's resume unless the trigger could not tell the job's state.
    :param log: the task's logger.
    :param watch: builds the watch of the synchronous wait: called as
        ``watch(hook, job, poll_interval=..., outage_tolerance=..., log=...)``, returns an object whose
        ``follow(look_within)`` yields :class:`~airflow_trainjob.watching.job_watch.Seen`; default :class:`JobWatch`.
    :param follower: builds the lead replica's log follower: ``follower(hook, kind, name, namespace, log, pods=...)``
        (``pods``: a callable returning the pods as the wait last saw them), a thread with ``start``, ``finish``,
        ``stop`` and ``pods_changed``; default :class:`LeadLogFollower`.
    :param pod_feed: builds what follows the job's pods while the synchronous wait runs:
        ``pod_feed(hook, job, on_change=..., poll_interval=..., log=...)``, a thread with ``start``, ``stop``,
        ``pods`` and ``look``; default :class:`~airflow_trainjob.watching.job_watch.PodFeed` (a watch).
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
        self.hook = hook
        self.identity = identity
        self.settings = settings
        self.log = log
        self._build_manifest = manifest if callable(manifest) else (lambda: manifest)
        self._manifest: dict[str, Any] | None = None
        self._watch = watch
        self._follower_factory = follower
        self._pod_feed_factory = pod_feed
        self._pod_feed: Any = None
        self._last_restarts: dict[str, int] = {}  # pod name -> restartCount last seen (the pod feed's thread)
        self._kind: str | None = None
        self._job: dict[str, Any] | None = None
        #: The summary, once the job succeeded (the XCom ``return_value``).
        self.summary: dict[str, Any] | None = None
        self._follower: Any = None
        self._seen_pods: dict[str, dict[str, Any]] = {}  # pod name -> last seen, for the verdict
        self._stopped_by_airflow = False  # kill() ran: a deletion seen after it is this task's own
        self._recorder = recorder
        self._last_seen: dict[str, Any] | None = None  # the job as the wait or the event last showed it
        #: The outcome recorded of the try's end (once, by whichever way out comes first; see _record_end).
        self._recorded_end: str | None = None
        #: What earlier_success decided, when it found an earlier try whose job's success may be this try's result.
        self._earlier: Reuse | None = None
        #: The try's success is in its record (what a try that Airflow runs after it returns; see _cleanup).
        self._success_recorded = False

    # ---- what the run is about -------------------------------------------------------------------

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
        return self._job

    @job.setter
    def job(self, job: dict[str, Any] | None) -> None:
        self._job = job
        if job is not None and job.get("kind"):
            self._kind = job["kind"]

    def _taken(self) -> dict[str, Any]:
        """The job this run has taken up; the entry points' order (module docstring) guarantees there is one."""
        if self._job is None:
            raise RuntimeError("no job taken up yet: create_or_attach() or reconnect() comes first")
        return self._job

    @property
    def external_id(self) -> dict[str, Any]:
        """The job's identity as ``task_state_store`` keeps it: ``{name, namespace, uid}``."""
        meta = self._taken()["metadata"]
        return {"name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")}

    # ---- 1. create or attach -----------------------------------------------------------------------

    def create_or_attach(self) -> dict[str, Any]:
        """Create this try's job, or attach to / replace the one of that name this task instance left.

        :returns: the job, as created or attached to.
        :raises JobNotOwnedError: a job of that name is not this task instance's (left untouched).
        :raises TrainingJobError: a replaced job was not gone after :data:`REPLACE_TIMEOUT` seconds.
        """
        self.job = self._create_or_attach(self.manifest)
        job = self._taken()
        self._record_start(job)
        return job

    def earlier_success(self) -> dict[str, Any] | None:
        """The success of an earlier try's job, when Airflow runs the task instance again after it (see
        :mod:`~airflow_trainjob.domain.earlier_success`): the summary that try returned, without creating a job. Logs that
        the training is not repeated, and why; records this try as succeeded with that job; cleans the job up if it
        is still there (the cleanup that try did not live to finish). Called before anything else in a try.

        When the earlier try ended without a word and its job still runs, the try follows it as usual
        (:meth:`reconnect`, :meth:`create_or_attach`); should it succeed before they read it, they take it up as this
        try's result instead of replacing it (:meth:`_is_earlier_result`).

        :returns: the summary (the XCom ``return_value``), or None: this try trains (creates or attaches as usual).
        :raises ApiException: the job could not be read (not a 404): the retry decides again.
        """
        recorder = self._recorder
        if recorder is None or not recorder.enabled:
            return None
        records = recorder.records()
        if not any(r.try_number <= self.identity.try_number for r in records):
            return None  # a first try: its manifest is built when it is needed, as before
        decision = decide(records, self.identity.try_number, recorder.series, spec_digest(self.manifest))
        if isinstance(decision, StartOver):
            if decision.reason:
                self.log.info("%s", decision.reason)
            return None
        job = self._recorded_job(decision.source)
        if job is None and decision.summary is None:
            # Gone, and its try had not recorded its end when the records were read. A try records its end before
            # its cleanup deletes the job, so if that try (still running: Airflow ran this one beside it) deleted
            # it, the records say so now.
            decision = decide(recorder.records(), self.identity.try_number, recorder.series, spec_digest(self.manifest))
            if isinstance(decision, StartOver) or decision.summary is None:
                return None  # no word of how it ended: trains again
        self._earlier = decision
        if job is not None and not conditions.is_succeeded(job.get("status")):
            return None  # its try was lost while it ran: followed as usual (a failed one is replaced)
        return self._return_earlier(decision, job)

    def _return_earlier(self, decision: Reuse, job: dict[str, Any] | None) -> dict[str, Any]:
        """Return the earlier try's success as this try's: say so, record it, clean up the job if it is still there.

        :param decision: the reuse (:func:`~airflow_trainjob.domain.earlier_success.decide`).
        :param job: the job as read now, Succeeded, or None when it is gone (then ``decision`` has the summary).
        """
        summary = decision.summary
        if summary is None:
            if job is None:
                raise TrainingJobError("no job and no recorded summary to return")  # the callers rule it out
            summary = job_summary(job)
        decision = replace(decision, summary=summary)
        recorder = self._recorder
        series = recorder.series if recorder is not None else TrySeries()
        lines = reuse_lines(
            decision, self.identity.try_number, series, job_exists=job is not None, on_finish=self.settings.on_finish
        )
        for line in lines:
            self.log.info("%s", line)
        self.summary = summary
        if recorder is not None:
            self._recorded_end = "succeeded"  # this try's record is this one
            self._success_recorded = recorder.reused(decision.source, decision.succeeded_try, summary, job)
        if job is not None:
            self.job = job
            self._cleanup("succeeded")
        return summary

    def _is_earlier_result(self, job: Mapping[str, Any]) -> bool:
        """``job`` has succeeded and is the job of the earlier try whose success :meth:`earlier_success` found to be
        this try's result (its try ended without a word; the job succeeded since)."""
        earlier = self._earlier
        return (
            isinstance(earlier, Reuse)
            and conditions.is_succeeded(job.get("status"))
            and (job.get("metadata") or {}).get("uid") == earlier.source.uid
        )

    def _recorded_job(self, record: JobRecord) -> dict[str, Any] | None:
        """The job ``record`` names, if it is still in the cluster as this task instance's (same uid, our labels)."""
        try:
            job = self.hook.get_job(record.kind, record.name, record.namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        same = record.uid is None or job["metadata"].get("uid") == record.uid
        return job if same and self.identity.owns(job) else None

    def reconnect(self, external_id: Mapping[str, Any]) -> str:
        """Take up the job an earlier try stored in ``task_state_store``.

        :param external_id: the stored identity, ``{name, namespace, uid}`` (see :attr:`external_id`).
        :returns: its phase (see :func:`conditions.phase`), :data:`JOB_GONE` when it no longer exists as this
            task instance's job (deleted, or replaced by another object), or :data:`JOB_NOT_REUSED` when it succeeded:
            unless :meth:`earlier_success`, which runs first, found it to be this try's result (then ``Succeeded``,
            and :meth:`result` returns it).
        """
        _ = self.manifest  # built first: the task's rendered fields show it, and the kind comes from it
        job = self._stored_job(external_id)
        if job is None:
            return JOB_GONE
        if conditions.is_succeeded(job.get("status")) and not self._is_earlier_result(job):
            # The records of this series do not make it this try's result (earlier_success ran first): a clear, or no
            # record of the try says under which clear it ran. Replaced, as a failed one is.
            return JOB_NOT_REUSED
        self.job = job
        phase = conditions.phase(job.get("status"))
        if not conditions.is_failed(job.get("status")):  # a failed one is replaced: its successor is recorded
            self._record_start(job)
        return phase

    def _stored_job(self, external_id: Mapping[str, Any]) -> dict[str, Any] | None:
        """The job ``external_id`` names, if it is still this task instance's (same uid, our labels)."""
        try:
            job = self.hook.get_job(self.kind, external_id["name"], external_id["namespace"])
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        if job["metadata"].get("uid") != external_id.get("uid") or not self.identity.owns(job):
            return None
        return job

    def _require_job(self, external_id: Mapping[str, Any] | None) -> dict[str, Any]:
        """The job of this run; read from ``external_id`` when no step before took it up."""
        if self._job is None and external_id is not None:
            job = self._stored_job(external_id)
            if job is None:
                raise JobDeletedError(
                    f"{self.kind} {external_id['namespace']}/{external_id['name']} no longer "
                    "exists as this task instance's job"
                )
            self.job = job
        if self._job is None:
            raise TrainingJobError("no job to follow: create_or_attach or reconnect comes first")
        return self._job

    def _create_or_attach(self, manifest: dict[str, Any]) -> dict[str, Any]:
        meta = manifest["metadata"]
        name, namespace, kind = meta["name"], meta["namespace"], self.kind
        try:
            job = self.hook.create_job(manifest)
            self.log.info("Created %s %s/%s", kind, namespace, name)
            return job
        except ApiException as e:
            if e.status != 409:
                raise
        try:
            existing = self.hook.get_job(kind, name, namespace)
        except ApiException as e:
            if e.status != 404:
                raise
            return self.hook.create_job(manifest)  # deleted between our create and get
        identity = self.identity
        if not identity.owns(existing):
            raise JobNotOwnedError(
                f"A {kind} named {namespace}/{name} already exists and is not labelled as this task "
                f"instance's (dag_id={identity.dag_id}, task_id={identity.task_id}, run_id={identity.run_id}, "
                f"map_index={identity.map_index}); it was left untouched. Set another job_name or remove it."
            )
        # A finished job is replaced (this try starts over), unless it succeeded for this try: taken up, its end is
        # seen at once. That is this try's own job (Airflow ran this try's execute again, e.g. after its trigger fired;
        # even when the records cannot be read: a stale try's store reads come back empty), or the earlier try's job
        # whose success earlier_success found to be this try's result (it succeeded after earlier_success read it).
        taken_up = conditions.is_succeeded(existing.get("status")) and (
            identity.follows(existing) or self._is_earlier_result(existing)
        )
        finished = conditions.is_terminal(existing.get("status")) and not taken_up
        same_try = identity.created_by_this_try(existing)
        deleting = bool(existing["metadata"].get("deletionTimestamp"))  # e.g. by the killed try before this one
        if not finished and not deleting and (same_try or self.settings.reattach_on_restart):
            phase = conditions.phase(existing.get("status"))
            self.log.info(
                "Attaching to %s %s/%s, %s, created by try %s",
                kind,
                namespace,
                name,
                phase if conditions.is_terminal(existing.get("status")) else f"still {phase}",
                created_by_try(existing),
            )
            return self._follow(existing)
        self.log.info(
            "Replacing %s %s/%s left by an earlier try (%s%s)",
            kind,
            namespace,
            name,
            conditions.phase(existing.get("status")),
            ", being deleted" if deleting else "",
        )
        if not deleting:
            self.hook.delete_job(kind, name, namespace, uid=existing["metadata"]["uid"], propagation="Foreground")
        deadline = time.monotonic() + REPLACE_TIMEOUT
        while time.monotonic() < deadline:
            try:
                self.hook.get_job(kind, name, namespace)
            except ApiException as e:
                if e.status == 404:
                    job = self.hook.create_job(manifest)
                    self.log.info("Created %s %s/%s", kind, namespace, name)
                    return job
                raise
            time.sleep(REPLACE_POLL_SECONDS)
        raise TrainingJobError(
            f"{kind} {namespace}/{name} of an earlier try was not gone after {REPLACE_TIMEOUT:.0f} s"
        )

    def _follow(self, job: dict[str, Any]) -> dict[str, Any]:
        """Record on ``job`` that this try follows it now, so that an earlier try killed late (a clear that races
        this try) leaves it alone (see :meth:`TaskInstanceIdentity.follows`). Returns the job as it is now."""
        if self.identity.follows(job):
            return job
        meta = job["metadata"]
        patch = {
            "metadata": {
                "uid": meta.get("uid"),
                "annotations": {ANNOTATION_FOLLOWED_BY_TRY: str(self.identity.try_number)},
            }
        }
        try:
            return self.hook.patch_job(self.kind, meta["name"], meta["namespace"], patch)
        except Exception as e:
            self.log.warning(
                "Could not record on %s that try %d follows it (%s)",
                job_ref(job),
                self.identity.try_number,
                one_line(e),
            )
            return job

    # ---- 2. wait (synchronous), verdict, cleanup ---------------------------------------------------

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
        job = self._require_job(external_id)
        meta = job["metadata"]
        ref = f"{self.kind} {meta['namespace']}/{meta['name']}"
        outcome = "killed"
        try:
            job = self._job = self._follow(job)  # reconnected through task_state_store: this try follows it now
            final = self._last_seen = self._follow_to_end(ref, manifest, job)
            self._stop_pods_at_terminal(final)
            self._stop_follower(drain=True)
            self._stop_pod_feed()
            if not conditions.is_succeeded(final.get("status")):
                outcome = "failed"
                raise failure_exception(self.hook, final, self.settings.log_tail_lines, self._seen_pods.values())
            self.log.info("%s succeeded", ref)
            self.summary = job_summary(final)
        except BaseException as e:
            self._stop_follower()
            self._stop_pod_feed()
            self._record_end(e)
            self._cleanup_keeping_verdict(outcome)
            raise
        self._record_end(None)
        self._cleanup("succeeded")
        return self.summary

    def _follow_to_end(self, ref: str, manifest: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """Start following the job's pods (:class:`~airflow_trainjob.watching.job_watch.PodFeed`) and, with ``get_logs``,
        the lead replica's log, then wait by the job's watch (:meth:`_wait`); the caller stops both.

        :returns: the job's last state (see :meth:`_wait`)."""
        meta = job["metadata"]
        self._pod_feed = self._pod_feed_factory(
            self.hook, job, on_change=self._pods_changed, poll_interval=POD_LOOK_SECONDS, log=self.log
        )
        self._pod_feed.start()
        if self.settings.get_logs:
            self._follower = self._follower_factory(
                self.hook, JOB_KINDS[self.kind], meta["name"], meta["namespace"], self.log, pods=self._pods_seen
            )
            self._follower.start()
        return self._wait(ref, manifest, job)

    def _wait(self, ref: str, manifest: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """Follow the job by a watch until it is terminal; log each change; enforce the timeouts, each just after its
        time as it stands after the latest change (:meth:`JobWait.next_look`). What each state means is the
        lifecycle core's (:mod:`~airflow_trainjob.domain.lifecycle`); this drives it.

        :returns: the job's last state: terminal, also when the job was deleted right after it finished.
        :raises JobDeletedError: the job vanished while its last state seen was not terminal.
        :raises TrainingJobStoppedError: ... because this task's own ``on_kill`` deleted it.
        """
        settings = self.settings
        deadlines = Deadlines(
            started_at=time.time(),
            timeout=settings.timeout,
            startup_timeout=settings.startup_timeout,
            queue_timeout=settings.queue_timeout,
        )
        family = kubeflow_v1.family(self.kind)
        wait = JobWait(ref, deadlines, family, desired=family.desired_replicas(manifest))

        def next_look() -> float | None:
            # The next deadline as it stands now, or the next "still queued" line (the pods, a container restarted
            # in place, have their own watch), or when a sight of the job held back from the record may be written.
            record_in = self._recorder.seen_due_in() if self._recorder is not None else None
            return wait.next_look(time.time(), every=record_in)

        watch = self._watch(
            self.hook, job, poll_interval=settings.poll_interval, outage_tolerance=API_OUTAGE_TOLERANCE, log=self.log
        )
        for seen in watch.follow(next_look):  # asked before each watch request and after each state seen
            job = seen.job
            self._last_seen = job
            if seen.deleted or self._stopped_by_airflow:
                finished = self._final_state(ref, seen)
                self.log.info("%s", finished.deleted_line)
                return finished.job
            decision = wait.seen(job, time.time())
            if decision.lines.progress is not None:
                self.log.info("%s", decision.lines.progress)
            if decision.lines.queue is not None:
                (self.log.warning if decision.lines.queue_warns else self.log.info)("%s", decision.lines.queue)
            pods = self._look_at_pods()
            if isinstance(decision, Finished):
                return job
            self._record_seen(job)
            if isinstance(decision, TimedOut):
                status = job.get("status")
                raise self._timeout(job, decision.which, decision.seconds, ref, status, pods or [], decision.queue)
        raise JobDeletedError(f"{ref}: the watch ended before the job did")  # follow() ends only on a deletion

    def _final_state(self, ref: str, seen: Any) -> Finished[dict[str, Any]]:
        """The job is gone: its end as its last state says (:func:`~airflow_trainjob.domain.lifecycle.judge_gone`), the
        one seen, else the terminal condition the training operator announced in its events (a deletion the watch
        could not see, e.g. while polling).

        :raises TrainingJobStoppedError: this task's own ``on_kill`` deleted it.
        :raises JobDeletedError: it was deleted (or replaced) before it finished."""
        if self._stopped_by_airflow:
            raise TrainingJobStoppedError(
                f"{ref}: this task was stopped by Airflow (cleared, marked failed or success, or its worker shut "
                f"down) while the job was {conditions.phase(seen.job.get('status'))}; it deleted the job and its "
                "pods on the way out"
            )
        family = kubeflow_v1.family(self.kind)
        decision = judge_gone(ref, seen.job, family, replaced=seen.replaced)
        if isinstance(decision, Gone) and not decision.replaced:
            try:
                announced = announced_end(self.hook, seen.job)
            except Exception as e:
                self.log.warning("Could not read the events of %s (%s)", ref, one_line(e))
                announced = None
            if announced is not None:
                decision = judge_gone(ref, announced, family)
        if isinstance(decision, Gone):
            raise JobDeletedError(decision.message)
        return decision

    def _look_at_pods(self) -> list[dict[str, Any]] | None:
        """The job's pods now (see :meth:`PodFeed.look`: from their watch, else a LIST), or None when the API cannot
        say right now (the job's watch decides the wait)."""
        feed = self._pod_feed
        return None if feed is None else feed.look()

    def _pods_seen(self) -> list[dict[str, Any]] | None:
        """The job's pods as the pod feed last saw them, for the log follower; None before its first LIST."""
        feed = self._pod_feed
        return None if feed is None else feed.pods()

    def _pods_changed(self, pods: list[dict[str, Any]]) -> None:
        """The pod feed saw the pods (in its thread, or a look's; one call at a time): keep them for the verdict, warn
        of restarts, and tell the lead replica's log follower."""
        self._seen_pods = {**self._seen_pods, **{p["metadata"]["name"]: p for p in pods}}  # one rebinding: no lock
        self._last_restarts = self._warn_on_restarts(pods, self._last_restarts)
        follower = self._follower
        if follower is not None:
            follower.pods_changed()

    def _stop_pod_feed(self) -> None:
        feed, self._pod_feed = self._pod_feed, None
        if feed is not None:
            feed.stop()

    def _warn_on_restarts(self, pods: list[dict[str, Any]], before: dict[str, int]) -> dict[str, int]:
        kind = JOB_KINDS[self.kind]
        now = restart_counts(pods)
        for pod_name, count in now.items():
            if count > before.get(pod_name, 0):
                ends = [e for e in container_ends(pods, kind) if e.pod == pod_name and e.restarted]
                why = ends[-1].describe() if ends else pod_name
                self.log.warning("Replica restarted (restart %d): %s", count, why)
        return now

    def _timeout(
        self,
        job: dict[str, Any],
        which: str,
        seconds: float,
        ref: str,
        status: Any,
        pods: list,
        queue: QueueState | None = None,
    ) -> TrainingJobTimeoutError:
        """The error of a deadline passed, in :func:`~airflow_trainjob.domain.lifecycle.explained_timeout`'s words,
        with the evidence read here: the logs of the containers that keep a pod pending by failing (an init
        container's crash loop) and the job's last warning events."""
        kind = JOB_KINDS[self.kind]
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        tails = quoted_tails(
            read_tails(self.hook, namespace, pending_failures(pods, kind), self.settings.log_tail_lines)
        )
        try:
            warnings = [
                f"{e.get('reason')}: {e.get('message', '')}"
                for e in self.hook.list_events(namespace, {name})
                if e.get("type") == "Warning"
            ][-3:]
        except ApiException:
            warnings = []  # the timeout is the news; its explanation is best effort
        return TrainingJobTimeoutError(
            explained_timeout(
                ref,
                which,
                seconds,
                status=status,
                queue=queue,
                family=kubeflow_v1.family(self.kind),
                namespace=namespace,
                pods=pods,
                warnings=warnings,
                tails=tails,
            )
        )

    def _stop_pods_at_terminal(self, job: dict[str, Any]) -> None:
        """The job is terminal: stop the pods its user's ``cleanPodPolicy`` has the controller stop at that moment
        (:func:`~airflow_trainjob.domain.lifecycle.pods_stopped_at_terminal`), which the held policy kept running.
        Best effort: the cleanup at the end of the task deletes whatever is left."""
        meta = job["metadata"]
        try:
            pods = self.hook.list_job_pods(meta["name"], meta["namespace"])
            stop = pods_stopped_at_terminal(job_ref(job), job, pods, kubeflow_v1.family(self.kind))
            for pod in stop.pods:
                self.hook.delete_pod(pod["metadata"]["name"], meta["namespace"], uid=pod["metadata"].get("uid"))
        except Exception as e:
            self.log.warning(
                "Could not stop the running pods of %s now (%s); the cleanup will", job_ref(job), one_line(e)
            )
            return
        if stop.line is not None:
            self.log.info("%s", stop.line)

    # ---- 3. the result -----------------------------------------------------------------------------

    def result(self) -> dict[str, Any]:
        """The summary :meth:`wait` returned (``get_job_result`` follows ``poll_until_complete``); or, when
        :meth:`reconnect` found an earlier try's job succeeded and :meth:`earlier_success` made it this try's result,
        that job's summary, with the cleanup its try did not live to do.

        :raises TrainingJobError: neither happened in this run."""
        if self.summary is not None:
            return self.summary
        job, earlier = self._job, self._earlier
        if job is not None and isinstance(earlier, Reuse) and self._is_earlier_result(job):
            return self._return_earlier(earlier, job)
        raise TrainingJobError("no summary: wait() comes first")

    # ---- deferrable: the trigger, then its event ------------------------------------------------

    def trigger(self) -> TrainingJobTrigger:
        """The trigger that waits for this run's job, with the deadlines counted from now (see :mod:`admission`)."""
        settings = self.settings
        args = TriggerArgs.for_run(
            settings,
            kind=self.kind,
            metadata=self._taken()["metadata"],
            owner_labels=self.identity.instance_labels(),
            try_number=self.identity.try_number,
            started_at=time.time(),
            secret_spans=secret_spans(self.manifest, _marked_secrets) if settings.get_logs else None,
        )
        return TrainingJobTrigger(**args.kwargs())

    def complete(self, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after the trigger fired: the same verdict, messages and cleanup as :meth:`wait`.

        :param event: the trigger's event payload (see :class:`TrainingJobTrigger`).
        :returns: the summary. Raises as :meth:`wait` does; ``TrainingJobError`` with the event's message when
            the trigger could not watch a job that is still running (the job is deleted)."""
        job, live = event.get("job"), False
        if event["outcome"] == ERROR and job is None:
            # The trigger gave up on watching, not the job on running: read it here. A finished job still gets
            # its verdict; a running one is deleted below with the task's failure, like any synchronous error.
            job, live = self._read_own_job(event["message"]), True
            if conditions.is_terminal(job.get("status")):
                event = {**event, "outcome": FINISHED, "pods": []}
        if event["outcome"] == DELETED or job is None:
            error = JobDeletedError(event["message"])
            self._record_end(error, job, look=False)  # gone: its last state is the event's
            raise error
        self.job = self._last_seen = job if live else self._current(job)
        job = self._taken()
        outcome = "killed"
        try:
            if event["outcome"] == TIMED_OUT:
                name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
                which = event.get("which", "timeout")
                pods = self.hook.list_job_pods(name, namespace)
                if self.settings.get_logs:  # before the cleanup deletes the job and its pods
                    self._copy_rest_of_lead_log(job, pods, event.get("lead_log"))
                raise self._timeout(
                    job, which, self.settings.limit(which) or 0, job_ref(job), job.get("status"), pods, queue_state(job)
                )
            if event["outcome"] != FINISHED:
                raise TrainingJobError(event["message"])
            ref = job_ref(job)
            self.log.info("%s", event["message"])
            # The pods as they are now, and those the trigger sent of a failed job that are gone since.
            pods = self._list_pods_if_any(job)
            present = {p["metadata"]["name"] for p in pods}
            pods += [p for p in event.get("pods") or [] if p["metadata"]["name"] not in present]
            self._seen_pods.update((p["metadata"]["name"], p) for p in pods)
            if self.settings.get_logs:
                self._copy_rest_of_lead_log(job, pods, event.get("lead_log"))
            if not conditions.is_succeeded(job.get("status")):
                outcome = "failed"
                raise failure_exception(self.hook, job, self.settings.log_tail_lines, pods)
            self.log.info("%s succeeded", ref)
            self.summary = job_summary(job)
        except BaseException as e:
            self._record_end(e)
            self._cleanup_keeping_verdict(outcome)
            raise
        self._record_end(None)
        self._cleanup("succeeded")
        return self.summary

    def _current(self, job: dict[str, Any]) -> dict[str, Any]:
        """The job as the API has it now, if it is still the object the event is about: the event carries only its
        identity and status (see :class:`TrainingJobTrigger`); else (gone, replaced, unreadable) the event's."""
        meta = job["metadata"]
        try:
            current = self.hook.get_job(job["kind"], meta["name"], meta["namespace"])
        except ApiException as e:
            if e.status != 404:
                self.log.warning(
                    "Could not read %s again (%s): judging it by the trigger's event", job_ref(job), one_line(e)
                )
            return job
        except (HTTPError, OSError) as e:
            self.log.warning(
                "Could not read %s again (%s): judging it by the trigger's event", job_ref(job), one_line(e)
            )
            return job
        same = current["metadata"].get("uid") == meta.get("uid") or not meta.get("uid")
        return current if same and self.identity.owns(current) else job

    def _read_own_job(self, message: str) -> dict[str, Any]:
        """This task instance's job as the API has it now. :raises JobDeletedError: it is gone or not ours."""
        meta = self.manifest["metadata"]
        try:
            job = self.hook.get_job(self.kind, meta["name"], meta["namespace"])
        except ApiException as e:
            if e.status == 404:
                raise JobDeletedError(message) from e
            raise
        if not self.identity.owns(job):
            raise JobDeletedError(message)
        return job

    def _list_pods_if_any(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            return self.hook.list_job_pods(job["metadata"]["name"], job["metadata"]["namespace"])
        except ApiException as e:
            self.log.warning("Could not list the pods of %s: %s", job_ref(job), one_line(e))
            return []

    def _copy_rest_of_lead_log(
        self, job: dict[str, Any], pods: list[dict[str, Any]], copied: dict[str, Any] | None
    ) -> None:
        """Copy into the task log what the trigger did not copy of the lead replica's log: from the event's cursor (else
        the one the trigger recorded on the job for this try, else from the start), up to the size bound of
        :mod:`~airflow_trainjob.domain.lead_log`, read now, before the cleanup removes the pod.

        :param job: the job, as last read.
        :param pods: its pods, as listed now (and those the event kept of a failed job).
        :param copied: the event's ``lead_log``: the trigger's cursor (see :class:`TrainingJobTrigger`).
        """
        if copied and copied.get("quoted"):
            return  # an event of an earlier version of the trigger: it quoted the tail before stopping the lead's pod
        kind = JOB_KINDS[job["kind"]]
        if copied and "text" in copied:  # ... or carried the tail in the event
            quote_log(self.log, copied["pod"], copied["pod"], copied["text"], self.settings.log_tail_lines)
            return
        cursor = LogCursor.from_dict(copied) if copied else cursor_on_job(job, self.identity.try_number)
        copy = LeadLogCopy(kind, cursor, final=True, tail_lines=self.settings.log_tail_lines)
        uid, namespace = job["metadata"].get("uid"), job["metadata"]["namespace"]
        before = copy.cursor.lines
        write_lines(self.log, copy.look([p for p in pods if owned_by(p, uid)]))
        if before and copy.next_read() is not None:
            self.log.info(
                "The rest of the lead replica's log, after the %d lines copied while the task waited:", before
            )
        while (read := copy.next_read()) is not None:
            try:
                data = self.hook.read_timestamped_log(
                    read.pod,
                    namespace,
                    read.container,
                    previous=read.previous,
                    since_time=read.since_time,
                    limit_bytes=read.limit_bytes,
                    tail_lines=read.tail_lines,
                )
            except (*RAISED_ERRORS, ApiException, HTTPError, OSError) as e:  # a 400 comes as a JobRejectedError
                if getattr(e, "status", None) in LOG_NOT_THERE:
                    write_lines(self.log, copy.missing(read, one_line(e)))
                    continue
                self.log.warning("Could not read the rest of the lead replica's log: %s", one_line(e))
                return
            write_lines(self.log, copy.take(read, data))
        if copy.cursor.lines:
            self.log.info(
                "The lead replica's log: %d lines in this task log (%d copied while the task waited)%s",
                copy.cursor.lines,
                before,
                f"; cut at {copy.max_bytes} bytes" if copy.cursor.cut else "",
            )

    # ---- stopped by Airflow ------------------------------------------------------------------------

    def kill(self) -> None:
        """Airflow stopped the task (marked failed/success, cleared, timed out, worker shutdown): end the wait as
        stopped, stop following the log, delete the job (unless a later try follows it now)."""
        self._stopped_by_airflow = True
        self._stop_follower()
        self._stop_pod_feed()
        self._record_end(None, wait_seconds=KILL_WRITE_SECONDS)
        self._cleanup("killed")

    # ---- the record ----------------------------------------------------------------------------------

    def _record_start(self, job: dict[str, Any]) -> None:
        """Record that this try follows ``job`` now (created by it, or by an earlier try)."""
        if self._recorder is not None and self._recorder.enabled:
            attached = not self.identity.created_by_this_try(job)
            self._recorder.started(job, self._manifest, attached=attached)

    def _record_seen(self, job: dict[str, Any]) -> None:
        """Record the job as the wait sees it now, with its pods as last seen, when its phase or replica counts
        changed (:meth:`JobRecorder.seen`): a try killed where it cannot record its end (a clear) still says what it
        saw last."""
        if self._recorder is not None and not self._recorded_end:
            self._recorder.seen(job, list(self._seen_pods.values()))

    def _record_end(
        self,
        error: BaseException | None,
        job: dict[str, Any] | None = None,
        *,
        look: bool = True,
        wait_seconds: float | None = None,
    ) -> None:
        """Record how the try ended (once: the first way out that gets here; but a success seen after :meth:`kill`
        recorded the try as stopped is recorded over it), with the job, its pods and their events as they are now,
        read before the cleanup removes anything.

        :param error: the try's verdict (None: succeeded, or stopped when :meth:`kill` ran).
        :param job: the job as last known; default: as the wait or the event last showed it.
        :param look: read the job, its pods and events again; not when the verdict is that the API is failing
            (each read would ride out its retries) or the job is gone.
        :param wait_seconds: see :meth:`JobRecorder.ended`.
        """
        # A success is recorded as one even when Airflow stopped the try while it returned it (on_kill runs in a
        # signal handler; the try goes on until its process is killed): a retry of the same series returns it.
        seen_success = error is None and self.summary is not None
        outcome = "succeeded" if seen_success else outcome_of(error, stopped=self._stopped_by_airflow)
        if self._recorder is None or not self._recorder.enabled:
            return
        if self._recorded_end is not None and not (seen_success and self._recorded_end == "stopped"):
            return
        job = job or self._last_seen or self._job
        self._recorded_end = outcome
        pods: list[dict[str, Any]] = list(self._seen_pods.values())
        events: list[dict[str, Any]] = []
        if job is not None and look and not (error is not None and is_transient(error)):
            job, pods, events = self._final_look(job, pods)
        written = self._recorder.ended(
            outcome,
            job,
            pods,
            events,
            # An API error in one line (never its response's headers or body); a verdict as it is raised.
            message=None if error is None else one_line(error) if isinstance(error, ApiException) else str(error),
            # What a retry of the same series returns if Airflow runs the task again after this success.
            summary=self.summary if outcome == "succeeded" else None,
            wait_seconds=wait_seconds,
        )
        if outcome == "succeeded":
            self._success_recorded = written

    def _final_look(
        self, job: dict[str, Any], seen_pods: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
        """The job, its pods and their events as the API has them now, for the record; what was last seen of each
        where a read fails (best effort: the record must not hold up the verdict)."""
        meta = job["metadata"]
        name, namespace, uid = meta["name"], meta["namespace"], meta.get("uid")
        answering = True  # after a read that failed for want of an answer, the others are not tried

        def read(what: str, call: Callable[[], Any]) -> Any:
            nonlocal answering
            if not answering:
                return None
            try:
                return call()
            except ApiException as e:
                answering = not is_transient(e)
                if e.status != 404:  # a job gone (and its pods with it) is no news here
                    self.log.warning("Could not read %s for the try's record: %s", what, one_line(e))
            except (HTTPError, OSError) as e:
                answering = False
                self.log.warning("Could not read %s for the try's record: %s", what, one_line(e))
            return None

        current = read(job_ref(job), lambda: self.hook.get_job(self.kind, name, namespace))
        if current is not None and current["metadata"].get("uid") == uid:
            job = current
        listed = read(f"the pods of {job_ref(job)}", lambda: self.hook.list_job_pods(name, namespace))
        pods = [p for p in listed or [] if owned_by(p, uid)]
        present = {p["metadata"]["name"] for p in pods}
        pods += [p for p in seen_pods if p["metadata"]["name"] not in present]  # e.g. stopped at the end: as last seen
        involved = {name, *(p["metadata"]["name"] for p in pods)}
        events = read(f"the events of {job_ref(job)}", lambda: self.hook.list_events(namespace, involved)) or []
        return job, pods, events

    # ---- cleanup -----------------------------------------------------------------------------------

    def _remove_pods_left(
        self, job: dict[str, Any], clean_pod_policy: str, *, job_deleted: bool, listed: list[dict[str, Any]] | None
    ) -> None:
        """List the job's pods until none the cleanup removes is left (:func:`cleanup_hold.pods_left`), at most
        :data:`PODS_GONE_SECONDS`: delete those that appeared since ``listed`` (a controller whose cache lagged
        created a replica's pod after the terminal transition) and the running ones of a deleted job, and wait for the
        deleted ones to be gone, so that no pod of the job runs on once the task has ended. Best effort: every deletion
        is asked; a failed LIST or DELETE here is logged, never raised over the verdict.

        :param job: the job as the cleanup read it.
        :param clean_pod_policy: the user's ``cleanPodPolicy``.
        :param job_deleted: the cleanup deleted the job: its running pods go too.
        :param listed: the pods the cleanup listed (and deleted as the policy says) before; None: it listed none
            (a job still running, deleted whole).
        """
        meta = job["metadata"]
        name, namespace, uid = meta["name"], meta["namespace"], meta.get("uid")
        known = None if listed is None else {p["metadata"].get("uid") for p in listed}
        started = time.monotonic()
        pause, longest = PODS_GONE_POLL_SECONDS
        waited_for: set[str] = set()
        try:
            while True:
                pods = [p for p in self.hook.list_job_pods(name, namespace) if owned_by(p, uid)]
                left = pods_left(pods, clean_pod_policy, job_deleted=job_deleted)
                known = known if known is not None else {p["metadata"].get("uid") for p in pods}
                appeared = [p["metadata"]["name"] for p in left.to_delete if p["metadata"].get("uid") not in known]
                if appeared:
                    self.log.info(
                        "Deleting %s of %s too: created after the cleanup listed the job's pods",
                        ", ".join(appeared),
                        job_ref(job),
                    )
                for pod in left.to_delete:
                    self.hook.delete_pod(pod["metadata"]["name"], namespace, uid=pod["metadata"].get("uid"))
                known.update(p["metadata"].get("uid") for p in pods)
                if left.done:
                    break
                waited_for.update(p["metadata"]["name"] for p in left.to_delete + left.stopping)
                elapsed = time.monotonic() - started
                if elapsed >= PODS_GONE_SECONDS:
                    self.log.warning(
                        "Pods of %s still stopping %g s after the task deleted them: %s; their deletion stands "
                        "(the kubelet kills a container terminationGracePeriodSeconds after it was asked to stop)",
                        job_ref(job),
                        PODS_GONE_SECONDS,
                        ", ".join(p["metadata"]["name"] for p in left.to_delete + left.stopping),
                    )
                    return
                time.sleep(min(pause, PODS_GONE_SECONDS - elapsed))
                pause = min(pause * 2, longest)
        except Exception as e:
            self.log.warning("Could not make sure the pods of %s are gone (%s)", job_ref(job), one_line(e))
            return
        if waited_for:
            self.log.info(
                "Pods of %s stopped and gone after %.1f s: %s",
                job_ref(job),
                time.monotonic() - started,
                ", ".join(sorted(waited_for)),
            )

    def _success_unrecorded(self) -> bool:
        """There is a store, and this try's success is not in it (a try that Airflow has moved the task instance
        past cannot write: the API answers 404)."""
        return self._recorder is not None and self._recorder.enabled and not self._success_recorded

    def _stop_follower(self, drain: bool = False) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.finish() if drain else follower.stop()

    def _cleanup_keeping_verdict(self, outcome: str) -> None:
        """Clean up after a verdict that is an exception (failed, timed out, killed, an error). A cleanup that fails
        is logged, never raised in the verdict's place: it would turn a permanent failure into a retry that runs
        the job again. (After a success a failed cleanup is raised: the retry reconnects and finishes it.)"""
        job = self._job
        try:
            self._cleanup(outcome)
        except Exception as e:
            ref = job_ref(job) if job else "the job"
            self.log.error(
                "Could not clean up %s after the task's verdict (%s): the job and its pods may remain; "
                "the verdict below stands",
                ref,
                one_line(e),
            )

    def _cleanup(self, outcome: str) -> None:
        """Apply ``cleanPodPolicy`` to the job's pods, then ``on_finish`` to the job. A job that is
        still running is deleted whatever ``on_finish`` says. Except when Airflow stopped the task, the pods removed
        are gone when this returns (:meth:`_remove_pods_left`). Touches only this task instance's job."""
        job, self._job = self._job, None  # once: kill() and the wait's way out may both get here
        if job is None:
            return
        meta = job["metadata"]
        name, namespace, uid = meta["name"], meta["namespace"], meta.get("uid")
        kind, on_finish = self.kind, self.settings.on_finish
        try:
            current = self.hook.get_job(kind, name, namespace)
        except ApiException as e:
            if e.status == 404:
                return
            raise
        if current["metadata"].get("uid") != uid or not self.identity.owns(current):
            self.log.warning("Not cleaning up %s/%s: it is no longer the job this task created", namespace, name)
            return
        if outcome == "killed" and not self.identity.follows(current):
            self.log.warning(
                "Not deleting %s %s/%s: try %s of this task follows it now",
                kind,
                namespace,
                name,
                following_try(current),
            )
            return
        policy = user_run_policy(current)
        running = not conditions.is_terminal(current.get("status"))
        deleting = (
            running or on_finish == "delete_job" or (on_finish == "delete_succeeded_job" and outcome == "succeeded")
        )
        left_running: list[str] = []
        listed: list[dict[str, Any]] | None = None
        if not running:  # a running job goes whole, its pods after it: none dies before it (it would be restarted)
            listed = [p for p in self.hook.list_job_pods(name, namespace) if owned_by(p, uid)]
            cleaned = pods_to_clean(listed, policy.clean_pod_policy)
            for pod in cleaned:
                self.hook.delete_pod(pod["metadata"]["name"], namespace, uid=pod["metadata"].get("uid"))
            left_running = [p["metadata"]["name"] for p in listed if p not in cleaned and is_active(p)]
        if deleting and not running and outcome == "succeeded" and self._success_unrecorded():
            deleting = False
            self.log.warning(
                "Not deleting Succeeded %s %s/%s: its success could not be recorded in task_state_store, and the job "
                "is then what tells a try that Airflow runs after this one (its scheduler's race, a lost worker) that "
                "it succeeded: that try returns this success and deletes the job",
                kind,
                namespace,
                name,
            )
        if deleting:
            self.log.info(
                "Deleting %s %s/%s (%s)%s",
                kind,
                namespace,
                name,
                "not finished" if running else on_finish,
                f"; its pods still running stop with it: {', '.join(left_running)}" if left_running else "",
            )
            self.hook.delete_job(kind, name, namespace, uid=uid)
        if not self._stopped_by_airflow:  # on_kill has seconds before Airflow kills the process: deletions are asked
            self._remove_pods_left(current, policy.clean_pod_policy, job_deleted=deleting, listed=listed)
        if deleting:
            return
        patch = release_patch(current)
        if patch is not None:
            # The runPolicy as the user wrote it: the controller now applies ttlSecondsAfterFinished (counted from
            # completionTime) and cleanPodPolicy itself. The uid makes the patch a precondition: never a successor.
            patch["metadata"]["uid"] = uid
            try:
                self.hook.patch_job(kind, name, namespace, patch)
            except Exception as e:
                self.log.warning(
                    "Could not give %s %s/%s back its runPolicy (%s): it keeps cleanPodPolicy None and "
                    "no ttlSecondsAfterFinished",
                    kind,
                    namespace,
                    name,
                    one_line(e),
                )
        ttl = policy.ttl_seconds_after_finished
        fate = f"remove it with: kubectl delete {JOB_KINDS[kind].plural}.{GROUP} {name} -n {namespace}"
        if ttl is not None:
            left = _seconds_until_ttl(current, ttl)
            fate = f"the training operator deletes it {ttl} s after it finished (ttlSecondsAfterFinished)" + (
                f", in about {left:.0f} s" if left and left > 0 else ", now: that time has passed"
            )
        self.log.info(
            "Keeping %s %s %s/%s for inspection (on_finish=%r; its pods follow cleanPodPolicy %s); %s",
            conditions.phase(current.get("status")),
            kind,
            namespace,
            name,
            on_finish,
            policy.clean_pod_policy,
            fate,
        )

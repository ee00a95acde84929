"""Ending a try of a :class:`~airflow_trainjob.operators.run.TrainingJobRun`: its record, then its cleanup.

The try's record (:mod:`~airflow_trainjob.operators.recorder`, when the context has a ``task_state_store``) is
written when the try takes up its job (:func:`record_start`), and once more when the try ends, by whichever way out
comes first, before the cleanup removes anything (:func:`record_end`): the job, its pods and their events as they
were then (:func:`final_look`), and after a success the summary returned.

The cleanup (:class:`JobCleanup`) applies the held ``cleanPodPolicy`` to the job's pods, then ``on_finish`` to the
job, and gives a kept job its ``runPolicy`` back (see :mod:`~airflow_trainjob.domain.cleanup_hold`); except when
Airflow stopped the task, the pods it removed are gone when it returns. After a verdict that is an exception, a failed
cleanup is logged and the verdict raised; after a success it is raised (the retry returns that success and finishes
it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.domain.cleanup_hold import (
    FOLLOWED_BY_LATER_TRY,
    REPLACED,
    CleanupPlan,
    UserRunPolicy,
    cleanup_plan,
    pods_left,
)
from airflow_trainjob.domain.earlier_success import Reuse, reuse_lines
from airflow_trainjob.domain.ownership import TaskInstanceIdentity, following_try
from airflow_trainjob.domain.pods import is_active, pods_to_clean
from airflow_trainjob.domain.records import Outcome, TrySeries, outcome_of
from airflow_trainjob.domain.summary import job_summary
from airflow_trainjob.domain.verdict import job_ref
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.hooks.evidence import failure_exception
from airflow_trainjob.hooks.retries import is_transient
from airflow_trainjob.operators.recorder import JobRecorder
from airflow_trainjob.operators.try_state import TryProgress

#: Seconds the end of the task waits for the pods it removed to be gone (their containers stopped and the pods
#: removed by the kubelet): above the default ``terminationGracePeriodSeconds`` (30 s), after which the kubelet kills
#: a container that ignores SIGTERM. A pod still there then is named in a warning; its deletion stands.
PODS_GONE_SECONDS = 60.0
#: Seconds between the end of the task's LISTs of the pods it waits for: the first, doubled up to the last.
PODS_GONE_POLL_SECONDS = (0.2, 1.0)


def verdict(
    hook: Any,
    log: Any,
    ref: str,
    final: dict[str, Any],
    pods: Iterable[dict[str, Any]],
    tail_lines: int,
    known_tails: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The try's verdict on its job at its end: the summary of a job that succeeded (logged), else the failure.

    :param hook: the task's hook (a failure's evidence: its pods' log tails and events).
    :param log: the task's logger.
    :param ref: the job, as messages name it (``PyTorchJob ns/name``).
    :param final: the job at its end.
    :param pods: its pods as last seen.
    :param tail_lines: the lines of each failed replica's log the failure quotes (``log_tail_lines``).
    :param known_tails: failed runs' tails the wait read when it saw them fail (their pods may be gone now).
    :returns: :func:`~airflow_trainjob.domain.summary.job_summary` of the job (the XCom ``return_value``).
    :raises AirflowFailException, TrainingJobError: the job did not succeed
        (:func:`~airflow_trainjob.hooks.evidence.failure_exception`).
    """
    if not family_of(final["kind"]).is_succeeded(final.get("status")):
        raise failure_exception(hook, final, tail_lines, pods, known_tails)
    log.info("%s succeeded", ref)
    return job_summary(final, family_of(final["kind"]))


def record_start(
    recorder: JobRecorder | None,
    identity: TaskInstanceIdentity,
    job: dict[str, Any],
    manifest: dict[str, Any] | None,
) -> None:
    """Record that this try follows ``job`` now (created by it, or by an earlier try).

    :param recorder: the try's recorder; None: no record.
    :param identity: the task instance and try.
    :param job: the job taken up, an API JSON dict.
    :param manifest: the job this try sent, when it built one.
    """
    if recorder is not None and recorder.enabled:
        recorder.started(job, manifest, attached=not identity.created_by_this_try(job))


def record_end(
    recorder: JobRecorder | None,
    progress: TryProgress,
    job: dict[str, Any] | None,
    seen_pods: list[dict[str, Any]],
    *,
    error: BaseException | None,
    summary: dict[str, Any] | None,
    look: Callable[[dict[str, Any], list[dict[str, Any]]], tuple[Any, Any, Any]] | None,
    wait_seconds: float | None,
) -> None:
    """Record how the try ended (once, as ``progress`` says: the first way out that gets here; but a success seen
    after the stop was recorded is recorded over it), with the job, its pods and their events as they are now, read
    before the cleanup removes anything.

    :param recorder: the try's recorder; None: no record.
    :param progress: the try's state; it ends here (stopped by Airflow, or not).
    :param job: the job as last known, or None.
    :param seen_pods: its pods as last seen.
    :param error: the try's verdict (None: succeeded, or stopped).
    :param summary: the summary returned, after a success (then the try succeeded, even if stopped meanwhile).
    :param look: reads the job, its pods and events again (:func:`final_look`); None: not (the job is gone). Not
        either when the verdict is that the API is failing: each read would ride out its retries.
    :param wait_seconds: see :meth:`JobRecorder.ended`.
    """
    # A success is recorded as one even when Airflow stopped the try while it returned it (on_kill runs in a
    # signal handler; the try goes on until its process is killed): a retry of the same series returns it.
    seen_success = error is None and summary is not None
    outcome: Outcome = "succeeded" if seen_success else outcome_of(error, stopped=progress.stopped_by_airflow)
    if not progress.end(outcome) or recorder is None or not recorder.enabled:
        return
    pods: list[dict[str, Any]] = list(seen_pods)
    events: list[dict[str, Any]] = []
    if job is not None and look is not None and not (error is not None and is_transient(error)):
        job, pods, events = look(job, pods)
    written = recorder.ended(
        outcome,
        job,
        pods,
        events,
        # An API error in one line (never its response's headers or body); a verdict as it is raised.
        message=None if error is None else one_line(error) if isinstance(error, ApiException) else str(error),
        # What a retry of the same series returns if Airflow runs the task again after this success.
        summary=summary if outcome == "succeeded" else None,
        wait_seconds=wait_seconds,
    )
    if outcome == "succeeded":
        progress.success_written(written)


def final_look(
    hook: Any, kind: str, log: Any, job: dict[str, Any], seen_pods: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The job, its pods and their events as the API has them now, for the record; what was last seen of each
    where a read fails (best effort: the record must not hold up the verdict).

    :param hook: the task's hook.
    :param kind: the job's kind.
    :param log: the task's logger.
    :param job: the job as last known.
    :param seen_pods: its pods as last seen.
    """
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
                log.warning("Could not read %s for the try's record: %s", what, one_line(e))
        except (HTTPError, OSError) as e:
            answering = False
            log.warning("Could not read %s for the try's record: %s", what, one_line(e))
        return None

    current = read(job_ref(job), lambda: hook.get_job(kind, name, namespace))
    if current is not None and current["metadata"].get("uid") == uid:
        job = current
    listed = read(f"the pods of {job_ref(job)}", lambda: hook.list_job_pods(name, namespace, kind=kind))
    family = family_of(kind)
    pods = [p for p in listed or [] if family.owns_pod(job, p)]
    present = {p["metadata"]["name"] for p in pods}
    pods += [p for p in seen_pods if p["metadata"]["name"] not in present]  # e.g. stopped at the end: as last seen
    involved = {name, *(p["metadata"]["name"] for p in pods)}
    events = read(f"the events of {job_ref(job)}", lambda: hook.list_events(namespace, involved)) or []
    return job, pods, events


def seconds_until_ttl(job: dict[str, Any], ttl: int) -> float | None:
    """Seconds until ``completionTime + ttl`` (negative once passed); None without a completionTime.

    :param job: the job as last read (``status.completionTime``).
    :param ttl: ``ttlSecondsAfterFinished``, seconds.
    """
    done = ((job.get("status") or {}).get("completionTime")) or ""
    try:
        finished = datetime.fromisoformat(done.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (finished - datetime.now(timezone.utc)).total_seconds() + ttl


class JobCleanup:
    """Cleans up the job of one try at its end: its pods as ``cleanPodPolicy`` says, then the job as ``on_finish``
    says. Touches only this task instance's job.

    :param hook: the task's hook.
    :param identity: the task instance and try.
    :param on_finish: the operator's ``on_finish``.
    :param log: the task's logger.
    """

    def __init__(self, hook: Any, identity: TaskInstanceIdentity, on_finish: str, log: Any) -> None:
        self.hook = hook
        self.identity = identity
        self.on_finish = on_finish
        self.log = log

    def clean_up(
        self,
        job: dict[str, Any],
        kind: str,
        outcome: str,
        *,
        success_unrecorded: bool,
        stopped_by_airflow: Callable[[], bool],
    ) -> None:
        """Apply ``cleanPodPolicy`` to the job's pods, then ``on_finish`` to the job, as
        :func:`~airflow_trainjob.domain.cleanup_hold.cleanup_plan` says. A job that is still running is deleted
        whatever ``on_finish`` says. Except when Airflow stopped the task, the pods removed are gone when this returns
        (:meth:`remove_pods_left`). Touches only this task instance's job.

        :param job: the job the try took up, as last known.
        :param kind: its kind.
        :param outcome: ``succeeded``, ``failed`` or ``killed`` (a killed try's job is left to a later try that
            follows it).
        :param success_unrecorded: there is a store, and this try's success is not in it (the job is then kept).
        :param stopped_by_airflow: whether Airflow stopped the task by now (then the pods are not waited for).
        :raises ApiException: and the hook's other errors: a read or a deletion failed.
        """
        meta = job["metadata"]
        name, namespace, uid = meta["name"], meta["namespace"], meta.get("uid")
        try:
            current = self.hook.get_job(kind, name, namespace)
        except ApiException as e:
            if e.status == 404:
                return
            raise
        plan = cleanup_plan(
            current,
            held_uid=uid,
            owned=self.identity.owns(current),
            followed=self.identity.follows(current),
            outcome=outcome,
            on_finish=self.on_finish,
            success_unrecorded=success_unrecorded,
            family=family_of(kind),
        )
        if plan.leave_alone is not None:
            self._leave_alone(current, kind, plan.leave_alone)
            return
        listed, left_running = self._clean_pods(current, plan.policy) if plan.clean_pods_first else (None, [])
        if plan.keep_unrecorded_success:
            self.log.warning(
                "Not deleting Succeeded %s %s/%s: its success could not be recorded in task_state_store, and the job "
                "is then what tells a try that Airflow runs after this one (its scheduler's race, a lost worker) that "
                "it succeeded: that try returns this success and deletes the job",
                kind,
                namespace,
                name,
            )
        if plan.delete_job:
            self._delete_job(current, kind, plan.deletion_reason, left_running)
        if not stopped_by_airflow():  # on_kill has seconds before Airflow kills the process: deletions are asked
            self.remove_pods_left(current, plan.policy.clean_pod_policy, job_deleted=plan.delete_job, listed=listed)
        if not plan.delete_job:
            self._keep(current, kind, plan)

    def _leave_alone(self, job: dict[str, Any], kind: str, why: str) -> None:
        """Say why the cleanup does not touch ``job`` (:data:`REPLACED` or :data:`FOLLOWED_BY_LATER_TRY`)."""
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        if why == REPLACED:
            self.log.warning("Not cleaning up %s/%s: it is no longer the job this task created", namespace, name)
        elif why == FOLLOWED_BY_LATER_TRY:
            self.log.warning(
                "Not deleting %s %s/%s: try %s of this task follows it now", kind, namespace, name, following_try(job)
            )

    def _delete_job(self, job: dict[str, Any], kind: str, reason: str, left_running: list[str]) -> None:
        """Delete the job (``reason``: why, for the task log), naming its pods that still run and stop with it."""
        meta = job["metadata"]
        self.log.info(
            "Deleting %s %s/%s (%s)%s",
            kind,
            meta["namespace"],
            meta["name"],
            reason,
            f"; its pods still running stop with it: {', '.join(left_running)}" if left_running else "",
        )
        self.hook.delete_job(kind, meta["name"], meta["namespace"], uid=meta.get("uid"))

    def _clean_pods(self, job: dict[str, Any], policy: UserRunPolicy) -> tuple[list[dict[str, Any]], list[str]]:
        """Delete the finished job's pods that ``cleanPodPolicy`` removes; the pods listed, and the names of those
        left that still run."""
        meta, family = job["metadata"], family_of(job["kind"])
        found = self.hook.list_job_pods(meta["name"], meta["namespace"], kind=family.kind)
        listed = [p for p in found if family.owns_pod(job, p)]
        cleaned = pods_to_clean(listed, policy.clean_pod_policy)
        for pod in cleaned:
            self.hook.delete_pod(pod["metadata"]["name"], meta["namespace"], uid=pod["metadata"].get("uid"))
        return listed, [p["metadata"]["name"] for p in listed if p not in cleaned and is_active(p)]

    def _keep(self, job: dict[str, Any], kind: str, plan: CleanupPlan) -> None:
        """Keep the job: give it its ``runPolicy`` back, and say what becomes of it."""
        meta = job["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        if plan.release is not None:
            # The runPolicy as the user wrote it: the controller now applies ttlSecondsAfterFinished (counted from
            # completionTime) and cleanPodPolicy itself. The uid makes the patch a precondition: never a successor.
            try:
                self.hook.patch_job(kind, name, namespace, plan.release)
            except Exception as e:
                self.log.warning(
                    "Could not give %s %s/%s back its runPolicy (%s): it keeps cleanPodPolicy None and "
                    "no ttlSecondsAfterFinished",
                    kind,
                    namespace,
                    name,
                    one_line(e),
                )
        ttl, family = plan.policy.ttl_seconds_after_finished, family_of(kind)
        fate = f"remove it with: kubectl delete {family.resource.name} {name} -n {namespace}"
        if ttl is not None:
            left = seconds_until_ttl(job, ttl)
            fate = f"the training operator deletes it {ttl} s after it finished (ttlSecondsAfterFinished)" + (
                f", in about {left:.0f} s" if left and left > 0 else ", now: that time has passed"
            )
        # A family without a cleanup field (a TrainJob) says nothing of its pods: its controllers decide (a failed
        # Job deletes its active pods).
        field = family.cleanup_policy_field
        pods_fate = f"; its pods follow {field} {plan.policy.clean_pod_policy}" if field else ""
        self.log.info(
            "Keeping %s %s %s/%s for inspection (on_finish=%r%s); %s",
            family.phase(job.get("status")),
            kind,
            namespace,
            name,
            self.on_finish,
            pods_fate,
            fate,
        )

    def remove_pods_left(
        self, job: dict[str, Any], clean_pod_policy: str, *, job_deleted: bool, listed: list[dict[str, Any]] | None
    ) -> None:
        """List the job's pods until none the cleanup removes is left (:func:`cleanup_hold.pods_left`), at most
        :data:`PODS_GONE_SECONDS`: delete those that appeared since ``listed`` (a controller whose cache lagged
        created a replica's pod after the terminal transition) and the running ones of a deleted job, and wait for the
        deleted ones to be gone, so that no pod of the job runs on once the task has ended. Best effort: every deletion
        is asked; a failed LIST or DELETE here is logged, never raised over the verdict.

        :param job: the job as the cleanup read it (its kind says which pods are its:
            :meth:`~airflow_trainjob.domain.family.JobFamily.owns_pod`).
        :param clean_pod_policy: the user's ``cleanPodPolicy``.
        :param job_deleted: the cleanup deleted the job: its running pods go too.
        :param listed: the pods the cleanup listed (and deleted as the policy says) before; None: it listed none
            (a job still running, deleted whole).
        """
        meta = job["metadata"]
        name, namespace, family = meta["name"], meta["namespace"], family_of(job["kind"])
        known = None if listed is None else {p["metadata"].get("uid") for p in listed}
        started = time.monotonic()
        pause, longest = PODS_GONE_POLL_SECONDS
        waited_for: set[str] = set()
        try:
            while True:
                found = self.hook.list_job_pods(name, namespace, kind=family.kind)
                pods = [p for p in found if family.owns_pod(job, p)]
                left = pods_left(pods, clean_pod_policy, job_deleted=job_deleted)
                known = known if known is not None else {p["metadata"].get("uid") for p in pods}
                self._delete_left(job, left.to_delete, known)
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

    def _delete_left(self, job: dict[str, Any], pods: Sequence[Mapping[str, Any]], known: set[str | None]) -> None:
        """Delete ``pods``, saying which appeared after the cleanup listed the job's pods (not in ``known``, uids)."""
        appeared = [p["metadata"]["name"] for p in pods if p["metadata"].get("uid") not in known]
        if appeared:
            self.log.info(
                "Deleting %s of %s too: created after the cleanup listed the job's pods",
                ", ".join(appeared),
                job_ref(job),
            )
        for pod in pods:
            self.hook.delete_pod(pod["metadata"]["name"], job["metadata"]["namespace"], uid=pod["metadata"].get("uid"))


class TryEnd:
    """The end of one try, by whichever way out comes first: what the wait saw recorded as it goes, the try's end
    recorded once (:func:`record_end`), then its job cleaned up once (:class:`JobCleanup`).

    :param hook: the task's hook.
    :param identity: the task instance and try.
    :param on_finish: the operator's ``on_finish``.
    :param log: the task's logger.
    :param recorder: the try's recorder; None: no record.
    :param progress: the try's state (:class:`~airflow_trainjob.operators.try_state.TryProgress`).
    :param kind: the job's kind, read when needed.
    :param seen_pods: the job's pods as the wait last saw them, read when needed.
    """

    def __init__(
        self,
        hook: Any,
        identity: TaskInstanceIdentity,
        on_finish: str,
        log: Any,
        *,
        recorder: JobRecorder | None,
        progress: TryProgress,
        kind: Callable[[], str],
        seen_pods: Callable[[], list[dict[str, Any]]],
    ) -> None:
        self.hook, self.log, self.recorder, self.progress = hook, log, recorder, progress
        self._kind, self._seen_pods = kind, seen_pods
        self._cleanup = JobCleanup(hook, identity, on_finish, log)
        self._last_seen: dict[str, Any] | None = None

    def saw(self, job: dict[str, Any]) -> None:
        """Keep the job as the wait (or the trigger's event) last showed it: the try's end records it.

        :param job: the job, an API JSON dict.
        """
        self._last_seen = job

    @property
    def last_seen(self) -> dict[str, Any] | None:
        """The job as the wait (or the trigger's event) last showed it (:meth:`saw`); None before."""
        return self._last_seen

    def seen(self, job: dict[str, Any]) -> None:
        """Record the job as the wait sees it now, with its pods as last seen, when its phase or replica counts
        changed (:meth:`JobRecorder.seen`): a try killed where it cannot record its end (a clear) still says what it
        saw last.

        :param job: the job as the wait sees it, an API JSON dict.
        """
        if self.recorder is not None and not self.progress.end_recorded:
            self.recorder.seen(job, self._seen_pods())

    def record(
        self,
        error: BaseException | None,
        job: dict[str, Any] | None = None,
        *,
        summary: dict[str, Any] | None,
        look: bool = True,
        wait_seconds: float | None = None,
    ) -> None:
        """Record how the try ended, once (:func:`record_end`, which says the rest).

        :param error: the try's verdict; None: succeeded, or stopped.
        :param job: the job as last known; None: as last seen (:meth:`saw`), else as taken up.
        :param summary: the summary returned, after a success.
        :param look: read the job, its pods and events again first (:func:`final_look`); false: the job is gone.
        :param wait_seconds: see :meth:`JobRecorder.ended`.
        """
        final = functools.partial(final_look, self.hook, self._kind(), self.log) if look else None
        record_end(
            self.recorder,
            self.progress,
            job or self._last_seen or self.progress.job,
            self._seen_pods(),
            error=error,
            summary=summary,
            look=final,
            wait_seconds=wait_seconds,
        )

    def reused(self, decision: Reuse, job: dict[str, Any] | None, try_number: int) -> dict[str, Any]:
        """End the try as succeeded with an earlier try's success (:mod:`~airflow_trainjob.domain.earlier_success`):
        say why, and record it as this try's (once).

        :param decision: what :meth:`~airflow_trainjob.operators.take_up.TakeUp.earlier_success` found, with its
            summary (:func:`~airflow_trainjob.operators.take_up.with_summary`).
        :param job: the earlier try's job as read now; None: gone.
        :param try_number: this try's number.
        :returns: the summary that try returned (this try's XCom ``return_value``).
        """
        recorder, on_finish = self.recorder, self._cleanup.on_finish
        series = recorder.series if recorder is not None else TrySeries()
        for line in reuse_lines(decision, try_number, series, job_exists=job is not None, on_finish=on_finish):
            self.log.info("%s", line)
        summary = decision.summary
        assert summary is not None  # with_summary
        if self.progress.end("succeeded") and recorder is not None:  # this try's record is this one
            self.progress.success_written(recorder.reused(decision.source, decision.succeeded_try, summary, job))
        return summary

    def clean_up(self, outcome: str, *, keep_verdict: bool = False) -> None:
        """Clean up the job the try holds (:meth:`JobCleanup.clean_up`), once: ``kill()`` and the wait's way out may
        both get here.

        :param outcome: ``succeeded``, ``failed`` or ``killed``.
        :param keep_verdict: the try's verdict is an exception (failed, timed out, killed, an error): a cleanup that
            fails is logged, never raised in the verdict's place: it would turn a permanent failure into a retry that
            runs the job again. (After a success a failed cleanup is raised: the retry reconnects and finishes it.)
        """
        job = self.progress.let_go()
        if job is None:
            return
        recorder, progress = self.recorder, self.progress
        try:
            self._cleanup.clean_up(
                job,
                self._kind(),
                outcome,
                success_unrecorded=recorder is not None and recorder.enabled and not progress.success_recorded,
                stopped_by_airflow=lambda: progress.stopped_by_airflow,  # read when the cleanup gets there
            )
        except Exception as e:
            if not keep_verdict:
                raise
            self.log.error(
                "Could not clean up %s after the task's verdict (%s): the job and its pods may remain; "
                "the verdict below stands",
                job_ref(job),
                one_line(e),
            )

"""The synchronous wait of a :class:`~airflow_trainjob.operators.run.TrainingJobRun` (``poll_until_complete``): follow
the job by its watch, its pods by their feed and, with ``get_logs``, the lead replica's log, until the job is
terminal; log each change, enforce the deadlines, warn of restarts, stop the pods the user's ``cleanPodPolicy`` stops
at the end. What each state means is the lifecycle core's (:mod:`~airflow_trainjob.domain.lifecycle`); this drives it.

:class:`SynchronousWait` owns what only the wait uses (the pod feed, the log follower, the pods seen, the restart
counts) and is given what it reads of the run: no reference to the run itself.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from airflow_trainjob.domain.deadlines import Deadlines, QueueState
from airflow_trainjob.domain.failed_tails import TAILS_QUOTED, settled_tails
from airflow_trainjob.domain.failures import pending_failures, quoted_tails
from airflow_trainjob.domain.family import JobFamily
from airflow_trainjob.domain.lifecycle import (
    Finished,
    Gone,
    JobWait,
    TimedOut,
    explained_timeout,
    judge_gone,
    pods_stopped_at_terminal,
)
from airflow_trainjob.domain.params import RunSettings
from airflow_trainjob.domain.pods import restart_counts
from airflow_trainjob.domain.verdict import about_these_objects, job_ref
from airflow_trainjob.exceptions import JobDeletedError, TrainingJobStoppedError, TrainingJobTimeoutError
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.hooks.evidence import announced_end, read_tails

#: Seconds between two LISTs of a waiting job's pods while watching them fails (refused, e.g. a Role without ``watch``
#: on pods, or failing again and again); while the watch works, every change of a pod is seen as it happens.
POD_LOOK_SECONDS = 60.0
#: Seconds the status polling rides out an API that keeps failing transiently (an apiserver restart, a long
#: run of 5xx/resets) after each call's own retries are spent, before the task fails with the last error.
API_OUTAGE_TOLERANCE = 300.0


class SynchronousWait:
    """Follows one try's job to its end (:meth:`follow_to_end`), then stops what followed it (:meth:`stop`).

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook` (or anything with its methods).
    :param settings: the operator's parameters that govern the try (deadlines, ``poll_interval``, ``get_logs``,
        ``log_tail_lines``).
    :param log: the task's logger.
    :param kind: returns the job's kind (``PyTorchJob``...), read when needed: the run learns it late.
    :param watch: builds the job's watch: ``watch(hook, job, poll_interval=..., outage_tolerance=..., log=...)``,
        whose ``follow(look_within)`` yields :class:`~airflow_trainjob.watching.job_watch.Seen`.
    :param follower: builds the lead replica's log follower: ``follower(hook, family, name, namespace, log, pods=...)``
        (``pods``: returns the pods as the wait last saw them), a thread with ``start``, ``finish``, ``stop`` and
        ``pods_changed``.
    :param pod_feed: builds what follows the job's pods: ``pod_feed(hook, job, on_change=..., poll_interval=...,
        log=...)``, a thread with ``start``, ``stop``, ``pods`` and ``look``.
    :param stopped_by_airflow: returns whether Airflow stopped the try (``on_kill`` ran): a deletion seen after is
        the task's own.
    :param on_seen: called with each state of the job the watch shows (the run's last seen job).
    :param record_seen: called with the job at each state judged not finished (the try's record of what it saw).
    :param record_due_in: returns the seconds until a sight held back from the record may be written, or None.
    """

    def __init__(
        self,
        hook: Any,
        settings: RunSettings,
        log: Any,
        *,
        kind: Callable[[], str],
        watch: Callable[..., Any],
        follower: Callable[..., Any],
        pod_feed: Callable[..., Any],
        stopped_by_airflow: Callable[[], bool],
        on_seen: Callable[[dict[str, Any]], None],
        record_seen: Callable[[dict[str, Any]], None],
        record_due_in: Callable[[], float | None],
    ) -> None:
        self.hook, self.settings, self.log, self._kind = hook, settings, log, kind
        self._watch, self._follower_factory, self._pod_feed_factory = watch, follower, pod_feed
        self._stopped_by_airflow, self._on_seen = stopped_by_airflow, on_seen
        self._record_seen, self._record_due_in = record_seen, record_due_in
        self._pod_feed: Any = None
        self._follower: Any = None
        self._last_restarts: dict[str, int] = {}  # pod name -> restartCount last seen (the pod feed's thread)
        #: Pod name -> the pod as last seen (by the wait, or in the trigger's event), for the verdict and the record.
        self.seen_pods: dict[str, dict[str, Any]] = {}
        #: Failed run (:attr:`ContainerEnd.source`) -> the last lines of its log, read when the wait first saw it
        #: fail: a pod its controller deletes with the job's failure (a Job's pod restarting in place) takes its log
        #: with it, before the verdict could read it.
        self.early_tails: dict[str, str] = {}
        self._blank_reads: Counter[str] = Counter()  # source -> its early reads that came back blank

    def saw(self, pods: list[dict[str, Any]]) -> None:
        """Keep pods as last seen.

        :param pods: the job's pods, as the trigger's event shows them (a deferred try)."""
        self.seen_pods.update((p["metadata"]["name"], p) for p in pods)

    def read_before(self, tails: Mapping[str, str] | None) -> None:
        """Keep failed runs' tails read before the verdict: by the trigger, from its event (a deferred try).

        :param tails: the event's ``tails`` (source -> its last lines, masked); None: an event without them (an
            earlier version's trigger, or none read).
        """
        if tails:
            self.early_tails = {**tails, **self.early_tails}

    def follow_to_end(self, ref: str, manifest: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
        """Start following the job's pods (:class:`~airflow_trainjob.watching.job_watch.PodFeed`) and, with
        ``get_logs``, the lead replica's log, then wait by the job's watch (:meth:`_wait`); the caller stops both.

        :param ref: the job as the lines name it (``Kind namespace/name``).
        :param manifest: the job sent (its replicas are the ones the wait expects).
        :param job: the job as taken up.
        :returns: the job's last state (see :meth:`_wait`)."""
        meta = job["metadata"]
        self._pod_feed = self._pod_feed_factory(
            self.hook, job, on_change=self._pods_changed, poll_interval=POD_LOOK_SECONDS, log=self.log
        )
        self._pod_feed.start()
        if self.settings.get_logs:
            self._follower = self._follower_factory(
                self.hook, self._family(), meta["name"], meta["namespace"], self.log, pods=self._pods_seen
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
        family = self._family()
        deadlines = Deadlines(
            started_at=time.time(),
            family=family,
            timeout=settings.timeout,
            startup_timeout=settings.startup_timeout,
            queue_timeout=settings.queue_timeout,
        )
        wait = JobWait(ref, deadlines, family, desired=family.desired_replicas(manifest))

        def next_look() -> float | None:
            # The next deadline as it stands now, or the next "still queued" line (the pods, a container restarted
            # in place, have their own watch), or when a sight of the job held back from the record may be written.
            return wait.next_look(time.time(), every=self._record_due_in())

        watch = self._watch(
            self.hook, job, poll_interval=settings.poll_interval, outage_tolerance=API_OUTAGE_TOLERANCE, log=self.log
        )
        for seen in watch.follow(next_look):  # asked before each watch request and after each state seen
            job = seen.job
            self._on_seen(job)
            if seen.deleted or self._stopped_by_airflow():
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
                raise self.timeout(job, decision.which, decision.seconds, ref, status, pods or [], decision.queue)
        raise JobDeletedError(f"{ref}: the watch ended before the job did")  # follow() ends only on a deletion

    def _final_state(self, ref: str, seen: Any) -> Finished[dict[str, Any]]:
        """The job is gone: its end as its last state says (:func:`~airflow_trainjob.domain.lifecycle.judge_gone`), the
        one seen, else the terminal condition the training operator announced in its events (a deletion the watch
        could not see, e.g. while polling).

        :raises TrainingJobStoppedError: this task's own ``on_kill`` deleted it.
        :raises JobDeletedError: it was deleted (or replaced) before it finished."""
        if self._stopped_by_airflow():
            raise TrainingJobStoppedError(
                f"{ref}: this task was stopped by Airflow (cleared, marked failed or success, or its worker shut "
                f"down) while the job was {self._family().phase(seen.job.get('status'))}; it deleted the job and its "
                "pods on the way out"
            )
        family = self._family()
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

    def _family(self) -> JobFamily:
        """The job's family (its kind's adapter): the run learns the kind late."""
        return family_of(self._kind())

    def _pods_seen(self) -> list[dict[str, Any]] | None:
        """The job's pods as the pod feed last saw them, for the log follower; None before its first LIST."""
        feed = self._pod_feed
        return None if feed is None else feed.pods()

    def _pods_changed(self, pods: list[dict[str, Any]]) -> None:
        """The pod feed saw the pods (in its thread, or a look's; one call at a time): keep them for the verdict, warn
        of restarts, and tell the lead replica's log follower."""
        self.seen_pods = {**self.seen_pods, **{p["metadata"]["name"]: p for p in pods}}  # one rebinding: no lock
        self._last_restarts = self._warn_on_restarts(pods, self._last_restarts)
        self._read_early_tails(pods)
        follower = self._follower
        if follower is not None:
            follower.pods_changed()

    def _read_early_tails(self, pods: list[dict[str, Any]]) -> None:
        """Read the tail of each failed run first seen now, up to :data:`TAILS_QUOTED` runs in all (best effort: a
        log that cannot be read is left to the verdict; a blank one is read again at the pod's next state, a run
        restarted since read as ``previous``: :func:`~airflow_trainjob.domain.failed_tails.settled_tails`)."""
        lines, kept = self.settings.log_tail_lines, self.early_tails
        if not lines or not pods or len(kept) >= TAILS_QUOTED:
            return
        new = [e for e in self._family().container_ends(pods) if e.failed and e.source not in kept]
        if new:
            namespace = pods[0]["metadata"]["namespace"]
            read = settled_tails(read_tails(self.hook, namespace, new, lines, warn=False), self._blank_reads)
            self.early_tails = {**kept, **read}  # one rebinding: no lock

    def _warn_on_restarts(self, pods: list[dict[str, Any]], before: dict[str, int]) -> dict[str, int]:
        family = self._family()
        now = restart_counts(pods)
        for pod_name, count in now.items():
            if count > before.get(pod_name, 0):
                ends = [e for e in family.container_ends(pods) if e.pod == pod_name and e.restarted]
                why = ends[-1].describe() if ends else pod_name
                self.log.warning("Replica restarted (restart %d): %s", count, why)
        return now

    def timeout(
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
        container's crash loop) and the job's last warning events. Also the deferred try's (the trigger's event).

        :param job: the job as last seen.
        :param which: the deadline passed (``timeout``, ``startup_timeout``, ``queue_timeout``).
        :param seconds: that deadline, in seconds.
        :param ref: the job as the lines name it.
        :param status: the job's ``status`` as last seen.
        :param pods: the job's pods as last seen.
        :param queue: whether and where the job waits in a queue, for a queue timeout.
        :returns: the error to raise."""
        family = self._family()
        namespace = job["metadata"]["namespace"]
        tails = quoted_tails(
            read_tails(self.hook, namespace, pending_failures(pods, family), self.settings.log_tail_lines)
        )
        try:
            warnings = [
                f"{e.get('reason')}: {e.get('message', '')}"
                for e in about_these_objects(self.hook.list_events(namespace, family.event_names(job)), [job, *pods])
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
                family=family,
                namespace=namespace,
                pods=pods,
                warnings=warnings,
                tails=tails,
            )
        )

    def stop_pods_at_terminal(self, job: dict[str, Any]) -> None:
        """The job is terminal: stop the pods its user's ``cleanPodPolicy`` has the controller stop at that moment
        (:func:`~airflow_trainjob.domain.lifecycle.pods_stopped_at_terminal`), which the held policy kept running.
        Best effort: the cleanup at the end of the task deletes whatever is left.

        :param job: the job, terminal."""
        meta = job["metadata"]
        try:
            pods = self.hook.list_job_pods(meta["name"], meta["namespace"], kind=job["kind"])
            stop = pods_stopped_at_terminal(job_ref(job), job, pods, self._family())
            for pod in stop.pods:
                self.hook.delete_pod(pod["metadata"]["name"], meta["namespace"], uid=pod["metadata"].get("uid"))
        except Exception as e:
            self.log.warning(
                "Could not stop the running pods of %s now (%s); the cleanup will", job_ref(job), one_line(e)
            )
            return
        if stop.line is not None:
            self.log.info("%s", stop.line)

    def stop_follower(self, drain: bool = False) -> None:
        """Stop following the lead's log.

        :param drain: copy the rest of it first (the job ended); else stop at once."""
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.finish() if drain else follower.stop()

    def stop_pod_feed(self) -> None:
        """Stop following the job's pods."""
        feed, self._pod_feed = self._pod_feed, None
        if feed is not None:
            feed.stop()

    def finish(self, final: dict[str, Any]) -> None:
        """After :meth:`follow_to_end`: stop the pods the terminal job's ``cleanPodPolicy`` stops, let the lead's log
        follower copy the rest, stop following the pods.

        :param final: the job at its end, as :meth:`follow_to_end` returned it.
        """
        feed = self._pod_feed
        if feed is not None and not self._family().is_succeeded(final.get("status")):
            # The verdict names the replicas that failed: the pods' watch may not have delivered the last of them.
            feed.catch_up(final["metadata"].get("resourceVersion"))
        self.stop_pods_at_terminal(final)
        self.stop_follower(drain=True)
        self.stop_pod_feed()

    def stop(self) -> None:
        """Stop following the lead's log and the pods, at once (the wait failed, or Airflow stopped the try)."""
        self.stop_follower()
        self.stop_pod_feed()

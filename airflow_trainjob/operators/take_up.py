"""Taking up a try's job: the first step of a :class:`~airflow_trainjob.operators.run.TrainingJobRun`.

A try takes up one job, by one of these ways:

- it creates the job; on 409 it attaches to this try's job, or to an earlier try's running one
  (``reattach_on_restart``), or replaces one that has finished or is being deleted (when the job vanished between the
  409 and the read, it creates again): :meth:`TakeUp.create_or_attach`;
- it reconnects to the job an earlier try stored in ``task_state_store``: :meth:`TakeUp.reconnect`;
- it returns an earlier try's success instead of training again, when the records say so
  (:mod:`~airflow_trainjob.domain.earlier_success`): :meth:`TakeUp.earlier_success`, :func:`with_summary`.

Whichever way, the job it follows carries the try's number (:meth:`TakeUp.follow`), so that an earlier try killed
late leaves it alone. The run keeps what was taken up (see :mod:`~airflow_trainjob.operators.try_state`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from kubernetes.client.exceptions import ApiException

from airflow_trainjob.domain.earlier_success import Reuse, StartOver, decide
from airflow_trainjob.domain.ownership import ANNOTATION_FOLLOWED_BY_TRY, TaskInstanceIdentity, created_by_try
from airflow_trainjob.domain.records import JobRecord, spec_digest
from airflow_trainjob.domain.summary import job_summary
from airflow_trainjob.domain.verdict import job_ref
from airflow_trainjob.exceptions import (
    JobDeletedError,
    JobNotOwnedError,
    KindNotServedError,
    KubernetesAccessError,
    RuntimeNotFoundError,
    TrainingJobError,
)
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.operators.recorder import JobRecorder

#: Status of a stored job that no longer exists as this task instance's (deleted or replaced).
JOB_GONE = "Gone"
#: Status of a stored job that succeeded under an earlier try whose success is not this try's result (see
#: :meth:`TakeUp.earlier_success`): the task was cleared since, or no record says it was not.
JOB_NOT_REUSED = "Succeeded, not this try's result"
#: Seconds to wait for a replaced job to be gone before creating its successor.
REPLACE_TIMEOUT = 120.0
#: Seconds between two reads of a replaced job while it is being deleted.
REPLACE_POLL_SECONDS = 1.0


def is_earlier_result(job: Mapping[str, Any], earlier: Reuse | None) -> bool:
    """``job`` has succeeded and is the job of the earlier try whose success
    :meth:`TakeUp.earlier_success` found to be this try's result (its try ended without a word; the job succeeded
    since).

    :param job: the job as read now, an API JSON dict (``status``, ``metadata.uid``).
    :param earlier: what :meth:`TakeUp.earlier_success` found, or None.
    """
    return (
        isinstance(earlier, Reuse)
        and family_of(job["kind"]).is_succeeded(job.get("status"))
        and (job.get("metadata") or {}).get("uid") == earlier.source.uid
    )


def with_summary(decision: Reuse, job: Mapping[str, Any] | None) -> Reuse:
    """``decision`` with the summary to return: the one its try recorded, else the job's as read now.

    :param decision: the reuse (:func:`~airflow_trainjob.domain.earlier_success.decide`).
    :param job: the job as read now, Succeeded, or None when it is gone (then ``decision`` has the summary).
    :raises TrainingJobError: neither (the callers rule it out).
    """
    if decision.summary is not None:
        return decision
    if job is None:
        raise TrainingJobError("no job and no recorded summary to return")  # the callers rule it out
    return replace(decision, summary=job_summary(job, family_of(job["kind"])))


class TakeUp:
    """Takes up the job of one try: creates, attaches to, replaces, or reads back the one an earlier try left.

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook` (or anything with its methods).
    :param identity: the task instance and try the job is for.
    :param log: the task's logger.
    """

    def __init__(self, hook: Any, identity: TaskInstanceIdentity, log: Any) -> None:
        self.hook = hook
        self.identity = identity
        self.log = log

    def earlier_success(
        self, recorder: JobRecorder | None, manifest: Callable[[], dict[str, Any]]
    ) -> tuple[Reuse, dict[str, Any] | None] | None:
        """Whether an earlier try's success may be this try's result, when Airflow runs the task instance again after
        it (:mod:`~airflow_trainjob.domain.earlier_success`). If it succeeded (or is gone, its success recorded), the run
        returns the summary that try returned, without creating a job, logs why, records this try as succeeded with
        that job, and cleans the job up if it is still there. A job still running is followed as usual (reconnected
        to, or attached to), and taken up as this try's result should it succeed before they read it.

        :param recorder: the try's recorder; None or not enabled: no records, this try trains.
        :param manifest: builds (once) the job this try would send: its spec is compared with the earlier one's.
        :returns: the reuse and its job as read now (None: gone), or None: this try trains.
        :raises ApiException: the job could not be read (not a 404).
        """
        if recorder is None or not recorder.enabled:
            return None
        try_number = self.identity.try_number
        records = recorder.records()
        if not any(r.try_number <= try_number for r in records):
            return None  # a first try: its manifest is built when it is needed, as before
        decision = decide(records, try_number, recorder.series, spec_digest(manifest()))
        if isinstance(decision, StartOver):
            if decision.reason:
                self.log.info("%s", decision.reason)
            return None
        job = self.recorded(decision.source)
        if job is None and decision.summary is None:
            # Gone, and its try had not recorded its end when the records were read. A try records its end before
            # its cleanup deletes the job, so if that try (still running: Airflow ran this one beside it) deleted
            # it, the records say so now.
            decision = decide(recorder.records(), try_number, recorder.series, spec_digest(manifest()))
            if isinstance(decision, StartOver) or decision.summary is None:
                return None  # no word of how it ended: trains again
        return decision, job

    def recorded(self, record: JobRecord) -> dict[str, Any] | None:
        """The job ``record`` names, if it is still in the cluster as this task instance's (same uid, our labels).

        :param record: an earlier try's record.
        """
        try:
            job = self.hook.get_job(record.kind, record.name, record.namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        same = record.uid is None or job["metadata"].get("uid") == record.uid
        return job if same and self.identity.owns(job) else None

    def stored(self, external_id: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
        """The job ``external_id`` names, if it is still this task instance's (same uid, our labels).

        :param external_id: the identity ``task_state_store`` keeps, ``{name, namespace, uid}``.
        :param kind: the job's kind.
        """
        try:
            job = self.hook.get_job(kind, external_id["name"], external_id["namespace"])
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        if job["metadata"].get("uid") != external_id.get("uid") or not self.identity.owns(job):
            return None
        return job

    def reconnect(
        self, external_id: Mapping[str, Any], kind: str, earlier: Reuse | None
    ) -> tuple[dict[str, Any] | None, str]:
        """The job an earlier try stored in ``task_state_store``, to take up, and its status for Airflow's
        ``ResumableJobMixin``.

        :param external_id: the stored identity, ``{name, namespace, uid}``.
        :param kind: the job's kind.
        :param earlier: what :meth:`earlier_success` found, or None.
        :returns: ``(job, phase)`` (:meth:`~airflow_trainjob.domain.family.JobFamily.phase`); ``(None, JOB_GONE)`` when it
            no longer exists as this task instance's job (deleted, or replaced by another object);
            ``(None, JOB_NOT_REUSED)`` when it succeeded but is not this try's result by the records of this series
            (it is replaced, as a failed one is).
        :raises ApiException: the job could not be read (not a 404).
        """
        job = self.stored(external_id, kind)
        if job is None:
            return None, JOB_GONE
        family = family_of(kind)
        if family.is_succeeded(job.get("status")) and not is_earlier_result(job, earlier):
            return None, JOB_NOT_REUSED
        return job, family.phase(job.get("status"))

    def require(self, held: dict[str, Any] | None, external_id: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
        """The job to follow: ``held`` (taken up by a step before), else the one ``external_id`` names.

        :param held: the job the try holds, or None.
        :param external_id: the stored identity, ``{name, namespace, uid}``, or None.
        :param kind: the job's kind.
        :raises JobDeletedError: the stored job no longer exists as this task instance's.
        :raises TrainingJobError: neither is there (no step took up a job).
        """
        if held is not None:
            return held
        if external_id is None:
            raise TrainingJobError("no job to follow: create_or_attach or reconnect comes first")
        job = self.stored(external_id, kind)
        if job is None:
            ref = f"{kind} {external_id['namespace']}/{external_id['name']}"
            raise JobDeletedError(f"{ref} no longer exists as this task instance's job")
        return job

    def create_or_attach(
        self, manifest: dict[str, Any], kind: str, *, reattach_on_restart: bool, earlier: Reuse | None
    ) -> dict[str, Any]:
        """Create this try's job, or attach to / replace the one of that name this task instance left.

        :param manifest: the job to create.
        :param kind: its kind.
        :param reattach_on_restart: follow a running job of an earlier try instead of replacing it.
        :param earlier: what :meth:`earlier_success` found, or None: a job it names that succeeded since is taken up.
        :returns: the job, as created or attached to.
        :raises JobNotOwnedError: a job of that name is not this task instance's (left untouched).
        :raises TrainingJobError: a replaced job was not gone after :data:`REPLACE_TIMEOUT` seconds.
        """
        meta = manifest["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        self.check_prerequisites(manifest, kind)
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
        return self._attach_or_replace(manifest, kind, existing, reattach_on_restart, earlier)

    def check_prerequisites(self, manifest: dict[str, Any], kind: str) -> None:
        """Read each object the job names that must exist (its family's
        :meth:`~airflow_trainjob.domain.family.JobFamily.prerequisites`: a TrainJob's runtime) before creating it.
        Only its absence stops the task: an answer that cannot say (RBAC without ``get`` on it, the API failing) is
        logged, and the job is created; its controller's events then tell.

        :param manifest: the job to create.
        :param kind: its kind.
        :raises RuntimeNotFoundError: one of them does not exist (404 naming it); nothing was created.
        """
        for needed in family_of(kind).prerequisites(manifest):
            try:
                self.hook.get_prerequisite(needed)
            except (ApiException, KindNotServedError, KubernetesAccessError) as e:
                if getattr(e, "status", None) == 404 and isinstance(e, ApiException):
                    answered = f"{e.status} {e.reason}"
                    raise RuntimeNotFoundError(needed.missing_message(job_ref(manifest), answered)) from None
                why = one_line(e)
                self.log.info("Could not check that %s %s exists (%s); creating the job", needed.kind, needed.name, why)

    def _attach_or_replace(
        self,
        manifest: dict[str, Any],
        kind: str,
        existing: dict[str, Any],
        reattach_on_restart: bool,
        earlier: Reuse | None,
    ) -> dict[str, Any]:
        """Attach to ``existing``, this task instance's job of that name, or replace it (see
        :meth:`create_or_attach`)."""
        identity, meta, family = self.identity, existing["metadata"], family_of(kind)
        # A finished job is replaced (this try starts over), unless it succeeded for this try: taken up, its end is
        # seen at once. That is this try's own job (Airflow ran this try's execute again, e.g. after its trigger fired;
        # even when the records cannot be read: a stale try's store reads come back empty), or the earlier try's job
        # whose success earlier_success found to be this try's result (it succeeded after earlier_success read it).
        taken_up = family.is_succeeded(existing.get("status")) and (
            identity.follows(existing) or is_earlier_result(existing, earlier)
        )
        finished = family.is_terminal(existing.get("status")) and not taken_up
        same_try = identity.created_by_this_try(existing)
        deleting = bool(meta.get("deletionTimestamp"))  # e.g. by the killed try before this one
        if not finished and not deleting and (same_try or reattach_on_restart):
            phase = family.phase(existing.get("status"))
            self.log.info(
                "Attaching to %s %s/%s, %s, created by try %s",
                kind,
                meta["namespace"],
                meta["name"],
                phase if family.is_terminal(existing.get("status")) else f"still {phase}",
                created_by_try(existing),
            )
            return self.follow(existing, kind)
        self.log.info(
            "Replacing %s %s/%s left by an earlier try (%s%s)",
            kind,
            meta["namespace"],
            meta["name"],
            family.phase(existing.get("status")),
            ", being deleted" if deleting else "",
        )
        return self._replace(manifest, kind, existing, deleting=deleting)

    def _replace(
        self, manifest: dict[str, Any], kind: str, existing: dict[str, Any], *, deleting: bool
    ) -> dict[str, Any]:
        """Delete ``existing`` (unless it is being deleted already), wait until it is gone, create ``manifest``."""
        name, namespace = existing["metadata"]["name"], existing["metadata"]["namespace"]
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

    def follow(self, job: dict[str, Any], kind: str) -> dict[str, Any]:
        """Record on ``job`` that this try follows it now, so that an earlier try killed late (a clear that races
        this try) leaves it alone (see :meth:`TaskInstanceIdentity.follows`). Best effort: a failed patch is logged.

        :param job: the job taken up, an API JSON dict.
        :param kind: its kind.
        :returns: the job as it is now (as patched, else as given).
        """
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
            return self.hook.patch_job(kind, meta["name"], meta["namespace"], patch)
        except Exception as e:
            self.log.warning(
                "Could not record on %s that try %d follows it (%s)",
                job_ref(job),
                self.identity.try_number,
                one_line(e),
            )
            return job

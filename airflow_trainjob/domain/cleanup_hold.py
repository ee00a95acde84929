"""Holding a job's pods and object until the task has read what it needs, then cleaning up as the user asked.

The training operator applies ``runPolicy.cleanPodPolicy`` and ``ttlSecondsAfterFinished`` the moment a job
turns terminal: with ``All`` or ``Running`` it deletes pods, and their logs, before a deferred task resumes (or
before a synchronous one reads the failed replicas' tails); with a short TTL the job goes too, and its final
status with it. So the provider sends the controller ``cleanPodPolicy: None`` and no TTL, records what the user
asked for on the job (annotation :data:`ANNOTATION_HELD_RUN_POLICY`), and applies it itself:

1. At the terminal transition, whoever observes it (the synchronous wait, or the trigger) stops the pods the
   user's policy would have had the controller stop — those still Pending or Running, for ``Running`` and
   ``All`` — after the lead replica's log was read (:func:`pods_to_stop`).
2. When the task ends, the rest of the policy (finished pods too, for ``All``: :func:`pods.pods_to_clean`) and
   ``on_finish``; a job that is kept gets its ``runPolicy`` back as the user wrote it (:func:`release_patch`),
   so the controller applies the TTL from the job's ``completionTime``, as it would have.
3. Before the task ends, the pods it removed are gone (:func:`pods_left`): a deleted pod runs on until the kubelet
   has stopped its containers, and a pod may appear after the task listed them (a controller whose cache lagged
   creates a replica's pod after the terminal transition), so the task lists them again until none it removes is
   left, deleting those that appeared.

What the end of the task does to its job is decided before any call (:func:`cleanup_plan`).

Pure functions over API JSON dicts; the operator and the trigger do the calls.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_trainjob.constants import LABEL_PREFIX, CleanPodPolicy
from airflow_trainjob.domain.own_keys import legacy_key, read_own_key
from airflow_trainjob.domain.pods import Pod, is_active, is_being_deleted, pods_to_clean
from airflow_trainjob.domain.user_run_policy import UserRunPolicy

if TYPE_CHECKING:
    from airflow_trainjob.domain.family import JobFamily

#: The user's ``cleanPodPolicy`` and ``ttlSecondsAfterFinished`` while the provider holds them, as JSON.
ANNOTATION_HELD_RUN_POLICY = f"{LABEL_PREFIX}/held-run-policy"
_CLEAN, _TTL = "cleanPodPolicy", "ttlSecondsAfterFinished"
#: The cleanPodPolicy values a held annotation may carry (the undefined ``""`` is recorded as ``None``).
_ASKABLE = (CleanPodPolicy.ALL, CleanPodPolicy.RUNNING, CleanPodPolicy.NONE)


def hold(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest to send: ``cleanPodPolicy: None`` and no TTL, the user's values in the annotation.

    A manifest that asks for neither cleanup (``None``, no TTL) is sent as it is.

    :param manifest: the job to create, an API JSON dict (not changed: the answer is a copy).
    """
    sent = copy.deepcopy(dict(manifest))
    run_policy = sent.setdefault("spec", {}).setdefault("runPolicy", {})
    clean = run_policy.get(_CLEAN) or CleanPodPolicy.NONE.value
    ttl = run_policy.get(_TTL)
    if clean == CleanPodPolicy.NONE and ttl is None:
        return sent
    asked: dict[str, Any] = {_CLEAN: clean}
    if ttl is not None:
        asked[_TTL] = ttl
    run_policy[_CLEAN] = CleanPodPolicy.NONE.value
    run_policy.pop(_TTL, None)
    metadata = sent.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), ANNOTATION_HELD_RUN_POLICY: json.dumps(asked)}
    return sent


def user_run_policy(job: Mapping[str, Any]) -> UserRunPolicy:
    """The user's cleanup for ``job``: from the annotation while held, else from ``spec.runPolicy`` (a job made
    by an earlier version, or one already released). An annotation that does not parse counts as absent; one under
    the legacy prefix (a job an earlier release created) counts.

    :param job: the job, an API JSON dict (its ``metadata.annotations`` and ``spec.runPolicy``).
    """
    run_policy = ((job.get("spec") or {}).get("runPolicy")) or {}
    raw = read_own_key((job.get("metadata") or {}).get("annotations"), ANNOTATION_HELD_RUN_POLICY)
    if raw is not None:
        try:
            asked = json.loads(raw)
            clean = asked.get(_CLEAN)
            ttl = asked.get(_TTL)
            if clean in _ASKABLE and (ttl is None or (isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0)):
                return UserRunPolicy(clean, ttl, held=True)
        except (ValueError, AttributeError):
            pass
    return UserRunPolicy(run_policy.get(_CLEAN) or CleanPodPolicy.NONE.value, run_policy.get(_TTL), held=False)


def pods_to_stop(pods: Iterable[Pod], policy: UserRunPolicy) -> list[Pod]:
    """The pods to stop when the job turns terminal: what the controller would have deleted at that moment had
    it been sent the user's policy and nothing was held — Pending and Running pods, for ``Running`` and ``All``
    (finished pods keep their logs until the task ends). Empty when nothing is held: the controller does it.

    :param pods: the job's pods, API JSON dicts or ``V1Pod`` objects.
    :param policy: the user's cleanup, from :func:`user_run_policy`.
    """
    if not policy.held or policy.clean_pod_policy not in (CleanPodPolicy.RUNNING, CleanPodPolicy.ALL):
        return []
    return [p for p in pods if is_active(p)]


@dataclass(frozen=True)
class PodsLeft:
    """What is left of the pods the end of the task removes.

    :param to_delete: pods to delete now: the cleanup removes them and nobody has asked for their deletion yet.
    :param stopping: pods whose deletion was asked (``metadata.deletionTimestamp``) that are not gone yet.
    """

    to_delete: list[Pod]
    stopping: list[Pod]

    @property
    def done(self) -> bool:
        """True when no pod the cleanup removes is left: none to delete, none still stopping."""
        return not self.to_delete and not self.stopping


def pods_left(pods: Iterable[Pod], clean_pod_policy: str, *, job_deleted: bool) -> PodsLeft:
    """What is left, in the job's pods as listed now, of the pods the end of the task removes: those the user's
    ``cleanPodPolicy`` removes (:func:`~airflow_trainjob.domain.pods.pods_to_clean`), and when the job is deleted
    (``on_finish``, or a job still running) every pod still Pending or Running too (its finished pods go with it by
    garbage collection: none of them runs); and every pod being deleted, until it is gone.

    :param pods: the job's pods (owned by it), API JSON dicts.
    :param clean_pod_policy: the user's ``spec.runPolicy.cleanPodPolicy`` (:attr:`UserRunPolicy.clean_pod_policy`).
    :param job_deleted: the task deleted the job: its running pods go with it, whatever the policy.
    """
    pods = list(pods)
    cleaned = {id(p) for p in pods_to_clean(pods, clean_pod_policy)}
    removed = [p for p in pods if id(p) in cleaned or (job_deleted and is_active(p))]
    return PodsLeft(
        to_delete=[p for p in removed if not is_being_deleted(p)],
        stopping=[p for p in pods if is_being_deleted(p)],
    )


def release_patch(job: Mapping[str, Any]) -> dict[str, Any] | None:
    """A JSON merge patch that gives a kept job its ``runPolicy`` back as the user wrote it and drops the
    annotation (the spec speaks for itself again: under whichever prefix it was); None when nothing is held.

    :param job: the job as last read, an API JSON dict.
    """
    policy = user_run_policy(job)
    if not policy.held:
        return None
    annotations = (job.get("metadata") or {}).get("annotations") or {}
    keys = [k for k in (ANNOTATION_HELD_RUN_POLICY, legacy_key(ANNOTATION_HELD_RUN_POLICY)) if k in annotations]
    return {
        "metadata": {"annotations": dict.fromkeys(keys)},
        "spec": {"runPolicy": {_CLEAN: policy.clean_pod_policy, _TTL: policy.ttl_seconds_after_finished}},
    }


#: :attr:`CleanupPlan.leave_alone`: the job of that name is no longer the one this task created (another uid, or
#: not labelled as this task instance's).
REPLACED = "replaced"
#: :attr:`CleanupPlan.leave_alone`: a killed try's job that a later try of the task follows now.
FOLLOWED_BY_LATER_TRY = "followed by a later try"


@dataclass(frozen=True)
class CleanupPlan:
    """What the end of the task does to its job, decided before any call.

    :param policy: the user's cleanup (:func:`user_run_policy`).
    :param leave_alone: why the cleanup touches nothing (:data:`REPLACED`, :data:`FOLLOWED_BY_LATER_TRY`); None: it
        cleans up.
    :param clean_pods_first: the job has finished: its pods go as ``cleanPodPolicy`` says, before the job does (a
        running job goes whole, its pods after it: none dies before it, it would be restarted).
    :param delete_job: delete the job (``on_finish`` says so, or it is still running).
    :param deletion_reason: why, for the task log: ``not finished``, or the ``on_finish`` value.
    :param keep_unrecorded_success: ``on_finish`` would delete the succeeded job, but its success is not in the
        try's record: the job is kept, as what tells a try that Airflow runs after this one that it succeeded.
    :param release: for a kept job that the provider holds the policy of, the JSON merge patch that gives it its
        ``runPolicy`` back (:func:`release_patch`, with the job's uid as a precondition); else None.
    """

    policy: UserRunPolicy
    leave_alone: str | None = None
    clean_pods_first: bool = False
    delete_job: bool = False
    deletion_reason: str = ""
    keep_unrecorded_success: bool = False
    release: dict[str, Any] | None = None


def cleanup_plan(
    job: Mapping[str, Any],
    *,
    held_uid: str | None,
    owned: bool,
    followed: bool,
    outcome: str,
    on_finish: str,
    success_unrecorded: bool,
    family: JobFamily,
) -> CleanupPlan:
    """What the end of the task does to ``job``: its pods as ``cleanPodPolicy`` says, then the job as ``on_finish``
    says; a job still running is deleted whatever ``on_finish`` says.

    :param job: the job as read now, an API JSON dict (``metadata.uid``, ``status``, the held policy).
    :param held_uid: the uid of the job the try took up (``metadata.uid``).
    :param owned: ``job`` is labelled as this task instance's
        (:meth:`~airflow_trainjob.domain.ownership.TaskInstanceIdentity.owns`).
    :param followed: ``job`` says this try follows it
        (:meth:`~airflow_trainjob.domain.ownership.TaskInstanceIdentity.follows`).
    :param outcome: how the try ended: ``succeeded``, ``failed`` or ``killed`` (Airflow stopped it, or an error).
    :param on_finish: the operator's ``on_finish``: ``delete_job``, ``delete_succeeded_job`` or ``keep_job``.
    :param success_unrecorded: there is a store, and the try's success is not in it.
    :param family: the job's API family (:class:`~airflow_trainjob.domain.family.JobFamily`): what its held cleanup
        is (none for a TrainJob), whether it finished.
    """
    policy = family.user_run_policy(job)
    if (job.get("metadata") or {}).get("uid") != held_uid or not owned:
        return CleanupPlan(policy, leave_alone=REPLACED)
    if outcome == "killed" and not followed:
        return CleanupPlan(policy, leave_alone=FOLLOWED_BY_LATER_TRY)
    running = not family.is_terminal(job.get("status"))
    deleting = running or on_finish == "delete_job" or (on_finish == "delete_succeeded_job" and outcome == "succeeded")
    keep_unrecorded = deleting and not running and outcome == "succeeded" and success_unrecorded
    release = None if deleting and not keep_unrecorded else release_patch(job)
    if release is not None:
        release["metadata"]["uid"] = held_uid  # a precondition: never a successor of that name
    return CleanupPlan(
        policy,
        clean_pods_first=not running,
        delete_job=deleting and not keep_unrecorded,
        deletion_reason="not finished" if running else on_finish,
        keep_unrecorded_success=keep_unrecorded,
        release=release,
    )

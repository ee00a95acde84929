"""Kubeflow Trainer v2's ``TrainJob`` (``trainer.kubeflow.org/v1alpha1``, kubeflow/trainer v2.3.0) as the lifecycle
core and the drivers read it (:class:`~airflow_trainjob.domain.family.JobFamily`). What its status means is
:mod:`.trainer_v2_status`'s; its pods, replicas, cleanup and events are this module's.

A TrainJob runs as one JobSet of its name (kubernetes-sigs/jobset v0.12.0), one batch Job per replicated job (the
runtime's steps: ``dataset-initializer``, ``model-initializer``, ``node``, the MPI ``launcher``; the trainer's have
one Job of ``numNodes`` Indexed pods), so:

- **pods**: those labelled ``jobset.sigs.k8s.io/jobset-name=<name>``; a pod's replica is ``(its replicated job,
  its completion index)`` (``jobset.sigs.k8s.io/replicatedjob-name``, ``batch.kubernetes.io/job-completion-index``):
  ``node-0``, ``node-1``, ``dataset-initializer-0``. A replicated job of several Jobs (``replicatedjob-replicas``
  over 1; the trainer's steps always have one) names each Job's pods ``<step>-<job index>`` as their type
  (``worker-1``, index 0, 1...), so that no two Jobs' pods share a replica. The pods are owned by their Job, not by
  the TrainJob: their owner reference names no TrainJob uid (the label ``jobset.sigs.k8s.io/jobset-uid`` names the
  JobSet's).
- **lead**: the ``launcher`` (an MPI runtime: its ``node`` pods run sshd), else ``node`` 0; of several pods of that
  replica (a failed pod the Job controller replaced, an earlier JobSet restart's), the newest attempt's.
- **log container**: the init container the pod is held at once it has run, else the container named like the step
  (an initializer's), else ``node`` (the trainer's, also the launcher's), else the first.
- **cleanup**: a TrainJob has no ``cleanPodPolicy`` and no TTL of its own (the runtime's JobSet template may set the
  JobSet's ``ttlSecondsAfterFinished``; a ``runtimePatch`` may not), and no field the provider could send to keep
  the pods: at the end the JobSet controller deletes its still-active Jobs (their running pods and logs go at once),
  and a ``DeadlineExceeded`` TrainJob's JobSet is deleted by the trainer. So nothing is held
  (:meth:`TrainJobFamily.user_run_policy`: ``None``, not held); the provider's own cleanup is deleting the TrainJob
  (``on_finish``), which cascades to the JobSet, its Jobs and pods.
- **events**: the trainer records only ``TrainJobResourcesCreationFailed`` warnings on the TrainJob; the JobSet
  controller records its conditions' reasons (``AllJobsCompleted``, ``FailedJobs``...) on the JobSet, under the
  JobSet's uid (:func:`status_from_jobset_events`); the Job controller and the kubelet record no exit code. So
  :meth:`TrainJobFamily.status_from_events` (keyed by the TrainJob's uid) and
  :meth:`TrainJobFamily.ends_from_events` find nothing: a TrainJob deleted before its end was seen is judged by its
  last state, and a verdict by the pods still there.

Pure: no I/O, no client. Differences from upstream: none written here (the adapter reads what upstream writes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from airflow_trainjob.constants import (
    DEFAULT_RUNTIME_KIND,
    JOB_COMPLETION_INDEX,
    JOBSET_KIND,
    LABEL_JOB_INDEX,
    LABEL_JOBSET_NAME,
    LABEL_JOBSET_RESTART_ATTEMPT,
    LABEL_POD_TOKEN,
    LABEL_REPLICATED_JOB_NAME,
    LABEL_REPLICATED_JOB_REPLICAS,
    RUNTIME_PLURALS,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINJOB_KIND,
    TRAINJOB_PLURAL,
    TRAINJOB_TRAINER_CONTAINER,
    CleanPodPolicy,
    ConditionStatus,
    TrainJobConditionType,
    TrainJobReason,
    TrainJobStep,
)
from airflow_trainjob.domain import failures, pods
from airflow_trainjob.domain.cleanup_hold import UserRunPolicy
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.family import JobResource, Prerequisite
from airflow_trainjob.domain.own_keys import read_own_key
from airflow_trainjob.domain.pods import Pod
from airflow_trainjob.families import trainer_v2_status as status_of

__all__ = ["TrainJobFamily", "family", "kinds", "replica_of", "status_from_jobset_events"]

#: What :attr:`TrainJobFamily.cleanup_policy_field` says: a TrainJob has no such field.
NO_CLEANUP_POLICY_FIELD = ""
#: A failed TrainJob's reasons that decide, alone, whether Airflow may retry (:meth:`TrainJobFamily.permanent_by_reason`).
_PERMANENT_BY_REASON = {
    TrainJobReason.RUNTIME_NOT_SUPPORTED.value: True,
    TrainJobReason.DEADLINE_EXCEEDED.value: False,
}
#: The phases (:func:`.phase`) of a TrainJob that has run.
_STARTED_PHASES = (
    status_of.RUNNING,
    status_of.RESTARTING,
    TrainJobConditionType.COMPLETE.value,
    TrainJobConditionType.FAILED.value,
)
#: The JobSet's condition reasons that end it, as its controller records them in events: reason -> condition type.
_JOBSET_TERMINAL_EVENTS = {
    TrainJobReason.ALL_JOBS_COMPLETED.value: TrainJobConditionType.COMPLETE.value,
    TrainJobReason.FAILED_JOBS.value: TrainJobConditionType.FAILED.value,
    TrainJobReason.REACHED_MAX_RESTARTS.value: TrainJobConditionType.FAILED.value,
    TrainJobReason.FAIL_JOBSET_ACTION.value: TrainJobConditionType.FAILED.value,
}


def _meta(pod: Pod, key: str) -> Mapping[str, str]:
    found = (pod.get("metadata") or {}).get(key)
    return found if isinstance(found, Mapping) else {}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _index(value: Any) -> int | None:
    try:
        index = int(str(value))
    except ValueError:
        return None
    return index if index >= 0 else None


def _completion_index(pod: Pod) -> int:
    """The pod's completion index: the Job controller's annotation (every Indexed Job), else its label (1.28+)."""
    for source in (_meta(pod, "annotations"), _meta(pod, "labels")):
        index = _index(source.get(JOB_COMPLETION_INDEX))
        if index is not None:
            return index
    return 0


def _job_index(pod: Pod) -> int:
    return _index(_meta(pod, "labels").get(LABEL_JOB_INDEX)) or 0


def replica_of(pod: Pod) -> tuple[str, int]:
    """``(replica type, index)`` of a TrainJob's pod: its replicated job (the step, ``node``) and its completion
    index; for a replicated job of several Jobs, ``<step>-<job index>`` and the completion index. ``("", 0)`` for a
    pod without the JobSet's labels.

    :param pod: the pod, an API JSON dict (labels ``jobset.sigs.k8s.io/replicatedjob-name``, ``.../job-index``,
        ``.../replicatedjob-replicas``; the ``batch.kubernetes.io/job-completion-index`` annotation or label).
    """
    labels = _meta(pod, "labels")
    step = str(labels.get(LABEL_REPLICATED_JOB_NAME, ""))
    jobs = _index(labels.get(LABEL_REPLICATED_JOB_REPLICAS)) or 1
    job_index = _job_index(pod)
    replica_type = f"{step}-{job_index}" if jobs > 1 or job_index > 0 else step
    return replica_type, _completion_index(pod)


def _recency(pod: Pod) -> tuple[int, str, str]:
    """The order of a replica's pods, newest last: the JobSet's restart attempt, then creation, then name."""
    attempt = _index(_meta(pod, "labels").get(LABEL_JOBSET_RESTART_ATTEMPT)) or 0
    return attempt, str((pod.get("metadata") or {}).get("creationTimestamp") or ""), pods.pod_name(pod)


def status_from_jobset_events(events: Any, jobset_uid: str | None) -> dict[str, Any] | None:
    """The terminal condition the JobSet controller announced for the JobSet ``jobset_uid`` in its events, as the
    TrainJob's status would have carried it (``Completed`` as ``Complete``): for a TrainJob gone before its end was
    seen, once a driver knows its JobSet's uid (its pods' ``jobset.sigs.k8s.io/jobset-uid`` label). None when no such
    event is there.

    :param events: the namespace's events about the JobSet, API JSON dicts, any order (``reason``, ``message``,
        ``involvedObject.kind``/``uid``, ``lastTimestamp`` or ``eventTime``).
    :param jobset_uid: the JobSet's ``metadata.uid``.
    """
    if not jobset_uid:
        return None
    announced = [
        e
        for e in events or []
        if isinstance(e, Mapping)
        and e.get("reason") in _JOBSET_TERMINAL_EVENTS
        and (e.get("involvedObject") or {}).get("uid") == jobset_uid
        and (e.get("involvedObject") or {}).get("kind") in (None, JOBSET_KIND)
    ]
    if not announced:
        return None
    last = max(announced, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    when = last.get("lastTimestamp") or last.get("eventTime")
    condition = {
        "type": _JOBSET_TERMINAL_EVENTS[last["reason"]],
        "status": ConditionStatus.TRUE.value,
        "reason": last["reason"],
        "message": last.get("message") or "",
        "lastTransitionTime": when,
    }
    return {"conditions": [condition]}


class TrainJobFamily:
    """The ``TrainJob`` kind, as the port :class:`~airflow_trainjob.domain.family.JobFamily` asks (the module's
    docstring says how each answer is read from what Trainer v2 and JobSet write)."""

    # What a status means: trainer_v2_status's.
    is_failed = staticmethod(status_of.is_failed)
    is_succeeded = staticmethod(status_of.is_succeeded)
    is_terminal = staticmethod(status_of.is_terminal)
    has_condition = staticmethod(status_of.has_condition)
    phase = staticmethod(status_of.phase)
    summary = staticmethod(status_of.summary)
    controller_has_acted = staticmethod(status_of.controller_has_acted)
    replica_of = staticmethod(replica_of)
    deciding_condition = staticmethod(status_of.deciding_condition)
    steps = staticmethod(status_of.steps)
    trainer_progress = staticmethod(status_of.trainer_progress)

    @property
    def success_condition(self) -> str:
        """``Complete``."""
        return TrainJobConditionType.COMPLETE.value

    @property
    def target_conditions(self) -> tuple[str, ...]:
        """``Complete`` and ``Suspended``: a TrainJob's own conditions but ``Failed`` (its ``Running`` is inferred,
        no condition a controller writes)."""
        return TrainJobConditionType.COMPLETE.value, TrainJobConditionType.SUSPENDED.value

    @property
    def suspend_field(self) -> str:
        """``spec.suspend``."""
        return "spec.suspend"

    def is_spec_suspended(self, job: Mapping[str, Any]) -> bool:
        """``spec.suspend`` is true.

        :param job: the TrainJob, an API JSON dict.
        """
        return _mapping(job.get("spec")).get("suspend") is True

    def has_started(self, status: Any) -> bool:
        """A child Job of the TrainJob ran (ready, succeeded or failed), or it finished (:func:`.phase`).

        :param status: the TrainJob's ``status`` (API JSON dict, or None).
        """
        return status_of.phase(status) in _STARTED_PHASES

    def started_since_admission(self, status: Any, admitted_at: float | None) -> bool:
        """A child Job is ready, has succeeded or failed, or the TrainJob finished. A suspension stops the JobSet's
        Jobs (their ready pods go), so a count read after the admission is the new run's; one left from before it (an
        initializer that succeeded) counts as started.

        :param status: the TrainJob's ``status`` (API JSON dict, or None).
        :param admitted_at: epoch seconds of its last admission; not needed here (the counts say it).
        """
        return self.has_started(status)

    @property
    def pod_keys(self) -> tuple[str, ...]:
        """The JobSet's labels of the replica (replicated job, Job index, replicas, restart attempt), the Job
        controller's completion index (an annotation; a label since Kubernetes 1.28), the JobSet's name and the
        provider's pod token."""
        return (
            LABEL_JOBSET_NAME,
            LABEL_REPLICATED_JOB_NAME,
            LABEL_REPLICATED_JOB_REPLICAS,
            LABEL_JOB_INDEX,
            LABEL_JOBSET_RESTART_ATTEMPT,
            JOB_COMPLETION_INDEX,
            LABEL_POD_TOKEN,
        )

    def job_name_of(self, pod: Pod) -> str | None:
        """Its JobSet's name (``jobset.sigs.k8s.io/jobset-name``), the TrainJob's; None without the label.

        :param pod: the pod, an API JSON dict.
        """
        return _meta(pod, "labels").get(LABEL_JOBSET_NAME) or None

    def owns_pod(self, job: Mapping[str, Any], pod: Pod) -> bool:
        """The pod carries the TrainJob's pod token (:data:`~airflow_trainjob.constants.LABEL_POD_TOKEN`: the
        provider's runtime patch puts it on the pods of each TrainJob it creates). For a TrainJob made elsewhere,
        without a token: a pod of its JobSet (its name) created no earlier than the TrainJob (a same-named
        predecessor's pods are older; the creation times are the API server's, in whole seconds).

        :param job: the TrainJob, an API JSON dict or an observation (``metadata.name``, ``creationTimestamp``, the
            provider's annotations).
        :param pod: the pod, an API JSON dict (its labels, ``metadata.creationTimestamp``).
        """
        meta = _mapping(job.get("metadata"))
        token = read_own_key(_mapping(meta.get("annotations")), LABEL_POD_TOKEN)
        labels = _meta(pod, "labels")
        if token:
            return read_own_key(labels, LABEL_POD_TOKEN) == token
        if labels.get(LABEL_JOBSET_NAME) != meta.get("name"):
            return False
        created, pod_created = meta.get("creationTimestamp"), (pod.get("metadata") or {}).get("creationTimestamp")
        return not (isinstance(created, str) and isinstance(pod_created, str)) or pod_created >= created

    def replica_statuses(self, status: Any) -> dict[str, dict[str, int]]:
        """{}: a TrainJob's status counts no pods (``jobsStatus`` counts each step's child Jobs: :func:`.steps`).

        :param status: the TrainJob's ``status`` (API JSON dict, or None).
        """
        return {}

    def runtime_name(self, job: Mapping[str, Any]) -> str | None:
        """``spec.runtimeRef.name``, e.g. ``torch-distributed``; None when the spec names none.

        :param job: the TrainJob, an API JSON dict.
        """
        name = _mapping(_mapping(job.get("spec")).get("runtimeRef")).get("name")
        return name if isinstance(name, str) and name else None

    def restart_policies(self, job: Mapping[str, Any]) -> Mapping[str, Any]:
        """{}: a TrainJob's spec gives no restart policy (its runtime's Job templates do; the exit code decides).

        :param job: the TrainJob, an API JSON dict.
        """
        return {}

    def run_times(self, job: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """A TrainJob's status has no start or completion time: the start is its last admission (``Suspended``
        turned False), else its creation; the completion, the transition of its deciding ``Complete``/``Failed``.

        :param job: the TrainJob, an API JSON dict (``metadata.creationTimestamp``, ``status.conditions``).
        """
        conditions = _mapping(job.get("status")).get("conditions")
        resumed = [
            c
            for c in (conditions if isinstance(conditions, list) else [])
            if isinstance(c, Mapping)
            and c.get("type") == TrainJobConditionType.SUSPENDED
            and c.get("status") == ConditionStatus.FALSE
        ]
        start = (resumed[-1].get("lastTransitionTime") if resumed else None) or _mapping(job.get("metadata")).get(
            "creationTimestamp"
        )
        deciding = status_of.deciding_condition(job.get("status")) if self.is_terminal(job.get("status")) else None
        return start, (deciding or {}).get("lastTransitionTime")

    def permanent_by_reason(self, status: Any) -> bool | None:
        """``TrainingRuntimeNotSupported``: permanent (the ``runtimeRef`` names a kind the trainer does not serve: a
        retry sends the same); ``DeadlineExceeded``: retryable, as the task's own ``timeout`` is (a slower cluster, a
        queue); else None: the failed node's exit decides (``FailedJobs``...).

        :param status: the failed TrainJob's ``status`` (API JSON dict, or None).
        """
        condition = status_of.deciding_condition(status) or {}
        return _PERMANENT_BY_REASON.get(str(condition.get("reason") or ""))

    def no_controller_hint(self, namespace: str) -> str:
        """Kubeflow Trainer's controller manager (and the JobSet controller it needs) may not be running.

        :param namespace: the TrainJob's namespace.
        """
        return (
            "Kubeflow Trainer's controller manager (kubeflow-trainer-controller-manager) may not be running, or the "
            f"JobSet controller it runs TrainJobs with; or spec.managedBy hands TrainJobs in {namespace} to another "
            "controller (Kueue's MultiKueue)"
        )

    @property
    def kind(self) -> str:
        """``TrainJob``."""
        return TRAINJOB_KIND

    @property
    def resource(self) -> JobResource:
        """``trainer.kubeflow.org``, ``v1alpha1``, ``trainjobs``."""
        return JobResource(TRAINER_GROUP, TRAINER_VERSION, TRAINJOB_PLURAL, served_by="Kubeflow Trainer v2")

    @property
    def cleanup_policy_field(self) -> str:
        """``""``: a TrainJob has no field saying which pods go when it finishes (the module's docstring); nothing
        is held, so no message names it."""
        return NO_CLEANUP_POLICY_FIELD

    @property
    def any_job_pod_selector(self) -> str:
        """``jobset.sigs.k8s.io/jobset-name``: every JobSet's pods (a TrainJob's JobSet's pods carry no label of the
        trainer's; the watch keeps those of the jobs it follows, by name)."""
        return LABEL_JOBSET_NAME

    @property
    def replica_types(self) -> tuple[str, ...]:
        """The steps of Trainer v2's runtimes (:class:`~airflow_trainjob.constants.TrainJobStep`); a runtime may name
        others."""
        return tuple(step.value for step in TrainJobStep)

    @property
    def lead_order(self) -> tuple[str, ...]:
        """``launcher`` (an MPI runtime), then ``node``."""
        return TrainJobStep.LAUNCHER.value, TrainJobStep.NODE.value

    def pod_selector(self, name: str, replica_index: int | None = None) -> str:
        """``jobset.sigs.k8s.io/jobset-name=<name>``, with ``batch.kubernetes.io/job-completion-index=<index>`` for
        one index (index 0: ``node-0``, the launcher and the initializers; the label is the Job controller's since
        Kubernetes 1.28).

        :param name: the TrainJob's ``metadata.name`` (its JobSet's).
        :param replica_index: only the pods of this completion index (0, 1, ...); None: all.
        """
        selector = f"{LABEL_JOBSET_NAME}={name}"
        return selector if replica_index is None else f"{selector},{JOB_COMPLETION_INDEX}={replica_index}"

    def lead_pod(self, found: Iterable[Pod]) -> Pod | None:
        """The launcher's pod 0, else ``node``'s (of the replicated job's first Job); of several, the newest attempt's.

        :param found: the TrainJob's pods, API JSON dicts.
        """
        found = list(found)
        for step in self.lead_order:
            candidates = [
                p
                for p in found
                if _meta(p, "labels").get(LABEL_REPLICATED_JOB_NAME) == step
                and _job_index(p) == 0
                and _completion_index(p) == 0
            ]
            if candidates:
                return max(candidates, key=_recency)
        return None

    def log_container(self, pod: Pod) -> str:
        """The init container the pod is held at once it has run, else the container named like its step (an
        initializer's), else ``node``, else its first container; ``""`` for a pod without containers.

        :param pod: the pod, an API JSON dict (``spec.containers``, ``status.initContainerStatuses``).
        """
        held = pods.held_init_container(pod)
        if held:
            return held
        names = [str(c.get("name", "")) for c in (pod.get("spec") or {}).get("containers") or []]
        step = str(_meta(pod, "labels").get(LABEL_REPLICATED_JOB_NAME, ""))
        return next((n for n in (step, TRAINJOB_TRAINER_CONTAINER) if n and n in names), names[0] if names else "")

    def container_ends(self, found: Iterable[Pod]) -> list[ContainerEnd]:
        """:func:`~airflow_trainjob.domain.failures.container_ends` with this family's replicas (``node-1``): every
        container run of the TrainJob's pods that ended, init containers included, oldest first.

        :param found: the TrainJob's pods, API JSON dicts.
        """
        return failures.container_ends_by(found, replica_of)

    def pending_reasons(self, found: Iterable[Pod]) -> list[str]:
        """:func:`~airflow_trainjob.domain.failures.pending_reasons` with this family's replicas, and the ``Running``
        pods whose container waits to start again: a Job's pods restart in place (JobSet's default ``restartPolicy:
        OnFailure``), so a step whose container cannot start (an initializer's image entrypoint the runtime relies
        on) stays ``Running`` in ``CrashLoopBackOff`` until its Job's ``backoffLimit``, long after
        ``startup_timeout``.

        :param found: the TrainJob's pods, API JSON dicts.
        """
        return failures.pending_reasons_by(found, replica_of, restarting=True)

    def ends_from_events(self, events: Iterable[Mapping[str, Any]], job: Mapping[str, Any]) -> list[ContainerEnd]:
        """None: no controller of a TrainJob records a container's exit code in an event (the Job controller says
        ``BackoffLimitExceeded``, the kubelet ``BackOff``); the module's docstring.

        :param events: core/v1 events about the TrainJob, API JSON dicts.
        :param job: the TrainJob, an API JSON dict.
        """
        return []

    def status_from_events(self, events: Any, uid: str | None) -> dict[str, Any] | None:
        """None: the trainer announces no end in events on the TrainJob; the JobSet's events carry the JobSet's uid,
        not ``uid`` (:func:`status_from_jobset_events` reads them, given it).

        :param events: the namespace's events about the TrainJob, API JSON dicts, any order.
        :param uid: the TrainJob's ``metadata.uid``.
        """
        return None

    def user_run_policy(self, job: Mapping[str, Any]) -> UserRunPolicy:
        """``None``, no TTL, not held: a TrainJob has nothing the provider could hold (the module's docstring).

        :param job: the TrainJob, an API JSON dict.
        """
        return UserRunPolicy(CleanPodPolicy.NONE.value, None, held=False)

    def event_names(self, job: Mapping[str, Any]) -> set[str]:
        """The TrainJob, its JobSet (of the same name) and the JobSet's child Jobs, ``<name>-<step>-0`` for each step
        of ``status.jobsStatus`` (kubeflow/trainer v2.3.0 runs each replicated job with one replica; jobset's
        ``GenJobName`` names its Jobs so). A Job records ``FailedCreate`` when the API refuses its pods (a service
        account the namespace lacks, a quota), which nothing on the TrainJob or the JobSet says.

        :param job: the TrainJob as last seen, an API JSON dict.
        """
        name = job["metadata"]["name"]
        return {
            name,
            *(f"{name}-{step['name']}-0" for step in status_of.jobs_status(job.get("status")) if step["name"]),
        }

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        """``{"node": spec.trainer.numNodes}`` when the TrainJob sets it; else {} -- the runtime's
        ``mlPolicy.numNodes`` decides, unknown without reading the runtime (an MPI runtime that runs its launcher
        as a node runs ``numNodes - 1`` ``node`` pods besides it).

        :param job: the TrainJob or its manifest, an API JSON dict; or None.
        """
        nodes = _mapping(_mapping(_mapping(job).get("spec")).get("trainer")).get("numNodes")
        if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 0:
            return {TrainJobStep.NODE.value: nodes}
        return {}

    def prerequisites(self, manifest: Mapping[str, Any]) -> tuple[Prerequisite, ...]:
        """The runtime ``spec.runtimeRef`` names (a ``ClusterTrainingRuntime`` unless its ``kind`` says
        ``TrainingRuntime``, then in the TrainJob's namespace): the trainer does not check it at the create, and
        without it only records a ``TrainJobResourcesCreationFailed`` warning and tries again, for ever. None for a
        ``runtimeRef`` of another API group or kind (not the trainer's to run).

        :param manifest: the TrainJob to create, an API JSON dict (``spec.runtimeRef``: ``name``, ``kind``,
            ``apiGroup``; ``metadata.namespace``).
        """
        ref = _mapping(_mapping(manifest.get("spec")).get("runtimeRef"))
        kind, name = ref.get("kind") or DEFAULT_RUNTIME_KIND, ref.get("name")
        if not isinstance(name, str) or not name or ref.get("apiGroup") not in (None, TRAINER_GROUP):
            return ()
        plural = RUNTIME_PLURALS.get(kind)
        if plural is None:
            return ()
        namespace = _mapping(manifest.get("metadata")).get("namespace") if kind != DEFAULT_RUNTIME_KIND else None
        listing = f"kubectl get {plural}" + (f" -n {namespace}" if namespace else "")
        resource = JobResource(TRAINER_GROUP, TRAINER_VERSION, plural, served_by="Kubeflow Trainer v2")
        return (Prerequisite(resource, kind, name, namespace, listing),)

    def spec_summary(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """What a resumed task needs of the TrainJob's spec when it is gone: ``runtimeRef``, the trainer's
        ``numNodes``, ``numProcPerNode``, ``image`` and its command's first word (never its arguments: a script, a
        secret), which initializers it sets (their kinds, not their ``storageUri``/``env``), and ``suspend`` when true.

        :param spec: the TrainJob's ``spec``, an API JSON dict.
        """
        summary: dict[str, Any] = {}
        ref = _mapping(spec.get("runtimeRef"))
        if ref:
            summary["runtimeRef"] = {k: ref[k] for k in ("name", "kind", "apiGroup") if ref.get(k) is not None}
        trainer = _mapping(spec.get("trainer"))
        kept = {k: trainer[k] for k in ("numNodes", "numProcPerNode", "image") if trainer.get(k) is not None}
        command = trainer.get("command")
        if isinstance(command, list) and command:
            kept["command"] = command[:1]
        if kept:
            summary["trainer"] = kept
        initializer = _mapping(spec.get("initializer"))
        steps: dict[str, Any] = {k: {} for k in ("dataset", "model") if isinstance(initializer.get(k), Mapping)}
        if steps:
            summary["initializer"] = steps
        if spec.get("suspend") is True:
            summary["suspend"] = True
        return summary


#: The one adapter (the family has one kind).
TRAINJOB = TrainJobFamily()


def kinds() -> tuple[str, ...]:
    """The family's kinds: ``("TrainJob",)``."""
    return (TRAINJOB_KIND,)


def family(kind: str) -> TrainJobFamily:
    """The adapter of ``kind``.

    :param kind: ``TrainJob``.
    :raises KeyError: ``kind`` is not ``TrainJob``.
    """
    if kind != TRAINJOB_KIND:
        raise KeyError(kind)
    return TRAINJOB

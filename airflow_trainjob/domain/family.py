"""What the lifecycle core (:mod:`airflow_trainjob.domain.lifecycle`) and the drivers (the operator's run and its
synchronous wait, the lead log's follower, the trigger, the sensor, the hooks' addressing, the links, the UI) read of a
job's API family, and nothing else: the port its adapters implement (:mod:`airflow_trainjob.families`; today's one,
``kubeflow.org/v1``'s six kinds, is :mod:`airflow_trainjob.families.kubeflow_v1`). The core names no kind and reads no
condition type of its own, the drivers no kind table (``tests/test_architecture.py`` checks): a second family (Kubeflow
Trainer v2's ``TrainJob``) is a second adapter, not a fourth copy of the judging.

Defined here, beside the core that reads it, so that the domain imports nothing above it; the adapters import the
domain.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.pods import Pod
from airflow_trainjob.domain.user_run_policy import UserRunPolicy


@dataclass(frozen=True)
class JobResource:
    """Where a kind's objects live on the Kubernetes API (a custom resource).

    :param group: the API group, e.g. ``kubeflow.org``.
    :param version: the API version within the group, e.g. ``v1``.
    :param plural: the resource name in URLs, e.g. ``pytorchjobs``.
    :param served_by: what a cluster installs to serve it, as the words of a missing kind name it (the Kubeflow
        training operator; Kubeflow Trainer v2).
    """

    group: str
    version: str
    plural: str
    served_by: str = "the Kubeflow training operator"

    @property
    def api_version(self) -> str:
        """``kubeflow.org/v1``: the objects' ``apiVersion``."""
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        """``pytorchjobs.kubeflow.org``: the resource as ``kubectl`` and RBAC name it."""
        return f"{self.plural}.{self.group}"


@dataclass(frozen=True)
class Prerequisite:
    """An object a job names that must exist before it can run, and that the API does not check at its create (a
    TrainJob's runtime: without it the trainer only warns and retries, so the job would wait forever).

    :param resource: where the object lives (group, version, plural).
    :param kind: its kind, as messages name it (``ClusterTrainingRuntime``).
    :param name: its ``metadata.name``.
    :param namespace: its namespace; None: cluster-scoped.
    :param listing: the command that lists the ones that exist (``kubectl get clustertrainingruntimes``).
    """

    resource: JobResource
    kind: str
    name: str
    namespace: str | None
    listing: str

    def missing_message(self, job_ref: str, answered: str) -> str:
        """The one line of a job refused because this object does not exist: what, and what to do.

        :param job_ref: the job, ``<Kind> <namespace>/<name>``.
        :param answered: the API's code and reason for the read of the object (``404 NotFound``).
        """
        where = f" in namespace {self.namespace}" if self.namespace else ""
        return (
            f'{job_ref} names {self.kind} "{self.name}"{where}, which does not exist ({answered} to get '
            f"{self.resource.name} {self.name}): name one that exists ({self.listing}) or create it; nothing was "
            "created"
        )


class JobFamily(Protocol):
    """One kind of one API family, as the lifecycle core and the drivers read it."""

    @property
    def kind(self) -> str:
        """The kind's name, e.g. ``PyTorchJob``."""
        ...

    @property
    def resource(self) -> JobResource:
        """Where the kind's objects live: group, version, plural."""
        ...

    @property
    def cleanup_policy_field(self) -> str:
        """The job's field saying which pods go when it finishes (``cleanPodPolicy``), as messages name it."""
        ...

    @property
    def success_condition(self) -> str:
        """The condition type of the job's success (``Succeeded``; a TrainJob's ``Complete``): the operator's
        ``ResumableJobMixin`` status of a job that succeeded, the sensor's default target."""
        ...

    @property
    def target_conditions(self) -> tuple[str, ...]:
        """The condition types a sensor may wait for (a failure always ends the wait instead)."""
        ...

    @property
    def suspend_field(self) -> str:
        """The job's field that holds it suspended (``runPolicy.suspend``; a TrainJob's ``spec.suspend``), as
        messages name it."""
        ...

    def is_spec_suspended(self, job: Mapping[str, Any]) -> bool:
        """The job's spec asks for it to be suspended (Kueue holds it there until it admits it).

        :param job: the job, an API JSON dict (its ``spec``).
        """
        ...

    def has_started(self, status: Any) -> bool:
        """The job ran at some point (a replica ran, now or earlier), or has finished.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def started_since_admission(self, status: Any, admitted_at: float | None) -> bool:
        """The job ran (or finished) after its last admission; for a job never suspended, at all: what ends the
        ``startup_timeout`` clock.

        :param status: the job's ``status`` (a dict, or None).
        :param admitted_at: epoch seconds of its last admission as the server dates it; None: never suspended.
        """
        ...

    @property
    def pod_keys(self) -> tuple[str, ...]:
        """The label and annotation keys of the family's pods that say which replica a pod is and which job object
        it is of: what a pod summary keeps (a trigger's event, a record), for :meth:`replica_of` and
        :meth:`owns_pod` to read it as they read the pod."""
        ...

    def job_name_of(self, pod: Pod) -> str | None:
        """The name of the job of this kind that ``pod`` is of (a watch of every job's pods keeps those of the jobs
        it follows); None for a pod of no job of this kind.

        :param pod: the pod, an API JSON dict (its owner references, labels).
        """
        ...

    def owns_pod(self, job: Mapping[str, Any], pod: Pod) -> bool:
        """``pod`` is one of this very job object's pods (never a same-named predecessor's or successor's).

        :param job: the job, an API JSON dict or an observation (its ``metadata.uid``, the provider's annotations).
        :param pod: the pod, an API JSON dict (its ``metadata.ownerReferences`` and labels).
        """
        ...

    def restart_policies(self, job: Mapping[str, Any]) -> Mapping[str, Any]:
        """Replica type -> the restart policy its spec gives (what makes an exit code final or retried); {} when
        the job's spec does not say.

        :param job: the job, an API JSON dict.
        """
        ...

    def run_times(self, job: Mapping[str, Any]) -> tuple[str | None, str | None]:
        """``(start, completion)`` of the job's run as the API dates them (RFC 3339; None when not known): the
        summary's ``startTime``, ``completionTime`` and ``duration``.

        :param job: the job, an API JSON dict (its ``status``; its ``metadata.creationTimestamp``).
        """
        ...

    def permanent_by_reason(self, status: Any) -> bool | None:
        """Whether a failed job's failure is permanent (not retried) by its reason alone, whatever its containers'
        exits: True for a reason retrying cannot change (a runtime the cluster does not serve), False for one a retry
        may pass (a deadline); None when the exits decide.

        :param status: the failed job's ``status`` (a dict, or None).
        """
        ...

    def no_controller_hint(self, namespace: str) -> str:
        """What a deadline's message says when no controller ever acted on the job: which controller should have,
        and what keeps it from acting.

        :param namespace: the job's namespace.
        """
        ...

    def prerequisites(self, manifest: Mapping[str, Any]) -> tuple[Prerequisite, ...]:
        """The objects the job names that must exist before it is created (:class:`Prerequisite`): the operator reads
        each first and refuses the job, not retried, when one is not there.

        :param manifest: the job to create, an API JSON dict.
        """
        ...

    def pod_selector(self, name: str, replica_index: int | None = None) -> str:
        """The label selector of the pods the family's controller creates for job ``name``, of one replica index
        if given (index 0 holds the lead replica).

        :param name: the job's ``metadata.name``.
        :param replica_index: only the pods of this replica index (0, 1, ...); None: all.
        """
        ...

    @property
    def any_job_pod_selector(self) -> str:
        """The label selector of the pods the family's controller creates for any job (a watch shared by the jobs
        of a namespace: the trigger's failed pods, :mod:`~airflow_trainjob.domain.failed_pods`)."""
        ...

    def replica_of(self, pod: Pod) -> tuple[str, int]:
        """``(replica type in the API's spelling, index)`` of one of the job's pods.

        :param pod: the pod, an API JSON dict (its labels).
        """
        ...

    @property
    def lead_order(self) -> tuple[str, ...]:
        """The replica types whose pod 0 leads the job, in order of preference."""
        ...

    def log_container(self, pod: Pod) -> str:
        """The container whose log speaks for the pod's replica (quoted, followed); ``""`` for a pod without any.

        :param pod: the pod, an API JSON dict.
        """
        ...

    def container_ends(self, pods: Iterable[Pod]) -> list[ContainerEnd]:
        """How the containers worth quoting of the job's pods ended (the replicas' containers, not sidecars).

        :param pods: the job's pods, API JSON dicts.
        """
        ...

    def ends_from_events(self, events: Iterable[Mapping[str, Any]], job: Mapping[str, Any]) -> list[ContainerEnd]:
        """The replicas' ends the controller's events record (their pods may be gone), each container named from the
        job's pod templates when the event does not name it.

        :param events: core/v1 events about the job, API JSON dicts.
        :param job: the job, an API JSON dict (its ``metadata.name``, the pod templates of its ``spec``).
        """
        ...

    def user_run_policy(self, job: Mapping[str, Any]) -> UserRunPolicy:
        """What the user asked of the job's cleanup, and whether the provider holds it (the controller was told to
        keep everything until the task has read what it needs).

        :param job: the job, an API JSON dict (its spec and annotations).
        """
        ...

    def status_from_events(self, events: Any, uid: str | None) -> dict[str, Any] | None:
        """The terminal status the controller announced in its events for job ``uid``, for a job gone before its
        terminal state was seen; None when no such event is there.

        :param events: the namespace's events about the job, API JSON dicts, any order.
        :param uid: the job's ``metadata.uid``.
        """
        ...

    def spec_summary(self, spec: Mapping[str, Any]) -> dict[str, Any]:
        """What a resumed task needs of the job's ``spec`` when the job is gone by then: each replica type's
        ``replicas``, ``restartPolicy`` and container names; never a pod template.

        :param spec: the job's ``spec``, an API JSON dict.
        """
        ...

    @property
    def replica_types(self) -> tuple[str, ...]:
        """The replica types the kind accepts, in the API's spelling."""
        ...

    def is_failed(self, status: Any) -> bool:
        """The job failed: it will not run again.

        :param status: the job's ``status`` as the API returns it (a dict, or None before a controller wrote one).
        """
        ...

    def is_succeeded(self, status: Any) -> bool:
        """The job finished successfully.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def is_terminal(self, status: Any) -> bool:
        """The job finished, successfully or not.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def has_condition(self, status: Any, condition_type: str) -> bool:
        """A condition of ``condition_type`` holds (the family's vocabulary: a wait's target).

        :param status: the job's ``status`` (a dict, or None).
        :param condition_type: a condition type of the family, e.g. ``Running``.
        """
        ...

    def phase(self, status: Any) -> str:
        """One word for where the job is (``Running``, ``Succeeded``, ...).

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def summary(self, status: Any, desired: Mapping[str, int] | None = None) -> str:
        """A one-line summary: the phase, why, and the replica counts.

        :param status: the job's ``status`` (a dict, or None).
        :param desired: replica type -> replicas asked for (count); shows ``active/desired`` when given.
        """
        ...

    def controller_has_acted(self, status: Any) -> bool:
        """A controller has written any condition or replica status to the job.

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        """Replica type -> the replicas its spec asks for; {} for a job without a spec.

        :param job: the job or its manifest, an API JSON dict of the kind; or None.
        """
        ...

    def event_names(self, job: Mapping[str, Any]) -> set[str]:
        """The names of the objects whose events explain why the job stands where it does (``involvedObject.name``):
        the job, and for a family that runs it through child objects, those (a TrainJob's JobSet and Jobs, whose
        ``FailedCreate`` says why a step has no pods).

        :param job: the job as last seen, an API JSON dict (its ``metadata.name`` and ``status``).
        """
        ...

    def lead_pod(self, pods: Iterable[Pod]) -> Pod | None:
        """The pod whose log tells the job's story (the lead replica's pod 0), or None.

        :param pods: the job's pods, API JSON dicts.
        """
        ...

    def pending_reasons(self, pods: Iterable[Pod]) -> list[str]:
        """Why pods are not running yet, one line per pending pod.

        :param pods: the job's pods, API JSON dicts.
        """
        ...

    def deciding_condition(self, status: Any) -> Mapping[str, Any] | None:
        """The true condition that decides :meth:`phase`, with its ``reason``, ``message`` and
        ``lastTransitionTime``; None when none does (no condition yet, or a phase the family infers).

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def replica_statuses(self, status: Any) -> dict[str, dict[str, int]]:
        """Replica type -> the counts of its pods the controller reports (``active``, ``succeeded``, ``failed``; v1's
        ``status.replicaStatuses``), in the controller's order; {} for a family whose controller counts no pods (a
        TrainJob counts child Jobs per step: :meth:`steps`).

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def steps(self, status: Any, desired: Mapping[str, int] | None = None) -> list[dict[str, Any]] | None:
        """The job's steps as its controller counts them, for a family that runs a job as steps of child Jobs (a
        TrainJob's ``status.jobsStatus``: each replicated job's ``name``, ``nodes`` asked for, its child Jobs'
        ``active``, ``ready``, ``succeeded``, ``failed``, ``suspended`` counts and their ``text``); None for a family
        that counts pods per replica type instead (:meth:`replica_statuses`).

        :param status: the job's ``status`` (a dict, or None).
        :param desired: replica type -> replicas asked for (:meth:`desired_replicas`), shown beside its step.
        """
        ...

    def trainer_progress(self, status: Any) -> dict[str, Any] | None:
        """The training's own progress, when the controller reports it (a TrainJob's ``status.trainerStatus``):
        ``percentage``, ``estimated_remaining_seconds``, ``metrics`` (``[{name, value}]``), ``last_updated_time``;
        None when it reports none (a v1 job never does).

        :param status: the job's ``status`` (a dict, or None).
        """
        ...

    def runtime_name(self, job: Mapping[str, Any]) -> str | None:
        """The name of the runtime the job runs on (a TrainJob's ``spec.runtimeRef.name``); None for a family without
        runtimes, or a job whose spec names none.

        :param job: the job, an API JSON dict (its ``spec``).
        """
        ...

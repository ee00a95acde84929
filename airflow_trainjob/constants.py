"""Every string of the Kubeflow training API that this provider sends or reads, in one place.

Values are those of the training operator's Go API (kubeflow/training-operator,
``pkg/apis/kubeflow.org/v1/*_types.go``); ``JOB_KINDS`` is the per-kind table that the models,
manifest builder and hooks read. Each closed set of API values is one ``str`` enum here (the models'
fields are typed with them and ``airflow_trainjob.models`` re-exports them): a member equals its value
(``JobConditionType.FAILED == "Failed"``), and ``str()``, f-strings and ``json.dumps`` give the value.
(The local cluster, a stand-in for the training operator, keeps its own copy of the strings it writes:
``airflow_trainjob_local.constants``.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"

# Labels the training operator puts on every pod and service it creates for a job.
LABEL_JOB_NAME = "training.kubeflow.org/job-name"
LABEL_REPLICA_TYPE = "training.kubeflow.org/replica-type"
LABEL_REPLICA_INDEX = "training.kubeflow.org/replica-index"
LABEL_OPERATOR_NAME = "training.kubeflow.org/operator-name"
LABEL_JOB_ROLE = "training.kubeflow.org/job-role"
JOB_ROLE_MASTER = "master"

# Labels this provider puts on the jobs it creates: the Airflow task instance that owns the job.
#: The prefix of every label and annotation key the provider writes: its own name (its distribution's), as a
#: single-label DNS subdomain. The project owns no domain, and a name it holds claims nobody else's (Kubernetes
#: reserves only ``kubernetes.io`` and ``k8s.io``). See docs/labels.md.
LABEL_PREFIX = "airflow-trainjob"
#: The prefix release 0.1.0 wrote (a domain the project does not own): never written, still read, so that a
#: retry after an upgrade finds the job an earlier release created its own (:mod:`airflow_trainjob.domain.own_keys`).
LEGACY_PREFIX = "airflow-trainjob.apache.org"
LABEL_DAG_ID = f"{LABEL_PREFIX}/dag-id"
LABEL_TASK_ID = f"{LABEL_PREFIX}/task-id"
LABEL_RUN_ID = f"{LABEL_PREFIX}/run-id"
LABEL_MAP_INDEX = f"{LABEL_PREFIX}/map-index"
LABEL_TRY_NUMBER = f"{LABEL_PREFIX}/try-number"

# Annotations this provider puts on the jobs it creates: the same identity unsanitised (label values are cut to 63
# characters of ``[a-z0-9A-Z._-]``; a DAG id, run id or task id can hold more), for readers that must name the task
# instance exactly (the UI's links into Airflow).
ANNOTATION_DAG_ID = f"{LABEL_PREFIX}/dag-id"
ANNOTATION_TASK_ID = f"{LABEL_PREFIX}/task-id"
ANNOTATION_RUN_ID = f"{LABEL_PREFIX}/run-id"
ANNOTATION_MAP_INDEX = f"{LABEL_PREFIX}/map-index"
ANNOTATION_TRY_NUMBER = f"{LABEL_PREFIX}/try-number"


class ValueEnum(str, Enum):
    """A ``str`` enum whose ``str()`` and ``format()`` are its value, on every Python the provider supports.

    (A plain ``class E(str, Enum)`` formats as ``E.NAME`` in an f-string from Python 3.11 on; ``enum.StrEnum``
    behaves like this class but only exists from 3.11.)
    """

    __str__ = str.__str__
    __format__ = str.__format__  # type: ignore[assignment]  # str's, on purpose (the docstring)


class JobConditionType(ValueEnum):
    """Known ``JobCondition.type`` values (kubeflow/common v1; ``Suspended`` since training-operator v1.7).

    A controller may write others: conditions of other types are read and kept as strings."""

    CREATED = "Created"
    PENDING = "Pending"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SCALING = "Scaling"
    #: v1.9: ``runPolicy.suspend`` is true (e.g. Kueue holds the job); ``False`` once resumed.
    SUSPENDED = "Suspended"


class ConditionStatus(ValueEnum):
    """``JobCondition.status`` (core/v1 ``ConditionStatus``): a condition counts only when it is ``True``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class PodPhase(ValueEnum):
    """core/v1 ``PodStatus.phase``. A pod the kubelet has not reported on yet has none: read as ``Pending``."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class RestartPolicy(ValueEnum):
    """``ReplicaSpec.restartPolicy``: how the operator treats a replica's pod that exits.

    What each policy does with an exit is decided by :func:`airflow_trainjob.domain.failures.classify_exit`."""

    ALWAYS = "Always"
    ON_FAILURE = "OnFailure"
    NEVER = "Never"
    #: Exit code 1-127 fails the job; 128 and above recreates the pod (``train.IsRetryableExitCode``).
    EXIT_CODE = "ExitCode"


class CleanPodPolicy(ValueEnum):
    """``RunPolicy.cleanPodPolicy``: which pods the operator deletes when the job finishes.

    Training-operator v1.9 defaults every kind to ``None``; ``""`` (undefined) is accepted by the API and means
    ``None`` to it."""

    UNDEFINED = ""
    ALL = "All"
    RUNNING = "Running"
    NONE = "None"


class ManagedBy(ValueEnum):
    """``RunPolicy.managedBy``: the controller that reconciles the job (the operator's webhook allows these two)."""

    TRAINING_OPERATOR = "kubeflow.org/training-operator"
    MULTIKUEUE = "kueue.x-k8s.io/multikueue"


class RDZVBackend(ValueEnum):
    """PyTorchJob ``elasticPolicy.rdzvBackend``: the torchrun rendezvous backend."""

    C10D = "c10d"
    ETCD = "etcd"
    ETCD_V2 = "etcd-v2"


class SuccessPolicy(ValueEnum):
    """TFJob ``spec.successPolicy``: ``""`` (chief, else worker 0, decides) or ``AllWorkers``."""

    DEFAULT = ""
    ALL_WORKERS = "AllWorkers"


#: Aliases kept for modules being rewritten (operator, sensor, trigger); new code uses :class:`JobConditionType`.
CONDITION_SUCCEEDED = JobConditionType.SUCCEEDED
CONDITION_FAILED = JobConditionType.FAILED

#: Kueue's label naming the LocalQueue a job waits in (Kueue's webhook then creates it suspended).
LABEL_KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"

# Reasons the kubelet and the training operator write, read by ``failures.classify_exit`` and ``pods``.
#: A container's ``state.terminated.reason`` when the kernel's OOM killer ended it (exit code usually 137).
REASON_OOM_KILLED = "OOMKilled"
#: A pod's ``status.reason`` when the kubelet evicted it (node pressure); its containers may have no exit code.
REASON_EVICTED = "Evicted"
#: The training operator's event reason for "Pod: <namespace>.<pod> exited with code N" (its default container).
REASON_EXITED_WITH_CODE = "ExitedWithCode"
#: A container's ``state.waiting.reason`` while the pod's init containers have not all completed.
REASON_POD_INITIALIZING = "PodInitializing"
#: An init container's ``restartPolicy`` that makes it a sidecar (Kubernetes 1.28+): it runs beside the main
#: containers, is restarted whatever its exit, and is stopped by the kubelet once they have ended.
SIDECAR_RESTART_POLICY = "Always"

# Kubernetes object names and label values: DNS-1035 label, at most 63 characters.
MAX_NAME_LENGTH = 63


@dataclass(frozen=True)
class JobKind:
    """One training-operator job kind, as its Go API declares it.

    :param kind: the ``kind`` field, e.g. ``PyTorchJob``.
    :param plural: the resource name in URLs, e.g. ``pytorchjobs``.
    :param replica_specs_key: the ``spec`` key holding the replica specs, e.g. ``pytorchReplicaSpecs``.
    :param replica_types: the replica types the kind accepts, in the API's spelling.
    :param lead_replica_types: the replica types whose pod leads the job (coordinator, logs worth
        following), in order of preference; the first one present in a job wins, else ``Worker`` 0.
    :param default_container: the container name the operator looks for (``<Kind>DefaultContainerName``).
    :param default_port_name: the port name the operator looks for (``<Kind>DefaultPortName``).
    :param default_port: the port number the operator defaults to (``<Kind>DefaultPort``).
    :param default_restart_policy: the ``restartPolicy`` training-operator v1.9 gives a replica spec that has
        none (``<Kind>DefaultRestartPolicy``). The provider always writes one (``Never`` unless given, see
        :class:`~airflow_trainjob.models.common.ReplicaSpec`); this is what a job made elsewhere (the SDK,
        ``kubectl``) runs with, read by :func:`airflow_trainjob.domain.failures.restart_policies`.
    :param requires_default_container: every replica's pod must have a container named
        ``default_container`` (the operator's validation refuses the job otherwise).
    :param required_replica_types: replica types the job cannot run without.
    :param single_replica_types: replica types that must have exactly one replica.
    :param exclusive_replica_types: replica types of which a job may hold at most one.

    The kind's own ``spec`` fields (``elasticPolicy``, ``slotsPerWorker``...) are not listed here: the kind's
    fields model is their one definition (:func:`airflow_trainjob.models.kinds.kind_field_names`).
    """

    kind: str
    plural: str
    replica_specs_key: str
    replica_types: tuple[str, ...]
    lead_replica_types: tuple[str, ...]
    default_container: str
    default_port_name: str
    default_port: int
    default_restart_policy: RestartPolicy
    requires_default_container: bool = True
    required_replica_types: tuple[str, ...] = ()
    single_replica_types: tuple[str, ...] = ()
    exclusive_replica_types: tuple[str, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def lead_order(self) -> tuple[str, ...]:
        """Replica types in the order their pod 0 leads the job: :attr:`lead_replica_types`, then ``Worker``."""
        return (*self.lead_replica_types, REPLICA_TYPE_WORKER)

    @property
    def sdk_class(self) -> str:
        """The Kubeflow training SDK's model class of the kind, e.g. ``KubeflowOrgV1PyTorchJob``."""
        return f"KubeflowOrgV1{self.kind}"

    def desired_replicas(self, job: Mapping[str, Any] | None) -> dict[str, int]:
        """Replica type (the API's spelling, matched regardless of case) -> ``replicas`` of its spec
        (``spec.<kind>ReplicaSpecs[*].replicas``; 1, the API's default, where unset or not a count); {} for a job
        without a spec (a recorded one).

        :param job: the job or its manifest, an API JSON dict of this kind; or None.
        """
        specs = ((job or {}).get("spec") or {}).get(self.replica_specs_key)
        desired: dict[str, int] = {}
        for key, spec in specs.items() if isinstance(specs, Mapping) else ():
            replica_type = next((t for t in self.replica_types if t.lower() == str(key).lower()), str(key))
            replicas = spec.get("replicas") if isinstance(spec, Mapping) else None
            desired[replica_type] = replicas if isinstance(replicas, int) else 1
        return desired


#: The replica type every kind has; pod 0 of it leads a job with none of its kind's lead replica types.
REPLICA_TYPE_WORKER = "Worker"


PYTORCH_JOB = JobKind(
    kind="PyTorchJob",
    plural="pytorchjobs",
    replica_specs_key="pytorchReplicaSpecs",
    replica_types=("Master", "Worker"),
    lead_replica_types=("Master",),
    default_container="pytorch",
    default_port_name="pytorchjob-port",
    default_port=23456,
    default_restart_policy=RestartPolicy.ON_FAILURE,
    single_replica_types=("Master",),
)
TF_JOB = JobKind(
    kind="TFJob",
    plural="tfjobs",
    replica_specs_key="tfReplicaSpecs",
    replica_types=("Chief", "Master", "PS", "Worker", "Evaluator"),
    lead_replica_types=("Chief", "Master"),
    default_container="tensorflow",
    default_port_name="tfjob-port",
    default_port=2222,
    default_restart_policy=RestartPolicy.NEVER,
    single_replica_types=("Chief", "Master"),
    exclusive_replica_types=("Chief", "Master"),
)
MPI_JOB = JobKind(
    kind="MPIJob",
    plural="mpijobs",
    replica_specs_key="mpiReplicaSpecs",
    replica_types=("Launcher", "Worker"),
    lead_replica_types=("Launcher",),
    default_container="mpi",
    default_port_name="mpi-port",
    default_port=9999,
    default_restart_policy=RestartPolicy.NEVER,
    requires_default_container=False,
    required_replica_types=("Launcher",),
    single_replica_types=("Launcher",),
)
XGBOOST_JOB = JobKind(
    kind="XGBoostJob",
    plural="xgboostjobs",
    replica_specs_key="xgbReplicaSpecs",
    replica_types=("Master", "Worker"),
    lead_replica_types=("Master",),
    default_container="xgboost",
    default_port_name="xgboostjob-port",
    default_port=9999,
    default_restart_policy=RestartPolicy.NEVER,
    required_replica_types=("Master",),
    single_replica_types=("Master",),
)
PADDLE_JOB = JobKind(
    kind="PaddleJob",
    plural="paddlejobs",
    replica_specs_key="paddleReplicaSpecs",
    replica_types=("Master", "Worker"),
    lead_replica_types=("Master",),
    default_container="paddle",
    default_port_name="master",
    default_port=36543,
    default_restart_policy=RestartPolicy.ON_FAILURE,
)
JAX_JOB = JobKind(
    kind="JAXJob",
    plural="jaxjobs",
    replica_specs_key="jaxReplicaSpecs",
    replica_types=("Worker",),
    lead_replica_types=(),
    default_container="jax",
    default_port_name="jaxjob-port",
    default_port=6666,
    default_restart_policy=RestartPolicy.NEVER,
)

JOB_KINDS: dict[str, JobKind] = {k.kind: k for k in (PYTORCH_JOB, TF_JOB, MPI_JOB, XGBOOST_JOB, PADDLE_JOB, JAX_JOB)}


# --- Kubeflow Trainer v2 -----------------------------------------------------------------------------------------
# The ``TrainJob`` family (``trainer.kubeflow.org/v1alpha1``), as kubeflow/trainer v2.3.0 writes it
# (``pkg/apis/trainer/v1alpha1/trainjob_types.go``, ``pkg/constants``), and the JobSet (kubernetes-sigs/jobset v0.12.0,
# ``api/jobset/v1alpha2``, ``pkg/constants``) and batch Job strings its pods and events carry. The provider's own copy:
# the local cluster's stand-in keeps another (``airflow_trainjob_local.trainer.constants``, ``.jobset.constants``).

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
TRAINER_API_VERSION = f"{TRAINER_GROUP}/{TRAINER_VERSION}"
TRAINJOB_KIND = "TrainJob"
TRAINJOB_PLURAL = "trainjobs"
#: The runtimes a TrainJob's ``spec.runtimeRef`` names (``kind`` -> plural): cluster-scoped, and namespaced.
RUNTIME_PLURALS = {"ClusterTrainingRuntime": "clustertrainingruntimes", "TrainingRuntime": "trainingruntimes"}
#: The kind a ``runtimeRef`` without one names.
DEFAULT_RUNTIME_KIND = "ClusterTrainingRuntime"


class TrainJobConditionType(ValueEnum):
    """A TrainJob's ``status.conditions[].type`` (``metav1.Condition``). There is no ``Created`` and no ``Running``:
    the trainer copies the JobSet's ``Completed`` (as ``Complete``) and ``Failed``, and writes ``Suspended`` itself."""

    SUSPENDED = "Suspended"
    COMPLETE = "Complete"
    FAILED = "Failed"


class TrainJobReason(ValueEnum):
    """The reasons of a TrainJob's conditions: the trainer's own, and the JobSet's its ``Complete`` and ``Failed``
    carry (the JobSet controller records them as events on the JobSet too)."""

    #: ``Suspended`` True: ``spec.suspend`` is true (e.g. Kueue holds the job).
    SUSPENDED = "Suspended"
    #: ``Suspended`` turned False: resumed (admitted).
    RESUMED = "Resumed"
    #: ``Failed``: the ``runtimeRef`` names a kind the trainer does not serve.
    RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
    #: ``Failed``: ``spec.activeDeadlineSeconds`` passed (the trainer deletes the JobSet, its pods with it).
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    #: ``Complete`` (the JobSet's ``Completed``): its success policy is met.
    ALL_JOBS_COMPLETED = "AllJobsCompleted"
    #: ``Failed`` (the JobSet's): a child Job failed and the JobSet has no failure policy.
    FAILED_JOBS = "FailedJobs"
    #: ``Failed`` (the JobSet's): its failure policy's ``maxRestarts`` is used up.
    REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
    #: ``Failed`` (the JobSet's): a failure policy rule with the ``FailJobSet`` action matched.
    FAIL_JOBSET_ACTION = "FailJobSetFailurePolicyAction"


class TrainJobStep(ValueEnum):
    """The replicated jobs of Trainer v2's runtimes (the JobSet's ``replicatedJobs[].name``, the pods'
    ``jobset.sigs.k8s.io/replicatedjob-name``), each a replica type of a TrainJob; the initializers' containers are
    named like their step, the trainer's (``node``, also the MPI launcher's) ``node``."""

    DATASET_INITIALIZER = "dataset-initializer"
    MODEL_INITIALIZER = "model-initializer"
    LAUNCHER = "launcher"
    NODE = "node"


#: The trainer's container in the ``node`` and ``launcher`` steps' pods.
TRAINJOB_TRAINER_CONTAINER = "node"
#: The JobSet a TrainJob runs as (same name and namespace, owned by the TrainJob).
JOBSET_KIND = "JobSet"
# Labels the JobSet controller puts on its Jobs' pods (an annotation of the same name holds the same value).
LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
LABEL_REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_JOBSET_RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
#: An Indexed Job's pod's completion index: an annotation, and (Kubernetes 1.28+) a label of the same name.
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
#: The counts of ``status.jobsStatus[]`` (the JobSet's ``replicatedJobsStatus``), in child Jobs.
JOBS_STATUS_COUNTS = ("active", "ready", "succeeded", "failed", "suspended")
#: The ``manager`` of the ``runtimePatches`` entry the provider writes (upstream keys patches by manager: Kueue's is
#: ``kueue.x-k8s.io/manager``): it puts the task instance's labels and :data:`LABEL_POD_TOKEN` on every pod.
RUNTIME_PATCH_MANAGER = f"{LABEL_PREFIX}/manager"
#: A TrainJob's pods are owned by batch Jobs, not by the TrainJob, so an owner reference cannot tell whose they are:
#: the provider writes one random token per TrainJob it creates, as this annotation on the TrainJob and (through its
#: runtime patch) as this label on each of its pods; a pod is the TrainJob's when the two match.
LABEL_POD_TOKEN = f"{LABEL_PREFIX}/pod-token"

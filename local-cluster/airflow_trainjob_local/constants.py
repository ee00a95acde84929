"""The strings of the Kubeflow training API that the local cluster's controller writes and reads.

The local cluster stands in for kubeflow/training-operator (branch ``release-1.9``); its values come from that
Go code (``pkg/apis/kubeflow.org/v1/*_types.go`` and ``*_defaults.go``, ``pkg/controller.v1/*``,
``pkg/util/status.go``), not from the provider: a controller and its client are two programs that agree on an
API, and the provider's tests are worth something only if each side holds its own copy of it.
"""

from __future__ import annotations

from dataclasses import dataclass

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

# JobConditionType values the controller writes (kubeflow/common v1).
CONDITION_CREATED = "Created"
CONDITION_RUNNING = "Running"
CONDITION_RESTARTING = "Restarting"
CONDITION_SUCCEEDED = "Succeeded"
CONDITION_FAILED = "Failed"
CONDITION_SUSPENDED = "Suspended"
CONDITION_TRUE = "True"

# ReplicaSpec.restartPolicy values (kubeflow/common v1 RestartPolicy).
RESTART_POLICY_ALWAYS = "Always"
RESTART_POLICY_ON_FAILURE = "OnFailure"
RESTART_POLICY_NEVER = "Never"
RESTART_POLICY_EXIT_CODE = "ExitCode"

# RunPolicy.cleanPodPolicy values; every kind defaults to None.
CLEAN_POD_POLICY_RUNNING = "Running"
CLEAN_POD_POLICY_NONE = "None"

# TFJob spec.successPolicy values ("" = chief/master, else worker 0).
TF_SUCCESS_POLICY_DEFAULT = ""
TF_SUCCESS_POLICY_ALL_WORKERS = "AllWorkers"

# PyTorchJob spec.nprocPerNode default.
PYTORCH_DEFAULT_NPROC_PER_NODE = "auto"

# The ``<Kind><Reason>`` suffixes of job condition and event reasons (util.NewReason), e.g. PyTorchJobFailed.
JOB_REASON_CREATED = "Created"
JOB_REASON_RUNNING = "Running"
JOB_REASON_RESTARTING = "Restarting"
JOB_REASON_SUCCEEDED = "Succeeded"
JOB_REASON_FAILED = "Failed"

# Event reasons the operator records on the job besides the <Kind><Reason> ones.
EVENT_REASON_EXITED_WITH_CODE = "ExitedWithCode"
EVENT_REASON_SUCCESSFUL_CREATE_POD = "SuccessfulCreatePod"
EVENT_REASON_FAILED_CREATE_POD = "FailedCreatePod"
EVENT_REASON_SUCCESSFUL_DELETE_POD = "SuccessfulDeletePod"
EVENT_REASON_FAILED_DELETE_POD = "FailedDeletePod"
EVENT_REASON_SUCCESSFUL_CREATE_SERVICE = "SuccessfulCreateService"
EVENT_REASON_FAILED_CREATE_SERVICE = "FailedCreateService"
EVENT_REASON_SUCCESSFUL_DELETE_SERVICE = "SuccessfulDeleteService"
EVENT_REASON_FAILED_DELETE_SERVICE = "FailedDeleteService"
EVENT_REASON_SUCCESSFUL_DELETE_JOB = "SuccessfulDeleteJob"
EVENT_REASON_POD_TEMPLATE_RESTART_POLICY = "SetPodTemplateRestartPolicy"
# Local controller only: schedulingPolicy.minAvailable cannot be met yet (the real operator leaves this
# to the gang scheduler's PodGroup events).
EVENT_REASON_MIN_AVAILABLE_NOT_MET = "MinAvailableNotMet"

# Kubernetes object names and label values: DNS-1035 label, at most 63 characters.
MAX_NAME_LENGTH = 63

# Local cluster only: the prefix of the keys the local cluster writes itself, its own name (its distribution's), as
# the provider's are its own (``airflow-trainjob/``): a reader tells the stand-in's bookkeeping from the provider's.
LOCAL_KEY_PREFIX = "airflow-trainjob-local"
# Local cluster only: the loopback ports the local controller gave a job's replicas, as JSON
# {"<replicatype lowercase>-<index>": port}, kept on the job so they survive a controller restart.
ANNOTATION_LOCAL_PORTS = f"{LOCAL_KEY_PREFIX}/local-ports"
# Local cluster only: how many replica pods the local controller deleted and recreated (counted for backoffLimit).
ANNOTATION_LOCAL_RESTARTS = f"{LOCAL_KEY_PREFIX}/local-restarts"


@dataclass(frozen=True)
class JobKind:
    """One job kind as the training operator's controller for it handles it.

    :param kind: the ``kind`` field, e.g. ``PyTorchJob``.
    :param plural: the resource name in URLs, e.g. ``pytorchjobs``.
    :param replica_specs_key: the ``spec`` key holding the replica specs, e.g. ``pytorchReplicaSpecs``.
    :param replica_types: the replica types the kind accepts, in the API's spelling.
    :param default_container: the container the controller configures (``<Kind>DefaultContainerName``).
    :param default_port_name: the port name it looks for (``<Kind>DefaultPortName``).
    :param default_restart_policy: a replica's ``restartPolicy`` when it sets none (``<Kind>DefaultRestartPolicy``).
    :param controller_name: the controller's name: the ``operator-name`` label's value and the events' source.
    :param single_replica_types: replica types that must have exactly one replica.
    """

    kind: str
    plural: str
    replica_specs_key: str
    replica_types: tuple[str, ...]
    default_container: str
    default_port_name: str
    default_restart_policy: str
    controller_name: str
    single_replica_types: tuple[str, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()


PYTORCH_JOB = JobKind(
    "PyTorchJob",
    "pytorchjobs",
    "pytorchReplicaSpecs",
    ("Master", "Worker"),
    "pytorch",
    "pytorchjob-port",
    RESTART_POLICY_ON_FAILURE,
    "pytorchjob-controller",
    single_replica_types=("Master",),
)
TF_JOB = JobKind(
    "TFJob",
    "tfjobs",
    "tfReplicaSpecs",
    ("Chief", "Master", "PS", "Worker", "Evaluator"),
    "tensorflow",
    "tfjob-port",
    RESTART_POLICY_NEVER,
    "tfjob-controller",
    single_replica_types=("Chief", "Master"),
)
MPI_JOB = JobKind(
    "MPIJob",
    "mpijobs",
    "mpiReplicaSpecs",
    ("Launcher", "Worker"),
    "mpi",
    "mpi-port",
    RESTART_POLICY_NEVER,
    "mpijob-controller",
    single_replica_types=("Launcher",),
)
XGBOOST_JOB = JobKind(
    "XGBoostJob",
    "xgboostjobs",
    "xgbReplicaSpecs",
    ("Master", "Worker"),
    "xgboost",
    "xgboostjob-port",
    RESTART_POLICY_NEVER,
    "xgboostjob-controller",
    single_replica_types=("Master",),
)
PADDLE_JOB = JobKind(
    "PaddleJob",
    "paddlejobs",
    "paddleReplicaSpecs",
    ("Master", "Worker"),
    "paddle",
    "master",
    RESTART_POLICY_ON_FAILURE,
    "paddlejob-controller",
)
JAX_JOB = JobKind(
    "JAXJob",
    "jaxjobs",
    "jaxReplicaSpecs",
    ("Worker",),
    "jax",
    "jaxjob-port",
    RESTART_POLICY_NEVER,
    "jaxjob-controller",
)

JOB_KINDS: dict[str, JobKind] = {k.kind: k for k in (PYTORCH_JOB, TF_JOB, MPI_JOB, XGBOOST_JOB, PADDLE_JOB, JAX_JOB)}

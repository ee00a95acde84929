"""Every string of the Kubeflow training API that this provider sends or reads, in one place.

Values are those of the training operator's Go API (kubeflow/training-operator,
``pkg/apis/kubeflow.org/v1/*_types.go``); ``JOB_KINDS`` is the per-kind table that the models,
manifest builder and hooks read. (The local cluster, a stand-in for the training operator, keeps its own copy
of the strings it writes: ``airflow_trainjob_local.constants``.)
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

# Labels this provider puts on the jobs it creates: the Airflow task instance that owns the job.
LABEL_PREFIX = "airflow-trainjob.apache.org"
LABEL_DAG_ID = f"{LABEL_PREFIX}/dag-id"
LABEL_TASK_ID = f"{LABEL_PREFIX}/task-id"
LABEL_RUN_ID = f"{LABEL_PREFIX}/run-id"
LABEL_MAP_INDEX = f"{LABEL_PREFIX}/map-index"
LABEL_TRY_NUMBER = f"{LABEL_PREFIX}/try-number"

# JobConditionType values (kubeflow/common v1; Suspended since training-operator v1.7). A controller may write others.
CONDITION_CREATED = "Created"
CONDITION_PENDING = "Pending"
CONDITION_RUNNING = "Running"
CONDITION_RESTARTING = "Restarting"
CONDITION_SUCCEEDED = "Succeeded"
CONDITION_FAILED = "Failed"
CONDITION_SCALING = "Scaling"
#: v1.9: the job's ``runPolicy.suspend`` is true (Kueue holds it in a queue); it turns ``False`` on resumption.
CONDITION_SUSPENDED = "Suspended"
CONDITION_TRUE = "True"
CONDITION_FALSE = "False"

#: Kueue's label naming the LocalQueue a job waits in (Kueue's webhook then creates it suspended).
LABEL_KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"

# Pod-level reasons and exit codes that the ExitCode restart policy and our retry mapping read.
REASON_OOM_KILLED = "OOMKilled"
FATAL_EXIT_CODE = 1

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
    :param kind_fields: the kind's own ``spec`` fields besides ``runPolicy`` and the replica specs.
    :param requires_default_container: every replica's pod must have a container named
        ``default_container`` (the operator's validation refuses the job otherwise).
    :param required_replica_types: replica types the job cannot run without.
    :param single_replica_types: replica types that must have exactly one replica.
    :param exclusive_replica_types: replica types of which a job may hold at most one.
    """

    kind: str
    plural: str
    replica_specs_key: str
    replica_types: tuple[str, ...]
    lead_replica_types: tuple[str, ...]
    default_container: str
    default_port_name: str
    default_port: int
    kind_fields: tuple[str, ...] = ()
    requires_default_container: bool = True
    required_replica_types: tuple[str, ...] = ()
    single_replica_types: tuple[str, ...] = ()
    exclusive_replica_types: tuple[str, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()


PYTORCH_JOB = JobKind(
    kind="PyTorchJob",
    plural="pytorchjobs",
    replica_specs_key="pytorchReplicaSpecs",
    replica_types=("Master", "Worker"),
    lead_replica_types=("Master",),
    default_container="pytorch",
    default_port_name="pytorchjob-port",
    default_port=23456,
    kind_fields=("elasticPolicy", "nprocPerNode"),
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
    kind_fields=("successPolicy", "enableDynamicWorker"),
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
    kind_fields=("slotsPerWorker", "mainContainer"),
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
    kind_fields=("elasticPolicy",),
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
)

JOB_KINDS: dict[str, JobKind] = {
    k.kind: k for k in (PYTORCH_JOB, TF_JOB, MPI_JOB, XGBOOST_JOB, PADDLE_JOB, JAX_JOB)
}

# RunPolicy.cleanPodPolicy values; every kind defaults to None.
CLEAN_POD_POLICY_ALL = "All"
CLEAN_POD_POLICY_RUNNING = "Running"
CLEAN_POD_POLICY_NONE = "None"

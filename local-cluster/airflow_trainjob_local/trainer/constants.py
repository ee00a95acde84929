"""The strings of the Kubeflow Trainer v2 API that the local trainer controller writes and reads.

Read from kubeflow/trainer ``v2.3.0`` (``pkg/apis/trainer/v1alpha1/*_types.go``, ``pkg/constants``), not from the
provider: a controller and its client are two programs that agree on an API.
"""

from __future__ import annotations

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

TRAINJOB_KIND = "TrainJob"
TRAINJOBS = "trainjobs"
TRAINING_RUNTIME_KIND = "TrainingRuntime"
TRAINING_RUNTIMES = "trainingruntimes"
CLUSTER_TRAINING_RUNTIME_KIND = "ClusterTrainingRuntime"
CLUSTER_TRAINING_RUNTIMES = "clustertrainingruntimes"

#: ``spec.managedBy``: the trainer's own controller (the default) and MultiKueue's.
MANAGED_BY_TRAINER = "trainer.kubeflow.org/trainjob-controller"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"

# Condition types of a TrainJob (there is no Created and no Running condition in v2).
CONDITION_SUSPENDED = "Suspended"
CONDITION_COMPLETE = "Complete"
CONDITION_FAILED = "Failed"

# Reasons the trainer writes itself; Complete and Failed otherwise carry the JobSet's reason.
REASON_SUSPENDED = "Suspended"
REASON_RESUMED = "Resumed"
REASON_RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"

MESSAGE_SUSPENDED = "TrainJob is suspended"
MESSAGE_RESUMED = "TrainJob is resumed"
MESSAGE_DEADLINE_EXCEEDED = "TrainJob exceeded its active deadline"

# Labels.
LABEL_ANCESTOR_STEP = "trainer.kubeflow.org/trainjob-ancestor-step"
LABEL_FRAMEWORK = "trainer.kubeflow.org/framework"
LABEL_SUPPORT = "trainer.kubeflow.org/support"

# Steps (replicated job names and the containers they run) and their mount paths.
ANCESTOR_TRAINER = "trainer"
NODE = "node"
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
DATASET_MOUNT_PATH = "/workspace/dataset"
MODEL_MOUNT_PATH = "/workspace/model"
LAUNCHER = "launcher"

#: The port of the trainer container (torch's master port on a real cluster).
CONTAINER_TRAINER_PORT = 29500

# The torch plugin's environment (torchrun reads the PET_ variables).
TORCH_ENV_NUM_NODES = "PET_NNODES"
TORCH_ENV_NUM_PROC_PER_NODE = "PET_NPROC_PER_NODE"
TORCH_ENV_NODE_RANK = "PET_NODE_RANK"
TORCH_ENV_MASTER_ADDR = "PET_MASTER_ADDR"
TORCH_ENV_MASTER_PORT = "PET_MASTER_PORT"
TORCH_RESERVED_ENV = frozenset(
    {
        TORCH_ENV_NUM_NODES,
        TORCH_ENV_NUM_PROC_PER_NODE,
        TORCH_ENV_NODE_RANK,
        TORCH_ENV_MASTER_ADDR,
        TORCH_ENV_MASTER_PORT,
    }
)

# --- added for the TrainJob controller (s26c) ---

#: The JobSet API the trainer builds (kept here too: the trainer package does not read the jobset package's copy).
JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_KIND = "JobSet"
JOBSETS = "jobsets"
JOBSET_CONDITION_COMPLETED = "Completed"
JOBSET_CONDITION_FAILED = "Failed"

#: The field path of a Job pod's completion index (PET_NODE_RANK reads it).
JOB_COMPLETION_INDEX_FIELD_PATH = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

#: The env variable of an initializer container naming what to download (jobset plugin constants).
INITIALIZER_ENV_STORAGE_URI = "STORAGE_URI"
#: The volume an initializer writes to.
VOLUME_NAME_INITIALIZER = "initializer"

#: numProcPerNode when the TrainJob sets none.
NUM_PROC_PER_NODE_AUTO = "auto"
#: torchtune's entrypoint: the torch plugin rewrites such a command (not supported locally).
TORCHTUNE_ENTRYPOINT = ("tune", "run")

#: The ConfigMap freezing the runtime a TrainJob was first built from: ``<trainjob><suffix>``, key ``runtime``.
RUNTIME_SNAPSHOT_SUFFIX = "-runtime-snapshot"
RUNTIME_SNAPSHOT_KEY = "runtime"

#: Event reasons and the event component.
EVENT_COMPONENT = "trainer-trainjob-controller"
REASON_RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"
#: Local: the reason of the Failed condition for a TrainJob an admission webhook would have refused.
REASON_FAILED_VALIDATION = "FailedValidation"

#: Local: the TrainJob annotation keeping its loopback torch master port across controller restarts.
ANNOTATION_LOCAL_MASTER_PORT = "airflow-trainjob-local/master-port"
#: Local: the torch master address (all pods are processes on one host).
LOCAL_MASTER_ADDR = "127.0.0.1"

#: The TrainJob status field the status server writes (``status.trainerStatus``); the controller never writes it.
STATUS_TRAINER_STATUS = "trainerStatus"

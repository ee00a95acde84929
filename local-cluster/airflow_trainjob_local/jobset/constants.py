"""The strings of the JobSet API (kubernetes-sigs/jobset ``v0.12.0``, ``api/jobset/v1alpha2``) and of batch Jobs
that the local JobSet controller writes and reads, with the JobSet's own copy of them (not the provider's).
"""

from __future__ import annotations

GROUP = "jobset.x-k8s.io"
VERSION = "v1alpha2"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "JobSet"
PLURAL = "jobsets"

# Labels (and annotations of the same names) on the JobSet's Jobs and pods.
LABEL_JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
LABEL_REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
LABEL_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
LABEL_JOB_KEY = "jobset.sigs.k8s.io/job-key"
LABEL_JOBSET_UID = "jobset.sigs.k8s.io/jobset-uid"
LABEL_RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
LABEL_GLOBAL_REPLICAS = "jobset.sigs.k8s.io/global-replicas"
LABEL_JOB_GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"

# Labels and annotation a batch Job controller puts on its pods.
LABEL_JOB_NAME = "batch.kubernetes.io/job-name"
LABEL_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
LABEL_JOB_NAME_LEGACY = "job-name"
LABEL_CONTROLLER_UID_LEGACY = "controller-uid"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

#: ``spec.managedBy``: the JobSet controller's own value (the default) and MultiKueue's.
MANAGED_BY_JOBSET = "jobset.sigs.k8s.io/jobset-controller"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"

# JobSet condition types and reasons.
CONDITION_COMPLETED = "Completed"
CONDITION_FAILED = "Failed"
CONDITION_SUSPENDED = "Suspended"
CONDITION_STARTUP_POLICY_COMPLETED = "StartupPolicyCompleted"
REASON_ALL_JOBS_COMPLETED = "AllJobsCompleted"
REASON_FAILED_JOBS = "FailedJobs"
REASON_REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
REASON_SUSPENDED = "SuspendedJobs"
REASON_RESUMED = "ResumeJobs"
CONDITION_RESTARTING = "RestartingJobSet"
CONDITION_STARTUP_POLICY_IN_PROGRESS = "StartupPolicyInProgress"

# Labels and annotations of the JobSet's groups (``groupName``, default "default").
LABEL_GROUP_NAME = "jobset.sigs.k8s.io/group-name"
LABEL_GROUP_REPLICAS = "jobset.sigs.k8s.io/group-replicas"
LABEL_JOB_GROUP_INDEX = "jobset.sigs.k8s.io/job-group-index"
DEFAULT_GROUP_NAME = "default"
#: Label and annotation naming the coordinator pod's address (``spec.coordinator``).
LABEL_COORDINATOR = "jobset.sigs.k8s.io/coordinator"
#: Exclusive placement annotations, copied from the JobSet or the replicated job onto Jobs and pods.
ANNOTATION_EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
ANNOTATION_NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"
#: ``failurePolicy.restartStrategy`` that waits for the previous attempt's Jobs to be gone.
RESTART_STRATEGY_BLOCKING_RECREATE = "BlockingRecreate"

# Messages and further reasons of the JobSet controller (``pkg/constants/constants.go``).
MESSAGE_ALL_JOBS_COMPLETED = "jobset completed successfully"
MESSAGE_FAILED_JOBS = "jobset failed due to one or more job failures"
MESSAGE_REACHED_MAX_RESTARTS = "jobset failed due to reaching max number of restarts"
MESSAGE_SUSPENDED = "jobset is suspended"
MESSAGE_RESUMED = "jobset is resumed"
REASON_IN_ORDER_IN_PROGRESS = "InOrderStartupPolicyInProgress"
MESSAGE_IN_ORDER_IN_PROGRESS = "in order startup policy is in progress"
REASON_IN_ORDER_COMPLETED = "InOrderStartupPolicyCompleted"
MESSAGE_IN_ORDER_COMPLETED = "in order startup policy has completed"
REASON_FAIL_JOBSET_ACTION = "FailJobSetFailurePolicyAction"
MESSAGE_FAIL_JOBSET_ACTION = "applying FailJobSet failure policy action"
REASON_RESTART_JOBSET_ACTION = "RestartJobSetFailurePolicyAction"
MESSAGE_RESTART_JOBSET_ACTION = "applying RestartJobSet failure policy action"
REASON_RESTART_IGNORE_MAX_ACTION = "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction"
MESSAGE_RESTART_IGNORE_MAX_ACTION = "applying RestartJobSetAndIgnoreMaxRestarts failure policy action"
REASON_RESTARTING_DEFAULT = "DefaultFailurePolicy"
REASON_RESTARTING_RULE_FORMAT = "FailurePolicy_{}"
REASON_RESTARTING_JOBS_READY = "JobsReady"
MESSAGE_RESTARTING_JOBS_READY = "all jobs are ready"
REASON_RESTARTING_JOBSET_FAILED = "JobSetFailed"
MESSAGE_RESTARTING_JOBSET_FAILED = "jobset failed"
REASON_RESTARTING_JOBSET_COMPLETED = "JobSetCompleted"
REASON_RESTARTING_JOBSET_SUSPENDED = "JobSetSuspended"
REASON_JOB_CREATION_FAILED = "JobCreationFailed"
REASON_HEADLESS_SERVICE_CREATION_FAILED = "HeadlessServiceCreationFailed"
#: Warning event reason when a volume claim policy's PVC cannot be created (``pkg/constants/constants.go``).
REASON_PVC_CREATION_FAILED = "PVCCreationFailed"

# Failure policy actions, startup orders, success operators, dependsOn statuses.
ACTION_FAIL_JOBSET = "FailJobSet"
ACTION_RESTART_JOBSET = "RestartJobSet"
ACTION_RESTART_JOBSET_IGNORE_MAX = "RestartJobSetAndIgnoreMaxRestarts"
STARTUP_IN_ORDER = "InOrder"
OPERATOR_ALL = "All"
OPERATOR_ANY = "Any"
DEPENDENCY_READY = "Ready"
DEPENDENCY_COMPLETE = "Complete"
TERMINAL_COMPLETED = "Completed"
TERMINAL_FAILED = "Failed"

#: ``source.component`` of the JobSet controller's Events, and of the Job controller's.
JOBSET_COMPONENT = "jobset-controller"
JOB_COMPONENT = "job-controller"

# --- batch/v1 Jobs, as the Kubernetes Job controller (pkg/controller/job) runs them ---------------------------

BATCH_API_VERSION = "batch/v1"
JOB_KIND = "Job"
JOB_COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
JOB_CONDITION_COMPLETE = "Complete"
JOB_CONDITION_FAILED = "Failed"
JOB_CONDITION_SUSPENDED = "Suspended"
JOB_CONDITION_SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
JOB_CONDITION_FAILURE_TARGET = "FailureTarget"
JOB_REASON_COMPLETIONS_REACHED = "CompletionsReached"
JOB_MESSAGE_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"
JOB_REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
JOB_MESSAGE_BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"
JOB_REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
JOB_MESSAGE_DEADLINE_EXCEEDED = "Job was active longer than specified deadline"
JOB_REASON_SUSPENDED = "JobSuspended"
JOB_MESSAGE_SUSPENDED = "Job suspended"
JOB_REASON_RESUMED = "JobResumed"
JOB_MESSAGE_RESUMED = "Job resumed"
JOB_EVENT_SUCCESSFUL_CREATE = "SuccessfulCreate"
JOB_EVENT_SUCCESSFUL_DELETE = "SuccessfulDelete"
JOB_EVENT_FAILED_CREATE = "FailedCreate"
JOB_EVENT_COMPLETED = "Completed"
JOB_EVENT_SUSPENDED = "Suspended"
JOB_EVENT_RESUMED = "Resumed"
#: ``spec.backoffLimit`` when unset.
DEFAULT_BACKOFF_LIMIT = 6

# The 1.20 kube-apiserver drops the Job fields it does not know (``spec.suspend``, ``spec.completionMode``,
# ``status.ready``, ``status.completedIndexes``); the local controllers keep them in these annotations.
_LOCAL = "airflow-trainjob-local"
ANNOTATION_JOB_SUSPEND = f"{_LOCAL}/job-suspend"
ANNOTATION_JOB_READY = f"{_LOCAL}/job-ready"
ANNOTATION_JOB_COMPLETED_INDEXES = f"{_LOCAL}/job-completed-indexes"

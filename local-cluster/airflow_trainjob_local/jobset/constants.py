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

"""The local JobSet controller (``jobset.x-k8s.io/v1alpha2``): a stand-in for kubernetes-sigs/jobset
``v0.12.0`` (the version kubeflow/trainer ``v2.3.0`` builds on), which the local Trainer v2
(:mod:`airflow_trainjob_local.trainer`) runs its TrainJobs with. It runs in the controller process
(``python -m airflow_trainjob_local.controller``) beside the v1 training controller.

Like the real one it talks only to the API server: it lists and watches JobSets, and the Jobs and pods that
carry the ``jobset.sigs.k8s.io/jobset-name`` label; for each JobSet it creates one batch/v1 Job
``<jobset>-<replicatedJob>-<index>`` per replica, owned by the JobSet, with upstream's labels and annotations
on the Job and its pod template (jobset-name, jobset-uid, replicatedjob-name, replicatedjob-replicas,
job-index, job-global-index, global-replicas, job-key, restart-attempt, group-name, group-replicas,
job-group-index; the coordinator label with ``spec.coordinator``; the exclusive-placement annotations), the
pod template's ``subdomain`` and a headless Service of that name when ``network.enableDNSHostnames`` (default
true); it writes ``status`` (replicatedJobsStatus, restarts,
restartsCountTowardsMax, terminalState, conditions Completed / Failed / Suspended / RestartingJobSet /
StartupPolicyInProgress / StartupPolicyCompleted with upstream's reasons and messages) and records the
conditions' Events; it applies successPolicy, failurePolicy (maxRestarts, rules with FailJobSet /
RestartJobSet / RestartJobSetAndIgnoreMaxRestarts), startupPolicy InOrder, ``dependsOn``, ``suspend``,
``ttlSecondsAfterFinished``, ``managedBy`` and the Recreate / BlockingRecreate restart strategies; a
finished JobSet deletes its active Jobs.

The cluster's kube-apiserver (1.20) has no Indexed batch Jobs and no Job controller runs, so this controller
also runs the Jobs a JobSet owns -- only those (a Job whose controller owner is not a JobSet is never
touched): one pod per completion index, named ``<job>-<index>-<5 random>`` (``generateName``), with the
labels, annotation, ``JOB_COMPLETION_INDEX`` variable and hostname the real Job controller gives it;
parallelism, completions, backoffLimit, activeDeadlineSeconds, suspend, and the Job status (active,
succeeded, failed, startTime, completionTime, conditions SuccessCriteriaMet / Complete, FailureTarget /
Failed with BackoffLimitExceeded / DeadlineExceeded, Suspended with JobSuspended / JobResumed) and Events
(SuccessfulCreate, SuccessfulDelete, Completed, Suspended, Resumed, BackoffLimitExceeded, DeadlineExceeded).

Modules: :mod:`.spec` (a JobSet with its defaults), :mod:`.builders` (Job and Service manifests),
:mod:`.conditions` (conditions, a Job's state), :mod:`.jobset_plan` and :mod:`.failure_policy` (a JobSet's
reconcile, pure), :mod:`.pods` and :mod:`.job_plan` (a Job's pods and status, pure), :mod:`.reconciler` (the
API calls), :mod:`.controller` (informers, work queue, workers), :mod:`.constants` (the API's strings).

Where it differs from, or is simpler than, upstream:

- **No admission webhooks** (``pkg/webhooks/jobset_webhook.go``): the defaults (successPolicy All,
  startupPolicy AnyOrder, completionMode Indexed, pod restartPolicy OnFailure, enableDNSHostnames and
  publishNotReadyAddresses true, rule names ``failurePolicyRule<i>``, groupName ``default``, replicas 1) are
  applied when the controller reads a JobSet, not written into it; nothing is validated (a JobSet upstream
  refuses, e.g. a ``dependsOn`` naming a later replicated job, is reconciled as written). The pod webhook
  (exclusive placement, the priority label) does not exist.
- **Jobs on a 1.20 apiserver** (``constructJob``, ``suspendJobs``, ``resumeJob`` in
  ``pkg/controllers/jobset_controller.go``): the apiserver drops ``spec.suspend`` and ``spec.completionMode``
  of a Job and ``status.ready`` / ``status.completedIndexes``; they are kept in the Job's annotations
  ``airflow-trainjob-local/job-suspend``, ``.../job-ready`` and ``.../job-completed-indexes`` (the fields are
  still sent). Every Job a JobSet owns runs as Indexed. The 1.20 apiserver gives a Job's selector and pod
  template only the legacy ``controller-uid`` and ``job-name`` labels; the pods also get the
  ``batch.kubernetes.io/`` ones from this controller, the Job's template does not. A Job's pod template is immutable on 1.20, so resuming
  does not merge the replicated job's template labels, annotations, nodeSelector, tolerations and scheduling
  gates into the Job (a Kueue-style mutation while suspended does not reach the pods).
- **The Job controller** (kubernetes ``pkg/controller/job/job_controller.go``): no pod failure policy, success
  policy, backoffLimitPerIndex, podReplacementPolicy, managedBy, ttlSecondsAfterFinished or NonIndexed mode;
  no ``batch.kubernetes.io/job-tracking`` finalizer and no ``uncountedTerminatedPods`` (counts are read from the
  pods that exist); no exponential delay before a failed pod is replaced; ``failed`` counts failed pods, plus
  the active pods deleted when the Job fails. The hostname ``<job>-<index>`` is set on every pod (as the real
  one does for Indexed Jobs); the process kubelet does not apply it (all pods share the host's name), and
  ``<host>.<subdomain>`` names do not resolve (there is no cluster DNS).
- **Not implemented** (``pkg/controllers``): the RestartJob and RestartJobAndIgnoreMaxRestarts failure
  actions (upstream's RestartJob feature gate, off by default: a Warning Event
  ``FailurePolicyActionUnsupported`` is recorded and nothing else happens), the InPlaceRestart restart
  strategy (treated as Recreate), elastic JobSets, the nodeSelector and toleration of exclusive placement (its
  annotations are copied; the placement itself is the pod webhook's), metrics.
- **volumeClaimPolicies** (``pkg/controllers/volume_claim_policy.go``, :mod:`.volume_claims`): the PVCs and the
  Jobs' claim volumes are created as upstream's, but no PersistentVolume controller binds the claims (they stay
  ``Pending``) and the process kubelet ignores volumes, so the pods run without them (a real cluster waits
  for the claim, the pods ``Pending`` meanwhile). PVCs are created when Jobs are, not at every reconcile.
- **Events** are core v1 Events (upstream uses events.k8s.io) with ``source.component`` ``jobset-controller``
  (Jobs: ``job-controller``), aggregated like client-go's; a failed Job creation is a Warning
  ``JobCreationFailed`` as upstream.
- **No informer cache**: each reconcile reads the JobSet and lists its Jobs (and a Job's pods) from the API
  server; Jobs are deleted with foreground propagation, as upstream. Besides the garbage collector, the
  controller deletes the Jobs and the Service a deleted JobSet still owns, and the pods a deleted Job owns.
"""

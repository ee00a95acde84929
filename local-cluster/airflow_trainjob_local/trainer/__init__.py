"""The local Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``): a stand-in for the trainer controller of
kubeflow/trainer ``v2.3.0`` that turns a ``TrainJob`` and the ``TrainingRuntime`` or ``ClusterTrainingRuntime``
it names into one JobSet of the same name, and writes the TrainJob's status from it. It runs in the local training
controller's process (``python -m airflow_trainjob_local.controller``) beside the v1 controller.

The JobSet is run by the local JobSet controller (:mod:`airflow_trainjob_local.jobset`), its pods by the
process kubelet. Like :mod:`airflow_trainjob_local.controller` for v1, this package keeps its own copy of the
API's strings (:mod:`.constants`), read from upstream's Go code, never from the provider.

Modules: :mod:`.spec` (the TrainJob and runtime, typed by the ``kubeflow_trainer_api`` models), :mod:`.runtime_ref`
(supported kinds, messages, the runtime snapshot), :mod:`.template` (finding jobs and containers in a runtime's
JobSet template), :mod:`.merge` (strategic merge of runtime patches, env/port upserts), :mod:`.resources`
(quantities, CPUs and GPUs per node), :mod:`.torch` (the torch plugin), :mod:`.build` (TrainJob + runtime ->
JobSet, pure), :mod:`.validation` (the admission webhook's rules), :mod:`.status` (JobSet -> TrainJob status,
pure), :mod:`.reconciler` (one reconcile), :mod:`.controller` (informers, work queue, workers; the informer
machinery, work queue, port allocator and event recorder are the v1 controller's); :mod:`.crds`, :mod:`.schema`
(the CRDs ``up`` installs) and :mod:`.runtimes` (the built-in ClusterTrainingRuntimes).

Where it differs from, or is simpler than, upstream:

- **Master address and port** (``pkg/runtime/framework/plugins/torch/torch.go``): all pods are processes on one
  host with no DNS, so ``PET_MASTER_ADDR`` is ``127.0.0.1`` (upstream: ``<trainjob>-node-0-0.<trainjob>``) and
  ``PET_MASTER_PORT`` a free loopback port given to each torch TrainJob (upstream: 29500), which is also the
  ``node`` container's port. The port is kept in the TrainJob's ``airflow-trainjob-local/master-port``
  annotation, so a restarted controller (and a rebuilt JobSet) keeps it; the v1 and v2 controllers share one
  port allocator. Non-torch runtimes get no port.
- **No admission webhooks** (``pkg/webhooks/trainjob_webhook.go``): the controller checks the webhook's rules
  itself (:mod:`.validation`: reserved ``PET_`` env in ``trainer.env``, ``envInjection`` targets, initializer
  jobs and containers, runtime-patch managers, jobs, containers and node/initializer env) and fails a TrainJob
  that breaks one with the Failed condition, reason ``FailedValidation`` (local; a real cluster refuses the
  create) and the problems as message, plus a Warning event of that reason once. Like upstream, a later spec
  change is checked again and can clear it. The initializer's ``initializer`` volume-mount rule is not checked
  (upstream's own ``examples/yaml/05-multi-step.yaml`` breaks it), nor is the immutability of
  ``runtimePatches`` while the JobSet runs, and ``runtimePatches[].time`` is not defaulted.
- **Unsupported runtime kind** (``pkg/controller/trainjob_controller.go``): a ``runtimeRef`` other than
  TrainingRuntime/ClusterTrainingRuntime of ``trainer.kubeflow.org`` fails the TrainJob with reason
  ``TrainingRuntimeNotSupported`` and message ``unsupported runtime: <Kind>.<group>`` -- what upstream's
  controller sets; without its webhook upstream then dereferences the missing runtime and never writes it.
- **Missing runtime** (``pkg/runtime/core/{trainingruntime,clustertrainingruntime}.go``): as upstream without
  its webhook (which would refuse the create): a Warning ``TrainJobResourcesCreationFailed`` event with
  upstream's message ("TrainJob resources reconciliation failed: not found ClusterTrainingRuntime specified in
  TrainJob: ..."), no condition, and a retry with backoff (0.5 s doubling up to 30 s; upstream's limiter goes
  to 1000 s), so the TrainJob starts once the runtime exists.
- **JobSet writes** (``pkg/runtime/framework/plugins/jobset/jobset.go``): created with a POST, and -- while the
  TrainJob or its JobSet is suspended, as upstream -- updated with a PUT that replaces the spec and adds the
  trainer's labels, annotations and ownerReference, instead of a server-side apply with forced ownership
  (fields another writer set in the spec are not kept).
- **Runtime patches** (``pkg/runtime/core/trainingruntime.go``): merged by a strategic merge restricted to the
  JobSet/Job/pod shapes a patch may carry (lists keyed by name: replicated jobs, containers, init containers,
  volumes, env, image pull secrets, scheduling gates; volume mounts by mount path; other lists replaced); new
  list items are appended rather than ordered as Go's strategic merge orders them.
- **ML policies** (``pkg/runtime/framework/plugins``): torch and the plain policy only; a runtime with an
  ``mpi``, ``jax``, ``xgboost`` or ``flux`` policy fails validation. torchtune's command rewrite is not done (a
  ``tune run`` command fails validation). ``podGroupPolicy`` (``coscheduling``, ``volcano``) is ignored: no
  PodGroup, no scheduler labels on the pods.
- **TrainJobStatus** (``pkg/runtime/framework/plugins/trainjobstatus``, ``pkg/statusserver``): the feature gate
  is on by default (upstream: alpha, off). The trainer's containers get upstream's env and token volume
  (:mod:`.trainjob_status`); the status server (:mod:`.status_server`, :mod:`.status_auth`,
  :mod:`.status_payload`) listens on 127.0.0.1 at the cluster's port base + 4 with a certificate of the cluster's
  CA, checks tokens with TokenReviews (401 for a missing or unknown token, 403 for another TrainJob's; upstream:
  403 for both), checks the payload against upstream's CRD limits itself and refuses unknown fields, and writes
  ``status.trainerStatus`` with a merge patch (upstream: server-side apply); the controller never writes it.
- **Runtimes' finalizers** (``pkg/controller/{trainingruntime,clustertrainingruntime}_controller.go``): no
  ``resource-in-use`` finalizer is put on runtimes; a runtime in use can be deleted (the snapshot keeps its
  TrainJobs running).
- **Deleted TrainJobs**: besides the garbage collector (ownerReferences), the controller deletes the JobSet and
  runtime snapshot a deleted TrainJob still controls.
- **Events**: core v1 Events (upstream: ``events.k8s.io/v1``), source component ``trainer-trainjob-controller``,
  aggregated as the v1 controller's.
- **Status writes**: a JSON merge patch of the status subresource (fields that went away named as null) when it
  changed, like upstream's merge patch.
"""

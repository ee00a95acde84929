"""The local training controller: a small stand-in for the Kubeflow training operator (v1, ``kubeflow.org/v1``)
for PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob and JAXJob, run as
``python -m airflow_trainjob_local.controller --kubeconfig PATH`` until SIGTERM.

Like the real operator it talks only to the API server (official ``kubernetes`` client): it lists and
watches jobs and pods (relisting on 410 Gone and every resync period), creates one pod and one headless
service per replica with the real names, labels and controller ownerReference, injects each kind's
environment, writes the job status through the status subresource with the real condition types, reasons
and messages, applies the run policies and records Events on the job. Pods are run by the process kubelet
(:mod:`airflow_trainjob_local.kubelet`).

Modules: :mod:`.spec` (the job with its kind's defaults, names, labels), :mod:`.ports` (loopback ports),
:mod:`.env` (per-kind environment), :mod:`.pods` (pod and service manifests), :mod:`.status` (conditions,
replica statuses, success rules), :mod:`.policies` (restart, backoff, deadline, clean-up, TTL, minAvailable),
:mod:`.events` (Events), :mod:`.validation` (managedBy, spec validation), :mod:`.reconciler` (one
reconcile), :mod:`.workqueue` and :mod:`.loop` (with :mod:`airflow_trainjob_local.informer`, the informer machinery;
the loop is shared with the JobSet and TrainJob controllers),
:mod:`.controller` (wiring), :mod:`.__main__` (command line); the API helpers are
:mod:`airflow_trainjob_local.kube`, shared with the kubelet.

Where it differs from, or is simpler than, the real operator:

- **Addresses and ports.** All pods are processes on one host, so the injected addresses are ``127.0.0.1``
  instead of service DNS names, and every replica gets its own free loopback port (default range
  20000-29999) instead of the kind's fixed port (23456, 2222, ...). The ports are kept in the job's
  ``airflow-trainjob-local/local-ports`` annotation so they survive controller restarts and pod
  recreation. The replica's port replaces the number of the kind's named port (``pytorchjob-port``...) on
  its default container and is the port of its headless service; a port number the job declares under
  that name is not used. A TFJob's ``TF_CONFIG`` lists ``127.0.0.1:<port>`` per replica; a PyTorch elastic
  ``rdzvHost`` is ignored (the endpoint is loopback). XGBoost's single ``WORKER_PORT`` is worker 0's port,
  so only one worker can listen on it.
- **MPIJob.** No ssh and no ``kubectl exec``: no ConfigMap (hostfile, ``kubexec.sh``), ServiceAccount, Role
  or RoleBinding and no kubectl-delivery init container are created. Workers are created as the real ones
  (``sleep 365d`` when they have no command) but ranks do not run in them: the launcher's ``mpirun`` starts
  every rank on this host (oversubscription allowed, Intel MPI bootstrap ``fork``, Open MPI allowed to run
  as root). The launcher pod ``<job>-launcher`` also carries ``replica-index=0``. Running is set while the
  launcher runs (the real one sets it on nearly every reconcile); an ExitCode-retryable launcher failure is
  recreated like any other replica.
- **No informer cache, no expectations.** Each reconcile reads the job, its pods and services from the API
  server; creates use fixed names, so a duplicate create is a harmless 409.
- **backoffLimit** counts container restarts of all the job's pods (the real one: Running pods only) plus the
  pods this controller deleted and recreated (ExitCode 128-255, OnFailure/Always pods that failed), kept in
  the ``airflow-trainjob-local/local-restarts`` annotation; the real count forgets recreated pods. The
  real "new failure since the last requeue" check, which depends on the work queue, is not reproduced.
  Reaching the limit fails the job with reason ``<Kind>Failed`` and the real message.
- **activeDeadlineSeconds** fails the job with reason ``<Kind>Failed`` and message "... active longer than
  specified deadline" (the real reason; there is no separate deadline reason in the training operator).
- **schedulingPolicy.minAvailable** stands in for gang scheduling (no PodGroup, no Volcano or
  scheduler-plugins): while a job has no pod, none is created until at least ``minAvailable`` pods can
  start, where "can start" means free pod slots on Ready, schedulable Nodes (``allocatable.pods``, default
  110, minus unfinished pods bound to the Node, minus unfinished pods bound to none). While waiting it
  records a ``MinAvailableNotMet`` warning and looks again every 3 s. Other scheduling fields are ignored.
- **ExitCode** decisions read the exit code of the kind's default container, or of the first container when
  no container has the default name (the real one reads 0xbeef, i.e. "retryable", then). A job failed by a
  permanent exit code gets a completionTime (the real one leaves it empty).
- **lastReconcileTime** is set whenever the controller writes the status, which it does only when the
  status changed.
- **Events** all name the job as involvedObject (as the real recorder does), are aggregated like client-go's
  (same reason and message within 10 minutes: count + 1), and the TTL deletion is reported as
  ``SuccessfulDeleteJob`` for every kind.
- **Deleted jobs.** Besides relying on the garbage collector, the controller deletes the pods and services a
  deleted job still owns.
- **Suspension** (``runPolicy.suspend``) and **managedBy** are the real ones (``common/job.go``): a suspended
  job has no pods or services, Running False and Suspended True (``<Kind>Suspended``); resuming turns
  Suspended False (``<Kind>Resumed``) and resets ``startTime``; a job managed by another controller
  (``kueue.x-k8s.io/multikueue``) is not touched. Besides the pods, a suspended job loses every service it
  owns (the real one deletes the pods' namesakes only).
- **Validation** (:mod:`.validation`): there are no admission webhooks, so the controller applies the
  webhooks' rules (and the MPI controller's own validation) itself, plus type checks, and fails a job it
  cannot reconcile with a Warning ``<Kind>FailedValidation`` event and the Failed condition with that reason
  and the errors as message (the real MPI controller records the event and retries with backoff, without a
  condition; the other kinds are refused at admission). Such a job is not retried; it stays failed. Two
  local rules are stricter than the real ones: an unknown ``restartPolicy`` and negative ``replicas`` fail
  validation. Replica type names match case-insensitively and an unset ``replicas`` counts as defaulted,
  which the real webhooks (running before defaulting) would refuse.
- **Not implemented:** HPA for elastic PyTorch, PaddleJob elastic variables, the ``POD_IP_DUMMY`` field
  reference of Paddle's rank 0, the immutability of ``managedBy`` (a webhook rule), metrics.
"""

"""A process kubelet: the node of the local cluster, running each pod's containers as local processes.

Run it with ``python -m airflow_trainjob_local.kubelet --kubeconfig PATH --node-name NAME --port PORT
--state-dir DIR`` (the cluster bootstrap does). It talks to the apiserver only through the official
``kubernetes`` client, and:

- registers a Node and keeps its Ready heartbeat (:mod:`.node`);
- binds pods that have no node to its node, being the cluster's only scheduler (:mod:`.binder`);
- runs every pod bound to its node (:mod:`.pod_worker`): init containers in order, then the containers, each
  as a process group with the container's ``command``/``args`` (``$(VAR)`` expanded), ``env``/``envFrom``
  (values, ``fieldRef``, ``resourceFieldRef``, ConfigMap and Secret keys) and ``workingDir``
  (:mod:`.environment`, :mod:`.process`); applies ``restartPolicy`` in place; enforces
  ``resources.limits.memory`` (137 / ``OOMKilled``); reports phase, conditions and container statuses
  (:mod:`.status`); on deletion sends SIGTERM, waits the grace period, SIGKILLs, completes the deletion;
- serves container logs over HTTPS for ``pods/log`` and ``kubectl logs`` (:mod:`.log_server`, :mod:`.logs`).
- records the pod Events a scheduler and kubelet record (:mod:`.events`): ``Scheduled``, ``Pulled``,
  ``Created``, ``Started``, ``Killing``, ``BackOff`` and a Warning ``Failed`` when a container cannot start.

**The image is ignored.** There is no container runtime: ``command[0]`` is looked up on ``PATH``, whose first
entry is the bin dir of the Python running the kubelet, so ``python``/``python3`` are that interpreter (with
everything installed in its venv); an image's entrypoint, ``ENV``, ``WORKDIR`` and files do not exist, so a
container needs an explicit ``command`` (or ``args``). Processes run as the kubelet's user, on the host's
network (pod IP = host IP = 127.0.0.1) and filesystem; a container without ``workingDir`` starts in a fresh
per-pod directory under the state dir, deleted with the pod.

Volumes (:mod:`.volumes`): only ``configMap`` volumes and ``projected`` volumes of ``serviceAccountToken`` and
``configMap`` sources are materialized, as files under the pod's directory (no mount namespace: an env value naming
a path under a ``mountPath`` is rewritten to that directory); the token comes from a TokenRequest bound to the pod
and is not refreshed. Not supported (compared with a real kubelet): other volumes (no automatically mounted
service-account token, no Secret, emptyDir or PVC files — env references work), probes (a running container is
ready), lifecycle hooks, ports/hostPort checks, securityContext (user, capabilities), CPU limits, ephemeral containers, exec/attach/
port-forward (404), service-link environment variables, static pods, resource accounting when binding.
"""

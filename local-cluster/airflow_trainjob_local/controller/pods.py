"""The pod and headless service of one replica, built the way the real operator's ``createNewPod`` and
``CreateNewService`` build them (``pkg/controller.v1/common/pod.go``, ``service.go``):

- name ``<job>-<replicatype lowercase>-<index>`` (an MPIJob launcher: ``<job>-launcher``);
- the template's labels and annotations plus job-name, operator-name, replica-type (lowercase),
  replica-index, and ``job-role=master`` where the kind's ``IsMasterRole`` says so;
- a controller ownerReference (``controller`` and ``blockOwnerDeletion`` true) to the job;
- ``restartPolicy`` from the ReplicaSpec (``ExitCode`` becomes ``Never``: the controller, not the kubelet,
  decides about those restarts);
- the kind's environment (:mod:`.env`), and the kind's default port on the default container set to the
  replica's loopback port (:mod:`.ports`).
"""

from __future__ import annotations

import copy
from typing import Any

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller.env import default_container_index, inject_env
from airflow_trainjob_local.controller.spec import JobView, replica_key

__all__ = ["NO_EXIT_CODE", "build_pod", "build_service", "container_exit_code", "template_sets_restart_policy"]

#: What the operator reads when the default container has not terminated (its "magic number").
NO_EXIT_CODE = 0xBEEF

#: Command an MPIJob worker without one runs (the real operator's default: workers are exec targets).
MPI_WORKER_DEFAULT_COMMAND = (["sleep"], ["365d"])


def template_sets_restart_policy(view: JobView, replica_type: str) -> bool:
    """True when the pod template sets ``restartPolicy`` itself (the operator overrides it, with a warning)."""
    template = view.replica_specs[replica_type].get("template") or {}
    return bool((template.get("spec") or {}).get("restartPolicy"))


def pod_restart_policy(replica_restart_policy: str) -> str:
    """The pod's restartPolicy for a ReplicaSpec restartPolicy (``SetRestartPolicy``)."""
    if replica_restart_policy == c.RESTART_POLICY_EXIT_CODE:
        return c.RESTART_POLICY_NEVER
    return replica_restart_policy


def build_pod(view: JobView, replica_type: str, index: int, ports: dict[str, int]) -> dict[str, Any]:
    """The pod manifest of one replica.

    :param view: the job.
    :param replica_type: canonical replica type.
    :param index: replica index.
    :param ports: the job's loopback ports by replica key; must contain this replica and the ports the
        kind's environment refers to (e.g. master 0).
    :raises ValueError: the replica spec has no containers, or a port the environment needs is missing.
    """
    rspec = view.replica_specs[replica_type]
    template = copy.deepcopy(rspec.get("template") or {})
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    if not spec.get("containers"):
        raise ValueError(f"{replica_type} replica spec has no containers")

    labels = dict(meta.get("labels") or {})
    labels.update(view.replica_labels(replica_type, index))
    if view.is_master_role(replica_type, index):
        labels[c.LABEL_JOB_ROLE] = c.JOB_ROLE_MASTER

    spec["restartPolicy"] = pod_restart_policy(view.restart_policy(replica_type))
    _set_default_port(view, spec, ports[replica_key(replica_type, index)])
    if view.kind.kind == "MPIJob" and replica_type == "Worker":
        first = spec["containers"][0]
        if not first.get("command"):
            first["command"], first["args"] = list(MPI_WORKER_DEFAULT_COMMAND[0]), list(MPI_WORKER_DEFAULT_COMMAND[1])
    try:
        inject_env(view, spec, replica_type, index, ports)
    except KeyError as exc:
        kind, missing = view.kind.kind, exc.args[0]
        raise ValueError(f"the {kind} environment needs replica {missing}, which the job does not have") from exc

    metadata: dict[str, Any] = {
        "name": view.pod_name(replica_type, index),
        "namespace": view.namespace,
        "labels": labels,
        "ownerReferences": [view.owner_reference()],
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if meta.get("finalizers"):
        metadata["finalizers"] = list(meta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _set_default_port(view: JobView, pod_spec: dict[str, Any], port: int) -> None:
    """Give the default container the kind's named port, numbered with the replica's loopback port.

    The real defaulting adds ``<kind>-port: <default>`` when missing; here the number is always the
    replica's own port, because replicas share the host.
    """
    container = pod_spec["containers"][default_container_index(pod_spec, view.kind.default_container)]
    others = [p for p in container.get("ports") or [] if p.get("name") != view.kind.default_port_name]
    named = {"name": view.kind.default_port_name, "containerPort": port, "protocol": "TCP"}
    container["ports"] = [named] + others


def build_service(view: JobView, replica_type: str, index: int, pod: dict[str, Any]) -> dict[str, Any]:
    """The headless service of one replica: same name as its pod, selecting it by the replica labels,
    exposing the named ports of the pod's default container.

    :param pod: the replica's pod manifest from :func:`build_pod` (its ports are reused).
    """
    labels = view.replica_labels(replica_type, index)
    container = pod["spec"]["containers"][default_container_index(pod["spec"], view.kind.default_container)]
    service_ports = [
        {"name": p["name"], "port": p["containerPort"], "protocol": p.get("protocol", "TCP")}
        for p in container.get("ports") or []
        if p.get("name")
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": view.pod_name(replica_type, index),
            "namespace": view.namespace,
            "labels": labels,
            "ownerReferences": [view.owner_reference()],
        },
        "spec": {"clusterIP": "None", "selector": labels, "ports": service_ports},
    }


def container_exit_code(pod: dict[str, Any], container_name: str) -> int:
    """Exit code of the pod's terminated container named ``container_name``; ``0xbeef`` when it has none."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (cs.get("state") or {}).get("terminated")
        if cs.get("name") == container_name and terminated:
            return int(terminated.get("exitCode", 0))
    return NO_EXIT_CODE

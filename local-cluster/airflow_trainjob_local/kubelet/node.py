"""The kubelet's Node: registration and the Ready heartbeat.

The Node carries what the apiserver needs to reach the kubelet (``status.addresses`` InternalIP 127.0.0.1 and
Hostname = node name, ``status.daemonEndpoints.kubeletEndpoint.Port``) and what ``kubectl get/describe nodes``
shows: capacity and allocatable cpu/memory/pods/ephemeral-storage of the host, ``nodeInfo``, and the
conditions (``Ready`` plus the three pressure conditions, always False). The heartbeat rewrites the conditions
with a fresh ``lastHeartbeatTime`` every ``heartbeat_seconds`` (the kubelet's ``nodeStatusUpdateFrequency``,
10 s); it re-creates the Node if someone deleted it. No Lease is renewed: no node-lifecycle controller runs.

In place of that controller (kubernetes ``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, its
NoSchedule tainting by condition), each status write also sets the taint ``node.kubernetes.io/not-ready``
(``NoSchedule``) to match ``Ready``: removed while Ready, put back when the kubelet reports NotReady (the apiserver's
``TaintNodesByCondition`` admission puts it on a new Node). Other taints are kept.
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import threading
from pathlib import Path
from typing import Any

import psutil
from kubernetes import client

from airflow_trainjob_local import __version__
from airflow_trainjob_local.kube import MERGE_PATCH, ApiException, format_time
from airflow_trainjob_local.kubelet.status import HOST_IP

log = logging.getLogger(__name__)

MAX_PODS = 110
KUBELET_VERSION = f"v1.20.2-airflow-trainjob.{__version__}"
#: The taint the node-lifecycle controller keeps on a node whose Ready condition is False.
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x"}


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.platform()


def host_resources(state_dir: Path) -> dict[str, str]:
    """Capacity of the host as Kubernetes quantities: cpu (cores), memory (Ki), pods, ephemeral-storage (Ki)."""
    return {
        "cpu": str(os.cpu_count() or 1),
        "memory": f"{psutil.virtual_memory().total // 1024}Ki",
        "pods": str(MAX_PODS),
        "ephemeral-storage": f"{shutil.disk_usage(state_dir).total // 1024}Ki",
    }


def taints_for(ready: bool, taints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``taints`` (a Node's ``spec.taints``) with :data:`NOT_READY_TAINT` present exactly when not ``ready``."""
    others = [t for t in taints if (t.get("key"), t.get("effect")) != (NOT_READY_TAINT["key"], "NoSchedule")]
    return others if ready else [*others, dict(NOT_READY_TAINT)]


class NodeAgent:
    """Registers the Node named ``node_name`` and keeps its Ready condition fresh.

    :param port: the kubelet's HTTPS port (``daemonEndpoints.kubeletEndpoint.Port``).
    :param heartbeat_seconds: interval between status updates.
    """

    def __init__(
        self, core: client.CoreV1Api, node_name: str, port: int, state_dir: Path, heartbeat_seconds: float = 10.0
    ) -> None:
        self._core = core
        self.name = node_name
        self._port = port
        self._heartbeat = heartbeat_seconds
        self.resources = host_resources(state_dir)
        self.labels = {
            "kubernetes.io/hostname": node_name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": _ARCH.get(platform.machine(), platform.machine()),
        }
        self._transitions: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="node-heartbeat", daemon=True)

    def _conditions(self, ready: bool, message: str) -> list[dict[str, Any]]:
        now = format_time()
        wanted = [
            ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ("Ready", "True" if ready else "False", "KubeletReady" if ready else "KubeletNotReady", message),
        ]
        conditions = []
        for type_, status, reason, text in wanted:
            key = f"{type_}={status}"
            since = self._transitions.setdefault(key, now)
            for other in [k for k in self._transitions if k.startswith(f"{type_}=") and k != key]:
                del self._transitions[other]
            conditions.append(
                {
                    "type": type_,
                    "status": status,
                    "reason": reason,
                    "message": text,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": since,
                }
            )
        return conditions

    def _status(self, ready: bool, message: str) -> dict[str, Any]:
        return {
            "capacity": self.resources,
            "allocatable": self.resources,
            "conditions": self._conditions(ready, message),
            "addresses": [{"type": "InternalIP", "address": HOST_IP}, {"type": "Hostname", "address": self.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self._port}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id"),
                "systemUUID": _read("/sys/class/dmi/id/product_uuid"),
                "bootID": _read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": f"process://{platform.python_version()}",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "architecture": self.labels["kubernetes.io/arch"],
            },
        }

    def register(self) -> None:
        """Create the Node (or take over an existing one) and write a Ready status.

        :raises ApiException: the apiserver refused (other than 409 AlreadyExists).
        """
        body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.name, "labels": self.labels}}
        try:
            self._core.create_node(body)
            log.info("node %s registered", self.name)
        except ApiException as e:
            if e.status != 409:
                raise
            self._core.patch_node(self.name, {"metadata": {"labels": self.labels}}, _content_type=MERGE_PATCH)
            log.info("node %s exists; taking it over", self.name)
        self.update_status(ready=True)

    def update_status(self, ready: bool = True, message: str = "kubelet is posting ready status") -> None:
        """Write the Node status (merge patch: lists such as conditions are replaced whole).

        :raises ApiException: the apiserver refused (404 when the Node was deleted).
        """
        node = self._core.patch_node_status(
            self.name, {"status": self._status(ready, message)}, _content_type=MERGE_PATCH
        )
        self._match_not_ready_taint(ready, node)

    def _match_not_ready_taint(self, ready: bool, node: Any) -> None:
        """Add or remove :data:`NOT_READY_TAINT` (see the module docstring); a conflict waits for the next write.

        :param node: the Node as the status write returned it (``V1Node``).
        """
        current = [client.ApiClient().sanitize_for_serialization(t) for t in (node.spec.taints or [])]
        wanted = taints_for(ready, current)
        if wanted == current:
            return
        # The resourceVersion makes the write conditional: a taint someone else wrote meanwhile is not lost.
        patch = {"metadata": {"resourceVersion": node.metadata.resource_version}, "spec": {"taints": wanted or None}}
        try:
            self._core.patch_node(self.name, patch, _content_type=MERGE_PATCH)
        except ApiException as e:
            if e.status != 409:
                raise
            log.info("node %s: taints changed meanwhile; matching them at the next status write", self.name)

    def start(self) -> None:
        self._thread.start()

    def stop(self, mark_not_ready: bool = True) -> None:
        """End the heartbeat; report ``Ready=False`` (best effort) so the node does not look alive."""
        self._stop.set()
        self._thread.join(5)
        if mark_not_ready:
            try:
                self.update_status(ready=False, message="kubelet stopped")
            except Exception as e:
                log.warning("node %s: could not report NotReady: %s", self.name, e)

    def _run(self) -> None:
        while not self._stop.wait(self._heartbeat):
            try:
                self.update_status()
            except ApiException as e:
                if e.status == 404:
                    log.warning("node %s was deleted; registering again", self.name)
                    try:
                        self.register()
                    except Exception:
                        log.exception("node %s: registration failed", self.name)
                else:
                    log.warning("node %s: heartbeat failed: %s %s", self.name, e.status, e.reason)
            except Exception as e:
                log.warning("node %s: heartbeat failed: %s", self.name, e)

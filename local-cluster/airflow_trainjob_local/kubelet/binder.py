"""The cluster's trivial scheduler: binds every schedulable pod without a node to this node.

There is no kube-scheduler in the local cluster. A pod is bound (``POST pods/<name>/binding``, which also sets
its ``PodScheduled`` condition) when it has no ``spec.nodeName``, is not being deleted, has not finished, names
the default scheduler (or none), and its ``nodeSelector`` matches the node's labels. Resources, affinity,
taints and gang scheduling are not considered: the training controller decides when pods exist at all. Like
the scheduler, it records a ``Scheduled`` event on each pod it binds (``source.component`` ``default-scheduler``).

A pod whose ``nodeSelector`` the node does not match stays Pending, and is marked as kube-scheduler marks it
(``pkg/scheduler/schedule_one.go``, plugin ``NodeAffinity``): condition ``PodScheduled`` ``False``, reason
``Unschedulable``, and a Warning ``FailedScheduling`` event with the scheduler's message
(:data:`UNMATCHED_SELECTOR_MESSAGE`), once per pod (the scheduler retries and counts the event up).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from kubernetes import client

from airflow_trainjob_local.kube import ApiException, is_namespace_terminating
from airflow_trainjob_local.kubelet import events

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
#: The field selector of pods waiting for a node.
UNSCHEDULED_SELECTOR = "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
#: kube-scheduler's message (condition and event) for a pod no node's labels match, with one node.
UNMATCHED_SELECTOR_MESSAGE = (
    "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)
REASON_UNSCHEDULABLE = "Unschedulable"


def waiting_for_this_scheduler(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` waits for a node from the default scheduler: no node, not deleting, not finished."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return (spec.get("schedulerName") or DEFAULT_SCHEDULER) == DEFAULT_SCHEDULER


def selector_matches(pod: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """Whether every label of ``pod``'s ``spec.nodeSelector`` is on the node with ``node_labels``."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return all(node_labels.get(k) == v for k, v in selector.items())


def schedulable(pod: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
    """Whether this binder should bind ``pod`` to a node with ``node_labels``."""
    return waiting_for_this_scheduler(pod) and selector_matches(pod, node_labels)


def marked_unschedulable(pod: Mapping[str, Any]) -> bool:
    """Whether ``pod`` already has condition ``PodScheduled`` ``False`` with reason ``Unschedulable``."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return cond.get("status") == "False" and cond.get("reason") == REASON_UNSCHEDULABLE
    return False


class Binder:
    """Binds pods to ``node_name``; :meth:`on_list` / :meth:`on_event` are the handlers of an
    :class:`~airflow_trainjob_local.informer.Informer`."""

    def __init__(
        self,
        core: client.CoreV1Api,
        node_name: str,
        node_labels: Mapping[str, str],
        recorder: events.EventRecorder | None = None,
    ) -> None:
        self._core = core
        self._node = node_name
        self._labels = dict(node_labels)
        self._recorder = recorder

    def on_list(self, pods: list[dict[str, Any]]) -> None:
        for pod in pods:
            self.bind_if_schedulable(pod)

    def on_event(self, kind: str, pod: dict[str, Any]) -> None:
        if kind != "DELETED":
            self.bind_if_schedulable(pod)

    def mark_unschedulable(self, pod: dict[str, Any]) -> None:
        """Set ``PodScheduled`` ``False`` (``Unschedulable``) on ``pod`` and record ``FailedScheduling``, once.

        :raises ApiException: an API error other than the pod being gone (404) or its namespace terminating.
        """
        if marked_unschedulable(pod):
            return
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": REASON_UNSCHEDULABLE,
            "message": UNMATCHED_SELECTOR_MESSAGE,
            "lastProbeTime": None,
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        try:
            # A strategic merge patch: conditions are merged by type, the pod's other conditions are kept.
            self._core.patch_namespaced_pod_status(name, namespace, {"status": {"conditions": [condition]}})
        except ApiException as e:
            if e.status == 404 or is_namespace_terminating(e):
                return
            raise
        log.info("pod %s/%s unschedulable: no node matches its nodeSelector", namespace, name)
        if self._recorder is not None:
            self._recorder.pod_event(
                pod,
                events.WARNING,
                events.REASON_FAILED_SCHEDULING,
                UNMATCHED_SELECTOR_MESSAGE,
                component=events.SCHEDULER,
            )

    def bind_if_schedulable(self, pod: dict[str, Any]) -> bool:
        """Bind ``pod`` if :func:`schedulable`; ``True`` when this call bound it.

        :raises ApiException: an API error other than the pod being gone or already bound/deleting (404/409) or its
            namespace terminating (403).
        """
        if not waiting_for_this_scheduler(pod):
            return False
        if not selector_matches(pod, self._labels):
            self.mark_unschedulable(pod)
            return False
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=name, uid=pod["metadata"].get("uid")),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=self._node),
        )
        # The assignment is dated before the call: the kubelet may see the bound pod (and record its first events)
        # before this call returns.
        began = time.time_ns()
        try:
            # The answer is a Status, not a Binding: deserializing it as V1Binding fails (kubernetes-client/python#825).
            self._core.create_namespaced_pod_binding(name, namespace, body, _preload_content=False)
        except ApiException as e:
            # 404/409: gone, or bound or deleted meanwhile; 403 NamespaceTerminating: its namespace is going away.
            if e.status in (404, 409) or is_namespace_terminating(e):
                log.debug("pod %s/%s not bound: %s", namespace, name, e.reason)
                return False
            raise
        log.info("pod %s/%s bound to %s", namespace, name, self._node)
        if self._recorder is not None:
            self._recorder.pod_event(
                pod,
                events.NORMAL,
                events.REASON_SCHEDULED,
                events.scheduled_message(namespace, name, self._node),
                component=events.SCHEDULER,
                when_ns=began,
            )
        return True

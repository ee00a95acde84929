"""The running controller: list-watch loops (:class:`~airflow_trainjob_local.informer.Informer`) feed a work
queue, worker threads reconcile the queued jobs.

Watched: the six job kinds (all namespaces) and the pods carrying the operator-name label. A job event
queues that job; a pod event queues the job named by the pod's controller ownerReference; a job's DELETED
event queues a cleanup of whatever it still owns. Services are not watched (nor are they by the real
operator's handlers): a missing service is recreated on the next resync. A reconcile that fails is
retried with a per-job exponential backoff; a job that asks for it (deadline, TTL, minAvailable) is queued
again after the time it names. A job that fails validation is not retried: it is marked Failed once, and
only looked at again on its next event (e.g. a spec change) or resync.
"""

from __future__ import annotations

import functools
from typing import Any

from kubernetes import client

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.loop import ControllerLoop
from airflow_trainjob_local.controller.ports import PortAllocator, read_ports
from airflow_trainjob_local.controller.reconciler import CleanupKey, JobKey, Reconciler
from airflow_trainjob_local.informer import Informer

__all__ = ["Controller"]


class Controller(ControllerLoop):
    """The local training controller for all six kinds.

    :param api_client: client for the cluster (the controller only talks to the API server).
    :param resync_seconds: how often every job is reconciled even without events.
    :param workers: reconcile threads.
    :param port_range: ``(low, high)`` loopback ports handed to replicas, inclusive.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        resync_seconds: float = 30.0,
        workers: int = 2,
        port_range: tuple[int, int] = (20000, 29999),
    ) -> None:
        super().__init__(workers=workers, thread_prefix="reconcile")
        self.ports = PortAllocator(*port_range)
        self.reconciler = Reconciler(api_client, EventRecorder(api_client), self.ports)
        custom = client.CustomObjectsApi(api_client)
        core = client.CoreV1Api(api_client)
        self.watchers = [
            Informer(
                kind.plural,
                functools.partial(custom.list_cluster_custom_object, c.GROUP, c.VERSION, kind.plural),
                on_event=functools.partial(self._on_job, kind.kind),
                resync_seconds=resync_seconds,
                thread_name=f"watch-{kind.plural}",
            )
            for kind in c.JOB_KINDS.values()
        ]
        self.watchers.append(
            Informer(
                "pods",
                core.list_pod_for_all_namespaces,
                on_event=self._on_pod,
                label_selector=c.LABEL_OPERATOR_NAME,
                resync_seconds=resync_seconds,
                thread_name="watch-pods",
            )
        )

    # --- event handlers -------------------------------------------------------------------------

    def _on_job(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        # Learn the ports existing jobs hold before any new job is given ports (matters after a restart).
        self.ports.reserve(set(read_ports(meta.get("annotations") or {}).values()))
        if event_type == "DELETED":
            self.queue.add(CleanupKey(kind, meta["namespace"], meta["name"], meta["uid"]))
        else:
            self.queue.add(JobKey(kind, meta["namespace"], meta["name"]))

    def _on_pod(self, event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("apiVersion") == c.API_VERSION and ref.get("kind") in c.JOB_KINDS:
                self.queue.add(JobKey(ref["kind"], meta["namespace"], ref["name"]))

    # --- workers ----------------------------------------------------------------------------------

    def process(self, key: Any) -> float | None:
        """A cleanup of a deleted job, or one reconcile of a job (seconds until it wants another look, or None).

        :param key: a :class:`JobKey` or :class:`CleanupKey`.
        """
        if isinstance(key, CleanupKey):
            self.reconciler.cleanup_deleted(key)
            return None
        return self.reconciler.reconcile(key)

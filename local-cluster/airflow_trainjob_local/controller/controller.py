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
import logging
import threading
from typing import Any

from kubernetes import client

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.ports import PortAllocator, read_ports
from airflow_trainjob_local.controller.reconciler import CleanupKey, JobKey, Reconciler
from airflow_trainjob_local.controller.workqueue import WorkQueue
from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.kube import ApiException, is_conflict, is_namespace_terminating

__all__ = ["Controller"]

log = logging.getLogger(__name__)

#: Extra seconds added to a requested requeue, so a deadline is surely past when the job is looked at again
#: (times are compared with whole-second precision).
REQUEUE_SLACK = 1.0


class Controller:
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
        self.queue = WorkQueue()
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
        self._workers = [
            threading.Thread(target=self._work, name=f"reconcile-{i}", daemon=True) for i in range(workers)
        ]

    def start(self) -> None:
        """Start the watch loops and the workers (returns at once)."""
        for thread in self.watchers + self._workers:
            thread.start()

    def wait_synced(self, timeout: float) -> bool:
        """Wait until every watch loop has listed once; False on timeout (seconds)."""
        return all(w.synced.wait(timeout) for w in self.watchers)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching, let running reconciles finish (up to ``timeout`` seconds), stop the workers."""
        for watcher in self.watchers:
            watcher.stop()
        self.queue.shutdown()
        for thread in self._workers:
            thread.join(timeout)

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

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self._process(key)
                self.queue.forget(key)
            except ApiException as exc:
                if is_namespace_terminating(exc):
                    # The namespace (and so the job) is going away; its DELETED event will follow.
                    log.debug("%s: namespace is being deleted; dropping", key)
                    self.queue.forget(key)
                    continue
                delay = self.queue.add_rate_limited(key)
                if is_conflict(exc):
                    log.info("%s: the object changed meanwhile (409); retrying in %.1fs", key, delay)
                else:
                    log.warning("%s: API error HTTP %s %s; retrying in %.1fs", key, exc.status, exc.reason, delay)
            except Exception:
                delay = self.queue.add_rate_limited(key)
                log.exception("%s: reconcile failed; retrying in %.1fs", key, delay)
            finally:
                self.queue.done(key)

    def _process(self, key: Any) -> None:
        if isinstance(key, CleanupKey):
            self.reconciler.cleanup_deleted(key)
            return
        again = self.reconciler.reconcile(key)
        if again is not None:
            self.queue.add_after(key, max(0.0, again) + REQUEUE_SLACK)

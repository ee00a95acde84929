"""The running TrainJob controller: list-watch loops (:class:`~airflow_trainjob_local.informer.Informer`) over
TrainJobs and JobSets feed a work queue (:class:`~airflow_trainjob_local.controller.workqueue.WorkQueue`), worker
threads reconcile the queued TrainJobs (:class:`.reconciler.Reconciler`).

A TrainJob event queues that TrainJob; a JobSet event queues the TrainJob named by its controller ownerReference
(upstream watches JobSets owned by TrainJobs, ``plugins/jobset/jobset.go`` ``ReconcilerBuilders``); a TrainJob's
DELETED event queues a cleanup of its JobSet and snapshot. A reconcile that fails, or whose runtime does not exist
yet, is retried with a per-TrainJob exponential backoff (0.5 s doubling up to 30 s); one with a deadline ahead is
queued again at its deadline.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

from kubernetes import client

from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.ports import PortAllocator
from airflow_trainjob_local.controller.workqueue import WorkQueue
from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.kube import ApiException, is_conflict, is_namespace_terminating
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.reconciler import CleanupKey, Reconciler, RetryLater, TrainJobKey

__all__ = ["TrainJobController"]

log = logging.getLogger(__name__)

#: Seconds added to a deadline requeue so the deadline is surely past (times have whole-second precision).
REQUEUE_SLACK = 1.0


class TrainJobController:
    """The local Trainer v2 TrainJob controller.

    :param api_client: client for the cluster (the controller only talks to the API server).
    :param ports: the loopback port allocator; share the v1 controller's so both never hand out the same port.
    :param resync_seconds: how often every TrainJob is reconciled even without events.
    :param workers: reconcile threads.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        ports: PortAllocator | None = None,
        resync_seconds: float = 30.0,
        workers: int = 2,
    ) -> None:
        self.queue = WorkQueue()
        self.ports = ports if ports is not None else PortAllocator()
        self.reconciler = Reconciler(api_client, EventRecorder(api_client), self.ports)
        custom = client.CustomObjectsApi(api_client)
        self.watchers = [
            Informer(
                c.TRAINJOBS,
                functools.partial(custom.list_cluster_custom_object, c.GROUP, c.VERSION, c.TRAINJOBS),
                on_event=self._on_trainjob,
                resync_seconds=resync_seconds,
                thread_name="watch-trainjobs",
            ),
            Informer(
                c.JOBSETS,
                functools.partial(custom.list_cluster_custom_object, c.JOBSET_GROUP, c.JOBSET_VERSION, c.JOBSETS),
                on_event=self._on_jobset,
                resync_seconds=resync_seconds,
                thread_name="watch-trainer-jobsets",
            ),
        ]
        self._workers = [
            threading.Thread(target=self._work, name=f"reconcile-trainjob-{i}", daemon=True) for i in range(workers)
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

    def _on_trainjob(self, event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        port = (meta.get("annotations") or {}).get(c.ANNOTATION_LOCAL_MASTER_PORT)
        if port and port.isdigit():
            # Learn the ports existing TrainJobs hold before handing out new ones (matters after a restart).
            self.ports.reserve({int(port)})
        if event_type == "DELETED":
            self.queue.add(CleanupKey(meta["namespace"], meta["name"], meta["uid"]))
        else:
            self.queue.add(TrainJobKey(meta["namespace"], meta["name"]))

    def _on_jobset(self, _event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("apiVersion") == c.API_VERSION and ref.get("kind") == c.TRAINJOB_KIND:
                self.queue.add(TrainJobKey(meta["namespace"], ref["name"]))

    # --- workers ----------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self._process(key)
                self.queue.forget(key)
            except RetryLater as exc:
                delay = self.queue.add_rate_limited(key)
                log.info("%s: %s; retrying in %.1fs", key, exc, delay)
            except ApiException as exc:
                if is_namespace_terminating(exc):
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
            self.queue.add_after(key, again + REQUEUE_SLACK)

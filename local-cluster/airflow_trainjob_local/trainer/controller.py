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
from typing import Any

from kubernetes import client

from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.loop import ControllerLoop
from airflow_trainjob_local.controller.ports import PortAllocator
from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.reconciler import CleanupKey, Reconciler, TrainJobKey
from airflow_trainjob_local.trainer.trainjob_status import StatusServerSettings

__all__ = ["TrainJobController"]


class TrainJobController(ControllerLoop):
    """The local Trainer v2 TrainJob controller.

    :param api_client: client for the cluster (the controller only talks to the API server).
    :param ports: the loopback port allocator; share the v1 controller's so both never hand out the same port.
    :param resync_seconds: how often every TrainJob is reconciled even without events.
    :param workers: reconcile threads.
    :param status_server: the status server, when the ``TrainJobStatus`` feature gate is on; ``None``: off.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        ports: PortAllocator | None = None,
        resync_seconds: float = 30.0,
        workers: int = 2,
        status_server: StatusServerSettings | None = None,
    ) -> None:
        super().__init__(workers=workers, thread_prefix="reconcile-trainjob")
        self.ports = ports if ports is not None else PortAllocator()
        self.reconciler = Reconciler(api_client, EventRecorder(api_client), self.ports, status_server=status_server)
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

    def process(self, key: Any) -> float | None:
        """A cleanup of a deleted TrainJob, or one reconcile of a TrainJob (seconds until its deadline, or None).

        :param key: a :class:`TrainJobKey` or :class:`CleanupKey`.
        :raises RetryLater: its runtime does not exist (yet).
        """
        if isinstance(key, CleanupKey):
            self.reconciler.cleanup_deleted(key)
            return None
        return self.reconciler.reconcile(key)

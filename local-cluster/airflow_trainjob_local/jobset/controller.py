"""The running JobSet controller: list-watch loops (:class:`~airflow_trainjob_local.informer.Informer`) feed a
work queue (:class:`~airflow_trainjob_local.controller.workqueue.WorkQueue`), worker threads reconcile.

Watched (all namespaces): JobSets; Jobs and pods carrying the ``jobset-name`` label. A JobSet event queues the
JobSet (DELETED: a cleanup of what it still owns); a Job event queues the Job (to run it) and the JobSet that
is its controller owner (as upstream's ``Owns(&batchv1.Job{})``); a pod event queues the Job that is its
controller owner. A Job whose controller owner is not a JobSet is ignored. A failed reconcile is retried with a
per-key exponential backoff; a reconcile that asks for it (TTL, activeDeadlineSeconds) is queued again then.
"""

from __future__ import annotations

import functools
from typing import Any

from kubernetes import client

from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.loop import ControllerLoop
from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.reconciler import (
    CleanupKey,
    JobKey,
    JobRunner,
    JobSetKey,
    JobSetReconciler,
    jobset_owner,
)

__all__ = ["JobSetController"]


#: The longest wait between two lists of JobSets while their CRD is not served (yet).
MAX_LIST_RETRY = 5.0


class JobSetController(ControllerLoop):
    """The local JobSet controller, and the Job controller of the Jobs JobSets own.

    :param api_client: client for the cluster (the controller only talks to the API server).
    :param resync_seconds: how often every JobSet, Job and pod is handed to the handlers again.
    :param workers: reconcile threads.
    """

    def __init__(self, api_client: client.ApiClient, *, resync_seconds: float = 30.0, workers: int = 2) -> None:
        super().__init__(workers=workers, thread_prefix="jobset-reconcile")
        recorder = EventRecorder(api_client)
        self.jobsets = JobSetReconciler(api_client, recorder)
        self.jobs = JobRunner(api_client, recorder)
        custom, batch, core = (
            client.CustomObjectsApi(api_client),
            client.BatchV1Api(api_client),
            client.CoreV1Api(api_client),
        )
        self.watchers = [
            Informer(
                c.PLURAL,
                functools.partial(custom.list_cluster_custom_object, c.GROUP, c.VERSION, c.PLURAL),
                on_event=self._on_jobset,
                resync_seconds=resync_seconds,
                max_retry_seconds=MAX_LIST_RETRY,
                thread_name="watch-jobsets",
            ),
            Informer(
                "jobset-jobs",
                batch.list_job_for_all_namespaces,
                on_event=self._on_job,
                label_selector=c.LABEL_JOBSET_NAME,
                resync_seconds=resync_seconds,
                thread_name="watch-jobset-jobs",
            ),
            Informer(
                "jobset-pods",
                core.list_pod_for_all_namespaces,
                on_event=self._on_pod,
                label_selector=c.LABEL_JOBSET_NAME,
                resync_seconds=resync_seconds,
                thread_name="watch-jobset-pods",
            ),
        ]

    # --- event handlers -------------------------------------------------------------------------

    def _on_jobset(self, event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if event_type == "DELETED":
            self.queue.add(CleanupKey(c.KIND, meta["namespace"], meta["name"], meta["uid"]))
        else:
            self.queue.add(JobSetKey(meta["namespace"], meta["name"]))

    def _on_job(self, event_type: str, obj: dict[str, Any]) -> None:
        owner = jobset_owner(obj)
        if owner is None:
            return  # only Jobs a JobSet controls are run here
        meta = obj.get("metadata") or {}
        if event_type == "DELETED":
            self.queue.add(CleanupKey(c.JOB_KIND, meta["namespace"], meta["name"], meta["uid"]))
        else:
            self.queue.add(JobKey(meta["namespace"], meta["name"]))
        self.queue.add(JobSetKey(meta["namespace"], owner))

    def _on_pod(self, _event_type: str, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("apiVersion") == c.BATCH_API_VERSION and ref.get("kind") == c.JOB_KIND:
                self.queue.add(JobKey(meta["namespace"], ref["name"]))

    # --- workers ----------------------------------------------------------------------------------

    def process(self, key: Any) -> float | None:
        """A cleanup of a deleted JobSet or Job, one reconcile of a JobSet, or one sync of a Job (seconds until it
        wants another look, or None).

        :param key: a :class:`JobSetKey`, :class:`JobKey` or :class:`CleanupKey`.
        """
        if isinstance(key, CleanupKey):
            (self.jobsets if key.kind == c.KIND else self.jobs).cleanup_deleted(key)
            return None
        if isinstance(key, JobSetKey):
            return self.jobsets.reconcile(key)
        return self.jobs.sync(key)

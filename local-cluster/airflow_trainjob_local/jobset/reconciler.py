"""The I/O of one reconcile: read through the API, decide with the pure planners (:mod:`.jobset_plan`,
:mod:`.job_plan`), write through the API. Two reconcilers:

- :class:`JobSetReconciler`: a JobSet's Jobs, headless Service and status (upstream ``Reconcile`` of
  ``pkg/controllers/jobset_controller.go``);
- :class:`JobRunner`: the pods and status of a Job a JobSet owns (the Kubernetes Job controller's ``syncJob``),
  since no Job controller runs in the local cluster. A Job not owned by a JobSet is never touched.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from airflow_trainjob_local.admission import create_pod
from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.builders import build_service
from airflow_trainjob_local.jobset.job_plan import normalized_status, plan_job
from airflow_trainjob_local.jobset.jobset_plan import WARNING, plan_jobset
from airflow_trainjob_local.jobset.pods import build_pod
from airflow_trainjob_local.jobset.spec import JobSetView
from airflow_trainjob_local.jobset.volume_claims import add_claim_volumes, build_claims
from airflow_trainjob_local.kube import MERGE_PATCH, ApiException, is_already_exists, is_not_found, now, raw_json

__all__ = ["CleanupKey", "JobKey", "JobRunner", "JobSetKey", "JobSetReconciler", "owned_by"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JobSetKey:
    """A JobSet to reconcile."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"JobSet {self.namespace}/{self.name}"


@dataclass(frozen=True)
class JobKey:
    """A Job (owned by a JobSet) to sync."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"Job {self.namespace}/{self.name}"


@dataclass(frozen=True)
class CleanupKey:
    """A deleted JobSet or Job whose leftovers should go (what the garbage collector also does)."""

    kind: str
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"deleted {self.kind} {self.namespace}/{self.name}"


def owned_by(objects: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    """The objects whose controller ownerReference has ``uid``."""
    return [
        o
        for o in objects
        if any(
            r.get("controller") and r.get("uid") == uid for r in (o.get("metadata") or {}).get("ownerReferences") or []
        )
    ]


def jobset_owner(job: dict[str, Any]) -> str | None:
    """The name of the JobSet that is the Job's controller owner, or ``None``."""
    for ref in (job.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("apiVersion") == c.API_VERSION and ref.get("kind") == c.KIND:
            return str(ref.get("name"))
    return None


def _ignore_not_found(call: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """Run ``call``; False when the API answered 404."""
    try:
        call(*args, **kwargs)
    except ApiException as exc:
        if is_not_found(exc):
            return False
        raise
    return True


def _api_error(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason)


class _Api:
    """The reads and deletes both reconcilers share.

    :param api_client: client for the cluster.
    :param recorder: where Events go.
    :param clock: the current time (aware, whole seconds).
    """

    def __init__(
        self, api_client: client.ApiClient, recorder: EventRecorder, clock: Callable[[], dt.datetime] = now
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.recorder = recorder
        self.clock = clock

    def list_jobs(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        body = raw_json(self.batch.list_namespaced_job(namespace, label_selector=selector, _preload_content=False))
        return body.get("items") or []

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        body = raw_json(self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False))
        return body.get("items") or []

    def delete_job(self, namespace: str, name: str) -> bool:
        """Delete a Job with foreground propagation (its pods go first), as upstream does."""
        body = client.V1DeleteOptions(propagation_policy="Foreground")
        return _ignore_not_found(self.batch.delete_namespaced_job, name, namespace, body=body)


class JobSetReconciler(_Api):
    """Reconciles JobSets.

    :param api_client: client for the cluster.
    :param recorder: where Events go.
    :param clock: the current time (aware, whole seconds).
    """

    def reconcile(self, key: JobSetKey) -> float | None:
        """Reconcile one JobSet; return seconds until it wants another look (its TTL), or ``None``.

        :raises ApiException: a read or write failed (the caller retries with backoff).
        """
        try:
            obj = self.custom.get_namespaced_custom_object(c.GROUP, c.VERSION, key.namespace, c.PLURAL, key.name)
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise
        if obj["metadata"].get("deletionTimestamp"):
            return None
        view = JobSetView(obj)
        if view.managed_by != c.MANAGED_BY_JOBSET:
            log.debug("%s: managed by %s; not reconciled", key, view.managed_by)
            return None
        jobs = owned_by(self.list_jobs(key.namespace, f"{c.LABEL_JOBSET_NAME}={key.name}"), view.uid)
        plan = plan_jobset(view, jobs, self.clock())
        for job in plan.delete_jobs:
            if self.delete_job(key.namespace, job["metadata"]["name"]):
                log.info("%s: deleted Job %s", key, job["metadata"]["name"])
        if plan.delete_jobset:
            body = client.V1DeleteOptions(propagation_policy="Foreground")
            _ignore_not_found(
                self.custom.delete_namespaced_custom_object,
                c.GROUP,
                c.VERSION,
                key.namespace,
                c.PLURAL,
                key.name,
                body=body,
            )
            log.info("%s: deleted after ttlSecondsAfterFinished", key)
            return None
        if plan.ensure_service:
            self._ensure_service(view)
        if plan.create_jobs:
            self._ensure_claims(view)
        for manifest in plan.create_jobs:
            add_claim_volumes(view, manifest)
            self._create_job(view, manifest)
        for name in plan.suspend_jobs:
            self._set_job_suspend(key.namespace, name, True)
        for name in plan.resume_jobs:
            self._set_job_suspend(key.namespace, name, False)
        if plan.changed:
            body = dict(obj, status=plan.status)
            self.custom.replace_namespaced_custom_object_status(
                c.GROUP, c.VERSION, key.namespace, c.PLURAL, key.name, body
            )
        # Recorded once the status is written (upstream ``updateJobSetStatus``).
        for event_type, reason, message in plan.events:
            self.recorder.record(obj, c.JOBSET_COMPONENT, event_type, reason, message)
        return plan.requeue_after

    def _ensure_service(self, view: JobSetView) -> None:
        try:
            self.core.read_namespaced_service(view.subdomain, view.namespace)
            return
        except ApiException as exc:
            if not is_not_found(exc):
                raise
        try:
            self.core.create_namespaced_service(view.namespace, build_service(view))
        except ApiException as exc:
            if is_already_exists(exc):
                return
            self.recorder.record(
                view.obj, c.JOBSET_COMPONENT, WARNING, c.REASON_HEADLESS_SERVICE_CREATION_FAILED, _api_error(exc)
            )
            raise
        log.info("JobSet %s/%s: created headless Service %s", view.namespace, view.name, view.subdomain)

    def _ensure_claims(self, view: JobSetView) -> None:
        """Create the PVCs of ``view``'s volume claim policies that do not exist (:mod:`.volume_claims`).

        :raises ApiException: a create failed other than with AlreadyExists (a Warning event says why).
        """
        for claim in build_claims(view):
            try:
                self.core.create_namespaced_persistent_volume_claim(view.namespace, claim)
            except ApiException as exc:
                if is_already_exists(exc):
                    continue
                self.recorder.record(
                    view.obj, c.JOBSET_COMPONENT, WARNING, c.REASON_PVC_CREATION_FAILED, _api_error(exc)
                )
                raise
            log.info("JobSet %s/%s: created PVC %s", view.namespace, view.name, claim["metadata"]["name"])

    def _create_job(self, view: JobSetView, manifest: dict[str, Any]) -> None:
        name = manifest["metadata"]["name"]
        try:
            self.batch.create_namespaced_job(view.namespace, manifest)
        except ApiException as exc:
            if is_already_exists(exc):
                return  # a Job of a previous attempt still being deleted, or created by an earlier pass
            message = f'job "{name}" creation failed with error: {_api_error(exc)}'
            self.recorder.record(view.obj, c.JOBSET_COMPONENT, WARNING, c.REASON_JOB_CREATION_FAILED, message)
            raise
        log.info("JobSet %s/%s: created Job %s", view.namespace, view.name, name)

    def _set_job_suspend(self, namespace: str, name: str, suspend: bool) -> None:
        """Set ``spec.suspend`` (and its annotation, which the 1.20 apiserver keeps); resuming also clears
        ``status.startTime`` first, as upstream's ``resumeJob`` does."""
        value = "true" if suspend else "false"
        patch = {"metadata": {"annotations": {c.ANNOTATION_JOB_SUSPEND: value}}, "spec": {"suspend": suspend}}
        if not suspend:
            _ignore_not_found(
                self.batch.patch_namespaced_job_status,
                name,
                namespace,
                {"status": {"startTime": None}},
                _content_type=MERGE_PATCH,
            )
        _ignore_not_found(self.batch.patch_namespaced_job, name, namespace, patch, _content_type=MERGE_PATCH)
        log.info("Job %s/%s: %s", namespace, name, "suspended" if suspend else "resumed")

    def cleanup_deleted(self, key: CleanupKey) -> None:
        """Delete the Jobs and the Service a deleted JobSet still owns (the garbage collector does too)."""
        for job in owned_by(self.list_jobs(key.namespace, f"{c.LABEL_JOBSET_NAME}={key.name}"), key.uid):
            self.delete_job(key.namespace, job["metadata"]["name"])
        services = raw_json(self.core.list_namespaced_service(key.namespace, _preload_content=False)).get("items") or []
        for svc in owned_by(services, key.uid):
            _ignore_not_found(self.core.delete_namespaced_service, svc["metadata"]["name"], key.namespace)


class JobRunner(_Api):
    """Runs the Jobs JobSets own: their pods and status.

    :param api_client: client for the cluster.
    :param recorder: where Events go.
    :param clock: the current time (aware, whole seconds).
    """

    def sync(self, key: JobKey) -> float | None:
        """Sync one Job; return seconds until its activeDeadlineSeconds passes, or ``None``.

        :raises ApiException: a read or write failed (the caller retries with backoff).
        """
        try:
            job = self.batch.read_namespaced_job(key.name, key.namespace, _preload_content=False)
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise
        job = raw_json(job)
        if jobset_owner(job) is None or job["metadata"].get("deletionTimestamp"):
            return None  # not ours to run; or going away (its pods go first: foreground)
        uid = job["metadata"]["uid"]
        pods = owned_by(self.list_pods(key.namespace, f"{c.LABEL_CONTROLLER_UID}={uid}"), uid)
        plan = plan_job(job, pods, self.clock())
        for pod in plan.delete_pods:
            self._delete_pod(job, pod)
        for index in plan.create_indexes:
            self._create_pod(job, index)
        new_status = normalized_status(plan.status)
        if new_status != normalized_status(job.get("status") or {}):
            body = dict(job, status=new_status)
            job = raw_json(
                self.batch.replace_namespaced_job_status(key.name, key.namespace, body, _preload_content=False)
            )
        annotations = job["metadata"].get("annotations") or {}
        wanted = {c.ANNOTATION_JOB_READY: str(plan.ready), c.ANNOTATION_JOB_COMPLETED_INDEXES: plan.completed_indexes}
        if any(annotations.get(k) != v for k, v in wanted.items()):
            self.batch.patch_namespaced_job(
                key.name, key.namespace, {"metadata": {"annotations": wanted}}, _content_type=MERGE_PATCH
            )
        for event_type, reason, message in plan.events:
            self.recorder.record(job, c.JOB_COMPONENT, event_type, reason, message)
        return plan.requeue_after

    def _create_pod(self, job: dict[str, Any], index: int) -> None:
        try:
            pod = create_pod(self.core, job["metadata"]["namespace"], build_pod(job, index))
        except ApiException as exc:
            self.recorder.record(
                job, c.JOB_COMPONENT, WARNING, c.JOB_EVENT_FAILED_CREATE, f"Error creating: {_api_error(exc)}"
            )
            raise
        log.info("Job %s/%s: created pod %s", job["metadata"]["namespace"], job["metadata"]["name"], pod.metadata.name)
        self.recorder.record(
            job, c.JOB_COMPONENT, "Normal", c.JOB_EVENT_SUCCESSFUL_CREATE, f"Created pod: {pod.metadata.name}"
        )

    def _delete_pod(self, job: dict[str, Any], pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if _ignore_not_found(self.core.delete_namespaced_pod, name, job["metadata"]["namespace"]):
            self.recorder.record(job, c.JOB_COMPONENT, "Normal", c.JOB_EVENT_SUCCESSFUL_DELETE, f"Deleted pod: {name}")

    def cleanup_deleted(self, key: CleanupKey) -> None:
        """Delete the pods a deleted Job still owns (the garbage collector does too)."""
        for pod in owned_by(self.list_pods(key.namespace, f"{c.LABEL_CONTROLLER_UID}={key.uid}"), key.uid):
            _ignore_not_found(self.core.delete_namespaced_pod, pod["metadata"]["name"], key.namespace)

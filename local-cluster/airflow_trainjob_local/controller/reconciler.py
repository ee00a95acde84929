"""One reconcile of one job: the real operator's ``ReconcileJobs`` (``pkg/controller.v1/common/job.go``),
``ReconcilePods`` (``pod.go``) and ``ReconcileServices`` (``service.go``), reading and writing only through
the API.

Order of a reconcile, as in the real one:

1. read the job (gone or being deleted: nothing to do); ``runPolicy.managedBy`` naming another controller:
   nothing to do (``Reconcile``); add the Created condition if missing;
2. validate the spec (:mod:`.validation`); a job that fails gets a Warning ``<Kind>FailedValidation`` event
   and the Failed condition with that reason (so it is finished from here on);
3. list the job's pods and services (by job-name and operator-name labels, owned by this job's uid);
4. finished job: apply cleanPodPolicy, ttlSecondsAfterFinished (not while suspended), write status if
   changed; done;
5. ``runPolicy.suspend``: delete every pod and service, zero the active counts, Running False and Suspended
   True (reason ``<Kind>Suspended``), a Normal event; done. A job that was suspended and is no longer:
   Suspended False (reason ``<Kind>Resumed``), ``startTime`` now, a Normal event, then on as usual;
6. past backoffLimit or activeDeadlineSeconds (from ``startTime``): delete all pods and services, set Failed;
   done;
7. schedulingPolicy.minAvailable not satisfiable and no pod yet: create nothing, retry shortly;
8. per replica type: create missing pods and services, delete out-of-range ones, handle Failed pods per
   restartPolicy, recount replicaStatuses;
9. the kind's status rule; write the status through the status subresource if it changed.

:meth:`Reconciler.reconcile` returns after how many seconds the job wants another look (a deadline or a
TTL coming up), or ``None``.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.admission import create_pod
from airflow_trainjob_local.controller import policies
from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.pods import (
    NO_EXIT_CODE,
    build_pod,
    build_service,
    container_exit_code,
    template_sets_restart_policy,
)
from airflow_trainjob_local.controller.ports import PortAllocator, ports_annotation, read_ports
from airflow_trainjob_local.controller.spec import JobView, replica_key
from airflow_trainjob_local.controller.status import (
    CONDITION_FALSE,
    CONDITION_SUSPENDED,
    JOB_REASON_FAILED_VALIDATION,
    JOB_REASON_RESUMED,
    JOB_REASON_SUSPENDED,
    NORMAL,
    WARNING,
    StatusContext,
    count_pod,
    initialize_replica_statuses,
    is_finished,
    is_running,
    is_succeeded,
    is_suspended,
    move_active_to_succeeded,
    new_reason,
    update_conditions,
    update_job_status,
)
from airflow_trainjob_local.controller.validation import external_manager, format_errors, validate_job
from airflow_trainjob_local.kube import (
    MERGE_PATCH,
    ApiException,
    format_time,
    is_already_exists,
    is_namespace_terminating,
    is_not_found,
    now,
    raw_json,
)

__all__ = ["CleanupKey", "JobKey", "Reconciler"]

log = logging.getLogger(__name__)

#: Seconds between checks of a job waiting for minAvailable.
MIN_AVAILABLE_RETRY = 3.0


@dataclass(frozen=True)
class JobKey:
    """A job to reconcile."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class CleanupKey:
    """A deleted job whose pods and services should go (a fallback when no garbage collector runs)."""

    kind: str
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"deleted {self.kind} {self.namespace}/{self.name}"


class Reconciler:
    """Reconciles jobs against the API server.

    :param api_client: client for the cluster.
    :param recorder: where events go.
    :param ports: the loopback port allocator shared by all jobs.
    :param clock: the current time (tests may pin it).
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        recorder: EventRecorder,
        ports: PortAllocator,
        clock: Callable[[], dt.datetime] = now,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.recorder = recorder
        self.ports = ports
        self.clock = clock

    # --- entry points ---------------------------------------------------------------------------

    def reconcile(self, key: JobKey) -> float | None:
        """Reconcile one job; return seconds until it wants another reconcile, or ``None``.

        :raises kubernetes.client.exceptions.ApiException: a write failed (the caller retries with backoff).
        """
        kind = c.JOB_KINDS[key.kind]
        try:
            obj = self.custom.get_namespaced_custom_object(c.GROUP, c.VERSION, key.namespace, kind.plural, key.name)
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise
        if obj["metadata"].get("deletionTimestamp"):
            return None
        return _Run(self, JobView.from_object(obj)).run()

    def cleanup_deleted(self, key: CleanupKey) -> None:
        """Delete the pods and services a deleted job owned (what the garbage collector would do)."""
        selector = _selector({c.LABEL_JOB_NAME: key.name, c.LABEL_OPERATOR_NAME: c.JOB_KINDS[key.kind].controller_name})
        for pod in _owned(self.list_pods(key.namespace, selector), key.uid):
            _ignore_not_found(self.core.delete_namespaced_pod, pod["metadata"]["name"], key.namespace)
        for svc in _owned(self.list_services(key.namespace, selector), key.uid):
            _ignore_not_found(self.core.delete_namespaced_service, svc["metadata"]["name"], key.namespace)

    # --- API reads ------------------------------------------------------------------------------

    def list_pods(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        body = raw_json(self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False))
        return body.get("items") or []

    def list_services(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        body = raw_json(self.core.list_namespaced_service(namespace, label_selector=selector, _preload_content=False))
        return body.get("items") or []


class _Run:
    """State of one reconcile of one job."""

    def __init__(self, reconciler: Reconciler, view: JobView) -> None:
        self.r = reconciler
        self.view = view
        self.now_dt = reconciler.clock()
        self.ctx = StatusContext(now=format_time(self.now_dt))
        self.status: dict[str, Any] = copy.deepcopy(view.obj.get("status") or {})
        self.old_status = copy.deepcopy(self.status)

    # --- the reconcile ----------------------------------------------------------------------------

    def run(self) -> float | None:
        view, kind = self.view, self.view.kind.kind
        manager = external_manager(view.obj)
        if manager is not None:
            # ManagedByExternalController: another controller owns this job; leave it entirely alone.
            log.debug("%s %s/%s: managed by %s; not reconciled", kind, view.namespace, view.name, manager)
            return None
        if not any(cond.get("type") == c.CONDITION_CREATED for cond in self.status.get("conditions") or []):
            self._set_condition(c.CONDITION_CREATED, c.JOB_REASON_CREATED, f"{kind} {view.name} is created.")
        problems = validate_job(view.obj)
        if problems and not is_finished(self.status):
            self._fail_validation(problems)
        selector = _selector(view.base_labels())
        pods = _owned(self.r.list_pods(view.namespace, selector), view.uid)
        services = _owned(self.r.list_services(view.namespace, selector), view.uid)

        if is_finished(self.status):
            self._delete_pods_and_services(pods)
            if is_succeeded(self.status):
                move_active_to_succeeded(self.status)
            self._flush_events()
            self._write_status()
            return self._apply_ttl()

        if view.suspended:
            self._suspend(pods, services)
            return None
        if is_suspended(self.status):
            self._resume()

        self._record_abnormal_pods(pods)
        failure = self._limit_exceeded(pods)
        if failure:
            if not self.status.get("completionTime"):
                self.status["completionTime"] = self.ctx.now
            # The job is not finished yet, so this deletes every pod and service whatever cleanPodPolicy says.
            self._delete_pods_and_services(pods)
            self.ctx.emit(NORMAL, new_reason(kind, c.JOB_REASON_FAILED), failure)
            self._set_condition(c.CONDITION_FAILED, c.JOB_REASON_FAILED, failure)
            self._flush_events()
            self._write_status()
            return self._apply_ttl()

        if not pods and not self._min_available_met():
            self._flush_events()
            self._write_status()
            return MIN_AVAILABLE_RETRY

        ports = self._ensure_ports()
        for rtype in self._creation_order():
            self._reconcile_pods(pods, rtype, ports)
            if kind != "MPIJob":  # the MPI controller makes no services
                self._reconcile_services(services, rtype, ports)
        update_job_status(view, self.status, self.ctx)
        self._flush_events()
        self._write_status()
        return policies.seconds_until_deadline(view, self.status, self.now_dt)

    # --- validation, suspension -------------------------------------------------------------------

    def _fail_validation(self, problems: list[str]) -> None:
        """A job the controller cannot reconcile: a Warning ``<Kind>FailedValidation`` event and a Failed
        condition with that reason, so whoever waits on the job learns why at once; nothing is retried."""
        view, kind = self.view, self.view.kind.kind
        message = f"{kind} failed validation because {format_errors(problems)}"
        log.warning("%s %s/%s: %s", kind, view.namespace, view.name, message)
        self.ctx.emit(WARNING, new_reason(kind, JOB_REASON_FAILED_VALIDATION), message)
        if not self.status.get("completionTime"):
            self.status["completionTime"] = self.ctx.now
        self._set_condition(c.CONDITION_FAILED, JOB_REASON_FAILED_VALIDATION, message)

    def _suspend(self, pods: list[dict[str, Any]], services: list[dict[str, Any]]) -> None:
        """``runPolicy.suspend`` is true: no pods; delete the job's pods and services (the job is not finished,
        so whatever cleanPodPolicy says), zero the active counts, Running False and Suspended True."""
        view, kind = self.view, self.view.kind.kind
        for pod in policies.pods_to_clean(view, self.status, pods):
            self._delete_pod(pod)
        if kind != "MPIJob":
            # Every service goes, also one whose pod was already gone (the real one deletes the pods' namesakes).
            for svc in services:
                if not svc["metadata"].get("deletionTimestamp"):
                    self._delete_service(svc["metadata"]["name"])
        for entry in (self.status.get("replicaStatuses") or {}).values():
            if isinstance(entry, dict):
                entry.pop("active", None)  # Active = 0 (omitted when zero)
        reason = new_reason(kind, JOB_REASON_SUSPENDED)
        message = f"{kind} {view.name} is suspended."
        if is_running(self.status):
            update_conditions(self.status, c.CONDITION_RUNNING, CONDITION_FALSE, reason, message, self.ctx.now)
        if not is_suspended(self.status):
            update_conditions(self.status, CONDITION_SUSPENDED, c.CONDITION_TRUE, reason, message, self.ctx.now)
        self.ctx.emit(NORMAL, reason, message)
        self._flush_events()
        self._write_status()

    def _resume(self) -> None:
        """Suspended, and ``suspend`` is false now: Suspended False, a new startTime; pods follow as usual."""
        view, kind = self.view, self.view.kind.kind
        reason = new_reason(kind, JOB_REASON_RESUMED)
        message = f"{kind} {view.name} is resumed."
        update_conditions(self.status, CONDITION_SUSPENDED, CONDITION_FALSE, reason, message, self.ctx.now)
        self.status["startTime"] = self.ctx.now
        self.ctx.emit(NORMAL, reason, message)
        log.info("%s %s/%s: resumed", kind, view.namespace, view.name)

    def _set_condition(self, condition_type: str, reason: str, message: str) -> None:
        """Set a True condition with reason ``<Kind><reason>``."""
        reason = new_reason(self.view.kind.kind, reason)
        update_conditions(self.status, condition_type, c.CONDITION_TRUE, reason, message, self.ctx.now)

    # --- limits -----------------------------------------------------------------------------------

    def _limit_exceeded(self, pods: list[dict[str, Any]]) -> str | None:
        name = self.view.name
        recreated = _int(self.view.annotations.get(c.ANNOTATION_LOCAL_RESTARTS))
        if policies.past_backoff_limit(self.view, pods, recreated):
            return f"Job {name} has failed because it has reached the specified backoff limit"
        if policies.past_active_deadline(self.view, self.status, self.now_dt):
            return f"Job {name} has failed because it was active longer than specified deadline"
        return None

    def _min_available_met(self) -> bool:
        wanted = policies.min_available(self.view)
        if wanted is None:
            return True
        nodes = raw_json(self.r.core.list_node(_preload_content=False)).get("items") or []
        all_pods = (
            raw_json(
                self.r.core.list_pod_for_all_namespaces(
                    field_selector="status.phase!=Succeeded,status.phase!=Failed", _preload_content=False
                )
            ).get("items")
            or []
        )
        free = policies.free_pod_slots(nodes, all_pods)
        if free >= wanted:
            return True
        self.ctx.emit(
            WARNING,
            c.EVENT_REASON_MIN_AVAILABLE_NOT_MET,
            f"{self.view.kind.kind} {self.view.name} waits until schedulingPolicy.minAvailable={wanted} pods "
            f"can start; {free} can start now",
        )
        return False

    # --- pods -------------------------------------------------------------------------------------

    def _creation_order(self) -> list[str]:
        types = self.view.replica_types()
        if self.view.kind.kind == "MPIJob":
            # The MPI controller creates the workers before the launcher.
            types = sorted(types, key=lambda t: t == "Launcher")
        return types

    def _reconcile_pods(self, pods: list[dict[str, Any]], rtype: str, ports: dict[str, int]) -> None:
        view, kind = self.view, self.view.kind.kind
        wanted = view.replicas(rtype)
        initialize_replica_statuses(self.status, rtype)
        slices = _slices(pods, rtype)
        for index in range(max([wanted] + [i + 1 for i in slices])):
            found = slices.get(index, [])
            if len(found) > 1:
                log.warning("%s %s/%s: %d pods for %s %d", kind, view.namespace, view.name, len(found), rtype, index)
                continue
            if not found:
                if index < wanted:
                    self._create_pod(rtype, index, ports)
                continue
            pod = found[0]
            if index >= wanted:
                self._delete_pod(pod)  # scaled down
            container = _default_container_name(pod, view.kind.default_container)
            exit_code = container_exit_code(pod, container)
            if exit_code != NO_EXIT_CODE:
                ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
                self.ctx.emit(NORMAL, c.EVENT_REASON_EXITED_WITH_CODE, f"Pod: {ns}.{name} exited with code {exit_code}")
            if (pod.get("status") or {}).get("phase") == "Failed":
                self._handle_failed_pod(pod, rtype, exit_code)
            count_pod(self.status, rtype, pod)
            self.ctx.pods_by_replica[(rtype, index)] = pod

    def _handle_failed_pod(self, pod: dict[str, Any], rtype: str, exit_code: int) -> None:
        view, kind = self.view, self.view.kind.kind
        action = policies.failed_pod_action(view.restart_policy(rtype), exit_code)
        if action is policies.PodAction.RESTART:
            if self._delete_pod(pod):
                self._count_recreation()
            msg = f"job {view.name} is restarting because {rtype} replica(s) failed."
            self.ctx.emit(WARNING, new_reason(kind, c.JOB_REASON_RESTARTING), msg)
            self._set_condition(c.CONDITION_RESTARTING, c.JOB_REASON_RESTARTING, msg)
        elif action is policies.PodAction.FAIL:
            msg = f'job "{view.name}" is failing because "{rtype}" replica(s) failed.'
            self.ctx.emit(WARNING, new_reason(kind, c.JOB_REASON_FAILED), msg)
            if not self.status.get("completionTime"):
                self.status["completionTime"] = self.ctx.now
            self._set_condition(c.CONDITION_FAILED, c.JOB_REASON_FAILED, msg)

    def _create_pod(self, rtype: str, index: int, ports: dict[str, int]) -> None:
        view = self.view
        name = view.pod_name(rtype, index)
        try:
            pod = build_pod(view, rtype, index, ports)
        except ValueError as exc:
            self._event(WARNING, c.EVENT_REASON_FAILED_CREATE_POD, f"Error creating: {exc}")
            log.warning("%s %s/%s: cannot build pod %s: %s", view.kind.kind, view.namespace, view.name, name, exc)
            return
        if template_sets_restart_policy(view, rtype):
            self._event(
                WARNING,
                c.EVENT_REASON_POD_TEMPLATE_RESTART_POLICY,
                "Restart policy in pod template will be overwritten by restart policy in replica spec",
            )
        try:
            create_pod(self.r.core, view.namespace, pod)
        except ApiException as exc:
            if is_already_exists(exc):
                return  # created by an earlier pass, or a deleted job's pod still terminating
            if not is_namespace_terminating(exc):  # there, the event would be refused too
                self._event(WARNING, c.EVENT_REASON_FAILED_CREATE_POD, f"Error creating: {_api_error(exc)}")
            raise
        log.info("%s %s/%s: created pod %s", view.kind.kind, view.namespace, view.name, name)
        self._event(NORMAL, c.EVENT_REASON_SUCCESSFUL_CREATE_POD, f"Created pod: {name}")

    def _delete_pod(self, pod: dict[str, Any]) -> bool:
        """Delete a pod unless it is already being deleted; True when this call deleted it."""
        if pod["metadata"].get("deletionTimestamp"):
            return False
        name = pod["metadata"]["name"]
        try:
            self.r.core.delete_namespaced_pod(name, self.view.namespace)
        except ApiException as exc:
            if is_not_found(exc):
                return False
            self._event(WARNING, c.EVENT_REASON_FAILED_DELETE_POD, f"Error deleting: {_api_error(exc)}")
            raise
        log.info("%s %s/%s: deleted pod %s", self.view.kind.kind, self.view.namespace, self.view.name, name)
        self._event(NORMAL, c.EVENT_REASON_SUCCESSFUL_DELETE_POD, f"Deleted pod: {name}")
        return True

    def _delete_service(self, name: str) -> None:
        try:
            self.r.core.delete_namespaced_service(name, self.view.namespace)
        except ApiException as exc:
            if is_not_found(exc):
                return
            self._event(WARNING, c.EVENT_REASON_FAILED_DELETE_SERVICE, f"Error deleting: {_api_error(exc)}")
            raise
        self._event(NORMAL, c.EVENT_REASON_SUCCESSFUL_DELETE_SERVICE, f"Deleted service: {name}")

    def _delete_pods_and_services(self, pods: list[dict[str, Any]]) -> None:
        """``DeletePodsAndServices``: the pods cleanPodPolicy picks, each with its same-named service."""
        for pod in policies.pods_to_clean(self.view, self.status, pods):
            self._delete_pod(pod)
            if self.view.kind.kind != "MPIJob":
                self._delete_service(pod["metadata"]["name"])

    def _count_recreation(self) -> None:
        """Record one more deleted-and-recreated pod on the job, for backoffLimit."""
        count = _int(self.view.annotations.get(c.ANNOTATION_LOCAL_RESTARTS)) + 1
        self._patch_annotation(c.ANNOTATION_LOCAL_RESTARTS, str(count))

    def _record_abnormal_pods(self, pods: list[dict[str, Any]]) -> None:
        """``RecordAbnormalPods``: warn about active pods whose containers exited non-zero or wait with a message."""
        for pod in pods:
            status = pod.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed") or pod["metadata"].get("deletionTimestamp"):
                continue
            name = pod["metadata"]["name"]
            for cs in status.get("containerStatuses") or []:
                state = cs.get("state") or {}
                terminated, waiting = state.get("terminated"), state.get("waiting")
                if terminated and int(terminated.get("exitCode", 0)) != 0 and terminated.get("reason"):
                    self.ctx.emit(
                        WARNING,
                        terminated["reason"],
                        f"Error pod {name} container {cs.get('name')} exitCode: {terminated.get('exitCode')} "
                        f"terminated message: {terminated.get('message', '')}",
                    )
                if waiting and waiting.get("message") and waiting.get("reason"):
                    self.ctx.emit(
                        WARNING,
                        waiting["reason"],
                        f"Error pod {name} container {cs.get('name')} waiting message: {waiting['message']}",
                    )

    # --- services -----------------------------------------------------------------------------------

    def _reconcile_services(self, services: list[dict[str, Any]], rtype: str, ports: dict[str, int]) -> None:
        view = self.view
        wanted = view.replicas(rtype)
        slices = _slices(services, rtype)
        for index in range(max([wanted] + [i + 1 for i in slices])):
            found = slices.get(index, [])
            if not found and index < wanted:
                self._create_service(rtype, index, ports)
            elif found and index >= wanted:
                self._delete_service(found[0]["metadata"]["name"])

    def _create_service(self, rtype: str, index: int, ports: dict[str, int]) -> None:
        view = self.view
        try:
            service = build_service(view, rtype, index, build_pod(view, rtype, index, ports))
        except ValueError:
            return  # the pod could not be built either; that was reported as FailedCreatePod
        name = service["metadata"]["name"]
        try:
            self.r.core.create_namespaced_service(view.namespace, service)
        except ApiException as exc:
            if is_already_exists(exc):
                return
            if not is_namespace_terminating(exc):
                self._event(WARNING, c.EVENT_REASON_FAILED_CREATE_SERVICE, f"Error creating: {_api_error(exc)}")
            raise
        self._event(NORMAL, c.EVENT_REASON_SUCCESSFUL_CREATE_SERVICE, f"Created service: {name}")

    # --- ports, status, TTL -----------------------------------------------------------------------

    def _ensure_ports(self) -> dict[str, int]:
        """The job's loopback ports, allocating (and recording on the job) those its replicas lack."""
        view = self.view
        ports = read_ports(view.annotations)
        self.r.ports.reserve(set(ports.values()))
        missing = [replica_key(t, i) for t in view.replica_types() for i in range(view.replicas(t))]
        missing = [k for k in missing if k not in ports]
        if missing:
            for key in missing:
                ports[key] = self.r.ports.allocate()
            self._patch_annotation(c.ANNOTATION_LOCAL_PORTS, ports_annotation(ports))
        return ports

    def _patch_annotation(self, key: str, value: str) -> None:
        """Set one annotation on the job; the resourceVersion makes a concurrent change fail with 409."""
        view = self.view
        patch = {"metadata": {"annotations": {key: value}, "resourceVersion": view.obj["metadata"]["resourceVersion"]}}
        view.obj = self.r.custom.patch_namespaced_custom_object(
            c.GROUP, c.VERSION, view.namespace, view.kind.plural, view.name, patch, _content_type=MERGE_PATCH
        )

    def _write_status(self) -> None:
        """Write the status through the status subresource when it changed (lastReconcileTime = now)."""
        if self.status == self.old_status:
            return
        self.status["lastReconcileTime"] = self.ctx.now
        body = dict(self.view.obj, status=self.status)
        view = self.view
        view.obj = self.r.custom.replace_namespaced_custom_object_status(
            c.GROUP, c.VERSION, view.namespace, view.kind.plural, view.name, body
        )
        was = {x.get("type") for x in self.old_status.get("conditions") or [] if x.get("status") == c.CONDITION_TRUE}
        now_true = [x for x in self.status.get("conditions") or [] if x.get("status") == c.CONDITION_TRUE]
        for cond in now_true:
            if cond.get("type") not in was:
                ctype, reason = cond.get("type"), cond.get("reason")
                log.info("%s %s/%s: %s (%s)", view.kind.kind, view.namespace, view.name, ctype, reason)
        self.old_status = copy.deepcopy(self.status)

    def _apply_ttl(self) -> float | None:
        """Delete the job once ``ttlSecondsAfterFinished`` passed; else the seconds left (``None``: no TTL)."""
        remaining = policies.seconds_until_ttl_expires(self.view, self.status, self.now_dt)
        if remaining is None or remaining > 0:
            return remaining
        view = self.view
        try:
            self.r.custom.delete_namespaced_custom_object(
                c.GROUP, c.VERSION, view.namespace, view.kind.plural, view.name
            )
        except ApiException as exc:
            if not is_not_found(exc):
                raise
            return None
        log.info("%s %s/%s: deleted after ttlSecondsAfterFinished", view.kind.kind, view.namespace, view.name)
        self._event(NORMAL, c.EVENT_REASON_SUCCESSFUL_DELETE_JOB, f"Deleted job: {view.name}")
        return None

    # --- events -------------------------------------------------------------------------------------

    def _event(self, type_: str, reason: str, message: str) -> None:
        self.r.recorder.record(self.view.obj, self.view.controller_name, type_, reason, message)

    def _flush_events(self) -> None:
        for event in self.ctx.events:
            self._event(event.type, event.reason, event.message)
        self.ctx.events.clear()


# --- helpers ---------------------------------------------------------------------------------------


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _owned(objects: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    """The objects whose controller ownerReference is the job with ``uid`` (``JobControlledPodList``)."""
    return [
        obj
        for obj in objects
        if any(ref.get("controller") and ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences") or [])
    ]


def _slices(objects: list[dict[str, Any]], rtype: str) -> dict[int, list[dict[str, Any]]]:
    """``GetPodSlices``: the objects of one replica type by their replica-index label (bad labels skipped)."""
    slices: dict[int, list[dict[str, Any]]] = {}
    for obj in objects:
        labels = obj["metadata"].get("labels") or {}
        if labels.get(c.LABEL_REPLICA_TYPE) != rtype.lower():
            continue
        try:
            index = int(labels.get(c.LABEL_REPLICA_INDEX, ""))
        except ValueError:
            continue
        if index >= 0:
            slices.setdefault(index, []).append(obj)
    return slices


def _default_container_name(pod: dict[str, Any], default: str) -> str:
    """The kind's default container name if the pod has it, else its first container's name."""
    names = [ctr.get("name") for ctr in (pod.get("spec") or {}).get("containers") or []]
    return default if default in names or not names else str(names[0])


def _ignore_not_found(delete: Callable[..., Any], *args: Any) -> None:
    try:
        delete(*args)
    except ApiException as exc:
        if not is_not_found(exc):
            raise


def _api_error(exc: ApiException) -> str:
    """A short, secret-free description of an API error: its Status message, else the HTTP reason."""
    try:
        return str(json.loads(exc.body or "{}").get("message") or exc.reason)
    except (TypeError, ValueError):
        return str(exc.reason)


def _int(value: str | None) -> int:
    try:
        return int(value or 0)
    except ValueError:
        return 0

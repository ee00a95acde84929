"""One reconcile of one TrainJob, in upstream's order (``pkg/controller/trainjob_controller.go`` ``Reconcile``),
reading and writing only through the API:

1. read the TrainJob (gone or being deleted: nothing to do); ``spec.managedBy`` naming another controller:
   nothing to do;
2. drop a Failed condition that is not DeadlineExceeded (a spec change may revive a failed TrainJob);
3. an unsupported ``runtimeRef`` kind: Failed, ``TrainingRuntimeNotSupported``; otherwise, unless finished,
   the objects (:meth:`Reconciler.reconcile_objects`): the runtime (snapshot first), the webhook's checks, the
   JobSet created, or updated while the TrainJob or its JobSet is suspended;
4. the Suspended condition; the JobSet's outcome and ``jobsStatus`` (:mod:`.status`);
5. ``activeDeadlineSeconds``: past it, Failed ``DeadlineExceeded`` and the JobSet deleted; before it, a requeue at it;
6. the status written through the status subresource when it changed.

A runtime that does not exist yet records upstream's Warning ``TrainJobResourcesCreationFailed`` event and raises
:class:`RetryLater` (the work queue backs off and tries again), after writing the status.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from airflow_trainjob_local.controller.events import EventRecorder
from airflow_trainjob_local.controller.loop import RetryLater
from airflow_trainjob_local.controller.ports import PortAllocator
from airflow_trainjob_local.kube import (
    MERGE_PATCH,
    ApiException,
    format_time,
    is_already_exists,
    is_not_found,
    now,
    parse_time,
    raw_json,
)
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer import status as st
from airflow_trainjob_local.trainer.build import build_jobset, patched_spec
from airflow_trainjob_local.trainer.runtime_ref import (
    RuntimeKind,
    SnapshotError,
    not_found_message,
    read_snapshot,
    registry_key,
    snapshot_configmap,
    supported_kind,
)
from airflow_trainjob_local.trainer.spec import RuntimeView, SpecError, TrainJobView
from airflow_trainjob_local.trainer.template import owner_reference
from airflow_trainjob_local.trainer.torch import is_torch
from airflow_trainjob_local.trainer.trainjob_status import StatusServerSettings, tls_configmap
from airflow_trainjob_local.trainer.validation import validate

__all__ = ["CleanupKey", "Reconciler", "RetryLater", "TrainJobKey"]

log = logging.getLogger(__name__)

#: Upstream truncates the error in its event message to this many characters.
EVENT_ERROR_LIMIT = 950


@dataclass(frozen=True)
class TrainJobKey:
    """A TrainJob to reconcile."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"TrainJob {self.namespace}/{self.name}"


@dataclass(frozen=True)
class CleanupKey:
    """A deleted TrainJob whose JobSet and snapshot should go (a fallback beside the garbage collector)."""

    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"deleted TrainJob {self.namespace}/{self.name}"


class _Refused(Exception):
    """The TrainJob breaks a rule upstream's webhook enforces; ``problems`` says which."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class Reconciler:
    """Reconciles TrainJobs against the API server.

    :param api_client: client for the cluster.
    :param recorder: where events go.
    :param ports: the loopback port allocator (shared with the v1 controller).
    :param clock: the current time (tests may pin it).
    :param status_server: the status server when the ``TrainJobStatus`` feature gate is on (the trainer's
        containers get its env and token volume, each TrainJob its ``<trainjob>-tls-config`` ConfigMap);
        ``None``: the gate is off.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        recorder: EventRecorder,
        ports: PortAllocator,
        clock: Callable[[], dt.datetime] = now,
        status_server: StatusServerSettings | None = None,
    ) -> None:
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.recorder = recorder
        self.ports = ports
        self.clock = clock
        self.status_server = status_server

    # --- entry points ---------------------------------------------------------------------------

    def reconcile(self, key: TrainJobKey) -> float | None:
        """Reconcile one TrainJob; return seconds until it wants another look (its deadline), or ``None``.

        :raises RetryLater: its runtime does not exist (yet); the status was written first.
        :raises kubernetes.client.exceptions.ApiException: a read or write failed.
        """
        obj = self._get_trainjob(key)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        try:
            trainjob = TrainJobView.from_object(obj)
        except SpecError as exc:
            log.warning("%s: unreadable spec: %s", key, exc)
            return None
        if trainjob.managed_by != c.MANAGED_BY_TRAINER:
            log.debug("%s: managed by %s; not reconciled", key, trainjob.managed_by)
            return None
        return _Run(self, trainjob).run()

    def cleanup_deleted(self, key: CleanupKey) -> None:
        """Delete the JobSet and the runtime snapshot a deleted TrainJob still controls."""
        jobset = self.get_jobset(key.namespace, key.name)
        if jobset is not None and _controlled_by(jobset, key.uid):
            self.delete_jobset(key.namespace, key.name)
        name = key.name + c.RUNTIME_SNAPSHOT_SUFFIX
        try:
            configmap = self.core.read_namespaced_config_map(name, key.namespace).to_dict()
        except ApiException as exc:
            if is_not_found(exc):
                return
            raise
        refs = (configmap.get("metadata") or {}).get("owner_references") or []
        if any(ref.get("controller") and ref.get("uid") == key.uid for ref in refs):
            _ignore_not_found(self.core.delete_namespaced_config_map, name, key.namespace)

    # --- API helpers ----------------------------------------------------------------------------

    def _get_trainjob(self, key: TrainJobKey) -> dict[str, Any] | None:
        try:
            return self.custom.get_namespaced_custom_object(c.GROUP, c.VERSION, key.namespace, c.TRAINJOBS, key.name)
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise

    def get_jobset(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.custom.get_namespaced_custom_object(
                c.JOBSET_GROUP, c.JOBSET_VERSION, namespace, c.JOBSETS, name
            )
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise

    def delete_jobset(self, namespace: str, name: str) -> None:
        # Foreground would wait for the pods; background is what a plain client Delete does.
        _ignore_not_found(
            self.custom.delete_namespaced_custom_object,
            c.JOBSET_GROUP,
            c.JOBSET_VERSION,
            namespace,
            c.JOBSETS,
            name,
            body={"propagationPolicy": "Background"},
        )

    def get_runtime(self, kind: RuntimeKind, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            if kind.namespaced:
                return self.custom.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, kind.plural, name)
            return self.custom.get_cluster_custom_object(c.GROUP, c.VERSION, kind.plural, name)
        except ApiException as exc:
            if is_not_found(exc):
                return None
            raise


def _controlled_by(obj: dict[str, Any], uid: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("controller") and ref.get("uid") == uid for ref in refs)


def _ignore_not_found(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except ApiException as exc:
        if not is_not_found(exc):
            raise


class _Run:
    """State of one reconcile of one TrainJob."""

    def __init__(self, reconciler: Reconciler, trainjob: TrainJobView) -> None:
        self.r = reconciler
        self.trainjob = trainjob
        self.now_dt = reconciler.clock()
        self.now = format_time(self.now_dt)
        self.status: dict[str, Any] = copy.deepcopy(trainjob.obj.get("status") or {})
        self.old_status = copy.deepcopy(self.status)

    def run(self) -> float | None:
        tj, status = self.trainjob, self.status
        st.remove_failed_condition(status)
        retry: RetryLater | None = None
        kind = supported_kind(tj.runtime_api_group, tj.runtime_kind)
        if kind is None:
            message = f"unsupported runtime: {registry_key(tj.runtime_api_group, tj.runtime_kind)}"
            st.set_failed(status, c.REASON_RUNTIME_NOT_SUPPORTED, message, self.now)
        elif not st.is_finished(status):
            try:
                self.reconcile_objects(kind)
            except _Refused as exc:
                self._refuse(exc.problems)
            except (RetryLater, SnapshotError, SpecError) as exc:
                self._record_failure(str(exc))
                retry = exc if isinstance(exc, RetryLater) else RetryLater(str(exc))
        st.set_suspended_condition(status, tj.suspend, self.now)
        jobset = self.r.get_jobset(tj.namespace, tj.name)
        if jobset is not None:
            st.apply_jobset_status(status, jobset, self.now)
        elif not st.is_finished(status) and retry is None and kind is not None:
            retry = RetryLater(f"JobSet {tj.namespace}/{tj.name} not found")
        again = self._reconcile_deadline()
        st.carry_transition_times(status, self.old_status)
        if status != self.old_status:
            # A merge patch keeps what it does not name: name the fields that went away as null.
            body = {**{field: None for field in self.old_status if field not in status}, **status}
            # trainerStatus belongs to the status server (upstream's field manager "trainer-status"): sending
            # the copy read at the start could put back an older report written meanwhile.
            body.pop(c.STATUS_TRAINER_STATUS, None)
            self.r.custom.patch_namespaced_custom_object_status(
                c.GROUP, c.VERSION, tj.namespace, c.TRAINJOBS, tj.name, {"status": body}, _content_type=MERGE_PATCH
            )
        if retry is not None:
            raise retry
        return again

    # --- objects ------------------------------------------------------------------------------------

    def reconcile_objects(self, kind: RuntimeKind) -> None:
        """Resolve the runtime, check the TrainJob, create or update its JobSet.

        :raises RetryLater: the runtime does not exist.
        :raises SnapshotError: the snapshot ConfigMap is unusable.
        :raises _Refused: the webhook would have refused the TrainJob.
        """
        tj = self.trainjob
        runtime = RuntimeView.from_object(self._runtime(kind))
        problems = validate(
            tj, runtime, patched_spec(runtime.template.get("spec") or {}, tj.raw_spec.get("runtimePatches") or [])
        )
        if problems:
            raise _Refused(problems)
        existing = self.r.get_jobset(tj.namespace, tj.name)
        if existing is not None and not tj.suspend and not (existing.get("spec") or {}).get("suspend"):
            return  # upstream leaves a running JobSet alone
        # Only torch runtimes get a master port (the PET_ environment).
        master_port = self._master_port() if is_torch(runtime.ml_policy) else 0
        settings = self.r.status_server
        if settings is not None:
            self._ensure_tls_configmap(settings)
        desired = build_jobset(tj, runtime, master_port=master_port, status_server=settings)
        if existing is None:
            try:
                self.r.custom.create_namespaced_custom_object(
                    c.JOBSET_GROUP, c.JOBSET_VERSION, tj.namespace, c.JOBSETS, desired
                )
            except ApiException as exc:
                if not is_already_exists(exc):
                    raise
            return
        updated = _merged_jobset(existing, desired)
        if updated != existing:
            self.r.custom.replace_namespaced_custom_object(
                c.JOBSET_GROUP, c.JOBSET_VERSION, tj.namespace, c.JOBSETS, tj.name, updated
            )

    def _ensure_tls_configmap(self, settings: StatusServerSettings) -> None:
        """Create the ``<trainjob>-tls-config`` ConfigMap, or put back its CA certificate (upstream applies it)."""
        body = tls_configmap(self.trainjob, settings)
        meta = body["metadata"]
        try:
            self.r.core.create_namespaced_config_map(meta["namespace"], body)
            return
        except ApiException as exc:
            if not is_already_exists(exc):
                raise
        existing = self.r.core.read_namespaced_config_map(meta["name"], meta["namespace"])
        if (existing.data or {}) != body["data"]:
            self.r.core.patch_namespaced_config_map(meta["name"], meta["namespace"], {"data": body["data"]})

    def _runtime(self, kind: RuntimeKind) -> dict[str, Any]:
        tj = self.trainjob
        snapshot_name = tj.name + c.RUNTIME_SNAPSHOT_SUFFIX
        try:
            configmap = self.r.core.read_namespaced_config_map(snapshot_name, tj.namespace, _preload_content=False)
        except ApiException as exc:
            if not is_not_found(exc):
                raise
        else:
            return read_snapshot(raw_json(configmap), tj.uid, tj.runtime_api_group, tj.runtime_kind, tj.runtime_name)
        runtime = self.r.get_runtime(kind, tj.namespace, tj.runtime_name)
        if runtime is None:
            raise RetryLater(not_found_message(kind, tj.runtime_name))
        body = snapshot_configmap(tj.name, tj.namespace, owner_reference(tj), runtime)
        try:
            self.r.core.create_namespaced_config_map(tj.namespace, body)
        except ApiException as exc:
            if not is_already_exists(exc):
                raise
        return runtime

    def _master_port(self) -> int:
        tj = self.trainjob
        annotations = tj.obj["metadata"].get("annotations") or {}
        try:
            return int(annotations[c.ANNOTATION_LOCAL_MASTER_PORT])
        except (KeyError, ValueError):
            pass
        port = self.r.ports.allocate()
        patch = {"metadata": {"annotations": {c.ANNOTATION_LOCAL_MASTER_PORT: str(port)}}}
        self.r.custom.patch_namespaced_custom_object(
            c.GROUP, c.VERSION, tj.namespace, c.TRAINJOBS, tj.name, patch, _content_type=MERGE_PATCH
        )
        return port

    # --- outcomes ---------------------------------------------------------------------------------

    def _record_failure(self, error: str) -> None:
        message = f"TrainJob resources reconciliation failed: {error[:EVENT_ERROR_LIMIT]}"
        if len(error) > EVENT_ERROR_LIMIT:
            message += " ..."
        self.r.recorder.record(
            self.trainjob.obj, c.EVENT_COMPONENT, "Warning", c.REASON_RESOURCES_CREATION_FAILED, message
        )

    def _refuse(self, problems: list[str]) -> None:
        message = "; ".join(problems)
        before = st.find_condition(self.old_status, c.CONDITION_FAILED) or {}
        st.set_failed(self.status, c.REASON_FAILED_VALIDATION, message, self.now)
        if (before.get("reason"), before.get("message")) == (c.REASON_FAILED_VALIDATION, message):
            return  # reported already: the resync re-checks, it does not repeat the event
        self.r.recorder.record(self.trainjob.obj, c.EVENT_COMPONENT, "Warning", c.REASON_FAILED_VALIDATION, message)

    def _reconcile_deadline(self) -> float | None:
        tj, status = self.trainjob, self.status
        if st.is_finished(status) or tj.suspend:
            return None
        creation = parse_time(tj.obj["metadata"].get("creationTimestamp")) or self.now_dt
        when = st.deadline(tj.spec.active_deadline_seconds, creation, status, parse_time)
        if when is None:
            return None
        if self.now_dt > when:
            st.set_failed(status, c.REASON_DEADLINE_EXCEEDED, c.MESSAGE_DEADLINE_EXCEEDED, self.now)
            self.r.delete_jobset(tj.namespace, tj.name)
            return None
        return max(1.0, (when - self.now_dt).total_seconds())


def _merged_jobset(existing: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
    """``existing`` with the trainer's fields of ``desired``: its spec, its labels and annotations added, its
    ownerReference (what upstream's server-side apply with forced ownership changes)."""
    updated = copy.deepcopy(existing)
    meta, wanted = updated.setdefault("metadata", {}), desired["metadata"]
    for field in ("labels", "annotations"):
        if wanted.get(field):
            meta[field] = {**(meta.get(field) or {}), **wanted[field]}
    refs = [ref for ref in meta.get("ownerReferences") or [] if ref.get("uid") != wanted["ownerReferences"][0]["uid"]]
    meta["ownerReferences"] = refs + wanted["ownerReferences"]
    updated["spec"] = copy.deepcopy(desired["spec"])
    return updated

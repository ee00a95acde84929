"""``TrainingJobTrigger``: waits in the triggerer for a training job to end, by watching it.

The job's state comes from a watch (started from the resourceVersion of a GET), not a timer:
the trigger wakes when the job changes. It reconnects when the stream ends or drops, re-reads the
job on 410 Gone, backs off on transient errors (429, 5xx, resets) and falls back to polling while
watches keep failing; 401/403 end the wait with an error event. Deadlines are absolute epoch
seconds in its kwargs, so a triggerer restart neither resets nor falsely trips them, and the job's
state is read before any deadline is judged. What the status means is decided by
:mod:`airflow_trainjob.conditions`, as on the synchronous path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook
from airflow.triggers.base import BaseTrigger, TriggerEvent
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio import watch as async_watch
from kubernetes_asyncio.client.exceptions import ApiException

from airflow_trainjob import conditions
from airflow_trainjob.constants import CONDITION_SUCCEEDED, GROUP, JOB_KINDS, LABEL_JOB_NAME, VERSION
from airflow_trainjob.hooks.retries import TRANSIENT_STATUS_CODES

#: Longest single watch request (seconds); the server ends it and the trigger opens the next.
WATCH_SECONDS = 300
#: Consecutive failed watches after which the trigger polls instead, every ``poll_interval`` s.
WATCH_FAILURES_BEFORE_POLLING = 3
#: Backoff bounds between failed attempts (seconds).
BACKOFF_MIN, BACKOFF_MAX = 1.0, 30.0

# Event outcomes.
FINISHED, DELETED, TIMED_OUT, ERROR = "finished", "deleted", "timeout", "error"


class TrainingJobTrigger(BaseTrigger):
    """Fires one event when the job reaches a target condition or ``Failed``, disappears, passes a
    deadline, or cannot be read.

    :param kind: the job's kind; ``name``, ``namespace``: where it is.
    :param uid: the job object this wait is about (a same-named successor is "deleted"); None: any.
    :param kubernetes_conn_id, cluster_context, config_file, in_cluster: the connection, resolved
        exactly as the synchronous hook resolves it.
    :param target_conditions: condition types that end the wait successfully (``Succeeded``).
    :param timeout_at: epoch seconds after which the wait ends with a ``timeout`` event (or None).
    :param startup_timeout_at: epoch seconds by which the job must have reached ``Running``.
    :param poll_interval: seconds between reads when watches keep failing.
    :param wait_for_creation: a job that does not exist yet is waited for (sensor), not "deleted".
    :param owner_labels: labels the job must carry for :meth:`on_kill` to delete it.

    Event payload: ``outcome`` (finished, deleted, timeout, error), ``message``, ``job`` (the
    last object read, or None), ``pods`` (the job's pods as JSON dicts when it finished, so the
    verdict does not depend on pods still existing at resume), ``which`` (for a timeout).
    """

    def __init__(
        self,
        *,
        kind: str,
        name: str,
        namespace: str,
        uid: str | None = None,
        kubernetes_conn_id: str | None = "kubernetes_default",
        cluster_context: str | None = None,
        config_file: str | None = None,
        in_cluster: bool | None = None,
        target_conditions: Sequence[str] = (CONDITION_SUCCEEDED,),
        timeout_at: float | None = None,
        startup_timeout_at: float | None = None,
        poll_interval: float = 10.0,
        wait_for_creation: bool = False,
        owner_labels: dict[str, str] | None = None,
    ):
        super().__init__()
        self.kind = kind
        self.name = name
        self.namespace = namespace
        self.uid = uid
        self.kubernetes_conn_id = kubernetes_conn_id
        self.cluster_context = cluster_context
        self.config_file = config_file
        self.in_cluster = in_cluster
        self.target_conditions = list(target_conditions)
        self.timeout_at = timeout_at
        self.startup_timeout_at = startup_timeout_at
        self.poll_interval = poll_interval
        self.wait_for_creation = wait_for_creation
        self.owner_labels = dict(owner_labels or {})

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            "airflow_trainjob.triggers.training_job.TrainingJobTrigger",
            {
                "kind": self.kind,
                "name": self.name,
                "namespace": self.namespace,
                "uid": self.uid,
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "cluster_context": self.cluster_context,
                "config_file": self.config_file,
                "in_cluster": self.in_cluster,
                "target_conditions": self.target_conditions,
                "timeout_at": self.timeout_at,
                "startup_timeout_at": self.startup_timeout_at,
                "poll_interval": self.poll_interval,
                "wait_for_creation": self.wait_for_creation,
                "owner_labels": self.owner_labels,
            },
        )

    @property
    def _plural(self) -> str:
        return JOB_KINDS[self.kind].plural

    def _hook(self) -> AsyncKubernetesHook:
        return AsyncKubernetesHook(
            conn_id=self.kubernetes_conn_id,
            cluster_context=self.cluster_context,
            config_file=self.config_file,
            in_cluster=self.in_cluster,
        )

    def _event(self, outcome: str, message: str, job: dict | None = None, **extra: Any) -> TriggerEvent:
        return TriggerEvent({"outcome": outcome, "message": message, "job": job, "pods": [], **extra})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        ref = f"{self.kind} {self.namespace}/{self.name}"
        try:
            async with self._hook().get_conn() as api:
                yield await self._wait(api, ref)
        except Exception as e:  # noqa: BLE001 - the task must hear of any failure, with its cause
            yield self._event(ERROR, f"waiting for {ref} failed: {type(e).__name__}: {e}")

    async def _wait(self, api: Any, ref: str) -> TriggerEvent:
        custom = async_client.CustomObjectsApi(api)
        failures = 0
        while True:
            try:
                job = await custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, self._plural, self.name)
            except ApiException as e:
                if e.status == 404:
                    if not self.wait_for_creation:
                        return self._event(DELETED, f"{ref} was deleted outside this task before it finished")
                    which = self._deadline_passed()
                    if which is not None:
                        return self._event(TIMED_OUT, f"{ref} was not created before the deadline", which=which)
                    # Not created yet: watch for it from a list's resourceVersion (nothing to read before).
                    found = await custom.list_namespaced_custom_object(
                        GROUP, VERSION, self.namespace, self._plural, field_selector=f"metadata.name={self.name}"
                    )
                    if not found["items"]:
                        await self._watch_for_change(custom, found["metadata"]["resourceVersion"])
                    continue
                if e.status in (401, 403):
                    return self._event(ERROR, f"Kubernetes API answered {e.status} {e.reason} reading {ref}")
                if e.status not in TRANSIENT_STATUS_CODES:
                    raise
                failures += 1
                await asyncio.sleep(_backoff(failures))
                continue
            except (OSError, asyncio.TimeoutError):
                failures += 1
                await asyncio.sleep(_backoff(failures))
                continue

            if self.uid and job["metadata"].get("uid") != self.uid:
                return self._event(DELETED, f"{ref} was deleted outside this task and replaced by another object")
            self.wait_for_creation = False  # it exists now: a later 404 is a deletion
            status = job.get("status")
            if conditions.is_failed(status) or any(conditions.has_condition(status, t) for t in self.target_conditions):
                return self._event(FINISHED, f"{ref}: {conditions.summary(status)}", job,
                                   pods=await self._pods(api))
            which = self._deadline_passed(status)
            if which is not None:
                return self._event(TIMED_OUT, f"{ref}: {which} passed; last state: {conditions.summary(status)}",
                                   job, which=which)

            if failures >= WATCH_FAILURES_BEFORE_POLLING:
                await asyncio.sleep(min(self.poll_interval, self._seconds_to_deadline()))
                failures -= 1  # try a watch again now and then
                continue
            try:
                await self._watch_for_change(custom, job["metadata"]["resourceVersion"])
                failures = 0
            except ApiException as e:
                if e.status == 410:
                    continue  # the resourceVersion expired: read the job again, watch from there
                if e.status in (401, 403):
                    return self._event(ERROR, f"Kubernetes API answered {e.status} {e.reason} watching {ref}")
                if e.status not in TRANSIENT_STATUS_CODES:
                    raise
                failures += 1
                await asyncio.sleep(_backoff(failures))
            except (OSError, asyncio.TimeoutError):
                failures += 1
                await asyncio.sleep(_backoff(failures))

    async def _watch_for_change(self, custom: Any, resource_version: str) -> None:
        """Return at the job's next change, when the watch ends, or at the nearest deadline."""
        seconds = max(1, int(min(WATCH_SECONDS, self._seconds_to_deadline()) + 0.999))
        watcher = async_watch.Watch()
        try:
            async for event in watcher.stream(
                custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                self._plural,
                field_selector=f"metadata.name={self.name}",
                resource_version=resource_version,
                timeout_seconds=seconds,
                allow_watch_bookmarks=True,
            ):
                if event["type"] in ("MODIFIED", "DELETED", "ADDED"):
                    return
        finally:
            await watcher.close()

    async def _pods(self, api: Any) -> list[dict[str, Any]]:
        core = async_client.CoreV1Api(api)
        try:
            pods = await core.list_namespaced_pod(self.namespace, label_selector=f"{LABEL_JOB_NAME}={self.name}")
        except ApiException:
            return []  # the verdict still has the job's status and its events
        return [api.sanitize_for_serialization(p) for p in pods.items]

    def _deadline_passed(self, status: Any = None) -> str | None:
        now = time.time()
        if self.timeout_at is not None and now >= self.timeout_at:
            return "timeout"
        if self.startup_timeout_at is not None and now >= self.startup_timeout_at and not conditions.has_started(status):
            return "startup_timeout"
        return None

    def _seconds_to_deadline(self) -> float:
        deadlines = [d for d in (self.timeout_at, self.startup_timeout_at) if d is not None]
        return max(0.0, min(deadlines) - time.time()) if deadlines else float(WATCH_SECONDS)

    async def on_kill(self) -> None:
        """The user killed the deferred task: delete the job, if it is still the one this task owns.

        A wait without ``owner_labels`` (a sensor's, on a job made elsewhere) owns nothing and deletes nothing."""
        if not self.owner_labels:
            self.log.info("Not deleting %s/%s: this wait does not own the job", self.namespace, self.name)
            return
        async with self._hook().get_conn() as api:
            custom = async_client.CustomObjectsApi(api)
            try:
                job = await custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, self._plural, self.name)
            except ApiException as e:
                if e.status == 404:
                    return
                raise
            labels = job["metadata"].get("labels") or {}
            if (self.uid and job["metadata"].get("uid") != self.uid) or any(
                labels.get(k) != v for k, v in self.owner_labels.items()
            ):
                self.log.warning("Not deleting %s/%s: not the job this task created", self.namespace, self.name)
                return
            try:
                await custom.delete_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, self._plural, self.name,
                    body=async_client.V1DeleteOptions(propagation_policy="Background",
                                                      preconditions=async_client.V1Preconditions(uid=job["metadata"]["uid"])),
                )
            except ApiException as e:
                if e.status != 404:
                    raise
            self.log.info("Deleted %s %s/%s: the deferred task was killed", self.kind, self.namespace, self.name)


def _backoff(failures: int) -> float:
    return min(BACKOFF_MAX, BACKOFF_MIN * 2 ** max(0, failures - 1))

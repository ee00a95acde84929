"""Core v1 Events, written the way client-go's event recorder writes them for the training operator.

Every event's ``involvedObject`` is the job (the real operator records pod creations, exits, restarts,
failures and successes on the job, not on the pods), ``source.component`` is the kind's controller name
(``pytorchjob-controller``). Like client-go's correlator, an event identical to one recorded in the last
10 minutes (same object, type, reason and message) is not written again: the earlier one gets
``count + 1`` and a new ``lastTimestamp``. Recording never raises: a failed write is logged and dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

from kubernetes import client

from airflow_trainjob_local.controller.kube import (
    MERGE_PATCH,
    ApiException,
    format_time,
    is_namespace_terminating,
    is_not_found,
    now,
)

__all__ = ["EventRecorder"]

log = logging.getLogger(__name__)

#: How long an event can be updated instead of written again, seconds (client-go's aggregation window).
AGGREGATION_WINDOW = 600.0
#: Remembered events, beyond which the oldest are forgotten.
CACHE_SIZE = 4096


class EventRecorder:
    """Writes Events about jobs.

    :param api_client: client for the cluster.
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self._core = client.CoreV1Api(api_client)
        self._lock = threading.Lock()
        # (uid, type, reason, message) -> (namespace, event name, count, monotonic time of last write)
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int, float]] = OrderedDict()

    def record(self, obj: dict[str, Any], component: str, type_: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (a job as read from the API).

        :param component: ``source.component``, the controller name.
        :param type_: ``Normal`` or ``Warning``.
        :param reason: a CamelCase reason, e.g. ``PyTorchJobFailed``.
        :param message: the human-readable message.
        """
        meta = obj.get("metadata") or {}
        key = (str(meta.get("uid", "")), type_, reason, message)
        stamp = format_time(now())
        with self._lock:
            previous = self._seen.get(key)
        if previous is not None and time.monotonic() - previous[3] < AGGREGATION_WINDOW:
            namespace, name, count, _ = previous
            try:
                self._core.patch_namespaced_event(
                    name, namespace, {"count": count + 1, "lastTimestamp": stamp}, _content_type=MERGE_PATCH
                )
                self._remember(key, namespace, name, count + 1)
                return
            except ApiException as exc:
                if not is_not_found(exc):
                    log.warning("could not update event %s/%s: HTTP %s", namespace, name, exc.status)
                    return
                # The event expired (events have a TTL): write a new one below.
        self._create(obj, meta, key, component, type_, reason, message, stamp)

    def _create(
        self,
        obj: dict[str, Any],
        meta: dict[str, Any],
        key: tuple[str, str, str, str],
        component: str,
        type_: str,
        reason: str,
        message: str,
        stamp: str,
    ) -> None:
        namespace = str(meta.get("namespace") or "default")
        # client-go names events "<object name>.<unix nanoseconds in hex>".
        name = f"{meta.get('name')}.{time.time_ns():x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": namespace,
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self._core.create_namespaced_event(namespace, body)
        except ApiException as exc:
            # Events are best effort; a namespace being deleted refuses them (403), which is expected.
            level = logging.DEBUG if is_namespace_terminating(exc) else logging.WARNING
            log.log(
                level,
                "could not record event %s %s on %s/%s: HTTP %s", type_, reason, namespace, meta.get("name"), exc.status
            )
            return
        self._remember(key, namespace, name, 1)

    def _remember(self, key: tuple[str, str, str, str], namespace: str, name: str, count: int) -> None:
        with self._lock:
            self._seen[key] = (namespace, name, count, time.monotonic())
            self._seen.move_to_end(key)
            while len(self._seen) > CACHE_SIZE:
                self._seen.popitem(last=False)

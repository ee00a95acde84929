"""Core v1 Events as client-go's recorder writes them, shared by the controller (events about jobs) and the
kubelet (about pods): the Event body, and :class:`EventWriter`, which -- like client-go's correlator -- does not
write an event identical to one written in the last 10 minutes (same source, object, field path, type, reason
and message) again, but gives the first one ``count + 1`` and a new ``lastTimestamp``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from kubernetes import client

from airflow_trainjob_local.kube import MERGE_PATCH, ApiException, format_time, is_namespace_terminating, is_not_found

__all__ = ["AGGREGATION_WINDOW", "CACHE_SIZE", "EventWriter", "event_body", "log_refused"]

log = logging.getLogger(__name__)

#: How long an identical event is counted on the first one instead of written again, seconds.
AGGREGATION_WINDOW = 600.0
#: Events remembered for aggregation; the oldest are forgotten beyond this.
CACHE_SIZE = 4096


def event_body(
    obj: Mapping[str, Any],
    type_: str,
    reason: str,
    message: str,
    *,
    component: str,
    host: str | None = None,
    field_path: str | None = None,
    api_version: str | None = None,
    kind: str | None = None,
    when_ns: int | None = None,
) -> dict[str, Any]:
    """The Event about ``obj`` (as read from the API).

    :param component: ``source.component``, e.g. ``pytorchjob-controller`` or ``kubelet``.
    :param host: ``source.host`` (the kubelet's node), none by default.
    :param field_path: ``involvedObject.fieldPath``, e.g. ``spec.containers{main}``.
    :param api_version: ``involvedObject.apiVersion``; ``obj``'s own by default (list items have none).
    :param kind: ``involvedObject.kind``; ``obj``'s own by default.
    :param when_ns: when it happened (``time.time_ns()``), default now: its timestamps and its name's suffix.
    """
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    when_ns = time.time_ns() if when_ns is None else when_ns
    stamp = format_time(when_ns / 1e9)
    involved: dict[str, Any] = {
        "apiVersion": api_version or obj.get("apiVersion"),
        "kind": kind or obj.get("kind"),
        "name": meta.get("name"),
        "namespace": namespace,
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    if field_path:
        involved["fieldPath"] = field_path
    source: dict[str, Any] = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1",
        "kind": "Event",
        # client-go names events "<object name>.<unix nanoseconds in hex>".
        "metadata": {"name": f"{meta.get('name')}.{when_ns:x}", "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": type_,
        "source": source,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


def _key(body: Mapping[str, Any]) -> tuple[str, ...]:
    source, involved = body.get("source") or {}, body.get("involvedObject") or {}
    return tuple(
        str(v or "")
        for v in (
            source.get("component"),
            source.get("host"),
            involved.get("kind"),
            involved.get("namespace"),
            involved.get("name"),
            involved.get("uid"),
            involved.get("fieldPath"),
            body.get("type"),
            body.get("reason"),
            body.get("message"),
        )
    )


class EventWriter:
    """Writes Event bodies (from any thread), aggregating identical ones.

    :param core: the client to write with.
    """

    def __init__(self, core: client.CoreV1Api) -> None:
        self._core = core
        self._lock = threading.Lock()
        # key -> (namespace, event name, count, monotonic time of the last write)
        self._seen: OrderedDict[tuple[str, ...], tuple[str, str, int, float]] = OrderedDict()

    def write(self, body: dict[str, Any]) -> None:
        """Create ``body``, or count it on the identical event written within :data:`AGGREGATION_WINDOW`.

        :raises ApiException: the apiserver refused (an expired first event, 404, is written anew instead).
        :raises urllib3.exceptions.HTTPError: the apiserver could not be reached.
        """
        key = _key(body)
        with self._lock:
            previous = self._seen.get(key)
        if previous is not None and time.monotonic() - previous[3] < AGGREGATION_WINDOW:
            namespace, name, count, _ = previous
            try:
                self._core.patch_namespaced_event(
                    name,
                    namespace,
                    {"count": count + 1, "lastTimestamp": body["lastTimestamp"]},
                    _content_type=MERGE_PATCH,
                )
                self._remember(key, namespace, name, count + 1)
                return
            except ApiException as exc:
                if not is_not_found(exc):
                    raise
                # The first one expired (events have a TTL): write a new one.
        namespace = body["metadata"]["namespace"]
        self._core.create_namespaced_event(namespace, body)
        self._remember(key, namespace, body["metadata"]["name"], 1)

    def _remember(self, key: tuple[str, ...], namespace: str, name: str, count: int) -> None:
        with self._lock:
            self._seen[key] = (namespace, name, count, time.monotonic())
            self._seen.move_to_end(key)
            while len(self._seen) > CACHE_SIZE:
                self._seen.popitem(last=False)


def log_refused(body: Mapping[str, Any], error: ApiException | str) -> None:
    """Log that ``body`` could not be recorded; quietly (DEBUG) when its namespace is being deleted, which refuses
    new objects (403) -- expected while a test namespace goes away."""
    level = logging.DEBUG if isinstance(error, ApiException) and is_namespace_terminating(error) else logging.WARNING
    if isinstance(error, ApiException):
        error = f"HTTP {error.status} {error.reason}"
    involved = body.get("involvedObject") or {}
    log.log(
        level,
        "could not record event %s %s on %s %s/%s: %s",
        body.get("type"),
        body.get("reason"),
        involved.get("kind"),
        involved.get("namespace"),
        involved.get("name"),
        error,
    )

"""Core v1 Events about pods, written as a kubelet (and the scheduler, for ``Scheduled``) records them.

The events and their wording follow what ``kubectl describe pod`` shows on a real node:

=========  =======  ==================  ==============================================================
reason     type     source.component    message
=========  =======  ==================  ==============================================================
Scheduled  Normal   default-scheduler   ``Successfully assigned <ns>/<pod> to <node>``
Pulled     Normal   kubelet             ``Container image "<image>" already present on machine``
Created    Normal   kubelet             ``Created container <name>``
Started    Normal   kubelet             ``Started container <name>``
Failed     Warning  kubelet             ``Error: <why the container could not be created or started>``
BackOff    Warning  kubelet             ``Back-off restarting failed container <name> in pod <pod>_<ns>(<uid>)``
Killing    Normal   kubelet             ``Stopping container <name>``
=========  =======  ==================  ==============================================================

Container events carry ``involvedObject.fieldPath`` ``spec.containers{<name>}`` (``spec.initContainers{...}``
for init containers); every event names the pod with its UID and resourceVersion, and the kubelet's have
``source.host`` = the node. Like client-go's event correlator, an event identical to one recorded within the
last 10 minutes (same source, object, field path, type, reason and message) is not written again: the first
gets ``count + 1`` and a new ``lastTimestamp`` (e.g. ``BackOff`` of a crash-looping container).

Recording never blocks the caller nor raises: events are queued (at most :data:`QUEUE_SIZE`; beyond that they
are dropped, as client-go's broadcaster drops them) and one thread writes them; a failed write is logged and
retried a few times only when the apiserver was unreachable.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
KUBELET = "kubelet"
SCHEDULER = "default-scheduler"

REASON_SCHEDULED = "Scheduled"
REASON_PULLED = "Pulled"
REASON_CREATED = "Created"
REASON_STARTED = "Started"
REASON_FAILED = "Failed"
REASON_BACKOFF = "BackOff"
REASON_KILLING = "Killing"

#: How long an identical event is counted on the first one instead of written again, seconds.
AGGREGATION_WINDOW = 600.0
#: Events waiting to be written; more are dropped.
QUEUE_SIZE = 1000
#: Events remembered for aggregation; the oldest are forgotten beyond this.
CACHE_SIZE = 4096
#: Attempts per event when the apiserver cannot be reached (or answers 5xx/429).
ATTEMPTS = 3

_MERGE_PATCH = "application/merge-patch+json"


def container_field_path(name: str, init: bool = False) -> str:
    """``spec.containers{<name>}`` / ``spec.initContainers{<name>}``: the event's ``involvedObject.fieldPath``."""
    return f"spec.{'initContainers' if init else 'containers'}{{{name}}}"


def scheduled_message(namespace: str, pod: str, node: str) -> str:
    return f"Successfully assigned {namespace}/{pod} to {node}"


def pulled_message(image: str) -> str:
    return f'Container image "{image}" already present on machine'


def created_message(container: str) -> str:
    return f"Created container {container}"


def started_message(container: str) -> str:
    return f"Started container {container}"


def failed_message(error: str) -> str:
    return f"Error: {error}"


def backoff_message(container: str, pod: str, namespace: str, uid: str) -> str:
    return f"Back-off restarting failed container {container} in pod {pod}_{namespace}({uid})"


def killing_message(container: str) -> str:
    return f"Stopping container {container}"


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass(frozen=True)
class _Pending:
    key: tuple[str, ...]
    body: dict[str, Any]


class EventRecorder:
    """Queues Events about pods and writes them from its own thread (:meth:`start` / :meth:`stop`).

    :param core: the kubelet's API client.
    :param node_name: ``source.host`` of the kubelet's events (and the scheduler's assignment target).
    """

    def __init__(self, core: client.CoreV1Api, node_name: str) -> None:
        self._core = core
        self._node = node_name
        self._queue: queue.Queue[_Pending | None] = queue.Queue(maxsize=QUEUE_SIZE)
        # key -> (namespace, event name, count, monotonic time of the last write)
        self._seen: OrderedDict[tuple[str, ...], tuple[str, str, int, float]] = OrderedDict()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)

    # --- recording (any thread) ------------------------------------------------------------------------------

    def pod_event(
        self,
        pod: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        field_path: str | None = None,
        component: str = KUBELET,
        when_ns: int | None = None,
    ) -> None:
        """Queue an event about ``pod`` (as read from the API). ``component`` ``default-scheduler`` has no host.

        :param when_ns: when it happened (``time.time_ns()``), default now: its timestamps and its name's suffix.
        """
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        host = self._node if component == KUBELET else None
        involved: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
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
        when_ns = time.time_ns() if when_ns is None else when_ns
        stamp = _rfc3339(when_ns / 1e9)
        body = {
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
            "reportingComponent": component,
            "reportingInstance": host or "",
        }
        key = (component, host or "", namespace, str(meta.get("name")), str(meta.get("uid")), field_path or "",
               type_, reason, message)
        try:
            self._queue.put_nowait(_Pending(key, body))
        except queue.Full:
            log.warning("event queue full; dropped %s %s on pod %s/%s", type_, reason, namespace, meta.get("name"))

    def container_event(
        self, pod: Mapping[str, Any], container: str, type_: str, reason: str, message: str, *, init: bool = False
    ) -> None:
        """Queue a kubelet event about one container of ``pod``."""
        self.pod_event(pod, type_, reason, message, field_path=container_field_path(container, init))

    # --- the writer thread -----------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Write what is queued (one attempt each, for up to ``timeout`` seconds in all), then end the thread."""
        self._stopping.set()
        if not self._thread.is_alive():
            return
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event was handled; False after ``timeout`` seconds (tests)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._write(item)
            except Exception:  # never let one event end the writer
                log.exception("recording an event failed")
            finally:
                self._queue.task_done()

    def _write(self, item: _Pending) -> None:
        for attempt in range(ATTEMPTS):
            try:
                self._write_once(item)
                return
            except ApiException as e:
                if e.status < 500 and e.status != 429:
                    level = logging.DEBUG if _namespace_terminating(e) else logging.WARNING
                    log.log(level, "could not record event %s on pod %s/%s: HTTP %s %s", item.body["reason"],
                            item.body["metadata"]["namespace"], item.body["involvedObject"]["name"], e.status,
                            e.reason)
                    return
                error = f"HTTP {e.status} {e.reason}"
            except (urllib3.exceptions.HTTPError, OSError) as e:
                error = str(e)
            if attempt + 1 < ATTEMPTS and not self._stopping.wait(1.0):
                continue
            log.warning("could not record event %s on pod %s/%s: %s", item.body["reason"],
                        item.body["metadata"]["namespace"], item.body["involvedObject"]["name"], error)
            return

    def _write_once(self, item: _Pending) -> None:
        previous = self._seen.get(item.key)
        if previous is not None and time.monotonic() - previous[3] < AGGREGATION_WINDOW:
            namespace, name, count, _ = previous
            try:
                self._core.patch_namespaced_event(
                    name,
                    namespace,
                    {"count": count + 1, "lastTimestamp": item.body["lastTimestamp"]},
                    _content_type=_MERGE_PATCH,
                )
                self._remember(item.key, namespace, name, count + 1)
                return
            except ApiException as e:
                if e.status != 404:
                    raise
                # The first one expired (events have a TTL): write a new one.
        namespace = item.body["metadata"]["namespace"]
        self._core.create_namespaced_event(namespace, item.body, _preload_content=False)
        self._remember(item.key, namespace, item.body["metadata"]["name"], 1)

    def _remember(self, key: tuple[str, ...], namespace: str, name: str, count: int) -> None:
        self._seen[key] = (namespace, name, count, time.monotonic())
        self._seen.move_to_end(key)
        while len(self._seen) > CACHE_SIZE:
            self._seen.popitem(last=False)


def _namespace_terminating(e: ApiException) -> bool:
    return e.status == 403 and "being terminated" in str(e.body or "")

"""Core v1 Events about pods, written as a kubelet (and the scheduler, for ``Scheduled``) records them.

The events and their wording follow what ``kubectl describe pod`` shows on a real node:

================  =======  =================  ==============================================================
reason            type     source.component   message
================  =======  =================  ==============================================================
Scheduled         Normal   default-scheduler  ``Successfully assigned <ns>/<pod> to <node>``
FailedScheduling  Warning  default-scheduler  ``0/1 nodes are available: ...`` (:mod:`.binder`)
Pulled            Normal   kubelet            ``Container image "<image>" already present on machine``
Created           Normal   kubelet            ``Created container <name>``
Started           Normal   kubelet            ``Started container <name>``
Failed            Warning  kubelet            ``Error: <why the container could not be created or started>``
BackOff           Warning  kubelet            ``Back-off restarting failed container <name> in pod <pod>_<ns>(<uid>)``
Killing           Normal   kubelet            ``Stopping container <name>``
================  =======  =================  ==============================================================

Container events carry ``involvedObject.fieldPath`` ``spec.containers{<name>}`` (``spec.initContainers{...}``
for init containers); every event names the pod with its UID and resourceVersion, and the kubelet's have
``source.host`` = the node. Identical events within 10 minutes are aggregated into a count
(:class:`airflow_trainjob_local.events.EventWriter`), e.g. ``BackOff`` of a crash-looping container.

Recording never blocks the caller nor raises: events are queued (at most :data:`QUEUE_SIZE`; beyond that they
are dropped, as client-go's broadcaster drops them) and one thread writes them; a failed write is logged and
retried a few times only when the apiserver was unreachable.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any

import urllib3
from kubernetes import client

from airflow_trainjob_local.events import EventWriter, event_body, log_refused
from airflow_trainjob_local.kube import ApiException, is_retriable

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
KUBELET = "kubelet"
SCHEDULER = "default-scheduler"

REASON_SCHEDULED = "Scheduled"
REASON_FAILED_SCHEDULING = "FailedScheduling"
REASON_PULLED = "Pulled"
REASON_CREATED = "Created"
REASON_STARTED = "Started"
REASON_FAILED = "Failed"
REASON_BACKOFF = "BackOff"
REASON_KILLING = "Killing"

#: Events waiting to be written; more are dropped.
QUEUE_SIZE = 1000
#: Attempts per event when the apiserver cannot be reached (or answers 5xx/429).
ATTEMPTS = 3


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


class EventRecorder:
    """Queues Events about pods and writes them from its own thread (:meth:`start` / :meth:`stop`).

    :param core: the kubelet's API client.
    :param node_name: ``source.host`` of the kubelet's events (and the scheduler's assignment target).
    """

    def __init__(self, core: client.CoreV1Api, node_name: str) -> None:
        self._writer = EventWriter(core)
        self._node = node_name
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=QUEUE_SIZE)
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
        host = self._node if component == KUBELET else None
        body = event_body(
            pod,
            type_,
            reason,
            message,
            component=component,
            host=host,
            field_path=field_path,
            api_version="v1",
            kind="Pod",
            when_ns=when_ns,
        )
        body.update(reportingComponent=component, reportingInstance=host or "")
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            meta = pod.get("metadata") or {}
            log.warning(
                "event queue full; dropped %s %s on pod %s/%s", type_, reason, meta.get("namespace"), meta.get("name")
            )

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
            body = self._queue.get()
            try:
                if body is None:
                    return
                self._write(body)
            except Exception:  # never let one event end the writer
                log.exception("recording an event failed")
            finally:
                self._queue.task_done()

    def _write(self, body: dict[str, Any]) -> None:
        for attempt in range(ATTEMPTS):
            try:
                self._writer.write(body)
                return
            except ApiException as e:
                if not is_retriable(e):
                    log_refused(body, e)
                    return
                error: ApiException | str = e
            except (urllib3.exceptions.HTTPError, OSError) as e:
                error = str(e)
            if attempt + 1 < ATTEMPTS and not self._stopping.wait(1.0):
                continue
            log_refused(body, error)
            return

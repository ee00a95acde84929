"""List-then-watch loops over one resource, the way a client-go reflector feeds an informer.

Each :class:`ListWatcher` runs in its own thread: it lists the resource, hands every object to a callback,
then watches from the list's resourceVersion. It relists when the server answers 410 Gone (the
resourceVersion was compacted) and every ``resync_seconds`` (a periodic resync, so a missed event costs at
most one period). Errors are logged and retried with a capped backoff; the loop only ends on :meth:`stop`.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Callable

from kubernetes.watch.watch import iter_resp_lines

from airflow_trainjob_local.controller.kube import ApiException, is_gone, raw_json

__all__ = ["ListWatcher", "EventHandler"]

log = logging.getLogger(__name__)

#: ``handler(event_type, obj)``; event_type is ``SYNC`` (from a list), ``ADDED``, ``MODIFIED`` or ``DELETED``.
EventHandler = Callable[[str, dict[str, Any]], None]


class ListWatcher(threading.Thread):
    """List and watch one collection, calling ``handler`` for every object seen.

    :param name: a label for logs, e.g. ``pytorchjobs``.
    :param list_fn: a client list method for all namespaces (e.g.
        ``CustomObjectsApi.list_cluster_custom_object`` bound with ``functools.partial``) that accepts
        ``watch``, ``resource_version``, ``timeout_seconds``, ``label_selector`` and ``_preload_content``.
    :param handler: called for each object; exceptions it raises are logged, never stop the loop.
    :param label_selector: restricts the collection, e.g. ``training.kubeflow.org/operator-name``.
    :param resync_seconds: relist (and re-deliver every object as ``SYNC``) this often.
    :param watch_seconds: server-side timeout of one watch request; bounds how stale a stop can be.
    """

    def __init__(
        self,
        name: str,
        list_fn: Callable[..., Any],
        handler: EventHandler,
        *,
        label_selector: str | None = None,
        resync_seconds: float = 30.0,
        watch_seconds: int = 60,
    ) -> None:
        super().__init__(name=f"watch-{name}", daemon=True)
        self.resource = name
        self._list_fn = list_fn
        self._handler = handler
        self._selector = label_selector
        self._resync = resync_seconds
        self._watch_seconds = watch_seconds
        self._stop_event = threading.Event()
        self._response: Any = None
        self._lock = threading.Lock()
        #: set after the first successful list; tests and the controller wait on it.
        self.synced = threading.Event()

    def stop(self) -> None:
        """Ask the loop to end and abort the watch request in flight."""
        self._stop_event.set()
        with self._lock:
            response = self._response
        # urllib3 >= 2.3 can shut the socket down under a reading thread; with an older one the watch simply
        # ends at its server-side timeout (the thread is a daemon either way).
        shutdown = getattr(response, "shutdown", None)
        if shutdown is not None:
            try:
                shutdown()
            except Exception:  # noqa: BLE001 - the socket may be closing already
                log.debug("shutting the %s watch down failed", self.resource, exc_info=True)

    def run(self) -> None:
        backoff = 1.0
        resource_version: str | None = None
        listed_at = 0.0
        while not self._stop_event.is_set():
            try:
                if resource_version is None or time.monotonic() - listed_at >= self._resync:
                    resource_version = self._list()
                    listed_at = time.monotonic()
                    self.synced.set()
                remaining = self._resync - (time.monotonic() - listed_at)
                timeout = max(1, min(self._watch_seconds, int(remaining) + 1))
                resource_version = self._watch(resource_version, timeout)
                backoff = 1.0
            except ApiException as exc:
                if is_gone(exc):
                    log.info("%s: resourceVersion expired (410), relisting", self.resource)
                    resource_version = None
                    continue
                if self._stop_event.is_set():
                    break
                log.warning("%s: list/watch failed with HTTP %s; retrying in %.0fs", self.resource, exc.status, backoff)
                self._stop_event.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            except Exception as exc:  # noqa: BLE001 - connection resets, timeouts, bad JSON: retry, never die
                if self._stop_event.is_set():
                    break
                log.warning("%s: list/watch failed (%s); retrying in %.0fs", self.resource, exc, backoff)
                self._stop_event.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _list(self) -> str:
        kwargs: dict[str, Any] = {"_preload_content": False}
        if self._selector:
            kwargs["label_selector"] = self._selector
        body = raw_json(self._list_fn(**kwargs))
        for item in body.get("items") or []:
            self._deliver("SYNC", item)
        return str(body.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, resource_version: str, timeout: int) -> str | None:
        """Stream one watch request; return the resourceVersion to resume from (``None`` = relist)."""
        kwargs: dict[str, Any] = {
            "watch": True,
            "resource_version": resource_version,
            "timeout_seconds": timeout,
            "allow_watch_bookmarks": True,
            "_preload_content": False,
            # connect timeout, then a read timeout beyond the server-side one so a dead server is noticed.
            "_request_timeout": (10, timeout + 30),
        }
        if self._selector:
            kwargs["label_selector"] = self._selector
        try:
            response = self._list_fn(**kwargs)
        except ApiException as exc:
            if is_gone(exc):
                log.info("%s: watch refused, resourceVersion too old (410), relisting", self.resource)
                return None
            raise
        with self._lock:
            self._response = response
        try:
            for line in iter_resp_lines(response):
                if self._stop_event.is_set():
                    break
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        log.info("%s: watch expired (410), relisting", self.resource)
                        return None
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                new_version = obj.get("metadata", {}).get("resourceVersion")
                if new_version:
                    resource_version = new_version
                if kind != "BOOKMARK":
                    self._deliver(kind, obj)
        finally:
            with self._lock:
                self._response = None
            try:
                response.release_conn()
            except Exception:  # noqa: BLE001 - the connection may already be closed by stop()
                pass
        return resource_version

    def _deliver(self, kind: str, obj: dict[str, Any]) -> None:
        try:
            self._handler(kind, obj)
        except Exception:  # noqa: BLE001 - one bad object must not stop the watch
            log.exception("%s: handling a %s event failed", self.resource, kind)

"""List-then-watch of one collection in a thread, the way client-go's reflector feeds an informer; used by the
controller (jobs, pods) and the kubelet (its pods, unscheduled pods).

Each :class:`Informer` lists the collection (all namespaces), hands the objects to its handlers, then watches
from the list's resourceVersion, following every event and bookmark so that a watch that ends (server-side
timeout, dropped connection, error) is resumed from where it stopped, without a list. It lists again:

- every ``resync_seconds`` (the periodic resync: a missed event or a failed handler costs at most one period);
- at once when the server says the resourceVersion is gone (410, as the HTTP status of the watch request or
  as an ``ERROR`` event in its stream) -- after a back-off if that happens again right after the relist.

Any other error (HTTP status, connection, bad JSON, an unexpected one) is logged and retried after a capped
exponential back-off, reset by the next watch that ends normally. A handler that raises is logged and the
stream goes on: one bad object never stops the loop. Only :meth:`Informer.stop` ends it; it also aborts the
watch request in flight.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.watch.watch import iter_resp_lines

from airflow_trainjob_local.kube import ApiException, is_gone, raw_json

__all__ = ["SYNC", "EventHandler", "Informer", "ListHandler"]

log = logging.getLogger(__name__)

#: The event type :class:`Informer` gives listed objects when it has no ``on_list`` handler.
SYNC = "SYNC"
#: ``on_event(event_type, obj)``; event_type is ``ADDED``, ``MODIFIED``, ``DELETED`` (or :data:`SYNC`).
EventHandler = Callable[[str, dict[str, Any]], None]
#: ``on_list(objects)``: the whole collection after each list.
ListHandler = Callable[[list[dict[str, Any]]], None]

#: Client-side bound of a list request, seconds.
LIST_TIMEOUT = 30
#: Seconds a watch may stay silent beyond its server-side timeout before the connection is deemed dead.
READ_SLACK = 30


class _Expired(Exception):
    """A watch was refused as too old (410) right after a relist: back off before listing again."""


class Informer(threading.Thread):
    """List and watch one collection (a daemon thread), as dicts in the API's JSON shape.

    :param name: a label for logs, e.g. ``pytorchjobs``.
    :param list_fn: a client list call for all namespaces (e.g. ``CoreV1Api.list_pod_for_all_namespaces``, or
        ``CustomObjectsApi.list_cluster_custom_object`` bound with ``functools.partial``) accepting ``watch``,
        ``resource_version``, ``timeout_seconds``, ``allow_watch_bookmarks``, the selectors and
        ``_preload_content`` / ``_request_timeout``.
    :param on_event: called with each watch event (``ADDED``, ``MODIFIED``, ``DELETED``); also with every listed
        object as :data:`SYNC` when there is no ``on_list``.
    :param on_list: called with all listed objects after each list (e.g. to forget objects that are gone).
    :param label_selector: restricts the collection, e.g. ``training.kubeflow.org/operator-name``.
    :param field_selector: restricts the collection, e.g. ``spec.nodeName=node-1``.
    :param resync_seconds: list again (and hand every object to the handlers again) this often.
    :param watch_seconds: server-side timeout of one watch request (at most until the next resync).
    :param retry_seconds: the first back-off after an error; it doubles per error up to ``max_retry_seconds``.
    :param thread_name: the thread's name (in log lines); ``informer-<name>`` by default.
    """

    def __init__(
        self,
        name: str,
        list_fn: Callable[..., Any],
        *,
        on_event: EventHandler,
        on_list: ListHandler | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_seconds: float = 30.0,
        watch_seconds: int = 60,
        retry_seconds: float = 1.0,
        max_retry_seconds: float = 30.0,
        thread_name: str | None = None,
    ) -> None:
        super().__init__(name=thread_name or f"informer-{name}", daemon=True)
        self.resource = name
        self._list_fn = list_fn
        self._on_event = on_event
        self._on_list = on_list
        self._selectors = {
            k: v for k, v in (("label_selector", label_selector), ("field_selector", field_selector)) if v
        }
        self._resync = resync_seconds
        self._watch_seconds = watch_seconds
        self._retry = retry_seconds
        self._max_retry = max_retry_seconds
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None
        #: set after the first successful list (and its handlers); callers wait on it.
        self.synced = threading.Event()

    def stop(self) -> None:
        """Ask the loop to end and abort the watch request in flight (returns at once; :meth:`join` waits)."""
        self._stopping.set()
        with self._lock:
            response = self._response
        # urllib3 >= 2.3 can shut the socket down under a reading thread; with an older one the watch simply
        # ends at its server-side timeout (the thread is a daemon either way).
        shutdown = getattr(response, "shutdown", None)
        if shutdown is not None:
            try:
                shutdown()
            except Exception:
                log.debug("%s: shutting the watch down failed", self.resource, exc_info=True)

    # --- the loop -------------------------------------------------------------------------------------------

    def run(self) -> None:
        version: str | None = None  # where the next watch starts; None: list first
        listed_at = 0.0
        relisted_for_gone = False
        delay = self._retry
        while not self._stopping.is_set():
            try:
                if version is None or time.monotonic() - listed_at >= self._resync:
                    version = self.list_once()
                    listed_at = time.monotonic()
                    self.synced.set()
                remaining = self._resync - (time.monotonic() - listed_at)
                version = self.watch_from(version, max(1, min(self._watch_seconds, int(remaining) + 1)))
                if version is None and relisted_for_gone:
                    raise _Expired("resourceVersion gone again right after a relist")
                relisted_for_gone = version is None
                delay = self._retry
            except Exception as exc:
                if self._stopping.is_set():
                    break
                self._log_failure(exc, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, self._max_retry)

    def list_once(self) -> str:
        """List the collection, call the handlers; return the list's resourceVersion."""
        body = raw_json(self._list_fn(_preload_content=False, _request_timeout=LIST_TIMEOUT, **self._selectors))
        items = body.get("items") or []
        if self._on_list is not None:
            self._guard(self._on_list, items)
        else:
            for item in items:
                self._guard(self._on_event, SYNC, item)
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def watch_from(self, resource_version: str, timeout: int) -> str | None:
        """Follow one watch request from ``resource_version`` for up to ``timeout`` seconds, calling
        ``on_event``; return the resourceVersion to resume from, ``None`` when it is gone (410: relist).

        :raises ApiException: the server refused the watch (other than 410) or sent another ``ERROR`` event.
        """
        if self._stopping.is_set():
            return resource_version
        try:
            response = self._list_fn(
                watch=True,
                resource_version=resource_version,
                timeout_seconds=timeout,
                allow_watch_bookmarks=True,
                _preload_content=False,
                # Connect timeout, then a read timeout beyond the server-side one so a dead server is noticed.
                _request_timeout=(10, timeout + READ_SLACK),
                **self._selectors,
            )
        except ApiException as exc:
            if is_gone(exc):
                log.info(
                    "%s: watch refused, resourceVersion %s is gone (410); relisting", self.resource, resource_version
                )
                return None
            raise
        with self._lock:
            self._response = response
        try:
            for line in () if self._stopping.is_set() else iter_resp_lines(response):
                if self._stopping.is_set():  # stop() came while the request was being made, or meanwhile
                    break
                if not line.strip():
                    continue
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        log.info("%s: watch expired (410); relisting", self.resource)
                        return None
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                resource_version = (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self._guard(self._on_event, kind, obj)
                elif kind != "BOOKMARK":
                    log.debug("%s: ignoring a %s watch event", self.resource, kind)
        finally:
            with self._lock:
                self._response = None
            try:
                response.release_conn()
            except Exception:
                pass
        return resource_version

    def _guard(self, handler: Callable[..., None], *args: Any) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("%s: handler failed", self.resource)

    def _log_failure(self, exc: Exception, delay: float) -> None:
        if isinstance(exc, ApiException):
            log.warning(
                "%s: list/watch failed with HTTP %s %s; retrying in %gs", self.resource, exc.status, exc.reason, delay
            )
        elif isinstance(exc, (_Expired, urllib3.exceptions.HTTPError, OSError, ValueError)):
            # Connection resets, timeouts, a truncated or non-JSON stream.
            log.warning(
                "%s: list/watch failed (%s: %s); retrying in %gs", self.resource, type(exc).__name__, exc, delay
            )
        else:
            log.error("%s: unexpected error; retrying in %gs", self.resource, delay, exc_info=exc)

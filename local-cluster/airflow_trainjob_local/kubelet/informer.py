"""List-then-watch of pods with a field selector, in a thread, surviving every API error.

Each round lists (the full state goes to ``on_list``), then watches from the list's resourceVersion for
``resync_seconds`` (events go to ``on_event``), then lists again: the periodic relist is the resync that
catches anything a handler failed on. A 410 Gone ends the round and relists at once; a dropped connection or
any other error ends it too, and the next one starts after ``retry_seconds``. A handler that raises is logged
and the stream goes on — one bad pod never stops the kubelet.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

log = logging.getLogger(__name__)


class PodInformer:
    """Feeds pods matching ``field_selector`` (all namespaces) to the handlers, as dicts in the API's JSON shape.

    :param on_list: called with every matching pod after each list.
    :param on_event: called with ``("ADDED" | "MODIFIED" | "DELETED", pod)`` for each watch event.
    :param resync_seconds: how long a watch runs before the next relist (the server closes it then).
    :param retry_seconds: pause after an error before listing again.
    """

    def __init__(
        self,
        core: client.CoreV1Api,
        *,
        name: str,
        field_selector: str,
        on_list: Callable[[list[dict[str, Any]]], None],
        on_event: Callable[[str, dict[str, Any]], None],
        resync_seconds: int = 60,
        retry_seconds: float = 1.0,
    ) -> None:
        self._core = core
        self._name = name
        self._selector = field_selector
        self._on_list = on_list
        self._on_event = on_event
        self._resync = resync_seconds
        self._retry = retry_seconds
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)
        self.synced = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except ApiException as e:
                if e.status == 410:
                    log.debug("%s: watch expired (410), relisting", self._name)
                    continue
                log.warning("%s: API error %s %s; relisting in %gs", self._name, e.status, e.reason, self._retry)
            except (urllib3.exceptions.HTTPError, OSError, ValueError) as e:
                if self._stop.is_set():
                    return
                log.warning("%s: %s: %s; relisting in %gs", self._name, type(e).__name__, e, self._retry)
            except Exception:
                # Whatever it was (an unexpected object shape...), the kubelet must keep watching.
                log.exception("%s: unexpected error; relisting in %gs", self._name, self._retry)
            self._stop.wait(self._retry)

    def _round(self) -> None:
        response = self._core.list_pod_for_all_namespaces(
            field_selector=self._selector, _preload_content=False, _request_timeout=30
        )
        body = json.loads(response.data)
        self._guard(self._on_list, body.get("items") or [])
        self.synced.set()
        resource_version = body["metadata"]["resourceVersion"]
        self._watch = watch.Watch()
        for event in self._watch.stream(
            self._core.list_pod_for_all_namespaces,
            field_selector=self._selector,
            resource_version=resource_version,
            timeout_seconds=self._resync,
            allow_watch_bookmarks=True,
            # Client-side bound in case the connection dies silently.
            _request_timeout=self._resync + 30,
        ):
            if self._stop.is_set():
                break
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                self._guard(self._on_event, event["type"], event["raw_object"])

    def _guard(self, handler: Callable[..., None], *args: Any) -> None:
        try:
            handler(*args)
        except Exception:
            log.exception("%s: handler failed", self._name)

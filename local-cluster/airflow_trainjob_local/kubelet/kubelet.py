"""The process kubelet: wires the Node agent, the binder, the pod workers and the log server together.

Two informers run: pods with ``spec.nodeName=<node>`` feed the pod workers (one :class:`~.pod_worker.PodWorker`
per pod UID), and pods with no node feed the :class:`~.binder.Binder`. Both record pod Events through one
:class:`~.events.EventRecorder`. On stop: the informers end, every pod's
processes get SIGTERM and at most ``shutdown_grace_seconds`` before SIGKILL, the Node is marked NotReady, the
log server closes.

State dir layout::

    kubelet.crt, kubelet.key                   the log server's self-signed serving certificate
    pods/<ns>_<pod>_<uid>/<container>/<n>.log  container logs, instance n (= restartCount when it started)
    pods/<ns>_<pod>_<uid>/<container>/<n>.pid  its process group, for cleanup after a kubelet crash
    pods/<ns>_<pod>_<uid>/workdir/             working directory of containers without ``workingDir``
    pods/<ns>_<pod>_<uid>/volumes/<volume>/    the files of its configMap and projected volumes (``volumes``)
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client

from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.kube import ApiException, is_retriable
from airflow_trainjob_local.kubelet.binder import UNSCHEDULED_SELECTOR, Binder
from airflow_trainjob_local.kubelet.certs import ensure_serving_cert
from airflow_trainjob_local.kubelet.events import EventRecorder
from airflow_trainjob_local.kubelet.log_server import LogServer
from airflow_trainjob_local.kubelet.logs import LogStore
from airflow_trainjob_local.kubelet.node import NodeAgent
from airflow_trainjob_local.kubelet.pod_worker import PodWorker, WorkerConfig
from airflow_trainjob_local.kubelet.process import kill_stale_groups

log = logging.getLogger(__name__)


class Kubelet:
    """One node's kubelet. Call :meth:`run` with an event that is set to stop it.

    :param api_client: an authenticated ``kubernetes.client.ApiClient``; shared by all threads.
    :param port: HTTPS port of the log server on 127.0.0.1 (also published on the Node).
    :param client_ca: CA file for client certificates of the log server (see :class:`~.log_server.LogServer`).
    :param backoff_seconds: first crash-loop back-off; doubles per failure up to ``max_backoff_seconds``.
    :param shutdown_grace_seconds: on stop, seconds the pods' processes get between SIGTERM and SIGKILL.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        node_name: str,
        port: int,
        state_dir: Path,
        client_ca: Path | None = None,
        backoff_seconds: float = 1.0,
        max_backoff_seconds: float = 60.0,
        shutdown_grace_seconds: float = 5.0,
    ) -> None:
        self._started = time.time()
        self._core = client.CoreV1Api(api_client)
        self._node_name = node_name
        self._state_dir = state_dir
        state_dir.mkdir(parents=True, exist_ok=True)
        self._logs = LogStore(state_dir / "pods")
        cert, key = ensure_serving_cert(state_dir, node_name)
        self._server = LogServer(self._logs, port=port, cert=cert, key=key, client_ca=client_ca)
        self._node = NodeAgent(self._core, node_name, port, state_dir)
        self._events = EventRecorder(self._core, node_name)
        self._config = WorkerConfig(
            core=self._core,
            logs=self._logs,
            node_allocatable=self._node.resources,
            backoff_seconds=backoff_seconds,
            max_backoff_seconds=max_backoff_seconds,
            shutdown_grace_seconds=shutdown_grace_seconds,
            events=self._events,
        )
        self._lock = threading.Lock()
        self._workers: dict[str, PodWorker] = {}
        self._first_list = True
        self._stopping = False
        self._binder = Binder(self._core, node_name, self._node.labels, self._events)
        self._informers = [
            Informer(
                "pods",
                self._core.list_pod_for_all_namespaces,
                field_selector=f"spec.nodeName={node_name}",
                on_list=self._on_list,
                on_event=self._on_event,
                resync_seconds=60,
            ),
            Informer(
                "binder",
                self._core.list_pod_for_all_namespaces,
                field_selector=UNSCHEDULED_SELECTOR,
                on_list=self._binder.on_list,
                on_event=self._binder.on_event,
                resync_seconds=30,
            ),
        ]

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set, then shut down.

        Registration is retried while the apiserver is unreachable or answers 5xx/429.

        :raises ApiException: the apiserver refused the Node for good (4xx: credentials, RBAC, invalid).
        """
        killed = kill_stale_groups(list(self._logs.root.glob("*/*/*.pid")), self._started)
        if killed:
            log.warning("killed %d process(es) left by a previous kubelet", killed)
        self._server.start()
        log.info("log server on https://127.0.0.1:%d", self._server.port)
        while True:
            try:
                self._node.register()
                break
            except ApiException as e:
                if not is_retriable(e):  # refused for good (credentials, RBAC, invalid)
                    self._server.stop()
                    raise
                log.warning("node registration failed (%s %s); retrying", e.status, e.reason)
            except (urllib3.exceptions.HTTPError, OSError) as e:
                log.warning("node registration failed (%s); retrying", e)
            if stop.wait(2.0):
                self._server.stop()
                return
        self._node.start()
        self._events.start()
        for informer in self._informers:
            informer.start()
        stop.wait()
        self.shutdown()

    def shutdown(self) -> None:
        log.info("stopping")
        with self._lock:
            self._stopping = True
            workers = list(self._workers.values())
        for informer in self._informers:
            informer.stop()
        for worker in workers:
            worker.shutdown()
        for worker in workers:
            worker.join(self._config.shutdown_grace_seconds + 10)
        self._events.stop()
        self._node.stop()
        self._server.stop()
        log.info("stopped")

    # --- informer handlers -------------------------------------------------------------------------------

    def _on_list(self, pods: list[dict[str, Any]]) -> None:
        uids = {p["metadata"]["uid"] for p in pods}
        if self._first_list:
            self._first_list = False
            # Logs of pods that went away while no kubelet ran.
            for pod_dir in self._logs.root.iterdir():
                parts = pod_dir.name.split("_", 2)
                if len(parts) == 3 and parts[2] not in uids:
                    self._logs.drop_pod(*parts)
        for pod in pods:
            self._on_event("MODIFIED", pod)
        with self._lock:
            missing = [uid for uid in self._workers if uid not in uids]
        for uid in missing:
            self._gone(uid)

    def _on_event(self, kind: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        if kind == "DELETED":
            self._gone(uid)
            return
        with self._lock:
            if self._stopping:
                return
            worker = self._workers.get(uid)
            if worker is None:
                worker = self._workers[uid] = PodWorker(pod, self._config)
                worker.start()
                return
        worker.update(pod)

    def _gone(self, uid: str) -> None:
        with self._lock:
            worker = self._workers.pop(uid, None)
        if worker is None:
            return
        worker.api_deleted()
        # The worker drops the logs itself if it is still running; if it already finished, do it here.
        if worker.finished.is_set():
            self._logs.drop_pod(worker.namespace, worker.name, worker.uid)

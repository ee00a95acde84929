"""Follows the lead replica's log into the Airflow task log while the job runs (synchronous path).

A background thread waits for the lead pod (Master, Chief, Launcher or worker 0) to start, follows
its container's log line by line, and follows again when the container is restarted. Reading a
log of a pod that has been deleted is a warning, never an error: the job's verdict does not
depend on its logs.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.constants import JobKind
from airflow_trainjob.pods import lead_pod, log_container, phase_of, pod_name, replica_of

#: Seconds between looks for the lead pod (or its next container run).
LOOK_INTERVAL = 2.0


class LeadLogFollower(threading.Thread):
    """Copies the lead replica's log lines to ``log`` as ``[Master-0] <line>`` until :meth:`stop`.

    :param hook: a :class:`TrainingJobHook`.
    :param container: the container to follow (the kind's default container when the pod has it,
        else the pod's first).
    """

    def __init__(self, hook: Any, kind: JobKind, name: str, namespace: str, log: logging.Logger):
        super().__init__(name=f"log-{name}", daemon=True)
        self._hook, self._kind, self._name, self._namespace, self._log = hook, kind, name, namespace, log
        self._stopped = threading.Event()
        self._draining = False
        self._wake = threading.Event()
        self._response: Any = None
        self._lines_seen: dict[tuple[str, int], int] = {}

    def finish(self, timeout: float = 10.0) -> None:
        """The job has ended: read what is left of the lead replica's log (up to ``timeout``
        seconds), then stop. Fast jobs end before the first look, and their log still belongs in the task log."""
        if self.is_alive():
            self._draining = True
            self._wake.set()
            self.join(timeout)
        self.stop()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following (the current stream is closed) and wait up to ``timeout`` seconds."""
        self._stopped.set()
        self._wake.set()
        response = self._response
        if response is not None:
            try:
                response.close()
            except Exception:  # noqa: BLE001 - closing a half-broken socket may raise anything; we're done with it
                pass
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)

    def run(self) -> None:
        while not self._stopped.is_set():
            try:
                self._follow_once()
            except (ApiException, HTTPError, OSError) as e:
                status = getattr(e, "status", None)
                if status == 404:
                    self._log.warning("Log of the lead replica of %s is gone (pod deleted)", self._name)
                elif not self._stopped.is_set():
                    self._log.warning("Reading the lead replica's log failed (%s); will retry", e)
            if self._draining:
                return
            self._wake.wait(LOOK_INTERVAL)
            self._wake.clear()

    def _follow_once(self) -> None:
        pod = lead_pod(self._hook.list_job_pods(self._name, self._namespace), self._kind)
        if pod is None or phase_of(pod) == "Pending":
            return
        container = log_container(pod, self._kind)
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        restarts = next((c.get("restartCount") or 0 for c in statuses if c.get("name") == container), 0)
        run = (pod["metadata"].get("uid", ""), restarts)
        replica_type, index = replica_of(pod, self._kind)
        finished = phase_of(pod) in ("Succeeded", "Failed")
        if finished and run in self._lines_seen:
            return  # this run's log was already followed to its end
        skip = self._lines_seen.get(run, 0)
        self._response = self._hook.open_pod_log_stream(pod_name(pod), self._namespace, container)
        try:
            count = 0
            pending = b""
            for chunk in self._response.stream(decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    count += 1
                    if count > skip:
                        self._log.info("[%s-%d] %s", replica_type, index, line.decode(errors="replace"))
                if self._stopped.is_set():
                    break
            if pending and not self._stopped.is_set():
                count += 1
                if count > skip:
                    self._log.info("[%s-%d] %s", replica_type, index, pending.decode(errors="replace"))
            self._lines_seen[run] = max(count, skip)
        finally:
            self._response.release_conn()
            self._response = None

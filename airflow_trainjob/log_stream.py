"""Follows the lead replica's log into the Airflow task log while the job runs (synchronous path).

A background thread waits for the lead pod (Master, Chief, Launcher or worker 0) to start, follows
its container's log line by line, and follows again when the container is restarted. Reading a
log of a pod that has been deleted is a warning, never an error: the job's verdict does not
depend on its logs.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.api_errors import one_line
from airflow_trainjob.constants import JobKind, PodPhase
from airflow_trainjob.pods import is_finished, lead_pod, log_container, phase_of, pod_name, replica_of

#: Seconds between looks for the lead pod (or its next container run).
LOOK_INTERVAL = 2.0
#: Attempts to read the rest of the log once the job has ended, when reading fails (429/5xx, a broken stream).
DRAIN_ATTEMPTS = 4


class LeadLogFollower(threading.Thread):
    """Copies the lead replica's log lines to ``log`` as ``[Master-0] <line>`` until :meth:`stop`.

    The container followed is the kind's default container when the pod has it, else the pod's first.

    :param hook: a :class:`TrainingJobHook`.
    :param kind: the job's :class:`~airflow_trainjob.constants.JobKind` (its lead replica types and default
        container).
    :param name: the job's ``metadata.name``.
    :param namespace: the job's namespace.
    :param log: the task's logger, which gets the lines.
    """

    def __init__(self, hook: Any, kind: JobKind, name: str, namespace: str, log: logging.Logger):
        super().__init__(name=f"log-{name}", daemon=True)
        self._hook, self._kind, self._name, self._namespace, self._log = hook, kind, name, namespace, log
        self._stopped = threading.Event()
        self._draining = False
        self._wake = threading.Event()
        self._response: Any = None
        #: Lines already copied per container run (pod uid, restart count), also of a stream that broke off:
        #: a reconnect reads the log from its start and skips these, so no line is copied twice.
        self._lines_seen: dict[tuple[str, int], int] = {}
        #: Runs whose log stream ended normally (the container's log was read to its end).
        self._complete: set[tuple[str, int]] = set()

    def finish(self, timeout: float = 10.0) -> None:
        """The job has ended: read what is left of the lead replica's log (up to ``timeout``
        seconds), then stop. Fast jobs end before the first look, and their log still belongs in the task log.

        :param timeout: seconds to wait for the rest of the log.
        """
        if self.is_alive():
            self._draining = True
            self._wake.set()
            self.join(timeout)
        self.stop()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following (the current stream is closed) and wait up to ``timeout`` seconds.

        :param timeout: seconds to wait for the following thread to end.
        """
        self._stopped.set()
        self._wake.set()
        response = self._response
        if response is not None:
            # Shut the socket down rather than close the response: closing from this thread waits for the
            # reading thread's lock, which it holds until its read returns — never, for a quiet container.
            # A shutdown wakes the read at once; the reading thread then releases the connection itself.
            sock = getattr(getattr(response, "connection", None), "sock", None)
            try:
                if sock is not None:
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                else:
                    response.close()
            except Exception:
                pass
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)

    def run(self) -> None:
        drain_failures = 0
        while not self._stopped.is_set():
            try:
                self._follow_once()
            except (ApiException, HTTPError, OSError, AttributeError) as e:
                # AttributeError: urllib3 reading a response whose connection was shut down under it (stop()).
                status = getattr(e, "status", None)
                if status == 404:
                    self._log.warning("Log of the lead replica of %s is gone (pod deleted)", self._name)
                    if self._draining:
                        return
                elif not self._stopped.is_set():
                    self._log.warning("Reading the lead replica's log failed (%s); will retry", one_line(e))
                    if self._draining and drain_failures + 1 < DRAIN_ATTEMPTS:
                        # The job has ended, but its log's end is still to be read: a failed read is no reason
                        # to lose it. Short waits, within finish()'s patience.
                        drain_failures += 1
                        self._stopped.wait(0.5 * 2 ** (drain_failures - 1))
                        continue
            if self._draining:
                return
            self._wake.wait(LOOK_INTERVAL)
            self._wake.clear()

    def _follow_once(self) -> None:
        pod = lead_pod(self._hook.list_job_pods(self._name, self._namespace), self._kind)
        if pod is None or phase_of(pod) == PodPhase.PENDING:
            return
        container = log_container(pod, self._kind)
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        restarts = next((c.get("restartCount") or 0 for c in statuses if c.get("name") == container), 0)
        run = (pod["metadata"].get("uid", ""), restarts)
        replica_type, index = replica_of(pod, self._kind)
        finished = is_finished(pod)
        if finished and run in self._complete:
            return  # this run's log was already followed to its end
        skip = self._lines_seen.get(run, 0)
        self._response = self._hook.open_pod_log_stream(pod_name(pod), self._namespace, container)
        count = 0
        try:
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
            if not self._stopped.is_set():
                self._complete.add(run)
        finally:
            # Also when the stream broke off: the lines copied so far are not copied again after a reconnect.
            self._lines_seen[run] = max(count, skip)
            self._response.release_conn()
            self._response = None

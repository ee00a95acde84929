"""Follows the lead replica's log into the Airflow task log while the job runs (synchronous path).

A background thread waits for the lead pod (Master, Chief, Launcher or worker 0) to start, follows
its container's log line by line, and follows again when the container is restarted. Reading a
log of a pod that has been deleted is a warning, never an error: the job's verdict does not
depend on its logs.

The pods come from the synchronous wait's pod watch (``pods``, woken by :meth:`LeadLogFollower.pods_changed`):
while the job is queued, its lead pod pending or its log followed to the end, the follower sends nothing. One
follow stream stays open while the container runs, however quiet (kube-apiserver gives long-running requests
such as a log follow no timeout; it lasts as long as the kubelet streams). A stream that ends while the pod still
shows the same container run is opened again after :data:`LOOK_INTERVAL` seconds, doubling up to
:data:`REOPEN_MAX` while that repeats, so a server that keeps closing it costs a few requests an hour, not one
every few seconds.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.constants import PodPhase
from airflow_trainjob.domain.lead_log import LeadReplica
from airflow_trainjob.domain.pods import is_finished, phase_of, pod_name
from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.watching.list_watch import doubling

#: Seconds between looks for the lead pod without a pod watch (``pods`` None); the first wait before a stream that
#: ended (or failed) while its container still runs is opened again.
LOOK_INTERVAL = 2.0
#: Longest wait (seconds) before a stream that keeps ending (or failing) while its container runs is opened again.
REOPEN_MAX = 300.0
#: Attempts to read the rest of the log once the job has ended, when reading fails (429/5xx, a broken stream).
DRAIN_ATTEMPTS = 4


class LeadLogFollower(threading.Thread):
    """Copies the lead replica's log lines to ``log`` as ``[Master-0] <line>`` until :meth:`stop`.

    The container followed is the one the family says speaks for the pod (the kind's default container when the pod
    has it, else the pod's first).

    :param hook: a :class:`TrainingJobHook`.
    :param family: the job's family (:class:`~airflow_trainjob.domain.lead_log.LeadReplica`, e.g. its
        :class:`~airflow_trainjob.domain.family.JobFamily` from :func:`~airflow_trainjob.families.family_of`): its
        lead pod, the container whose log speaks for it, and its replica type and index.
    :param name: the job's ``metadata.name``.
    :param namespace: the job's namespace.
    :param log: the task's logger, which gets the lines.
    :param pods: returns the job's pods as last seen (API JSON dicts; None: not known yet), e.g.
        :meth:`~airflow_trainjob.watching.job_watch.PodFeed.pods`; the follower looks again when :meth:`pods_changed` is
        called. None: the follower LISTs the pods itself every :data:`LOOK_INTERVAL` seconds.
    """

    def __init__(
        self,
        hook: Any,
        family: LeadReplica,
        name: str,
        namespace: str,
        log: logging.Logger,
        pods: Callable[[], list[dict[str, Any]] | None] | None = None,
    ):
        super().__init__(name=f"log-{name}", daemon=True)
        self._hook, self._family, self._name, self._namespace, self._log = hook, family, name, namespace, log
        self._pods = pods
        #: Streams in a row that ended or failed while their container still ran, and when to open the next one.
        self._reopens = 0
        self._reopen_at = 0.0
        self._stopped = threading.Event()
        self._draining = False
        self._wake = threading.Event()
        self._response: Any = None
        #: Lines already copied per container run (pod uid, restart count), also of a stream that broke off:
        #: a reconnect reads the log from its start and skips these, so no line is copied twice.
        self._lines_seen: dict[tuple[str, int], int] = {}
        #: Runs whose log stream ended normally (the container's log was read to its end).
        self._complete: set[tuple[str, int]] = set()

    def pods_changed(self) -> None:
        """The job's pods changed (a pod started, restarted, finished...): look at them again."""
        self._wake.set()

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
            self._wake.clear()  # before the look: a change after it wakes the wait below
            try:
                self._follow_once()
            except (ApiException, HTTPError, OSError, AttributeError) as e:
                self._reopen_later()
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
            self._wake.wait(self._next_look())

    def _next_look(self) -> float | None:
        """Seconds until the next look without a pod change (None: only at one)."""
        if self._pods is None:
            return LOOK_INTERVAL
        left = self._reopen_at - time.monotonic()
        return left if left > 0 else None

    def _reopen_later(self) -> None:
        """The stream ended or failed while its container still runs: open it again later, later each time."""
        self._reopens += 1
        self._reopen_at = time.monotonic() + reopen_delay(self._reopens)

    def _pods_now(self) -> list[dict[str, Any]]:
        """The pods as the wait last saw them (none yet: the first LIST's answer wakes the follower); a LIST of its
        own without a pod watch, or once the job has ended (drain: its last pods, however fast it was)."""
        if self._pods is None or self._draining:
            return self._hook.list_job_pods(self._name, self._namespace, kind=self._family.kind)
        try:
            return self._pods() or []
        except Exception:  # the wait's LIST was refused: the wait raises it, the follower has nothing to follow
            return []

    def _follow_once(self) -> None:
        lead = self._lead_run()
        if lead is None or self._nothing_new_to_read(lead):
            return
        skip = self._lines_seen.get(lead.run, 0)
        self._response = self._hook.open_pod_log_stream(lead.pod, self._namespace, lead.container)
        count = 0
        try:
            for line in self._stream_lines(self._response):
                count += 1
                if count > skip:
                    self._log.info("[%s-%d] %s", lead.replica_type, lead.replica_index, line.decode(errors="replace"))
            if not self._stopped.is_set():
                self._stream_ended(lead, delivered=count > skip)
        finally:
            # Also when the stream broke off: the lines copied so far are not copied again after a reconnect.
            self._lines_seen[lead.run] = max(count, skip)
            self._response.release_conn()
            self._response = None

    def _lead_run(self) -> _LeadRun | None:
        """The lead pod's container run to follow; None while there is no lead pod or it is pending."""
        pod = self._family.lead_pod(self._pods_now())
        if pod is None or phase_of(pod) == PodPhase.PENDING:
            return None
        container = self._family.log_container(pod)
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        restarts = next((c.get("restartCount") or 0 for c in statuses if c.get("name") == container), 0)
        replica_type, index = self._family.replica_of(pod)
        return _LeadRun(
            pod_name(pod), container, (pod["metadata"].get("uid", ""), restarts), replica_type, index, is_finished(pod)
        )

    def _nothing_new_to_read(self, lead: _LeadRun) -> bool:
        """The run's log was followed to its end: it has finished, or its stream ended while it runs and the time
        :meth:`_reopen_later` set has not come (nor the job's end)."""
        if lead.finished and lead.run in self._complete:
            return True  # this run's log was already followed to its end
        return lead.run in self._complete and not self._draining and time.monotonic() < self._reopen_at

    def _stream_lines(self, response: Any) -> Iterator[bytes]:
        """The lines of a follow stream, without their newlines, until it ends or :meth:`stop`; a last line without
        a newline too, unless stopped."""
        pending = b""
        for chunk in response.stream(decode_content=True):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            yield from lines
            if self._stopped.is_set():
                break
        if pending and not self._stopped.is_set():
            yield pending

    def _stream_ended(self, lead: _LeadRun, *, delivered: bool) -> None:
        """The stream ended by itself: the run's log is complete as far as it goes; open it again later while the
        container runs (a pod change, its end or restart, wakes the look sooner)."""
        self._complete.add(lead.run)
        if delivered:
            self._reopens = 0  # it delivered: a stream that ends now is news, not a server closing it
        if not lead.finished:
            self._reopen_later()


class _LeadRun(NamedTuple):
    pod: str  # the lead pod's metadata.name
    container: str  # the container whose log is followed
    run: tuple[str, int]  # the container run: pod uid, restart count
    replica_type: str  # Master, Chief, Launcher, Worker...
    replica_index: int  # the replica's index
    finished: bool  # the pod has finished (its log will not grow)


def reopen_delay(reopens: int) -> float:
    """Seconds before a follow stream is opened again after ``reopens`` in a row ended or failed while its container
    still ran: :data:`LOOK_INTERVAL`, doubling, at most :data:`REOPEN_MAX`.

    :param reopens: such streams in a row (count, at least 1).
    """
    return doubling(reopens, LOOK_INTERVAL, REOPEN_MAX)

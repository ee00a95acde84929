"""Follows one job by a watch, for the synchronous wait: every state it passes through, its deletion included.

A poll sees a job only at the moments it looks: a job that turns ``Succeeded`` and is deleted between two looks
(a short ``ttlSecondsAfterFinished``, garbage collection, a person) looked lost. A watch from the job's
resourceVersion delivers each change in order, and the ``DELETED`` event carries the job's final object, so
the wait judges the last state the job really had.

The watch selects the job by name (``fieldSelector=metadata.name=<name>``) and is re-opened from the last
resourceVersion it saw, so a dropped or ended watch misses nothing (the server replays what happened since).
410 Gone (that version was compacted away) reads the job again and watches from there. Failed watches (429,
5xx, resets) back off; after :data:`WATCH_FAILURES_BEFORE_POLLING` in a row, or a watch the server refuses
(e.g. a Role without ``watch``), the job is read every ``poll_interval`` seconds instead, with a watch tried
again every :data:`WATCH_RETRY_POLLS` reads. While the API does not answer at all, the wait rides it out for
``outage_tolerance`` seconds before the last error is raised.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import watch as kube_watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.api_errors import ApiCall, exception_for, one_line
from airflow_trainjob.hooks.addressing import JobAddress, name_field_selector
from airflow_trainjob.hooks.retries import is_transient
from airflow_trainjob.hooks.training_job import watch_timeout

#: Longest single watch request (seconds); the caller's next deadline makes it shorter.
WATCH_SECONDS = 300
#: Failed watches in a row after which the job is polled instead.
WATCH_FAILURES_BEFORE_POLLING = 3
#: While polling, a watch is tried again after this many reads.
WATCH_RETRY_POLLS = 6
#: A watch that ends sooner than this without an event counts as a failed one (no hot loop).
SHORTEST_HEALTHY_WATCH = 1.0
#: Backoff bounds between failed watches (seconds).
BACKOFF_MIN, BACKOFF_MAX = 0.5, 10.0


@dataclass(frozen=True)
class Seen:
    """One look at the job.

    :param job: the job as last seen; for a deletion, its final object (as the ``DELETED`` event carried it),
        else the last one seen before it vanished.
    :param deleted: the job no longer exists (or a same-named successor took its place: ``replaced``).
    :param replaced: with ``deleted``: a job of the same name but another ``metadata.uid`` took its place.
    :param changed: the object differs from the previous look (False: the look a deadline asked for).
    """

    job: dict[str, Any]
    deleted: bool = False
    replaced: bool = False
    changed: bool = True


class JobWatch:
    """The states of one job, from a watch.

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`.
    :param job: the job as created or attached to (its ``uid`` and ``resourceVersion`` start the watch).
    :param poll_interval: seconds between reads while watches keep failing.
    :param outage_tolerance: seconds the API may keep failing transiently before the last error is raised.
    :param log: where outages and recoveries are reported.
    """

    def __init__(
        self, hook: Any, job: dict[str, Any], *, poll_interval: float, outage_tolerance: float, log: logging.Logger
    ):
        self._hook = hook
        self._job = job
        meta = job["metadata"]
        self._name, self._namespace, self._uid = meta["name"], meta["namespace"], meta.get("uid")
        self._address = JobAddress(job["kind"], self._namespace, self._name)
        self._poll_interval = poll_interval
        self._outage_tolerance = outage_tolerance
        self._log = log
        self._outage_since: float | None = None
        self._watch_refused = False
        #: What the watch did: ``watches``, ``reads`` (GETs), ``expired`` (410), ``failures``.
        self.stats: dict[str, int] = {"watches": 0, "reads": 0, "expired": 0, "failures": 0}

    def follow(self, look_within: Callable[[], float | None]) -> Iterator[Seen]:
        """Yield the job as first given, then at each change, and at least every ``look_within()`` seconds
        (None: :data:`WATCH_SECONDS`) so the caller can judge its deadlines. Ends after a :class:`Seen` with
        ``deleted``. Raises the API's error when it refuses reads, or after an outage longer than tolerated.

        :param look_within: called before each watch: seconds until the caller's next deadline, or None; a watch
            lasts at most that long (at least 1 s, at most :data:`WATCH_SECONDS`).
        """
        yield Seen(self._job)
        resource_version = self._job["metadata"].get("resourceVersion")
        failures = polls = 0
        while True:
            window = look_within()
            window = WATCH_SECONDS if window is None else min(float(WATCH_SECONDS), max(1.0, window))
            if failures >= WATCH_FAILURES_BEFORE_POLLING and polls < WATCH_RETRY_POLLS:
                time.sleep(min(self._poll_interval, window))
                polls += 1
                seen = self._read()
                if seen is None:
                    continue
                yield seen
                if seen.deleted:
                    return
                resource_version = seen.job["metadata"].get("resourceVersion")
                continue
            polls = 0
            started = time.monotonic()
            delivered = False
            try:
                for seen, resource_version in self._watch(resource_version, window):  # noqa: B007, B020 - kept for the next watch
                    delivered = True
                    self._answered()
                    yield seen
                    if seen.deleted:
                        return
                self._answered()
                if delivered or time.monotonic() - started >= SHORTEST_HEALTHY_WATCH:
                    failures = 0
                else:
                    failures += 1
                    time.sleep(_backoff(failures))
                yield Seen(self._job, changed=False)
            except ApiException as e:
                if e.status == 410:
                    self.stats["expired"] += 1
                    seen = self._read()  # compacted away: read the job again, watch from its version
                    if seen is not None:
                        yield seen
                        if seen.deleted:
                            return
                        resource_version = seen.job["metadata"].get("resourceVersion")
                    continue
                self.stats["failures"] += 1
                if not is_transient(e):
                    # Refused: the reads below raise the hook's clear error if reads are refused too; if only
                    # watching is (a Role without "watch"), the job is polled, with a watch tried now and then.
                    if not self._watch_refused:
                        self._watch_refused = True
                        self._log.info(
                            "Watching %s %s/%s was refused (%s); reading it every %g s instead",
                            self._job["kind"],
                            self._namespace,
                            self._name,
                            one_line(e),
                            self._poll_interval,
                        )
                    failures = WATCH_FAILURES_BEFORE_POLLING
                    continue
                failures += 1
                self._outage(e)
                time.sleep(_backoff(failures))
            except (HTTPError, OSError) as e:
                self.stats["failures"] += 1
                failures += 1
                self._outage(e)
                time.sleep(_backoff(failures))

    def _watch(self, resource_version: str | None, window: float) -> Iterator[tuple[Seen, str | None]]:
        self.stats["watches"] += 1
        watcher = kube_watch.Watch()
        seconds = max(1, math.ceil(window))
        try:
            for event in watcher.stream(
                self._hook.custom_object_client.list_namespaced_custom_object,
                *self._address.collection(),
                field_selector=name_field_selector(self._name),
                resource_version=resource_version,
                timeout_seconds=seconds,
                allow_watch_bookmarks=True,
                _request_timeout=watch_timeout(seconds),
            ):
                obj = event.get("raw_object") or {}
                resource_version = (obj.get("metadata") or {}).get("resourceVersion") or resource_version
                if event.get("type") == "BOOKMARK":
                    continue
                obj.get("metadata", {}).pop("managedFields", None)
                if self._uid and obj["metadata"].get("uid") != self._uid:
                    # A same-named successor: ours is gone (its DELETED event, if any, came first).
                    yield Seen(self._job, deleted=True, replaced=True), resource_version
                    return
                if event.get("type") == "DELETED":
                    self._job = obj
                    yield Seen(obj, deleted=True), resource_version
                    return
                self._job = obj
                yield Seen(obj), resource_version
        finally:
            watcher.stop()

    def _read(self) -> Seen | None:
        """GET the job: a look, a deletion (404 or another uid), or None during a tolerated outage."""
        self.stats["reads"] += 1
        try:
            job = self._hook.get_job(self._job["kind"], self._name, self._namespace)
        except ApiException as e:
            if e.status == 404:
                return Seen(self._job, deleted=True)
            self._outage(e)
            return None
        except (HTTPError, OSError) as e:
            self._outage(e)
            return None
        self._answered()
        if self._uid and job["metadata"].get("uid") != self._uid:
            return Seen(self._job, deleted=True, replaced=True)
        changed = job["metadata"].get("resourceVersion") != self._job["metadata"].get("resourceVersion")
        self._job = job
        return Seen(job, changed=changed)

    def _outage(self, error: Exception) -> None:
        """Re-raise ``error`` unless it is transient and the API has failed for less than the tolerance."""
        if not is_transient(error):
            raise self._classified(error) from None
        now = time.monotonic()
        if self._outage_since is None:
            self._outage_since = now
            self._log.warning(
                "%s %s/%s: the Kubernetes API is not answering as expected (%s); still waiting",
                self._job["kind"],
                self._namespace,
                self._name,
                one_line(error),
            )
        elif now - self._outage_since > self._outage_tolerance:
            raise self._classified(error) from None

    def _classified(self, error: Exception) -> Exception:
        """``error`` as the hook would raise it (one line, no response headers: see :mod:`api_errors`)."""
        return exception_for(error, ApiCall.for_job("watch", self._job["kind"], self._namespace, self._name))

    def _answered(self) -> None:
        if self._outage_since is not None:
            self._log.info(
                "%s %s/%s: the Kubernetes API answers again after %.0f s",
                self._job["kind"],
                self._namespace,
                self._name,
                time.monotonic() - self._outage_since,
            )
            self._outage_since = None


def _backoff(failures: int) -> float:
    return min(BACKOFF_MAX, BACKOFF_MIN * 2 ** max(0, failures - 1))

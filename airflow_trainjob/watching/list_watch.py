"""What a list-then-watch loop does next: the one policy of the provider's watches, without I/O.

Two drivers keep up with a collection by listing it (or reading the one object), then watching it from the
resourceVersion read: the synchronous wait's watches (:mod:`~airflow_trainjob.watching.job_watch`: one job by name,
a job's pods; blocking, in a thread) and the triggerer's shared stream (:mod:`~airflow_trainjob.watching.job_stream`:
every job of a kind in a namespace, also the UI's; asyncio). They make the requests; a :class:`ListWatch` is told
what happened (:meth:`~ListWatch.listed`, :meth:`~ListWatch.saw`, :meth:`~ListWatch.watch_ended`,
:meth:`~ListWatch.expired`, :meth:`~ListWatch.failed`, :meth:`~ListWatch.read_failed`) and says what to do next
(:meth:`~ListWatch.next_step`: list, watch from a resourceVersion, or wait then read) and how long to back off
first. It makes no request, reads no clock and sleeps never, so each of its decisions has a unit test.

The rules both drivers follow:

* a watch starts from the last resourceVersion seen (a list's, an event's, a bookmark's): the server replays what
  happened since, so an ended watch misses nothing;
* 410 Gone (that version was compacted away) reads the collection again and watches from there;
* a watch that ends sooner than :data:`SHORTEST_HEALTHY_WATCH` with no event counts as a failed one (no hot loop),
  as does one that fails (429, 5xx, a reset); each backs off, the wait doubling from ``backoff_min`` to
  ``backoff_max`` (:func:`doubling`), and a watch that lasts or delivers resets the count;
* after :data:`WATCH_FAILURES_BEFORE_POLLING` failed watches in a row, the collection is read every
  ``poll_interval`` seconds instead, with a watch tried again now and then.

Where the drivers differ, :class:`ListWatchRules` says so, with why.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from airflow_trainjob.domain.pods import Pod, vanished_unseen

#: Failed watches in a row after which the collection is read every ``poll_interval`` seconds instead.
WATCH_FAILURES_BEFORE_POLLING = 3
#: A watch that ends sooner than this (seconds) without an event counts as a failed one (no hot loop).
SHORTEST_HEALTHY_WATCH = 1.0
#: Seconds a failed job's verdict waits, at most, for its pods' watch to deliver what happened up to the job's
#: ``Failed`` (:func:`reached`): the job's and the pods' are two watches, and a replica that failed just before the job
#: did may not have arrived yet. Ends as soon as it has: the whole wait only when no pod changed after the failure
#: (the controller deleted the pods before it wrote the condition, as the training operator does) or the pods' watch
#: lags that much.
CATCH_UP_SECONDS = 5.0
#: Seconds between two looks while a verdict waits for a pods' watch to catch up.
CATCH_UP_LOOK_SECONDS = 0.05


def doubling(failures: int, low: float, high: float) -> float:
    """The wait before the next attempt after ``failures`` in a row, in seconds: ``low``, doubling per failure,
    capped at ``high``. The one backoff rule of the provider's reconnects (the synchronous wait's watches, the trigger's
    shared stream, the lead log's follow stream); each caller passes its own bounds.

    :param failures: failures in a row (count); 0 and 1 both give ``low``. Any count, however large, gives at most
        ``high`` (the doubling stops at the cap: no float overflow after a thousand failures).
    :param low: the first wait, seconds.
    :param high: the longest wait, seconds.
    """
    wait = low
    for _ in range(max(0, failures - 1)):
        if wait >= high or wait <= 0:
            break
        wait *= 2
    return min(high, wait)


def reached(seen: str | None, target: str | None) -> bool | None:
    """Whether a watch whose last delivered ``resourceVersion`` is ``seen`` has delivered every change up to the
    write that made ``target`` (e.g. a failed job's ``Failed``, read on another watch): True or False, and None when
    it cannot be told. Kubernetes calls resourceVersions opaque; the kube-apiserver's are etcd's revision, one number
    for every write of the cluster that a watch delivers in order, so two of them compare as numbers. A version that is
    not a number (another server) tells nothing.

    :param seen: the watch's last resourceVersion (its list's, or its last event's or bookmark's); None: none yet
        (not reached).
    :param target: the resourceVersion to have reached (any object's, on any watch of the same server).
    """
    if not (target and target.isdigit()) or (seen and not seen.isdigit()):
        return None
    if not seen:
        return False
    return int(seen) >= int(target)


def caught_up(seen: str | None, target: str | None, alive: Mapping[str, str], listed: Iterable[Pod]) -> bool:
    """Whether a pods' watch has caught up with what a failed job's verdict needs: it has delivered every change up to
    ``target`` (:func:`reached`), or every pod it has alive is in ``listed``, a list made after the failure
    (:func:`~airflow_trainjob.domain.pods.vanished_unseen`: the list has each one's state now). The rule of both
    waits: the trigger's shared pod watch and the synchronous wait's pod feed.

    :param seen: the watch's last delivered resourceVersion; None: none yet.
    :param target: the failed job's ``metadata.resourceVersion`` at its end.
    :param alive: the pods the watch has delivered and not seen deleted, pod name -> ``metadata.uid``.
    :param listed: the job's pods as listed after its end (API JSON dicts).
    """
    return reached(seen, target) is True or not vanished_unseen(alive, listed)


class Action(enum.Enum):
    """What a driver does next."""

    #: Read the collection now (a LIST; the job's GET), then watch from what it read.
    LIST = "list"
    #: Wait :attr:`Step.wait` seconds, then read the collection: the watches keep failing.
    POLL = "poll"
    #: Watch from :attr:`Step.resource_version`, for as long as the driver chooses.
    WATCH = "watch"


@dataclass(frozen=True)
class Step:
    """The next request of a list-then-watch loop.

    :param action: list, poll or watch.
    :param wait: for :attr:`Action.POLL`, the seconds to wait before the read (``poll_interval``; the synchronous
        wait reads sooner when its caller's next look comes first); else 0.
    :param resource_version: for :attr:`Action.WATCH`, the ``resourceVersion`` to watch from (None: none known, the
        server starts from its latest); else None.
    """

    action: Action
    wait: float = 0.0
    resource_version: str | None = None


@dataclass(frozen=True)
class ListWatchRules:
    """How one driver lists, watches and backs off: the bounds, and each point where the drivers differ.

    :param poll_interval: seconds between reads while watches keep failing.
    :param backoff_min: the first backoff after a failure, seconds.
    :param backoff_max: the longest backoff, seconds; also the wait between reads that fail before anything was
        read (the pods' first LIST: nothing to watch from yet).
    :param watch_retry_polls: while polling, a watch is tried again after this many reads, and the failure count
        goes on (the backoff before each such watch keeps doubling): the synchronous wait, whose reads are one GET of
        its job or one LIST of its pods, keeps polling a while before it tries a watch that just failed. None: each
        read while polling takes one failure off the count instead, so a watch is tried after every read (the reads
        and the watches alternate) and a watch that fails again backs off by the same step each time: the shared
        stream, whose read is a LIST of a whole namespace's jobs, and whose readers want the watch back soon.
    :param relist_after_failure: after a failed watch or list, list again before the next watch: the shared stream
        keeps a cache, which may have missed changes while the watch was down, so it starts again from a consistent
        snapshot (and learns of jobs deleted meanwhile by their absence). False: the watch is opened again from the
        last resourceVersion seen, where the server replays every change since, in order: the synchronous wait judges
        each state its job passed through, and needs no read for it.
    :param slow_down_on_expiry: a 410 that comes again before a watch has lasted (a fresh list's resourceVersion
        expiring at once: an apiserver compacting hard, or a lagging watch cache) waits ``doubling(n - 1)`` before
        the next list; the first lists at once: the shared stream, whose list is a namespace's jobs. False: every 410
        reads again at once (the synchronous wait: one GET, or one job's pods).
    """

    poll_interval: float
    backoff_min: float
    backoff_max: float
    watch_retry_polls: int | None
    relist_after_failure: bool
    slow_down_on_expiry: bool

    def backoff(self, failures: int) -> float:
        """The backoff after ``failures`` in a row, in seconds (:func:`doubling` within these bounds).

        :param failures: failures in a row (count).
        """
        return doubling(failures, self.backoff_min, self.backoff_max)


class ListWatch:
    """The state of one list-then-watch loop, and its decisions. A driver asks :meth:`next_step` (once per step: the
    answer counts the reads while polling), makes that request, tells what came of it, and waits the seconds that
    call returns (a backoff; 0: none) before it asks again.

    :param rules: the driver's bounds and its choices where the drivers differ.

    What it counts (each read by the drivers and their tests): :attr:`failures` (failed watches in a row: reset by a
    watch that lasts or delivers), :attr:`polls` (reads since the last watch was tried: reset by trying one),
    :attr:`expired_in_a_row` (410s since the last watch that lasted or delivered).
    """

    def __init__(self, rules: ListWatchRules) -> None:
        self.rules = rules
        #: The resourceVersion the next watch starts from: the last one read or seen.
        self.resource_version: str | None = None
        self.failures = 0
        self.polls = 0
        self.expired_in_a_row = 0
        self._must_list = True  # nothing read yet, or what was read can no longer be watched from
        self._listed = False  # a read has answered once

    def next_step(self) -> Step:
        """What to do now: list (nothing read yet, or a 410, or a failure with ``relist_after_failure``), poll (after
        :data:`WATCH_FAILURES_BEFORE_POLLING` failed watches in a row, until a watch is due again), or watch."""
        if self._must_list:
            return Step(Action.LIST)
        retry_after = self.rules.watch_retry_polls
        if self.failures >= WATCH_FAILURES_BEFORE_POLLING and (retry_after is None or self.polls < retry_after):
            self.polls += 1
            if retry_after is None:
                self.failures -= 1  # the reads and the watches alternate
            return Step(Action.POLL, wait=self.rules.poll_interval)
        self.polls = 0
        return Step(Action.WATCH, resource_version=self.resource_version)

    def listed(self, resource_version: str | None) -> None:
        """A read answered (a list, the job's GET, a poll's read; for the synchronous wait's job, also the job as
        created or attached to): the next watch starts from its resourceVersion.

        :param resource_version: the list's ``metadata.resourceVersion`` (the object's, for a GET).
        """
        self.resource_version = resource_version
        self._must_list = False
        self._listed = True

    def saw(self, resource_version: str | None) -> None:
        """A watch event (a bookmark included) carried a resourceVersion: a watch opened again starts from it.

        :param resource_version: the event's object's ``metadata.resourceVersion``; None or empty: nothing to note.
        """
        if resource_version:
            self.resource_version = resource_version

    def read_failed(self) -> float:
        """A read failed in a way its driver rides out (the synchronous wait: within its outage tolerance, where the
        hook has retried already); counted nowhere. Before anything was read, the read is tried again after
        ``backoff_max`` seconds; after, the loop goes on as if it had answered: the next watch starts from the last
        resourceVersion (a 410 makes it read again), or the polling goes on. Returns the seconds to wait."""
        if not self._listed:
            return self.rules.backoff_max
        self._must_list = False
        return 0.0

    def watch_ended(self, delivered: bool, seconds: float) -> float:
        """The server ended a watch (its ``timeoutSeconds``, or a close), or the driver did (a nearer look). One that
        lasted :data:`SHORTEST_HEALTHY_WATCH` or delivered anything resets the counts, and the next watch starts at
        once; one that ended sooner with nothing counts as a failed watch, and is opened again (nothing was missed)
        after a backoff. Returns the seconds to wait.

        :param delivered: anything arrived on the watch (an event, a bookmark).
        :param seconds: how long the watch lasted.
        """
        if delivered or seconds >= SHORTEST_HEALTHY_WATCH:
            self.failures = self.expired_in_a_row = 0
            return 0.0
        self.failures += 1
        return self.rules.backoff(self.failures)

    def expired(self) -> float:
        """A watch or a list was answered 410 Gone (Expired): its resourceVersion was compacted away. The collection
        is read again; with ``slow_down_on_expiry``, a 410 that comes again before a watch has lasted waits first.
        Returns the seconds to wait before the read."""
        self._must_list = True
        if not self.rules.slow_down_on_expiry:
            return 0.0
        self.expired_in_a_row += 1
        return 0.0 if self.expired_in_a_row == 1 else self.rules.backoff(self.expired_in_a_row - 1)

    def failed(self, transient: bool) -> float:
        """A watch (or a list) failed. Transient (429, 5xx, a reset, a timeout): one more failure in a row, a backoff,
        then (``relist_after_failure``) a list, else the watch again from the last resourceVersion. Not transient (a
        refusal retrying will not fix, e.g. a Role without ``watch``): the collection is polled at once, with a watch
        tried now and then; a driver that gives up on a refusal instead (the shared stream starts again with a
        fresh client) does not report it. Returns the seconds to wait.

        :param transient: whether retrying the same request may help (:func:`~airflow_trainjob.hooks.api_errors.
            is_transient`).
        """
        if not transient:
            self.failures = WATCH_FAILURES_BEFORE_POLLING
            return 0.0
        self.failures += 1
        if self.rules.relist_after_failure:
            self._must_list = True
        return self.rules.backoff(self.failures)

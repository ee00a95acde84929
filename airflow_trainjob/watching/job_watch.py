"""Follows one job, and its pods, by watches, for the synchronous wait: every state they pass through.

A poll sees a job only at the moments it looks: a job that turns ``Succeeded`` and is deleted between two looks
(a short ``ttlSecondsAfterFinished``, garbage collection, a person) looked lost. A watch from the job's
resourceVersion delivers each change in order, and the ``DELETED`` event carries the job's final object, so
the wait judges the last state the job really had.

One loop (:class:`ListThenWatch`) serves both collections the wait follows:

* :class:`JobWatch`: the job, by name (``fieldSelector=metadata.name=<name>``), watched from the resourceVersion
  of the job as created or attached to;
* :class:`PodWatch`: its pods, by the training operator's label (``training.kubeflow.org/job-name=<name>``),
  listed once and watched from the list's resourceVersion; :class:`PodFeed` runs it in a thread and keeps the
  pods as last seen, so the wait and the lead replica's log follower learn of a started, restarted or finished
  pod without a request of their own. While that watch does not work (refused: a Role without ``watch`` on pods;
  failing), each look of the wait LISTs the pods, as before the pod watch, and the feed LISTs them every
  ``poll_interval``.

Each watch is re-opened from the last resourceVersion it saw (bookmarks included), so a dropped or ended watch
misses nothing (the server replays what happened since). 410 Gone (that version was compacted away) reads the
collection again and watches from there. Failed watches (429, 5xx, resets) back off; after
:data:`~airflow_trainjob.watching.list_watch.WATCH_FAILURES_BEFORE_POLLING` in a row, or a watch the server refuses
(e.g. a Role without ``watch``), the collection is read every ``poll_interval`` seconds instead, with a watch tried
again every :data:`WATCH_RETRY_POLLS` reads. While the API does not answer at all, the wait rides it out for
``outage_tolerance`` seconds before the last error is raised. What to do next is decided by
:class:`~airflow_trainjob.watching.list_watch.ListWatch`, the shared stream's policy too, on this wait's rules
(:func:`list_watch_rules`); this module makes the requests.

A watch of the job lasts until the caller's next look (``look_within``: its nearest deadline, see
:meth:`~airflow_trainjob.domain.deadlines.Deadlines.next_look`), asked again after each state the watch delivers: when a
change brings that look nearer than the watch's end (a job suspended into its queue starts ``queue_timeout``;
admitted again, ``startup_timeout``), the watch is ended and re-opened from its last resourceVersion for as long as
the new look allows (:func:`outlasts_next_look`), so no deadline waits for a watch begun before it started. That
costs one request per such change, none for a quiet job.

A watch asks the server to end it after at most :data:`WATCH_SECONDS` (``timeoutSeconds``, which kube-apiserver
honours as given; without one it picks 1-2x its ``--min-request-timeout``, 30-60 min by default). On a quiet job the two
watches are then re-opened 3600 / 900 = 4 times an hour each: 8 requests per job-hour, against 60 pod LISTs an
hour for a look every minute. An apiserver that sends no bookmarks on a quiet watch (1.20 sends none) may answer
a re-open from a resourceVersion that old with 410 Gone on a busy cluster: one more read each time, 16 requests
per job-hour at worst. Longer would save little and make a connection that died without a word (no reset, no
FIN) take longer to notice: the client gives up reading :data:`~airflow_trainjob.hooks.training_job.
WATCH_GRACE_SECONDS` after the watch should have ended.
"""

from __future__ import annotations

import functools
import logging
import math
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubernetes import watch as kube_watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from airflow_trainjob.domain.pods import pod_name
from airflow_trainjob.hooks.addressing import JobAddress, job_pod_selector, name_field_selector
from airflow_trainjob.hooks.api_errors import ApiCall, exception_for, one_line
from airflow_trainjob.hooks.retries import is_transient
from airflow_trainjob.hooks.training_job import watch_timeout
from airflow_trainjob.watching.list_watch import (
    CATCH_UP_LOOK_SECONDS,
    CATCH_UP_SECONDS,
    Action,
    ListWatch,
    ListWatchRules,
    caught_up,
)

#: Longest single watch request (seconds, its ``timeoutSeconds``); the caller's next deadline makes it shorter.
WATCH_SECONDS = 900
#: Seconds by which a watch may outlast the caller's next look before it is ended for a shorter one.
NEARER_LOOK_SLACK = 1.0
#: While polling, a watch is tried again after this many reads.
WATCH_RETRY_POLLS = 6
#: Backoff bounds between failed watches (seconds).
BACKOFF_MIN, BACKOFF_MAX = 0.5, 10.0
#: Seconds the wait's first look at the pods waits for their watch to answer (or fail) before it LISTs them itself.
SETTLE_SECONDS = 10.0

T = TypeVar("T")


def list_watch_rules(poll_interval: float) -> ListWatchRules:
    """The synchronous wait's list-then-watch rules (:class:`~airflow_trainjob.watching.list_watch.ListWatchRules`
    says why each): a watch that failed is opened again from its last resourceVersion, a watch is tried again every
    :data:`WATCH_RETRY_POLLS` reads while polling, and a 410 reads again at once. The bounds are read now: fault tests
    shorten them.

    :param poll_interval: seconds between reads while watches keep failing.
    """
    return ListWatchRules(
        poll_interval=poll_interval,
        backoff_min=BACKOFF_MIN,
        backoff_max=BACKOFF_MAX,
        watch_retry_polls=WATCH_RETRY_POLLS,
        relist_after_failure=False,
        slow_down_on_expiry=False,
    )


class ListThenWatch(Generic[T]):
    """The list-then-watch loop of the synchronous wait; a subclass says what it reads, watches and yields.

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`.
    :param call: the watch request, as error messages name it (verb ``watch``).
    :param what: what is followed, in log lines (``PyTorchJob ns/name``).
    :param poll_interval: seconds between reads while watches keep failing.
    :param outage_tolerance: seconds the API may keep failing transiently before the last error is raised.
    :param log: where outages and recoveries are reported.
    """

    #: Outages and recoveries are logged (the pods' watch leaves them to the job's: one line per outage).
    reports_outages = True

    def __init__(
        self,
        hook: Any,
        call: ApiCall,
        what: str,
        *,
        poll_interval: float,
        outage_tolerance: float,
        log: logging.Logger,
    ) -> None:
        self._hook = hook
        self._call = call
        self._what = what
        self._poll_interval = poll_interval
        self._outage_tolerance = outage_tolerance
        self._log = log
        #: What to do next: list, poll or watch, and how long to back off (the requests are this class's).
        self._policy = ListWatch(list_watch_rules(poll_interval))
        self._outage_since: float | None = None
        self._watch_refused = False
        self._stopped = threading.Event()
        self._watcher: kube_watch.Watch | None = None
        #: A watch request was answered and none failed since: what it delivers is all there is to know.
        self.watching = False
        #: Set once the first watch request was answered or failed.
        self.settled = threading.Event()
        #: What the loop did: ``watches``, ``reads`` (GETs or LISTs), ``expired`` (410), ``failures``.
        self.stats: dict[str, int] = {"watches": 0, "reads": 0, "expired": 0, "failures": 0}

    # ---- what a subclass says -----------------------------------------------------------------------

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        """The client's list call to watch, its positional arguments and its selector."""
        raise NotImplementedError

    def _read(self) -> T | None:
        """One GET or LIST (setting the resourceVersion to watch from), or None during a tolerated outage."""
        raise NotImplementedError

    def _event(self, event_type: str, obj: dict[str, Any]) -> T | None:
        """What a watch event (``ADDED``, ``MODIFIED``, ``DELETED``) shows; None: nothing to yield."""
        raise NotImplementedError

    def _idle(self) -> T | None:
        """What a watch that ended without news yields (a look for the caller's deadlines); None: nothing."""
        return None

    def _is_last(self, item: T) -> bool:
        """Whether ``item`` ends the follow (e.g. the job's deletion)."""
        return False

    # ---- the loop -----------------------------------------------------------------------------------

    def _loop(self, look_within: Callable[[], float | None]) -> Generator[T, None, None]:
        while not self._stopped.is_set():
            window = look_within()
            window = WATCH_SECONDS if window is None else min(float(WATCH_SECONDS), max(1.0, window))
            step = self._policy.next_step()
            if step.action is Action.WATCH:
                ended = yield from self._watch_attempt(window, look_within)
            else:
                # A poll reads sooner when the caller's next look comes first.
                if step.action is Action.POLL and self._stopped.wait(min(step.wait, window)):
                    return
                ended = yield from self._read_once()
            if ended:
                return

    def _read_once(self) -> Generator[T, None, bool]:
        """One read, yielded unless it is None (a tolerated outage); True: the follow ends."""
        item = self._read()
        if item is None:
            self._pause(self._policy.read_failed())
            return False
        yield item
        return self._is_last(item)

    def _watch_attempt(self, window: float, look_within: Callable[[], float | None]) -> Generator[T, None, bool]:
        """One watch, and what its failure means; True: the follow ends."""
        try:
            return (yield from self._watch_round(window, look_within))
        except ApiException as e:
            self._watch_failed(e)
        except (HTTPError, OSError, AttributeError) as e:
            # AttributeError: urllib3 reading a response whose connection stop() shut down under it.
            if self._stopped.is_set():
                return True
            self._failed(e)
        return False

    def _watch_round(self, window: float, look_within: Callable[[], float | None]) -> Generator[T, None, bool]:
        """One watch, from the last resourceVersion, for ``window`` seconds at most; True: the follow ends. Raises
        what the watch raises."""
        started = time.monotonic()
        ends_at = started + _watch_seconds(window)
        delivered = nearer = False
        watch = self._watch(window)
        try:
            for item in watch:
                delivered = True
                self._answered()
                yield item
                if self._is_last(item):
                    return True
                # The caller has taken the item in: a change may have brought its next look nearer (a job
                # suspended into its queue starts queue_timeout) than this watch's end.
                if outlasts_next_look(ends_at - time.monotonic(), look_within()):
                    nearer = True
                    break
        finally:
            watch.close()  # a watch ended early is shut down now, not when it is collected
        self._answered()
        backoff = self._policy.watch_ended(delivered, time.monotonic() - started)
        if self._policy.failures:  # it ended at once with nothing: a failed watch
            self._not_watching()
            self._stopped.wait(backoff)
        if nearer:
            return False  # watched again at once, from the last resourceVersion, for as long as the look allows
        idle = self._idle()
        if idle is not None:
            yield idle
        return False

    def _watch_failed(self, error: ApiException) -> None:
        """The API answered a watch with an error: 410 reads again; a refusal polls; else back off."""
        if error.status == 410:
            self.stats["expired"] += 1
            self._pause(self._policy.expired())  # compacted away: read again, watch from that version
            return
        self.stats["failures"] += 1
        self._not_watching()
        if not is_transient(error):
            # Refused: the reads raise the hook's clear error if reads are refused too; if only watching is (a Role
            # without "watch"), the collection is polled, with a watch tried now and then.
            if not self._watch_refused:
                self._watch_refused = True
                self._log.info(
                    "Watching %s was refused (%s); reading it every %g s instead",
                    self._what,
                    one_line(error),
                    self._poll_interval,
                )
            self._policy.failed(transient=False)
            return
        backoff = self._policy.failed(transient=True)
        self._outage(error)
        self._stopped.wait(backoff)

    def _failed(self, error: Exception) -> None:
        """A watch failed without an answer (a reset, a timeout): back off, within the outage tolerance."""
        self.stats["failures"] += 1
        self._not_watching()
        backoff = self._policy.failed(transient=True)
        self._outage(error)
        self._stopped.wait(backoff)

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self._stopped.wait(seconds)

    def position(self) -> str | None:
        """The resourceVersion the loop has read or seen up to (a list's, an event's, a bookmark's); None: none yet."""
        return self._policy.resource_version

    def _not_watching(self) -> None:
        self.watching = False
        self.settled.set()

    def _watch(self, window: float) -> Generator[T, None, None]:
        self.stats["watches"] += 1
        watcher = self._watcher = kube_watch.Watch()
        seconds = _watch_seconds(window)
        func, args, selector = self._watched()

        @functools.wraps(func)  # the client's Watch reads the list call's docstring for the type it returns
        def answered(*call_args: Any, **call_kwargs: Any) -> Any:
            response = func(*call_args, **call_kwargs)  # returns once the server answered 200 (else it raises)
            self.watching = True
            self.settled.set()
            return response

        events = watcher.stream(
            answered,
            *args,
            **selector,
            resource_version=self._policy.resource_version,
            timeout_seconds=seconds,
            allow_watch_bookmarks=True,
            _request_timeout=watch_timeout(seconds),
        )
        try:
            for event in events:
                obj = event.get("raw_object") or {}
                meta = obj.get("metadata") or {}
                self._policy.saw(meta.get("resourceVersion"))
                if event.get("type") == "BOOKMARK":
                    continue
                meta.pop("managedFields", None)
                item = self._event(event.get("type") or "", obj)
                if item is not None:
                    yield item
                    if self._is_last(item):
                        return
        finally:
            watcher.stop()
            events.close()  # closes the response (a watch ended early: at once)
            self._watcher = None

    def stop(self) -> None:
        """End the loop from another thread: its sleep ends, and the watch in flight is shut down."""
        self._stopped.set()
        watcher = self._watcher
        response = getattr(watcher, "_resp", None)  # the client's Watch keeps its open response there
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            # Shut the socket down rather than close the response (see LeadLogFollower.stop): the read wakes at once.
            try:
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
            except OSError:
                pass

    # ---- outages ------------------------------------------------------------------------------------

    def _outage(self, error: Exception) -> None:
        """Re-raise ``error`` unless it is transient and the API has failed for less than the tolerance."""
        if not is_transient(error):
            raise exception_for(error, self._call) from None
        now = time.monotonic()
        if self._outage_since is None:
            self._outage_since = now
            if self.reports_outages:
                self._log.warning(
                    "%s: the Kubernetes API is not answering as expected (%s); still waiting",
                    self._what,
                    one_line(error),
                )
        elif now - self._outage_since > self._outage_tolerance:
            raise exception_for(error, self._call) from None

    def _answered(self) -> None:
        if self._outage_since is not None:
            if self.reports_outages:
                self._log.info(
                    "%s: the Kubernetes API answers again after %.0f s",
                    self._what,
                    time.monotonic() - self._outage_since,
                )
            self._outage_since = None


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


class JobWatch(ListThenWatch[Seen]):
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
        meta = job["metadata"]
        self._job = job
        self._name, self._namespace, self._uid = meta["name"], meta["namespace"], meta.get("uid")
        self._address = JobAddress(job["kind"], self._namespace, self._name)
        super().__init__(
            hook,
            ApiCall.for_job("watch", job["kind"], self._namespace, self._name),
            f"{job['kind']} {self._namespace}/{self._name}",
            poll_interval=poll_interval,
            outage_tolerance=outage_tolerance,
            log=log,
        )

    def follow(self, look_within: Callable[[], float | None]) -> Iterator[Seen]:
        """Yield the job as first given, then at each change, and a look (``changed`` False) when ``look_within()``
        seconds have passed without one (None: :data:`WATCH_SECONDS`), so the caller can judge its deadlines. Ends
        after a :class:`Seen` with ``deleted``. Raises the API's error when it refuses reads, or after an outage
        longer than tolerated.

        :param look_within: called before each watch and after each item the caller took in: seconds until the
            caller's next look, or None; a watch lasts at most that long (at least 1 s, at most
            :data:`WATCH_SECONDS`), and one that a change made outlast it is ended for a shorter one.
        """
        yield Seen(self._job)
        self._policy.listed(self._job["metadata"].get("resourceVersion"))  # the job as created or attached to
        yield from self._loop(look_within)

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        func = self._hook.custom_object_client.list_namespaced_custom_object
        return func, self._address.collection(), {"field_selector": name_field_selector(self._name)}

    def _event(self, event_type: str, obj: dict[str, Any]) -> Seen:
        if self._uid and obj["metadata"].get("uid") != self._uid:
            # A same-named successor: ours is gone (its DELETED event, if any, came first).
            return Seen(self._job, deleted=True, replaced=True)
        self._job = obj
        return Seen(obj, deleted=event_type == "DELETED")

    def _idle(self) -> Seen:
        return Seen(self._job, changed=False)

    def _is_last(self, item: Seen) -> bool:
        return item.deleted

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
        self._policy.listed(job["metadata"].get("resourceVersion"))
        return Seen(job, changed=changed)


class PodWatch(ListThenWatch[list[dict[str, Any]]]):
    """The pods of one job (by the training operator's job-name label): listed, then watched; yields them all,
    as API JSON dicts, after the list and after each change (each read, while polling).

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`.
    :param job: the job (its ``metadata.name`` and ``namespace``).
    :param poll_interval: seconds between LISTs while watches keep failing.
    :param log: where a refused watch is reported.
    """

    reports_outages = False

    def __init__(self, hook: Any, job: dict[str, Any], *, poll_interval: float, log: logging.Logger):
        meta = job["metadata"]
        self._name, self._namespace, self._kind = meta["name"], meta["namespace"], job["kind"]
        self._pods: dict[str, dict[str, Any]] = {}
        call = ApiCall("watch", "pods", namespace=self._namespace, purpose=f"follow the pods of {job['kind']}")
        # The pods are best effort (the job's watch decides the wait): an outage is ridden out however long.
        what = f"the pods of {job['kind']} {self._namespace}/{self._name}"
        super().__init__(hook, call, what, poll_interval=poll_interval, outage_tolerance=math.inf, log=log)

    def follow(self) -> Iterator[list[dict[str, Any]]]:
        """Yield the pods after the first LIST that answers (tried every :data:`BACKOFF_MAX` seconds until one does),
        then after each change, until :meth:`stop`. Raises the hook's error when the API refuses the LIST."""
        yield from self._loop(lambda: None)

    def _watched(self) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        return (
            self._hook.core_v1_client.list_namespaced_pod,
            (self._namespace,),
            {"label_selector": job_pod_selector(self._name, kind=self._kind)},
        )

    def _event(self, event_type: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
        if event_type == "DELETED":
            self._pods.pop(obj["metadata"]["name"], None)
        else:
            self._pods[obj["metadata"]["name"]] = obj
        return list(self._pods.values())

    def _read(self) -> list[dict[str, Any]] | None:
        self.stats["reads"] += 1
        try:
            pods, version = self._hook.list_job_pods_and_version(self._name, self._namespace, kind=self._kind)
        except (ApiException, HTTPError, OSError) as e:  # what the hook's retries left of a transient failure
            self._outage(e)
            return None
        self._policy.listed(version)
        self._answered()
        self._pods = {p["metadata"]["name"]: p for p in pods}
        return list(self._pods.values())


class PodFeed(threading.Thread):
    """A job's pods as last seen, kept by a :class:`PodWatch` in a daemon thread; ``on_change`` is called (one call
    at a time) with all of them after the first LIST, after each change, and after each LIST of :meth:`look`.

    :param hook: a :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`.
    :param job: the job (its ``metadata.name``, ``namespace`` and ``kind``).
    :param on_change: called with the pods (API JSON dicts) in the feed's thread; what it raises is logged.
    :param poll_interval: seconds between LISTs while watching the pods keeps failing.
    :param log: where a refused watch and a failing ``on_change`` are reported.
    """

    def __init__(
        self,
        hook: Any,
        job: dict[str, Any],
        *,
        on_change: Callable[[list[dict[str, Any]]], None],
        poll_interval: float,
        log: logging.Logger,
    ) -> None:
        super().__init__(name=f"pods-{job['metadata']['name']}", daemon=True)
        self.watch = PodWatch(hook, job, poll_interval=poll_interval, log=log)
        self._on_change = on_change
        self._log = log
        self._hook, self._name, self._namespace = hook, job["metadata"]["name"], job["metadata"]["namespace"]
        self._kind = job["kind"]
        self._pods: list[dict[str, Any]] | None = None
        self._error: BaseException | None = None
        self._changes = threading.Lock()  # on_change runs in one thread at a time (this one, or a look's)
        self._looked = False
        self._delivered: str | None = None  # on_change has had every change up to this resourceVersion

    def run(self) -> None:
        try:
            for pods in self.watch.follow():
                self._changed(pods)
                self._delivered = self.watch.position()
        except Exception as e:  # the LIST refused: the wait raises it at its next look
            self._error = e
        finally:
            self.watch.settled.set()

    def _changed(self, pods: list[dict[str, Any]], *, as_seen: bool = True) -> None:
        """Hand ``pods`` to ``on_change``; ``as_seen``: they are the feed's view from now on (else a LIST made beside
        the watch, whose view stays its own)."""
        with self._changes:
            if as_seen:
                self._pods = pods
            try:
                self._on_change(pods)
            except Exception:
                self._log.exception("Handling a change of the pods failed")

    def pods(self) -> list[dict[str, Any]] | None:
        """The pods as last seen (API JSON dicts); None before the first LIST has answered."""
        return self._pods

    def look(self) -> list[dict[str, Any]] | None:
        """The pods now, for a look of the wait: as the watch has them while it works; else (refused, failing, not
        answering yet) LISTed now, as at every look before the pod watch. None when the API cannot say right now
        (the job's watch decides the wait). The first look waits up to :data:`SETTLE_SECONDS` for the watch.

        :raises Exception: the hook's error when the API refused the LIST (e.g. RBAC).
        """
        if not self._looked:
            self._looked = True
            self.watch.settled.wait(SETTLE_SECONDS)
        if self._error is not None:
            raise self._error
        if self.watch.watching:
            return self._pods
        try:
            pods = self._hook.list_job_pods(self._name, self._namespace, kind=self._kind)
        except ApiException as e:
            if is_transient(e):
                return None
            raise
        except (HTTPError, OSError):
            return None
        self._changed(pods)
        return pods

    def catch_up(self, resource_version: str | None, timeout: float = CATCH_UP_SECONDS) -> bool | None:
        """At a failed job's end: hand ``on_change`` the pods as LISTed now, then wait until the pods' watch has
        caught up with what the verdict needs (a replica that failed just before the job did may not have arrived
        yet: two watches, two paces), at most ``timeout`` seconds. Caught up: it has had every change up to
        ``resource_version`` (:func:`~airflow_trainjob.watching.list_watch.reached`), or every pod it has alive is in
        the list (:func:`~airflow_trainjob.domain.pods.vanished_unseen`: the list has each one's state now). No wait
        while the pods are not being watched (the looks LIST them) or when the LIST fails.

        :param resource_version: the job's ``metadata.resourceVersion`` at its end.
        :param timeout: the longest wait, seconds.
        :returns: whether it caught up; None: it cannot be told (no watch, no list).
        """
        if not (self.watch.watching and self.is_alive()):
            return None
        try:
            listed = self._hook.list_job_pods(self._name, self._namespace, kind=self._kind)
        except (ApiException, HTTPError, OSError):
            return None
        self._changed(listed, as_seen=False)
        until = time.monotonic() + timeout
        while True:
            alive = {pod_name(p): p["metadata"].get("uid") or "" for p in self._pods or []}
            done = caught_up(self._delivered, resource_version, alive, listed)
            if done or time.monotonic() >= until or not self.is_alive():
                return done
            time.sleep(CATCH_UP_LOOK_SECONDS)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following (the watch in flight is shut down) and wait up to ``timeout`` seconds.

        :param timeout: seconds to wait for the thread to end.
        """
        self.watch.stop()
        if self.is_alive() and threading.current_thread() is not self:
            self.join(timeout)


def _watch_seconds(window: float) -> int:
    """The ``timeoutSeconds`` of a watch that should last ``window`` seconds: whole seconds, at least 1."""
    return max(1, math.ceil(window))


def outlasts_next_look(watch_left: float, look_in: float | None) -> bool:
    """Whether a watch that ends in ``watch_left`` seconds would keep the wait past its next look, so that it is ended
    now and watched again for as long as the look allows (one request more, only on a change that brings a deadline
    nearer). A watch ends on a whole second (:func:`_watch_seconds`): one that ends less than
    :data:`NEARER_LOOK_SLACK` after the look is kept.

    :param watch_left: seconds until the server ends the watch in flight (its ``timeoutSeconds``).
    :param look_in: seconds until the caller's next look (``look_within()``,
        :meth:`~airflow_trainjob.domain.deadlines.Deadlines.next_look`); None: only changes call for one.
    """
    return look_in is not None and look_in < watch_left - NEARER_LOOK_SLACK

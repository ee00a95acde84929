"""One watch for every trigger on the same (connection, namespace, kind): a shared cache of that kind's jobs.

:class:`JobStream` lists the jobs of one kind in one namespace, then watches them from the list's
resourceVersion and keeps the latest state of each job in memory, the way a client-go informer does (as its
compact observation: :class:`~airflow_trainjob.watching.job_cache.JobCache`, what the provider reads of a job, which
the garbage collector never walks).
The triggerer runs one stream per :class:`~airflow_trainjob.watching.stream_source.StreamSource` (Airflow 3.3's
shared streams; the key and :data:`WATCH_SECONDS` live in that light module, and are importable from here too) and
hands every :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger` of that source the same
:class:`JobChanges` events; each trigger reads its own job from the cache. The API server therefore sees
one LIST and one open WATCH per namespace and kind, however many jobs are waited on.

Staying current: the watch is re-opened from the last resourceVersion when the server ends it; 410 Gone
(the resourceVersion was compacted away) lists again; a watch that fails (429, 5xx, a dropped connection)
backs off and starts again from a list, as changes may have been missed meanwhile — without ending anyone's
wait, and with the cache marked stale so no deadline is judged on it; while watches keep failing the
stream lists every ``poll_interval`` seconds instead, a list and a watch in turn. A refusal that retrying will not
fix (401/403, or 404 because the cluster does not serve the kind) is published as :attr:`JobStream.error` for the
triggers to report, and the stream keeps retrying with a fresh client, slowly. What to do next is decided by
:class:`~airflow_trainjob.watching.list_watch.ListWatch`, the synchronous wait's policy too, on this stream's rules
(:func:`list_watch_rules`); this module makes the requests.

Every request goes through the source's :class:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook`
(:meth:`JobStream.hook`, connected while the stream runs): the stream builds no client of its own, and the
triggers make their other reads (a job the cache has not seen, its pods, events, logs) on the same connection.
This module is the heavy side of the trigger: the triggerer imports it in a worker thread
(:mod:`~airflow_trainjob.triggers.kubernetes_side`), never on its event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import AsyncGenerator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.domain.observation import Observed
from airflow_trainjob.hooks.api_errors import (
    API_EXCEPTIONS,
    TRANSIENT_ERRORS,
    TRANSIENT_STATUS_CODES,
    ApiCall,
    one_line,
)
from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook
from airflow_trainjob.watching import cancel_safe
from airflow_trainjob.watching.failed_pods_watch import FailedPodsWatch
from airflow_trainjob.watching.job_cache import JobCache, Steps
from airflow_trainjob.watching.list_watch import Action, ListWatch, ListWatchRules, Step, doubling
from airflow_trainjob.watching.stream_source import TRIGGER_PURPOSE, WATCH_SECONDS, StreamSource

log = logging.getLogger(__name__)


def stream_hook(source: StreamSource) -> AsyncTrainingJobHook:
    """The async hook for a source's connection (a new one; its client is opened by ``connect()``). Constructing it
    reads nothing: the connection is read, asynchronously, when it connects.

    :param source: the stream's source (its connection fields).
    """
    return AsyncTrainingJobHook(
        conn_id=source.kubernetes_conn_id,
        cluster_context=source.cluster_context,
        config_file=source.config_file,
        in_cluster=source.in_cluster,
    )


def stream_call(source: StreamSource, purpose: str = TRIGGER_PURPOSE) -> ApiCall:
    """A stream's request, as its errors name it.

    :param source: the stream's source (its kind and namespace).
    :param purpose: why the stream lists and watches (said when RBAC forbids it).
    """
    return ApiCall.for_job("list or watch", source.kind, source.namespace, purpose=purpose)


#: Changes that arrive within this many seconds reach the triggers as one event (one wake-up each)...
BATCH_SECONDS = 0.1
#: ...per 1,000 jobs in the cache, up to this many seconds: every event wakes every trigger of the stream.
BATCH_SECONDS_MAX = 0.5
#: Backoff bounds between failed attempts (seconds).
BACKOFF_MIN, BACKOFF_MAX = 1.0, 30.0
#: Page size of the list (items per request). A page is read on the loop, decoded item by item, each item made into
#: its observation (about 40 ms for 500 jobs, :data:`ITEMS_PER_TURN` at a time); reading it in a worker thread would
#: not help: the decoder holds the GIL.
LIST_PAGE_SIZE = 500
#: Jobs of a page kept per pass of the event loop (each made into its observation: about 70 us a job, 7 ms a turn).
ITEMS_PER_TURN = 100

#: Readers let through per pass of the event loop by :meth:`JobStream.take_turn` (count).
READERS_PER_TURN = 50

#: Seconds a deleted job's final object is kept (:meth:`JobStream.final_state`), for the triggers still to judge it.
DELETED_KEPT_SECONDS = 600.0
#: At most this many deleted jobs are kept (the oldest go first).
DELETED_KEPT_MAX = 20_000


def list_watch_rules(poll_interval: float) -> ListWatchRules:
    """The shared stream's list-then-watch rules (:class:`~airflow_trainjob.watching.list_watch.ListWatchRules` says
    why each): a failed watch lists again (the cache may have missed changes), the lists and the watches alternate
    while polling, and a 410 that repeats slows down. The bounds are read now: fault tests shorten them.

    :param poll_interval: seconds between lists while watches keep failing.
    """
    return ListWatchRules(
        poll_interval=poll_interval,
        backoff_min=BACKOFF_MIN,
        backoff_max=BACKOFF_MAX,
        watch_retry_polls=None,
        relist_after_failure=True,
        slow_down_on_expiry=True,
    )


@dataclass(frozen=True)
class JobChanges:
    """One shared-stream event: these jobs changed (``names``), or any may have (``None``: after a list or
    when :attr:`JobStream.error` changed). The jobs themselves are read from ``stream``.

    :param names: the ``metadata.name`` of each job that changed; None: any may have.
    :param stream: the stream whose :attr:`JobStream.jobs` hold them.
    """

    names: frozenset[str] | None
    stream: JobStream


class JobStream:
    """The latest object of every job of ``source.kind`` in ``source.namespace``, kept by one watch.

    :param source: connection, namespace and kind.
    :param poll_interval: seconds between lists while watches keep failing.
    :param purpose: why the stream runs, as its refusals say (``wait for a training job in the triggerer``; the
        api-server's UI streams say theirs).
    :param failed_pods: also watch the kind's pods, keeping the failed pods of the jobs the triggers follow
        (:attr:`failed_pods`, :mod:`~airflow_trainjob.watching.failed_pods_watch`): a trigger's stream; the UI's
        do not.

    Readers use :attr:`jobs` (name -> the job's observation, a read-only mapping shaped like the job: a
    :class:`~airflow_trainjob.watching.job_cache.JobCache`; what needs the whole object reads it by GET),
    :attr:`synced` (``jobs`` reflects a successful list, and nothing has failed since), :attr:`error`
    (why the API refuses this stream, or None), and :attr:`hook` with :attr:`connected` (the stream's hook, whose
    client is open while the stream runs: other reads on the same connection). Readers woken by a change that
    concerns every job await :meth:`take_turn` first, so thousands of them do not hold the event loop at once.
    """

    def __init__(
        self,
        source: StreamSource,
        poll_interval: float = 10.0,
        purpose: str = TRIGGER_PURPOSE,
        *,
        failed_pods: bool = False,
    ):
        self.source = source
        self.poll_interval = poll_interval
        self.purpose = purpose
        self.jobs = JobCache()
        self._deleted = JobCache()  # the final states of deleted jobs...
        self._deleted_at: dict[str, float] = {}  # ...and the monotonic time of each deletion, oldest first
        self.synced = False
        self.error: str | None = None
        #: The source's hook: the stream's list and watch, and the triggers' other reads, go through it.
        self.hook = stream_hook(source)
        self._changed = asyncio.Event()
        self._dirty: set[str] | None = set()  # None: everything
        self._refusals = 0  # refusals in a row, each with a fresh client
        self._turns: deque[asyncio.Future[None]] = deque()  # readers waiting in take_turn, first come first
        self._releasing: asyncio.AbstractEventLoop | None = None  # the loop that lets the next readers through
        #: What the stream did: ``lists``, ``watches``, ``expired`` (410), ``failures`` (transient).
        self.stats: Counter[str] = Counter()
        #: The watch of the kind's pods that keeps the followed jobs' failed pods (a trigger's stream); None: none (the
        #: UI's streams).
        self.failed_pods = FailedPodsWatch(source, poll_interval) if failed_pods else None

    async def changes(self) -> AsyncGenerator[JobChanges, None]:
        """Keep the cache current and yield what changed, batched (:data:`BATCH_SECONDS`). Never ends."""
        keeper = asyncio.create_task(self._keep_current(), name=f"job stream: {self.source}")
        try:
            while True:
                await self._changed.wait()
                await asyncio.sleep(min(BATCH_SECONDS_MAX, BATCH_SECONDS * max(1.0, len(self.jobs) / 1000)))
                self._changed.clear()
                dirty, self._dirty = self._dirty, set()
                yield JobChanges(None if dirty is None else frozenset(dirty), self)
        finally:
            await cancel_safe.stop(keeper)

    async def take_turn(self) -> None:
        """Wait until this reader may read the cache: :data:`READERS_PER_TURN` readers per pass of the event loop,
        first come first. A list (or an error) wakes every trigger of the stream at once; all of them judging their
        jobs in one pass would hold the loop for the whole of it (about 60 ms per 1,000 triggers, more with the log
        lines they write), where a few at a time let everything else run in between."""
        loop = asyncio.get_running_loop()
        turn = loop.create_future()
        self._turns.append(turn)
        if self._releasing is not loop:
            self._releasing = loop
            loop.call_soon(self._release_turns)
        await turn

    def _release_turns(self) -> None:
        for _ in range(min(READERS_PER_TURN, len(self._turns))):
            turn = self._turns.popleft()
            if not turn.done():  # (its reader was cancelled meanwhile)
                turn.set_result(None)
        if self._turns:
            asyncio.get_running_loop().call_soon(self._release_turns)  # the next ones, after the loop's other work
        else:
            self._releasing = None

    # --- keeping the cache current -------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """The stream's client is open: :attr:`hook`'s calls use it."""
        return self.hook.connected

    async def _keep_current(self) -> None:
        """Open a client for the source and sync with it; after a refusal, try again with a fresh client."""
        while True:
            try:
                async with self.hook.connect():
                    await self._sync_with_pods()
            except _Refused as refused:
                # A fresh client re-reads the credentials (rotated tokens); a second refusal in a row is
                # reported. Only a watch that answered resets the count: a Role may allow list but not watch.
                self._refusals += 1
                if self._refusals >= 2:
                    self._publish_error(str(refused))
                await asyncio.sleep(doubling(self._refusals, BACKOFF_MIN, BACKOFF_MAX))
            except Exception as e:
                self._publish_error(f"cannot watch {self.source}: {one_line(e)}")
                await asyncio.sleep(BACKOFF_MAX)

    async def _sync_with_pods(self) -> None:
        """:meth:`_sync`, with the pod watch (:attr:`failed_pods`) beside it on the same client while it lasts."""
        if self.failed_pods is None:
            await self._sync()
            return
        pods = asyncio.create_task(self.failed_pods.keep(self.hook), name=f"pod watch: {self.source}")
        try:
            await self._sync()
        finally:
            await cancel_safe.stop(pods)

    async def _sync(self) -> None:
        """List, then watch from the list's resourceVersion, forever, as its :class:`ListWatch` says. Raises
        :class:`_Refused`."""
        policy = ListWatch(list_watch_rules(self.poll_interval))
        while True:
            try:
                await self._take(policy.next_step(), policy)
                continue
            except API_EXCEPTIONS as e:  # the hook's list and watch raise the client's own
                if e.status == 410:
                    self.stats["expired"] += 1
                    await asyncio.sleep(policy.expired())  # compacted away: list again, watch from there
                    continue
                if e.status not in TRANSIENT_STATUS_CODES:
                    line = one_line(e, stream_call(self.source, self.purpose), self.source.kubernetes_conn_id)
                    raise _Refused(line) from None
                self._mark_stale(one_line(e, stream_call(self.source, self.purpose)))
            except TRANSIENT_ERRORS as e:
                self._mark_stale(one_line(e, stream_call(self.source, self.purpose)))
            # Changes may have been missed since the failure: the policy lists again (a consistent snapshot) rather
            # than trust the cache, so no job is judged on a state older than it looks.
            await asyncio.sleep(policy.failed(transient=True))

    async def _take(self, step: Step, policy: ListWatch) -> None:
        """Make the request ``step`` says, and tell ``policy`` what came of it. Raises what the request raises."""
        if step.action is Action.WATCH:
            started = time.monotonic()
            resource_version, delivered = await self._watch(step.resource_version)
            policy.saw(resource_version)
            self._recovered()  # the list and the watch both answered: whatever refused us is gone
            backoff = policy.watch_ended(delivered, time.monotonic() - started)
            if policy.failures:  # the stream closed as soon as it opened: back off (nothing was missed)
                await asyncio.sleep(backoff)
            return
        if step.action is Action.POLL:
            await asyncio.sleep(step.wait)
        policy.listed(await self._list())

    async def _list(self) -> str:
        """Replace the cache with a fresh list (page by page); return its resourceVersion."""
        self.stats["lists"] += 1
        listed = JobCache()
        token = None
        while True:
            page = await self.hook.list_jobs_text_async(
                self.source.kind, self.source.namespace, limit=LIST_PAGE_SIZE, continue_token=token
            )
            steps = Steps(listed.adding_list_page(page, ITEMS_PER_TURN))
            for _ in steps:
                await asyncio.sleep(0)  # the event loop runs between two turns of ITEMS_PER_TURN jobs
            metadata = steps.result
            token = metadata.get("continue")
            if not token:
                break
        for name in self.jobs:
            if name not in listed:  # deleted while the watch was down: its last state seen is all there is
                self._keep_deleted(self.jobs[name])
        self.jobs = listed
        self.synced = True
        self._mark(None)
        return str(metadata["resourceVersion"])

    async def _watch(self, resource_version: str | None) -> tuple[str | None, bool]:
        """Apply watch events until the server ends the watch; return the last resourceVersion and whether
        anything arrived. Raises ApiException (410 included) and transient errors."""
        self.stats["watches"] += 1
        delivered = False
        events = self.hook.watch_jobs(
            self.source.kind, self.source.namespace, resource_version, timeout_seconds=WATCH_SECONDS
        )
        try:
            async for event in events:
                if not isinstance(event, dict):  # a line cut short: the connection dropped mid-event
                    raise ConnectionResetError("the watch stream ended in the middle of an event")
                delivered = True
                obj = event["raw_object"]
                resource_version = obj["metadata"]["resourceVersion"]
                if event["type"] == "BOOKMARK":
                    continue
                name = obj["metadata"]["name"]
                if event["type"] == "DELETED":
                    self.jobs.discard(name)
                    self._keep_deleted(obj)  # the event carries the job's final state: keep it
                else:
                    self.jobs.put(obj)
                self._mark({name})
        finally:
            await events.aclose()
        return resource_version, delivered

    def _keep_deleted(self, job: Mapping[str, Any]) -> None:
        now = time.monotonic()
        name = job["metadata"]["name"]
        self._deleted_at.pop(name, None)
        self._deleted_at[name] = now
        self._deleted.put(job)
        while self._deleted_at:
            oldest, when = next(iter(self._deleted_at.items()))
            if now - when <= DELETED_KEPT_SECONDS and len(self._deleted_at) <= DELETED_KEPT_MAX:
                break
            del self._deleted_at[oldest]
            self._deleted.discard(oldest)

    def final_state(self, name: str, uid: str | None) -> Observed | None:
        """The last state of job ``name`` (of ``uid``, if given) before it was deleted, if this stream saw it
        within :data:`DELETED_KEPT_SECONDS`: the observation of the object its ``DELETED`` event carried, or of the
        last one listed.

        :param name: the job's ``metadata.name``.
        :param uid: the job's ``metadata.uid`` (a same-named successor's final state is not its); None: any.
        """
        kept = self._deleted.get(name)
        if kept is None or (uid and kept["metadata"].get("uid") != uid):
            return None
        return kept

    # --- telling readers ----------------------------------------------------------------------------

    def _mark(self, names: set[str] | None) -> None:
        if names is None or self._dirty is None:
            self._dirty = None
        else:
            self._dirty |= names
        self._changed.set()

    def _mark_stale(self, why: str) -> None:
        self.stats["failures"] += 1
        if self.synced:
            log.info("The shared stream's watch failed, retrying: %s", why)  # why names the source
        self.synced = False

    def _recovered(self) -> None:
        self._refusals = 0
        if self.error is not None:
            self.error = None
            self._mark(None)

    def _publish_error(self, message: str) -> None:
        self.synced = False
        if self.error != message:
            self.error = message
            self._mark(None)


class _Refused(Exception):
    """The API refused the stream's list or watch in a way retrying the same client will not fix (its one line,
    from :func:`~airflow_trainjob.hooks.api_errors.one_line`)."""


# --- the streams alive in this process ---------------------------------------------------------------

_live: dict[StreamSource, JobStream] = {}


def live_stream(source: StreamSource) -> JobStream | None:
    """The stream the triggerer runs for ``source`` in this process, if any: a trigger that joins a
    running stream reads its job from the cache at once instead of waiting for the job's next change.

    :param source: connection, namespace and kind of the stream.
    """
    return _live.get(source)


@contextlib.contextmanager
def registered(stream: JobStream) -> Iterator[JobStream]:
    """Make ``stream`` the live stream of its source while the context lasts.

    :param stream: the stream the triggerer runs (see :func:`live_stream`).
    """
    _live[stream.source] = stream
    try:
        yield stream
    finally:
        if _live.get(stream.source) is stream:
            del _live[stream.source]

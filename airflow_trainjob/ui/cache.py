"""What the api-server reads of the cluster for the UI, shared by every open page.

Many open tabs must not multiply the load on the Kubernetes API, so nothing a page asks for goes to the cluster
by itself:

- Jobs come from ONE shared :class:`~airflow_trainjob.watching.job_stream.JobStream` per (connection, namespace,
  kind) -- the triggerer's list-then-watch loop, run here too (:class:`StreamRegistry`): a stream starts on the first
  page that needs it and stops after :data:`STREAM_IDLE_SECONDS` without a reader.
- A job's pods and events, and a pod's log tail, are read on demand through a :class:`Coalescer`: one request per key
  at a time (single flight: concurrent readers share it) whose answer serves every reader for
  :data:`DETAIL_TTL_SECONDS`. Ten tabs polling the same job every five seconds cost what one does.
- Which kinds a connection's cluster serves (API discovery), its namespace and its dashboard template are looked up
  once per :data:`LOOKUP_TTL_SECONDS`.

Every request goes through the provider's :class:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook` (a
stream's own, whose client is open while the stream runs), with its one-line errors. A page's user is waiting: its
one-off reads make one attempt (:func:`~airflow_trainjob.hooks.retries.no_retries`, not the tasks' backoff) and give
up after :data:`UI_READ_TIMEOUT_SECONDS`, so an unreachable cluster is said at once, with its cause; the streams keep
retrying by themselves, and the page recovers with them.
Everything here lives on the api-server's event loop: one :class:`UiCache` per app.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from kubernetes_asyncio import client as async_client

from airflow_trainjob.families import family_of, known_kinds
from airflow_trainjob.hooks.api_errors import kind_not_served_message
from airflow_trainjob.hooks.retries import API_EXCEPTIONS, no_retries
from airflow_trainjob.hooks.training_job import REQUEST_TIMEOUT, AsyncTrainingJobHook
from airflow_trainjob.ui import settings
from airflow_trainjob.watching import cancel_safe
from airflow_trainjob.watching.job_stream import JobStream, StreamSource

log = logging.getLogger(__name__)

#: Seconds a stream runs on without a reader before it stops (its watch closed).
STREAM_IDLE_SECONDS = 300.0
#: Longest wait (seconds) of the first readers of a new stream for its first list (or its refusal).
SYNC_WAIT_SECONDS = 5.0
#: Seconds one read of a job's pods or events, or of a log tail, serves every reader.
DETAIL_TTL_SECONDS = 4.0
#: Seconds a connection's served kinds, namespace and dashboard template are reused.
LOOKUP_TTL_SECONDS = 60.0
#: Longest wait (seconds) of a reader for a read in flight; the read itself goes on for the next reader.
READ_WAIT_SECONDS = 20.0
#: Longest one-off read of the UI (pods, events, a log tail, discovery), seconds: one attempt, no retries.
UI_READ_TIMEOUT_SECONDS = 5.0
#: Why the UI's streams list and watch (said when RBAC forbids it).
UI_PURPOSE = "show training jobs in the Airflow UI"

T = TypeVar("T")


async def quick_read(what: str, read: Callable[[], Awaitable[T]], seconds: float = UI_READ_TIMEOUT_SECONDS) -> T:
    """``await read()`` as a page needs it: one attempt (:func:`no_retries`), at most ``seconds``.

    :param what: the read, as the timeout's message names it (``list the pods of PyTorchJob ns/name``).
    :param read: makes the request (through the hook, whose errors are already one line).
    :param seconds: the longest wait for the answer (seconds).
    :raises TimeoutError: no answer within ``seconds`` (its message says so and what was read).
    :raises Exception: what the request raised, at its first failure.
    """
    with no_retries():
        try:
            return await cancel_safe.within(read(), seconds)
        except asyncio.TimeoutError as e:
            if str(e):
                raise  # the client's own timeout, which says what timed out
            raise TimeoutError(f"no answer from the cluster within {seconds:g} s (to {what})") from None


async def _discover(conn_id: str, group: str, version: str) -> set[str]:
    """The resources (plurals) the cluster of connection ``conn_id`` serves in ``group``/``version``; none when it
    serves no such group (404).

    :param conn_id: the cncf.kubernetes connection id.
    :param group: the API group, e.g. ``kubeflow.org``.
    :param version: the version within it, e.g. ``v1``.
    :raises Exception: the discovery request failed otherwise (unreachable, 401/403).
    """
    hook = AsyncTrainingJobHook(conn_id=conn_id)
    async with hook.connect() as api:
        try:
            found = await async_client.CustomObjectsApi(api).get_api_resources(
                group, version, _request_timeout=REQUEST_TIMEOUT
            )
            return {r.name for r in found.resources or []}
        except API_EXCEPTIONS as e:
            if e.status != 404:  # 404: the whole group is missing
                raise
            return set()


@dataclass
class _Answer:
    expires: float
    value: Any = None
    error: BaseException | None = None


class Coalescer(Generic[T]):
    """A short-lived, single-flight cache: one load per key at a time, whose answer (or error) every reader of that
    key gets until ``ttl`` seconds after it came.

    :param ttl: seconds an answer is reused.
    :param max_entries: answers kept at most (the expired ones go first, then the oldest).
    :param wait_seconds: longest wait of one reader for a load in flight (:data:`READ_WAIT_SECONDS`).
    :param error_ttl: seconds an error is reused (None: ``ttl``); shorter, so that a page sees a recovery soon.

    :attr:`stats`: ``loads`` (requests made), ``joined`` (readers that shared a load in flight), ``hits`` (readers
    served a fresh answer).
    """

    def __init__(
        self,
        ttl: float,
        max_entries: int = 2048,
        wait_seconds: float = READ_WAIT_SECONDS,
        error_ttl: float | None = None,
    ):
        self.ttl = ttl
        self.error_ttl = ttl if error_ttl is None else error_ttl
        self.max_entries = max_entries
        self.wait_seconds = wait_seconds
        self._answers: dict[Hashable, _Answer] = {}
        self._flights: dict[Hashable, asyncio.Future[T]] = {}
        self.stats: Counter[str] = Counter()

    async def get(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
        """The answer for ``key``: a fresh one, the load in flight, or a new load.

        :param key: what is read (hashable).
        :param load: makes the read; called only when no fresh answer and no load in flight.
        :raises Exception: what the load raised (every reader of that answer gets it); :class:`TimeoutError` when
            the load takes longer than ``wait_seconds``.
        """
        answer = self._answers.get(key)
        if answer is not None and answer.expires > time.monotonic():
            self.stats["hits"] += 1
            if answer.error is not None:
                raise answer.error
            return answer.value
        flight = self._flights.get(key)
        if flight is None:
            self.stats["loads"] += 1
            flight = asyncio.ensure_future(load())
            self._flights[key] = flight
            flight.add_done_callback(lambda done: self._settle(key, done))
        else:
            self.stats["joined"] += 1
        # shield: a reader that goes away (a closed tab) does not cancel the load the others wait for.
        try:
            return await cancel_safe.within(asyncio.shield(flight), self.wait_seconds)
        except asyncio.TimeoutError:
            if flight.done():
                raise  # the load's own timeout, with its message
            raise TimeoutError(f"the read is still waiting for the cluster after {self.wait_seconds:g} s") from None

    def _settle(self, key: Hashable, done: asyncio.Future[T]) -> None:
        if self._flights.get(key) is done:
            del self._flights[key]
        if done.cancelled():
            return
        error = done.exception()
        expires = time.monotonic() + (self.error_ttl if error is not None else self.ttl)
        self._answers[key] = _Answer(expires, None if error else done.result(), error)
        if len(self._answers) > self.max_entries:
            now = time.monotonic()
            for stale in [k for k, a in self._answers.items() if a.expires <= now]:
                del self._answers[stale]
            while len(self._answers) > self.max_entries:
                del self._answers[next(iter(self._answers))]


@dataclass
class _Running:
    stream: JobStream
    started: float
    last_used: float
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class StreamRegistry:
    """The UI's shared streams, one per :class:`StreamSource`, started on first use and stopped when idle.

    :param idle_seconds: a stream with no reader for this long stops.
    :param sync_wait_seconds: longest wait of the first readers for a new stream's first list.
    :param poll_interval: the streams' list interval while their watches keep failing (seconds).

    :attr:`stats`: ``started`` and ``stopped`` streams.
    """

    def __init__(
        self,
        idle_seconds: float = STREAM_IDLE_SECONDS,
        sync_wait_seconds: float = SYNC_WAIT_SECONDS,
        poll_interval: float = 10.0,
    ):
        self.idle_seconds = idle_seconds
        self.sync_wait_seconds = sync_wait_seconds
        self.poll_interval = poll_interval
        self._running: dict[StreamSource, _Running] = {}
        self._reaper: asyncio.Task[None] | None = None
        self.stats: Counter[str] = Counter()

    def sources(self) -> list[StreamSource]:
        """The sources whose stream runs now."""
        return [s for s, r in self._running.items() if r.task is not None and not r.task.done()]

    async def stream(self, source: StreamSource) -> JobStream:
        """The running stream of ``source`` (started if none), once it has listed or been refused -- or
        :attr:`sync_wait_seconds` after it started, whichever comes first (then possibly not :attr:`JobStream.synced`).

        :param source: connection, namespace and kind.
        """
        now = time.monotonic()
        running = self._running.get(source)
        if running is None or running.task is None or running.task.done():
            running = self._start(source)
        running.last_used = now
        if not running.ready.is_set():
            await cancel_safe.set_within(
                running.ready, max(0.0, running.started + self.sync_wait_seconds - time.monotonic())
            )
        return running.stream

    def _start(self, source: StreamSource) -> _Running:
        now = time.monotonic()
        running = _Running(JobStream(source, self.poll_interval, purpose=UI_PURPOSE), started=now, last_used=now)
        running.task = asyncio.create_task(self._pump(running), name=f"trainjob ui stream: {source}")
        self._running[source] = running
        self.stats["started"] += 1
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap(), name="trainjob ui stream reaper")
        return running

    async def _pump(self, running: _Running) -> None:
        """Drive the stream (its ``changes()`` keeps the cache current); readers read ``jobs`` directly."""
        stream = running.stream
        async for _ in stream.changes():
            if stream.synced or stream.error:
                running.ready.set()

    async def _reap(self) -> None:
        """Stop the streams no page has read for :attr:`idle_seconds`; end with the last one."""
        while self._running:
            await asyncio.sleep(max(0.05, min(30.0, self.idle_seconds / 4)))
            now = time.monotonic()
            for source, running in list(self._running.items()):
                if now - running.last_used >= self.idle_seconds:
                    await self._stop(source)
                    log.info("Stopped the UI's stream of %s: no page read it for %.0f s", source, self.idle_seconds)

    async def _stop(self, source: StreamSource) -> None:
        running = self._running.pop(source, None)
        if running is None or running.task is None:
            return
        self.stats["stopped"] += 1  # counted as it leaves the registry: a reader may look while the task ends
        await cancel_safe.stop(running.task)

    async def close(self) -> None:
        """Stop every stream (the app is shutting down)."""
        for source in list(self._running):
            await self._stop(source)
        if self._reaper is not None:
            await cancel_safe.stop(self._reaper)


def _known_job(stream: JobStream, name: str, uid: str) -> Mapping[str, Any]:
    """The stream's job ``name`` when it is the object ``uid`` (else, deleted since, its last state), or the name and
    uid alone: what :meth:`~airflow_trainjob.domain.family.JobFamily.owns_pod` reads to tell its pods."""
    for seen in (stream.jobs.get(name), stream.final_state(name, uid)):
        if seen is not None and (seen.get("metadata") or {}).get("uid") == uid:
            return seen
    return {"metadata": {"name": name, "uid": uid}}


def ui_source(conn_id: str | None, namespace: str, kind: str) -> StreamSource:
    """The stream key of the jobs of ``kind`` in ``namespace`` through connection ``conn_id`` (the connection
    decides context, kubeconfig and in-cluster use, as for a task that names only the connection).

    :param conn_id: the cncf.kubernetes connection id (None: no connection, in-cluster or the default kubeconfig).
    :param namespace: the namespace.
    :param kind: one of :func:`~airflow_trainjob.families.known_kinds`.
    """
    return StreamSource(conn_id, None, None, None, namespace, kind)


class UiCache:
    """Everything the UI reads of the cluster, shared by every page of one api-server process.

    :param registry: the shared streams (a new :class:`StreamRegistry` if None).
    :param detail_ttl: seconds a read of pods, events or a log tail is reused (:data:`DETAIL_TTL_SECONDS`).
    :param lookup_ttl: seconds a connection's lookups are reused (:data:`LOOKUP_TTL_SECONDS`).
    """

    def __init__(
        self,
        registry: StreamRegistry | None = None,
        detail_ttl: float = DETAIL_TTL_SECONDS,
        lookup_ttl: float = LOOKUP_TTL_SECONDS,
    ):
        self.streams = registry or StreamRegistry()
        self.details: Coalescer[list[dict[str, Any]]] = Coalescer(detail_ttl)
        self.logs: Coalescer[str] = Coalescer(detail_ttl)
        # a failed lookup (the cluster unreachable) is tried again as soon as a detail would be
        self.lookups: Coalescer[Any] = Coalescer(lookup_ttl, error_ttl=min(detail_ttl, lookup_ttl))
        self._unreadable: dict[Hashable, datetime] = {}

    def unreadable_since(self, key: Hashable, failing: bool, now: datetime) -> datetime | None:
        """Since when what a page reads for ``key`` cannot be read: the first of the failures in a row that pages
        have seen (``now`` for the first one), None once a page reads it again.

        :param key: what the page reads, e.g. a try's job (its stream's source, name and uid).
        :param failing: the page's reads of it failed just now (its stream's list or watch, or a one-off read).
        :param now: the time of the page's reads.
        """
        if not failing:
            self._unreadable.pop(key, None)
            return None
        return self._unreadable.setdefault(key, now)

    async def stream(self, conn_id: str | None, namespace: str, kind: str) -> JobStream:
        """The shared stream of ``kind`` in ``namespace`` through ``conn_id`` (see :meth:`StreamRegistry.stream`).

        :param conn_id: the cncf.kubernetes connection id.
        :param namespace: the namespace.
        :param kind: one of :func:`~airflow_trainjob.families.known_kinds`.
        """
        return await self.streams.stream(ui_source(conn_id, namespace, kind))

    async def job_pods(
        self, stream: JobStream, name: str, uid: str | None, job: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The pods of job ``name`` that are the job object's own (its family's
        :meth:`~airflow_trainjob.domain.family.JobFamily.owns_pod`: a v1 job's by owner reference to ``uid``, a
        TrainJob's by its pod token, else by its JobSet's name and creation time), as API JSON dicts. A same-named
        predecessor's pods are left out; without a uid, every pod of the name is the job's.

        :param stream: the job's stream (its hook makes the read; its jobs hold the job when ``job`` is None).
        :param name: the job's ``metadata.name``.
        :param uid: the job's ``metadata.uid`` (None: not known).
        :param job: the job (API JSON dict or the stream's observation: its uid, creation time, the provider's
            annotations); None: the stream's job of that name and uid, else the name and uid alone.
        :raises Exception: the hook's one-line exceptions, or :class:`TimeoutError`.
        """
        source = stream.source
        family = family_of(source.kind)

        async def load() -> list[dict[str, Any]]:
            found = await quick_read(
                f"list the pods of {source.kind} {source.namespace}/{name}",
                lambda: stream.hook.list_job_pods_async(name, source.namespace, kind=source.kind),
            )
            if not uid:
                return found
            owner = job if job is not None else _known_job(stream, name, uid)
            return [p for p in found if family.owns_pod(owner, p)]

        return await self.details.get(("pods", source, name, uid), load)

    async def job_events(
        self, stream: JobStream, name: str, uid: str | None, pod_names: Sequence[str]
    ) -> list[dict[str, Any]]:
        """Events about job ``name`` and the pods ``pod_names``, oldest first (API JSON dicts).

        :param stream: the job's stream (its hook makes the read).
        :param name: the job's ``metadata.name``.
        :param uid: the job's ``metadata.uid`` (part of the key only).
        :param pod_names: its pods' names.
        :raises Exception: the hook's one-line exceptions, or :class:`TimeoutError`.
        """
        source = stream.source
        names = tuple(sorted({name, *pod_names}))

        async def load() -> list[dict[str, Any]]:
            return await quick_read(
                f"list the events of {source.kind} {source.namespace}/{name}",
                lambda: stream.hook.list_events_async(source.namespace, set(names)),
            )

        return await self.details.get(("events", source, name, uid, names), load)

    async def pod_log(self, stream: JobStream, pod: str, container: str | None, tail_lines: int) -> str:
        """The last ``tail_lines`` lines of a container's log.

        :param stream: the job's stream (its hook makes the read).
        :param pod: the pod's name (one of the job's pods: the caller checks).
        :param container: the container (None: the pod's only one).
        :param tail_lines: how many lines (count).
        :raises Exception: the hook's one-line exceptions, or :class:`TimeoutError`.
        """
        source = stream.source

        async def load() -> str:
            return await quick_read(
                f"read the log of pod {source.namespace}/{pod}",
                lambda: stream.hook.read_pod_log_async(pod, source.namespace, container, tail_lines=tail_lines),
            )

        return await self.logs.get(
            ("log", source.kubernetes_conn_id, source.namespace, pod, container, tail_lines), load
        )

    async def served_kinds(self, conn_id: str) -> dict[str, str | None]:
        """Kind -> None when the connection's cluster serves it, else why not (one line), from API discovery of
        each family's group and version (``kubeflow.org/v1``), one request each.

        :param conn_id: the cncf.kubernetes connection id.
        :raises Exception: the discovery request failed otherwise (unreachable, 401/403): the one-line exceptions
            of the hook's connection, or the client's own.
        """
        resources = {kind: family_of(kind).resource for kind in known_kinds()}

        async def load() -> dict[str, str | None]:
            served: dict[tuple[str, str], set[str]] = {}
            for r in resources.values():
                if (r.group, r.version) not in served:
                    served[r.group, r.version] = await quick_read(
                        f"discover {r.api_version} through connection {conn_id}",
                        functools.partial(_discover, conn_id, r.group, r.version),
                    )
            return {
                kind: None
                if r.plural in served[r.group, r.version]
                else kind_not_served_message(f"{r.name}/{r.version}")
                for kind, r in resources.items()
            }

        result: dict[str, str | None] = await self.lookups.get(("kinds", conn_id), load)
        return result

    async def namespace_of(self, conn_id: str) -> str:
        """The namespace of connection ``conn_id`` (:func:`settings.connection_namespace`, off the event loop).

        :param conn_id: the cncf.kubernetes connection id.
        :raises AirflowNotFoundException: no such connection.
        """

        async def load() -> str:
            return await asyncio.to_thread(settings.connection_namespace, conn_id)

        namespace: str = await self.lookups.get(("namespace", conn_id), load)
        return namespace

    async def dashboard_template(self, conn_id: str | None) -> str | None:
        """The Kubeflow dashboard URL template of ``conn_id`` (:func:`settings.dashboard_template`), or None.

        :param conn_id: the cncf.kubernetes connection id.
        """

        async def load() -> str | None:
            try:
                return await asyncio.to_thread(settings.dashboard_template, conn_id)
            except Exception:  # a missing connection has no template; the page says why it cannot read elsewhere
                return None

        template: str | None = await self.lookups.get(("dashboard", conn_id), load)
        return template

    async def close(self) -> None:
        """Stop every stream."""
        await self.streams.close()

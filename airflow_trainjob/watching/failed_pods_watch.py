"""The shared stream's pod watch: one list-then-watch of the pods of every job of a kind in a namespace, feeding
:class:`~airflow_trainjob.domain.failed_pods.FailedPodsSeen` (which keeps, of the jobs a trigger follows, the pods
that show a failed container run: what the verdict names when the controller deleted the pods with the job's
failure, before the trigger could list them).

Beside the job watch of the same :class:`~airflow_trainjob.watching.job_stream.JobStream`, on its connection: one
LIST and one WATCH per namespace and kind, however many jobs are followed, and none until a trigger follows a job.
What to do next is a :class:`~airflow_trainjob.watching.list_watch.ListWatch`'s decision on the shared stream's
rules; this module makes the requests. Best effort: a refusal (a Role without ``list``/``watch`` on pods) is a
warning, retried slowly, and never ends the job watch or a wait -- the verdict then has what it had before (the pods
listed at the failure, the ``ExitedWithCode`` events).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from airflow_trainjob.domain.failed_pods import FailedPodsSeen
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import (
    API_EXCEPTIONS,
    TRANSIENT_ERRORS,
    TRANSIENT_STATUS_CODES,
    ApiCall,
    one_line,
)
from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook
from airflow_trainjob.watching.list_watch import (
    CATCH_UP_LOOK_SECONDS,
    CATCH_UP_SECONDS,
    Action,
    ListWatch,
    ListWatchRules,
    Step,
    caught_up,
)
from airflow_trainjob.watching.stream_source import WATCH_SECONDS, StreamSource

log = logging.getLogger(__name__)

#: Pods per page of the list: each page is decoded on the event loop at once (pods are larger than the jobs' compact
#: observations; a page of 100 takes a few milliseconds), the loop runs between two pages.
PODS_PAGE_SIZE = 100
#: Seconds between two attempts after a refusal (a Role without ``list``/``watch`` on pods).
REFUSED_RETRY_SECONDS = 300.0


def pod_watch_rules(poll_interval: float) -> ListWatchRules:
    """The pod watch's rules: the shared stream's (a failed watch lists again: it may have missed a failure; the lists
    and the watches alternate while polling; a 410 that repeats slows down).

    :param poll_interval: seconds between lists while watches keep failing.
    """
    return ListWatchRules(
        poll_interval=poll_interval,
        backoff_min=1.0,
        backoff_max=30.0,
        watch_retry_polls=None,
        relist_after_failure=True,
        slow_down_on_expiry=True,
    )


class FailedPodsWatch:
    """Keeps :attr:`seen` current from the pods of ``source``'s namespace that any job of its kind owns.

    :param source: connection, namespace and kind (the job stream's).
    :param poll_interval: seconds between lists while watches keep failing.
    """

    def __init__(self, source: StreamSource, poll_interval: float = 10.0) -> None:
        family = family_of(source.kind)
        self.source = source
        self.poll_interval = poll_interval
        self.selector = family.any_job_pod_selector
        #: The failed pods kept of the followed jobs.
        self.seen = FailedPodsSeen(family)
        self._wanted = asyncio.Event()  # a job is followed: the watch runs from then on
        self._news: dict[str, list[asyncio.Event]] = {}  # job name -> set when a failed pod of it is kept
        self._warned: str | None = None
        self._unreadable: set[str] = set()  # pods told of as unreadable (by name; bounded by the pods of a namespace)
        #: The resourceVersion up to which every pod change has been taken in (a list's, then each event's), and
        #: whether that is still so (False from a failed list or watch until the next list answers).
        self.delivered: str | None = None
        self.delivered_all = False
        #: What the watch did: ``lists``, ``watches``, ``expired`` (410), ``failures``.
        self.stats: Counter[str] = Counter()

    def follow(self, name: str, news: asyncio.Event | None = None) -> None:
        """A trigger follows job ``name`` (:meth:`FailedPodsSeen.follow`); the first one starts the watch.

        :param name: the job's ``metadata.name``.
        :param news: set each time a pod of the job with a failed run is kept (a new failure, or a kept pod's later
            state: the trigger reads a failed run's log tail when it first sees it); None: nothing is told.
        """
        self.seen.follow(name)
        if news is not None:
            self._news.setdefault(name, []).append(news)
        self._wanted.set()

    def unfollow(self, name: str, news: asyncio.Event | None = None) -> None:
        """:meth:`FailedPodsSeen.unfollow`.

        :param name: the job's ``metadata.name``.
        :param news: the event :meth:`follow` was given, told no more.
        """
        self.seen.unfollow(name)
        told = self._news.get(name)
        if news is not None and told is not None and news in told:
            told.remove(news)
            if not told:
                del self._news[name]

    def _saw(self, pod: dict[str, Any], *, deleted: bool = False) -> None:
        """Take in ``pod`` (``deleted``: its final state); tell the job's followers when it was kept. A pod this
        cannot read is told once (by name) and skipped: one odd pod never stops the watch of every other."""
        try:
            kept = self.seen.saw(pod, deleted=deleted)
        except Exception as e:
            name = str(((pod.get("metadata") if isinstance(pod, dict) else None) or {}).get("name"))
            if name not in self._unreadable:
                self._unreadable.add(name)
                log.warning("Cannot read pod %s of %s (%s: %s); skipped", name, self.source, type(e).__name__, e)
            return
        if kept and self._news:
            for news in self._news.get(self.seen.family.job_name_of(pod) or "", ()):
                news.set()

    async def failed_pods(
        self,
        name: str,
        job: Mapping[str, Any] | None,
        listed: list[dict[str, Any]],
        *,
        have_failures: bool = False,
        catch_up: float = CATCH_UP_SECONDS,
    ) -> list[dict]:
        """The failed pods kept of job ``name`` (the object ``job``), once the watch has caught up with what the
        verdict needs, waiting up to ``catch_up`` seconds for it: a replica that failed just before the job did may
        not have arrived yet (two watches, two paces). Caught up: it has delivered every pod change up to ``job``'s
        version (:func:`~airflow_trainjob.watching.list_watch.reached`), or every pod it thinks alive is in
        ``listed`` (:func:`~airflow_trainjob.domain.pods.vanished_unseen`: the list has each one's state now). While
        the watch is failing, it waits only while nothing is known of a failure.

        :param name: the job's ``metadata.name``.
        :param job: the job object as the wait saw it end (:meth:`FailedPodsSeen.pods_of`; its
            ``metadata.resourceVersion``); None: any object of that name, no version to reach.
        :param listed: the pods of the job's name as listed after its end (API JSON dicts).
        :param have_failures: ``listed`` shows failed runs of the job.
        :param catch_up: the longest wait, seconds (0: none).
        """
        target = ((job or {}).get("metadata") or {}).get("resourceVersion")
        until = time.monotonic() + catch_up

        def settled() -> bool:
            if not self.delivered_all:
                return have_failures or bool(self.seen.pods_of(name, job))
            return caught_up(self.delivered, target, self.seen.alive_of(name), listed)

        while not settled() and time.monotonic() < until:
            await asyncio.sleep(CATCH_UP_LOOK_SECONDS)
        return self.seen.pods_of(name, job)

    async def keep(self, hook: AsyncTrainingJobHook) -> None:
        """Once a job is followed: list, then watch from the list's resourceVersion, forever, on ``hook``'s open
        client, as a :class:`ListWatch` says. Ends only by cancellation (the job stream's connection closes).

        :param hook: the job stream's hook, connected (:meth:`AsyncTrainingJobHook.connect`) while this runs.
        """
        await self._wanted.wait()
        policy = ListWatch(pod_watch_rules(self.poll_interval))
        call = ApiCall("list or watch", "pods", namespace=self.source.namespace, purpose="see training pods fail")
        while True:
            try:
                await self._take(policy.next_step(), policy, hook)
                continue
            except API_EXCEPTIONS as e:
                self.delivered_all = False  # changes may be missed until the next list
                if e.status == 410:
                    self.stats["expired"] += 1
                    await asyncio.sleep(policy.expired())
                    continue
                self._warn(one_line(e, call, self.source.kubernetes_conn_id))
                if e.status not in TRANSIENT_STATUS_CODES:
                    policy.failed(transient=True)  # (lists again when it tries again)
                    await asyncio.sleep(REFUSED_RETRY_SECONDS)
                    continue
            except TRANSIENT_ERRORS as e:
                self.delivered_all = False
                self._warn(one_line(e, call))
            except Exception as e:  # (a body cut short, a bug): never end unseen, the waits would lose every failure
                self.delivered_all = False
                self._warn(f"{type(e).__name__}: {e}")
            self.stats["failures"] += 1
            await asyncio.sleep(policy.failed(transient=True))

    async def _take(self, step: Step, policy: ListWatch, hook: AsyncTrainingJobHook) -> None:
        if step.action is Action.WATCH:
            started = time.monotonic()
            resource_version, delivered = await self._watch(hook, step.resource_version, policy)
            policy.saw(resource_version)
            self._warned = None
            backoff = policy.watch_ended(delivered, time.monotonic() - started)
            if policy.failures:
                await asyncio.sleep(backoff)
            return
        if step.action is Action.POLL:
            await asyncio.sleep(step.wait)
        policy.listed(await self._list(hook))

    async def _list(self, hook: AsyncTrainingJobHook) -> str:
        """Take in every pod listed, page by page; return the list's resourceVersion."""
        self.stats["lists"] += 1
        self.seen.relisting()
        token = None
        while True:
            text = await hook.list_pods_text_async(
                self.source.namespace, self.selector, limit=PODS_PAGE_SIZE, continue_token=token
            )
            page: dict[str, Any] = json.loads(text)
            for pod in page.get("items") or []:
                self._saw(pod)
            metadata = page.get("metadata") or {}
            token = metadata.get("continue")
            if not token:
                self.delivered, self.delivered_all = metadata.get("resourceVersion") or None, True
                return str(metadata.get("resourceVersion") or "")
            await asyncio.sleep(0)  # the event loop runs between two pages

    async def _watch(
        self, hook: AsyncTrainingJobHook, resource_version: str | None, policy: ListWatch
    ) -> tuple[str | None, bool]:
        """Take in every pod the watch delivers until the server ends it; return the last resourceVersion and
        whether anything arrived."""
        self.stats["watches"] += 1
        delivered = False
        events = hook.watch_pods(self.source.namespace, self.selector, resource_version, timeout_seconds=WATCH_SECONDS)
        try:
            async for event in events:
                if not isinstance(event, dict):  # a line cut short: the connection dropped mid-event
                    raise ConnectionResetError("the pod watch ended in the middle of an event")
                delivered = True
                pod = event["raw_object"]
                resource_version = (pod.get("metadata") or {}).get("resourceVersion") or resource_version
                policy.saw(resource_version)
                if event["type"] != "BOOKMARK":
                    self._saw(pod, deleted=event["type"] == "DELETED")  # a deleted pod's final state counts too
                self.delivered = resource_version
        finally:
            await events.aclose()
        return resource_version, delivered

    def _warn(self, why: str) -> None:
        """Say why the pod watch failed, once per reason in a row (it is retried; the waits go on without it)."""
        if why != self._warned:
            self._warned = why
            log.warning(
                "Cannot watch the pods of %s (%s): a failed job whose pods are gone when its trigger looks may name "
                "no replica; retrying",
                self.source,
                why,
            )

"""A failed job's verdict waits for its pods' watch to deliver what happened up to the job's ``Failed``: the job's and
the pods' are two watches, and a replica that failed just before the job did may not have arrived yet on the pods'
(the CI failure of ``tests/ui/test_e2e_try_ends.py::test_every_replica_the_task_saw_fail_is_in_the_tab[deferred]``:
the trigger's event named Worker-0, not Master-0, which failed last and made the job fail).

Without a cluster: the pure comparison of resourceVersions (:func:`list_watch.reached`), the trigger's pod watch
(:meth:`FailedPodsWatch.failed_pods`) and the synchronous wait's (:meth:`PodFeed.catch_up`), each fed by hand the way
their watch loops feed them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
import time
from typing import Any

import pytest

from airflow_trainjob.watching.failed_pods_watch import FailedPodsWatch, pod_watch_rules
from airflow_trainjob.watching.job_watch import PodFeed
from airflow_trainjob.watching.list_watch import reached
from airflow_trainjob.watching.stream_source import StreamSource
from tests.domain.test_failed_pods import pod


def test_versions_compare_as_numbers_and_anything_else_tells_nothing():
    assert reached("120", "120") is True
    assert reached("1000", "999") is True  # as numbers, not as text
    assert reached("999", "1000") is False
    assert reached(None, "5") is False  # nothing delivered yet
    assert reached("", "5") is False
    assert reached("5", None) is None
    assert reached("5", "abc") is None  # another server's opaque versions
    assert reached("a1", "a2") is None


def failed_job(resource_version: str) -> dict[str, Any]:
    return {"kind": "PyTorchJob", "metadata": {"name": "train", "uid": "u-1", "resourceVersion": resource_version}}


def watch_following_train() -> FailedPodsWatch:
    """The trigger's pod watch, following ``train``, listed at 100: both pods running."""
    watch = FailedPodsWatch(StreamSource("kubernetes_default", None, None, None, "ml", "PyTorchJob"))
    watch.follow("train")
    watch._saw(pod("Master", exit_code=None))
    watch._saw(pod("Worker", exit_code=None))
    watch.delivered, watch.delivered_all = "100", True
    return watch


def kept_replicas(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods)


async def timed(call: Any, *later: Any) -> tuple[Any, float]:
    """What ``call`` returns and the seconds it took, with ``later`` (coroutines) run beside it."""
    started = time.monotonic()
    beside = [asyncio.create_task(c) for c in later]
    result = await call
    await asyncio.gather(*beside)
    return result, time.monotonic() - started


def test_the_trigger_waits_for_the_replica_that_failed_just_before_the_job():
    """The CI failure's order: Worker-0 failed (kept); Master-0 failed, the job failed (106), the controller deleted
    both pods. The trigger's list has Worker-0 (terminating) and no Master-0, which its pod watch still has alive: it
    waits for the watch to deliver Master-0's failure and deletion (0.3 s later), not for its bound, and names both."""
    watch = watch_following_train()
    watch._saw(pod("Worker", running_after=1))
    watch.delivered = "103"

    async def deliver_later() -> None:
        await asyncio.sleep(0.3)
        watch._saw(pod("Master", running_after=1))
        watch._saw(pod("Master", running_after=1), deleted=True)
        watch.delivered = "105"  # (the deletion came before the job's Failed: the versions alone would wait on)

    listed = [pod("Worker", running_after=1)]
    call = watch.failed_pods("train", failed_job("106"), listed, have_failures=True, catch_up=10.0)
    pods, seconds = asyncio.run(timed(call, deliver_later()))
    assert kept_replicas(pods) == ["train-master-0", "train-worker-0"]
    assert 0.3 <= seconds < 5.0, seconds


def test_the_watch_reaching_the_jobs_version_ends_the_wait_too():
    watch = watch_following_train()

    async def deliver_later() -> None:
        await asyncio.sleep(0.3)
        watch._saw(pod("Master", running_after=1))
        watch.delivered = "107"

    call = watch.failed_pods("train", failed_job("106"), [], catch_up=10.0)
    pods, seconds = asyncio.run(timed(call, deliver_later()))
    assert kept_replicas(pods) == ["train-master-0"] and 0.3 <= seconds < 5.0, (pods, seconds)


def test_a_watch_that_never_catches_up_is_waited_for_no_longer_than_the_bound():
    watch = watch_following_train()
    watch._saw(pod("Worker"))
    listed = [pod("Worker")]  # Master-0 gone, its news never delivered
    pods, seconds = asyncio.run(timed(watch.failed_pods("train", failed_job("106"), listed, catch_up=0.4)))
    assert kept_replicas(pods) == ["train-worker-0"] and 0.4 <= seconds < 2.0, (pods, seconds)


@pytest.mark.parametrize(
    ("delivered", "delivered_all", "listed"),
    [
        ("110", True, []),
        ("101", True, [pod("Master"), pod("Worker", exit_code=None)]),
        ("101", False, [pod("Worker")]),
    ],
    ids=["version-reached", "every-pod-alive-is-listed", "watch-failing-failures-known"],
)
def test_no_wait_when_caught_up_or_when_the_list_tells_all(delivered, delivered_all, listed):
    """The common end of a job whose pods stay (``restartPolicy: Never``, kept by ``cleanPodPolicy``): no pod changes
    after the job's ``Failed``, the watch never reaches its version, but the list has every pod it knows: no wait."""
    watch = watch_following_train()
    watch.delivered, watch.delivered_all = delivered, delivered_all
    call = watch.failed_pods("train", failed_job("106"), listed, have_failures=True, catch_up=10.0)
    assert asyncio.run(timed(call))[1] < 0.5


def test_a_pod_created_again_under_its_name_counts_as_gone():
    """Master-0 deleted and created again (``restartPolicy: ExitCode``): the list's Master-0 is another uid; the watch's
    is still the first one, whose failure may be on its way."""
    watch = watch_following_train()
    again = pod("Master", exit_code=None)
    again["metadata"]["uid"] = "pod-train-Master-0-again"
    listed = [again, pod("Worker", exit_code=None)]
    assert asyncio.run(timed(watch.failed_pods("train", failed_job("106"), listed, catch_up=0.3)))[1] >= 0.3


def test_while_the_watch_fails_it_waits_only_while_no_failure_is_known():
    """The earlier rule, where the watch cannot be trusted to catch up: a failure listed or kept ends the wait at once;
    none known waits for the first one the watch delivers."""
    watch = watch_following_train()
    watch.delivered_all = False

    async def deliver_later() -> None:
        await asyncio.sleep(0.3)
        watch._saw(pod("Master"))

    pods, seconds = asyncio.run(
        timed(watch.failed_pods("train", failed_job("106"), [], catch_up=10.0), deliver_later())
    )
    assert kept_replicas(pods) == ["train-master-0"] and 0.25 <= seconds < 5.0, (pods, seconds)


class ListingHook:
    """What the feed's catch-up lists: the pods as the test says they are now."""

    def __init__(self) -> None:
        self.now: list[dict[str, Any]] = []

    def list_job_pods(self, name: str, namespace: str, kind: str) -> list[dict[str, Any]]:
        return list(self.now)


class HandFedFeed(PodFeed):
    """A pod feed whose thread takes what the test hands it (a version, the pods the watch has then), as its watch
    loop would."""

    def __init__(self) -> None:
        job = {"kind": "PyTorchJob", "metadata": {"name": "train", "namespace": "ml"}}
        self.changes: list[list[dict[str, Any]]] = []
        self.hook = ListingHook()
        super().__init__(self.hook, job, on_change=self.changes.append, poll_interval=10.0, log=logging.getLogger())
        self.hand: list[tuple[str, list[dict[str, Any]]]] = []
        self.fed = threading.Event()
        self.done = threading.Event()
        self.watch.watching = True  # its watch answered

    def run(self) -> None:
        while not self.done.is_set():
            self.fed.wait(0.05)
            while self.hand:
                version, pods = self.hand.pop(0)
                time.sleep(0.05)  # on_change takes a moment: the version counts once it returned
                self._changed(pods)
                self._delivered = version
            self.fed.clear()

    def feed(self, version: str, pods: list[dict[str, Any]]) -> None:
        self.hand.append((version, pods))
        self.fed.set()


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_the_synchronous_wait_waits_for_its_pods_watch_to_deliver_what_the_list_lacks():
    feed = HandFedFeed()
    feed.start()
    try:
        running = [pod("Master", exit_code=None), pod("Worker", exit_code=None)]
        feed.feed("101", running)
        feed.feed("103", [running[0], pod("Worker", running_after=1)])
        feed.hook.now = [pod("Worker", running_after=1)]  # listed after the job's Failed (106): Master-0 is gone

        def deliver_later() -> None:
            time.sleep(0.3)
            feed.feed("104", [pod("Master", running_after=1), pod("Worker", running_after=1)])
            feed.feed("105", [pod("Worker", running_after=1)])  # Master-0 deleted

        time.sleep(0.3)
        threading.Thread(target=deliver_later, daemon=True).start()
        started = time.monotonic()
        assert feed.catch_up("106", timeout=10.0) is True
        seconds = time.monotonic() - started
        assert 0.3 <= seconds < 5.0, seconds
        assert names(feed.changes[2]) == ["train-worker-0"]  # the list, handed to on_change first
        assert names(feed.changes[3]) == ["train-master-0", "train-worker-0"]  # then the watch's late news
        assert names(feed.pods() or []) == ["train-worker-0"]  # the list did not replace the watch's view

        feed.feed("110", running)
        time.sleep(0.3)
        feed.hook.now = [running[1]]
        started = time.monotonic()
        assert feed.catch_up("200", timeout=0.3) is False  # never caught up: the bound ends it
        assert 0.3 <= time.monotonic() - started < 2.0
        feed.hook.now = running
        assert feed.catch_up("200", timeout=10.0) is True  # the list has every pod the watch has: at once
        feed.watch.watching = False  # the looks LIST the pods: nothing to wait for
        assert feed.catch_up("200", timeout=10.0) is None
    finally:
        feed.done.set()
        feed.join(5)


def test_a_pod_the_watch_cannot_read_is_skipped_and_told_once(caplog):
    watch = watch_following_train()
    odd = pod("Master")
    odd["status"]["containerStatuses"] = [{"name": "pytorch", "state": "not a mapping"}]
    with caplog.at_level(logging.WARNING):
        watch._saw(odd)
        watch._saw(odd)
        watch._saw(pod("Worker"))
    assert kept_replicas(watch.seen.pods_of("train", None)) == ["train-worker-0"]
    told = [r.getMessage() for r in caplog.records if "Cannot read pod" in r.getMessage()]
    assert len(told) == 1 and "train-master-0" in told[0], told


class FlakyPodsHook:
    """Lists the pods; the first list's answer is cut short (not JSON)."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.pods, self.lists = pods, 0

    async def list_pods_text_async(self, namespace: str, selector: str, *, limit: int, continue_token: Any) -> str:
        self.lists += 1
        if self.lists == 1:
            return '{"items": [{"metadata"'
        return json.dumps({"metadata": {"resourceVersion": "120"}, "items": self.pods})

    async def watch_pods(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(3600)
        yield {}


def test_an_unexpected_failure_never_ends_the_pod_watch(monkeypatch, caplog):
    """A list whose answer is cut short raised a ValueError, which ended the watch for good, unseen: every later
    failure of every followed job went unkept. It is told, and the watch lists again."""
    monkeypatch.setattr("airflow_trainjob.watching.failed_pods_watch.pod_watch_rules", fast_rules)
    watch = watch_following_train()
    hook = FlakyPodsHook([pod("Master")])

    async def run() -> list[str]:
        keeping = asyncio.create_task(watch.keep(hook))
        try:
            for _ in range(100):
                if watch.seen.pods_of("train", None):
                    break
                await asyncio.sleep(0.05)
            return kept_replicas(watch.seen.pods_of("train", None))
        finally:
            keeping.cancel()

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(run()) == ["train-master-0"]
    assert hook.lists == 2 and watch.delivered == "120" and watch.delivered_all
    assert any(
        "Cannot watch the pods" in r.getMessage() and "JSONDecodeError" in r.getMessage() for r in caplog.records
    )


def fast_rules(poll_interval: float) -> Any:
    """The pod watch's own rules, with its waits cut to 10 ms."""
    return dataclasses.replace(pod_watch_rules(poll_interval), poll_interval=0.01, backoff_min=0.01, backoff_max=0.01)

"""The UI's reads of the cluster against the local apiserver, counted at a proxy in front of it: one list and one
watch per (connection, namespace, kind) however many readers, one request per coalesced read however many readers
(errors included), idle streams stopped, kinds the cluster does not serve told apart."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.ui.cache import UI_READ_TIMEOUT_SECONDS, Coalescer, StreamRegistry, UiCache, ui_source
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.fault_proxy import Fault, FaultProxy
from tests.support.faults import start_proxy
from tests.support.jobs import SLEEP, create

CONN = "kubernetes_default"
#: Prints a line the log tail must show, then runs for longer than any test here.
PRINT_THEN_SLEEP = "print('step 1 loss 0.25', flush=True); import time; time.sleep(120)"


@pytest.fixture
def counting_proxy(local_cluster, namespace, monkeypatch, tmp_path):
    """The fault proxy as a request counter: ``kubernetes_default`` reaches the cluster through it (the test's
    namespace), so every request the UI's cache makes is in ``proxy.requests``; the tests' own client goes direct."""
    proxy = start_proxy(local_cluster, tmp_path / "proxy")
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", proxy.airflow_connection(local_cluster.kubeconfig, namespace))
    yield proxy
    proxy.stop()


def count(proxy: FaultProxy, path: str, *, watch: bool = False, method: str = "GET") -> int:
    """Requests that reached the proxy whose path matches ``path`` (a regular expression, searched)."""
    return sum(
        1 for r in list(proxy.requests) if r["method"] == method and r["watch"] is watch and re.search(path, r["path"])
    )


def running_pod(core_v1, namespace: str, job_name: str, printed: str | None = None) -> str:
    """The name of the job's first pod once it runs (and, when given, once its log shows ``printed``)."""

    def read():
        found = core_v1.list_namespaced_pod(
            namespace, label_selector=f"training.kubeflow.org/job-name={job_name}"
        ).items
        return [p for p in found if p.status.phase == "Running"]

    name = wait_for(read, what=f"a running pod of {job_name}")[0].metadata.name
    if printed:
        wait_for(lambda: core_v1.read_namespaced_pod_log(name, namespace), lambda text: printed in text, what="its log")
    return name


@pytest.mark.usefixtures("counting_proxy")
def test_one_list_and_one_watch_per_key_however_many_readers(counting_proxy, namespace, custom_objects):
    create(custom_objects, namespace, "ui-one", SLEEP)

    async def main():
        cache = UiCache()
        try:
            first = await asyncio.gather(*(cache.stream(CONN, namespace, "PyTorchJob") for _ in range(25)))
            stream = first[0]
            assert all(s is stream for s in first) and stream.synced and "ui-one" in stream.jobs
            # A job made later reaches every reader through the watch, not through another list.
            await asyncio.to_thread(create, custom_objects, namespace, "ui-two", SLEEP)
            deadline = time.monotonic() + 30
            while "ui-two" not in stream.jobs and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            later = await asyncio.gather(*(cache.stream(CONN, namespace, "PyTorchJob") for _ in range(25)))
            assert all(s is stream for s in later) and "ui-two" in stream.jobs
            other = await cache.stream(CONN, namespace, "TFJob")  # another key: a stream of its own
            assert other is not stream and other.synced and other.jobs == {}
        finally:
            await cache.close()
        return dict(cache.streams.stats), dict(stream.stats)

    registry_stats, stream_stats = asyncio.run(main())
    jobs_path = rf"/namespaces/{namespace}/pytorchjobs$"
    assert count(counting_proxy, jobs_path) == 1, "one LIST for 50 readers"
    assert count(counting_proxy, jobs_path, watch=True) == 1, "one WATCH for 50 readers"
    assert count(counting_proxy, rf"/namespaces/{namespace}/tfjobs$") == 1
    assert registry_stats == {"started": 2, "stopped": 2}  # close() stopped both
    assert (stream_stats["lists"], stream_stats["watches"]) == (1, 1)


def test_reads_of_pods_events_and_logs_are_coalesced(counting_proxy, namespace, custom_objects, core_v1):
    create(custom_objects, namespace, "ui-pods", PRINT_THEN_SLEEP)
    pod = running_pod(core_v1, namespace, "ui-pods", printed="step 1")

    async def main():
        cache = UiCache(detail_ttl=1.0)
        try:
            stream = await cache.stream(CONN, namespace, "PyTorchJob")
            uid = stream.jobs["ui-pods"]["metadata"]["uid"]
            pods = await asyncio.gather(*(cache.job_pods(stream, "ui-pods", uid) for _ in range(10)))
            assert all(p == pods[0] for p in pods) and [p["metadata"]["name"] for p in pods[0]] == [pod]
            assert await cache.job_pods(stream, "ui-pods", uid) == pods[0]  # within the TTL: no request
            events = await asyncio.gather(*(cache.job_events(stream, "ui-pods", uid, [pod]) for _ in range(10)))
            assert all(e == events[0] for e in events) and events[0], "the kubelet's and controller's events"
            logs = await asyncio.gather(*(cache.pod_log(stream, pod, "pytorch", 50) for _ in range(10)))
            assert all(text == logs[0] for text in logs) and "step 1 loss 0.25" in logs[0]
            await asyncio.sleep(1.1)
            await cache.job_pods(stream, "ui-pods", uid)  # the answer expired: read again
            return dict(cache.details.stats), dict(cache.logs.stats)
        finally:
            await cache.close()

    details, logs = asyncio.run(main())
    assert count(counting_proxy, rf"/namespaces/{namespace}/pods$") == 2, "10 readers + 1 in the TTL, then 1"
    assert count(counting_proxy, rf"/namespaces/{namespace}/events$") == 1
    assert count(counting_proxy, rf"/namespaces/{namespace}/pods/{pod}/log$") == 1
    assert details == {"loads": 3, "joined": 18, "hits": 1}
    assert logs == {"loads": 1, "joined": 9}


@pytest.mark.usefixtures("fast_backoff")
def test_a_failing_read_is_made_once_for_every_reader_and_its_line_reused(counting_proxy, namespace, custom_objects):
    create(custom_objects, namespace, "ui-broken", SLEEP)
    broken = counting_proxy.add(
        Fault("status", method="GET", path=rf"/namespaces/{namespace}/pods$", status=500, times=None)
    )

    async def main():
        cache = UiCache(detail_ttl=5.0)
        try:
            stream = await cache.stream(CONN, namespace, "PyTorchJob")
            uid = stream.jobs["ui-broken"]["metadata"]["uid"]
            got = await asyncio.gather(
                *(cache.job_pods(stream, "ui-broken", uid) for _ in range(10)), return_exceptions=True
            )
            again = await asyncio.gather(
                *(cache.job_pods(stream, "ui-broken", uid) for _ in range(5)), return_exceptions=True
            )
            return got + again
        finally:
            await cache.close()

    errors = asyncio.run(main())
    assert all(isinstance(e, Exception) for e in errors)
    assert len({str(e) for e in errors}) == 1
    line = str(errors[0])
    assert "\n" not in line and "500" in line and "pods" in line
    attempts = counting_proxy.hits(broken)
    assert attempts == 1, "ONE read however many readers, and a page's read is not retried (no_retries)"


def test_a_read_of_an_unreachable_cluster_fails_at_once_with_its_cause(counting_proxy, namespace, custom_objects):
    """The cluster goes away (the proxy, its address, stops): the next read of pods fails at its first attempt,
    saying why (the connection refused, not a bare TimeoutError), and the cache notes since when."""
    create(custom_objects, namespace, "ui-away", SLEEP)

    async def main():
        cache = UiCache()
        try:
            stream = await cache.stream(CONN, namespace, "PyTorchJob")
            uid = stream.jobs["ui-away"]["metadata"]["uid"]
            await asyncio.to_thread(counting_proxy.stop)
            try:
                await cache.job_pods(stream, "ui-away", uid)
            except Exception as e:
                return one_line(e), cache.details.stats["loads"]
            raise AssertionError("the read of an unreachable cluster succeeded")
        finally:
            await cache.close()

    line, loads = asyncio.run(main())
    assert "Cannot connect to host 127.0.0.1" in line and "TimeoutError" not in line, line
    assert "\n" not in line and "token" not in line.lower()
    assert loads == 1


def test_a_read_without_an_answer_gives_up_after_the_ui_timeout(counting_proxy, namespace, custom_objects):
    """An apiserver that takes the request and never answers: the page's read gives up after UI_READ_TIMEOUT_SECONDS
    (not the task's request timeout and retries), and its message says what it waited for."""
    create(custom_objects, namespace, "ui-slow", SLEEP)
    counting_proxy.add(Fault("delay", method="GET", path=rf"/namespaces/{namespace}/pods$", seconds=60, times=None))

    async def main():
        cache = UiCache()
        try:
            stream = await cache.stream(CONN, namespace, "PyTorchJob")
            uid = stream.jobs["ui-slow"]["metadata"]["uid"]
            with pytest.raises(TimeoutError) as raised:
                await cache.job_pods(stream, "ui-slow", uid)
            return str(raised.value)
        finally:
            await cache.close()

    message = asyncio.run(main())
    assert message == (
        f"no answer from the cluster within {UI_READ_TIMEOUT_SECONDS:g} s "
        f"(to list the pods of PyTorchJob {namespace}/ui-slow)"
    )
    assert counting_proxy.hits() >= 1


def test_unreadable_since_the_first_failure_in_a_row_until_a_read_succeeds():
    cache = UiCache()
    source = ui_source(CONN, "ml", "PyTorchJob")
    first, later = datetime(2026, 12, 2, 5, 0, tzinfo=timezone.utc), datetime(2026, 12, 2, 5, 1, tzinfo=timezone.utc)
    assert cache.unreadable_since(source, True, first) == first
    assert cache.unreadable_since(source, True, later) == first, "since the first failure of the run"
    assert cache.unreadable_since((source, "other-job"), False, later) is None, "each key on its own"
    assert cache.unreadable_since(source, False, later) is None
    assert cache.unreadable_since(source, True, later) == later


def test_an_idle_stream_stops_and_a_new_reader_starts_it_again(counting_proxy, namespace):
    async def main():
        cache = UiCache(StreamRegistry(idle_seconds=0.5))
        try:
            await cache.stream(CONN, namespace, "PyTorchJob")
            assert len(cache.streams.sources()) == 1
            deadline = time.monotonic() + 10
            while cache.streams.sources() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert cache.streams.sources() == [] and cache.streams.stats["stopped"] == 1
            await cache.stream(CONN, namespace, "PyTorchJob")
            return dict(cache.streams.stats)
        finally:
            await cache.close()

    stats = asyncio.run(main())
    assert stats["started"] == 2
    assert count(counting_proxy, rf"/namespaces/{namespace}/pytorchjobs$") == 2


def test_served_kinds_from_discovery_once_per_lookup_ttl(counting_proxy):
    async def served():
        cache = UiCache()
        try:
            return [await cache.served_kinds(CONN) for _ in range(5)][-1]
        finally:
            await cache.close()

    assert asyncio.run(served()) == dict.fromkeys(
        ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
    )
    assert count(counting_proxy, r"^/apis/kubeflow.org/v1$") == 1

    counting_proxy.add(Fault("status", method="GET", path=r"^/apis/kubeflow.org/v1$", status=404, times=None))
    missing = asyncio.run(served())
    assert missing["PyTorchJob"] == (
        "the cluster does not serve pytorchjobs.kubeflow.org/v1 — is the Kubeflow training operator installed?"
    )
    assert all(missing.values())


def test_an_error_is_reused_for_error_ttl_only_an_answer_for_ttl():
    """A lookup that failed (the cluster unreachable) is tried again soon, not after the lookup TTL of a minute."""
    answers: list[Any] = [ConnectionRefusedError("Cannot connect"), "served", "never read"]

    async def load() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def main() -> list[Any]:
        lookups: Coalescer[str] = Coalescer(ttl=60.0, error_ttl=0.05)
        first = await asyncio.gather(lookups.get("kinds", load), return_exceptions=True)
        await asyncio.sleep(0.1)
        return [*first, await lookups.get("kinds", load), await lookups.get("kinds", load), lookups.stats["loads"]]

    failed, served, reused, loads = asyncio.run(main())
    assert isinstance(failed, ConnectionRefusedError)
    assert (served, reused, loads) == ("served", "served", 2)

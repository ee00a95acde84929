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
import yaml

from airflow_trainjob.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    LABEL_POD_TOKEN,
    RUNTIME_PATCH_MANAGER,
    TRAINER_GROUP,
    TRAINER_VERSION,
)
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.families import family_of
from airflow_trainjob.hooks.api_errors import one_line
from airflow_trainjob.ui import routes, settings, views
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
        # Idle after 3 s: on a loaded machine the first read alone took longer than a shorter limit.
        cache = UiCache(StreamRegistry(idle_seconds=3))
        try:
            await cache.stream(CONN, namespace, "PyTorchJob")
            assert len(cache.streams.sources()) == 1
            deadline = time.monotonic() + 30
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
        ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "TrainJob")
    )
    assert count(counting_proxy, r"^/apis/kubeflow.org/v1$") == 1
    assert count(counting_proxy, r"^/apis/trainer.kubeflow.org/v1alpha1$") == 1

    counting_proxy.add(Fault("status", method="GET", path=r"^/apis/kubeflow.org/v1$", status=404, times=None))
    missing = asyncio.run(served())
    assert missing["PyTorchJob"] == (
        "the cluster does not serve pytorchjobs.kubeflow.org/v1 — is the Kubeflow training operator installed?"
    )
    assert all(why for kind, why in missing.items() if kind != "TrainJob") and missing["TrainJob"] is None
    # A cluster without Trainer v2: TrainJob alone is not served, each v1 kind is.
    counting_proxy.clear()
    counting_proxy.add(
        Fault("status", method="GET", path=r"^/apis/trainer.kubeflow.org/v1alpha1$", status=404, times=None)
    )
    no_trainer = asyncio.run(served())
    assert no_trainer["TrainJob"] and "trainjobs.trainer.kubeflow.org/v1alpha1" in no_trainer["TrainJob"]
    assert [kind for kind, why in no_trainer.items() if why] == ["TrainJob"]


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


# --- a TrainJob (Kubeflow Trainer v2) on the local cluster's torch-distributed runtime ------------------------------

TRAINJOB = "ui-tj"
#: What each node runs: a line, a short wait (the test reads the job while it runs), then a clean exit.
NODE_CODE = "print('node up', flush=True); import time; time.sleep(12)"
OWNER = TaskInstanceIdentity("trainjob_dag", "train", "manual__1", -1, 1)
TOKEN = "tok-0123456789abcdef"
#: ``status.trainerStatus`` as a trainer with its ``TrainJobStatus`` feature gate reports it.
PROGRESS = {
    "progressPercentage": 40,
    "estimatedRemainingSeconds": 18,
    "metrics": [{"name": "loss", "value": "0.31"}],
    "lastUpdatedTime": "2026-12-07T10:00:00Z",
}


def provider_trainjob(namespace: str) -> dict[str, Any]:
    """A TrainJob as the provider makes one: the task instance's labels and identity annotations, its pod token as an
    annotation and, through the provider's runtime patch, as a label on every pod of its ``node`` step."""
    pod_labels = {**OWNER.labels(), LABEL_POD_TOKEN: TOKEN}
    node_patch = {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": pod_labels}}}}}
    return {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
        "kind": "TrainJob",
        "metadata": {
            "name": TRAINJOB,
            "namespace": namespace,
            "labels": OWNER.labels(),
            "annotations": {
                ANNOTATION_DAG_ID: OWNER.dag_id,
                ANNOTATION_TASK_ID: OWNER.task_id,
                ANNOTATION_RUN_ID: OWNER.run_id,
                ANNOTATION_MAP_INDEX: "-1",
                ANNOTATION_TRY_NUMBER: "1",
                LABEL_POD_TOKEN: TOKEN,
            },
        },
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": 2, "command": ["python", "-c", NODE_CODE]},
            "runtimePatches": [
                {
                    "manager": RUNTIME_PATCH_MANAGER,
                    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node_patch]}}},
                }
            ],
        },
    }


def predecessors_pod(namespace: str) -> dict[str, Any]:
    """A pod left by an earlier TrainJob of the same name (its JobSet's labels, node 0, no pod token), made first."""
    labels = {
        "jobset.sigs.k8s.io/jobset-name": TRAINJOB,
        "jobset.sigs.k8s.io/replicatedjob-name": "node",
        "batch.kubernetes.io/job-completion-index": "0",
    }
    container = {"name": "node", "image": "python:3.11", "command": ["python", "-c", "import time; time.sleep(120)"]}
    return {"metadata": {"name": f"{TRAINJOB}-node-0-0-old", "labels": labels}, "spec": {"containers": [container]}}


def trainjob_record(made: dict[str, Any]) -> dict[str, Any]:
    """The try's record as the operator's recorder writes it when it creates the TrainJob."""
    meta = made["metadata"]
    return {
        "try_number": 1,
        "kubernetes_conn_id": CONN,
        "kind": "TrainJob",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "created_at": meta["creationTimestamp"],
        "attached": False,
        "manifest_yaml": yaml.safe_dump(provider_trainjob(meta["namespace"])),
        "final": None,
    }


async def page_and_tab(cache: UiCache, namespace: str, record: dict[str, Any]) -> tuple[dict, dict, dict]:
    """What the jobs page and the Training job tab answer for the TrainJob (the routes' own steps, without Airflow's
    auth): its row, the source's entry, and the try's view."""
    entry, found = await routes._read_source(cache, settings.UiSource(CONN, namespace))
    rows = [views.job_row(routes._plain(job), identity, datetime.now(timezone.utc)) for job, identity in found.values()]
    t = routes._Try(record, OWNER)
    await t.look(cache)
    tab = await routes._try_view(cache, t, {}, latest=True, now=datetime.now(timezone.utc))
    (row,) = [r for r in rows if r["kind"] == "TrainJob"]
    return row, entry, tab


async def lead_log(cache: UiCache, record: dict[str, Any]) -> dict[str, Any]:
    """What the log route answers by default for the TrainJob: its lead pod's log (the route's own steps)."""
    t = routes._Try(record, OWNER)
    await t.look(cache)
    family = family_of("TrainJob")
    live_pods = await routes._live_pods(cache, t)
    lead = routes._lead_pod_name(t, family, live_pods, [])
    pod = next(p for p in live_pods if p["metadata"]["name"] == lead)
    answer: dict[str, Any] = {"pod": lead, "container": None, "lines": [], "running": False, "available": False}
    assert t.stream is not None
    return await routes._live_log(cache, t.stream, pod, family, answer, 50, t.errors)


def test_a_trainjob_reads_through_the_cache_as_its_row_and_its_tab_without_a_predecessors_pod(
    counting_proxy, namespace, custom_objects, core_v1
):
    core_v1.create_namespaced_pod(namespace, predecessors_pod(namespace))
    made = custom_objects.create_namespaced_custom_object(
        TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", provider_trainjob(namespace)
    )
    record = trainjob_record(made)

    def running_nodes() -> list[Any]:
        found = core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_POD_TOKEN}={TOKEN}").items
        return [p for p in found if p.status.phase == "Running"]

    wait_for(running_nodes, lambda found: len(found) == 2, timeout=120, what="both nodes of the TrainJob to run")
    # The local trainer has no TrainJobStatus feature: write trainerStatus as a trainer with it would (its status
    # writes are merge patches, so it keeps this).
    custom_objects.patch_namespaced_custom_object_status(
        TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", TRAINJOB, {"status": {"trainerStatus": PROGRESS}}
    )

    async def main() -> tuple[tuple[dict, dict, dict], tuple[dict, dict, dict], dict]:
        cache = UiCache(detail_ttl=0.5)
        try:
            running = await page_and_tab(cache, namespace, record)
            log = await lead_log(cache, record)
            deadline = time.monotonic() + 30
            while running[0]["progress"] is None and time.monotonic() < deadline:  # the watch brings the patch
                await asyncio.sleep(0.2)
                running = await page_and_tab(cache, namespace, record)
            deadline = time.monotonic() + 120
            while True:  # until the stream has seen it complete
                await asyncio.sleep(1.0)
                done = await page_and_tab(cache, namespace, record)
                if done[0]["phase"] in ("Complete", "Failed") or time.monotonic() > deadline:
                    return running, done, log
        finally:
            await cache.close()

    (row, entry, tab), (done_row, _, done_tab), log = asyncio.run(main())
    assert entry["error"] is None and entry["skipped_kinds"] == [], entry
    assert (row["kind"], row["name"], row["runtime"], row["nodes"]) == ("TrainJob", TRAINJOB, "torch-distributed", 2)
    assert (row["dag_id"], row["task_id"], row["try_number"]) == ("trainjob_dag", "train", 1)
    assert row["phase"] in ("Created", "Running"), row
    assert [s["name"] for s in row["steps"]] == ["node"] and row["steps"][0]["nodes"] == 2
    shown_progress = {
        "percentage": 40,
        "estimated_remaining_seconds": 18,
        "metrics": [{"name": "loss", "value": "0.31"}],
        "last_updated_time": "2026-12-07T10:00:00Z",
    }
    assert row["progress"] == shown_progress and tab["progress"] == shown_progress
    # the tab: the two nodes' pods, never the predecessor's, node 0 leading; the steps in place of replica counts
    assert tab["error"] is None and tab["exists"] and tab["source"] == "live", tab["error"]
    assert sorted((r["replica_type"], r["index"], r["lead"]) for r in tab["replicas"]) == [
        ("node", 0, True),
        ("node", 1, False),
    ]
    assert f"{TRAINJOB}-node-0-0-old" not in {r["pod"] for r in tab["replicas"]}
    assert tab["replica_counts"] == {} and [s["name"] for s in tab["steps"]] == ["node"]
    assert tab["refresh_seconds"] == 5
    # the log route's default: node 0's container node, of this TrainJob's pod
    lead = next(r["pod"] for r in tab["replicas"] if r["lead"])
    assert (log["pod"], log["container"], log["available"]) == (lead, "node", True), log
    assert "node up" in log["lines"]
    # complete: the row and the tab say so, in the family's word, and stop refreshing
    assert (done_row["phase"], done_row["reason"]) == ("Complete", "AllJobsCompleted"), done_row
    assert done_row["steps"][0]["succeeded"] == 1 and done_row["steps"][0]["text"] == "1 succeeded"
    assert (done_tab["phase"], done_tab["badge"], done_tab["refresh_seconds"]) == ("Complete", "Complete", None)
    assert done_tab["summary"].startswith("Complete (AllJobsCompleted")
    assert {r["phase"] for r in done_tab["replicas"]} == {"Succeeded"} and len(done_tab["replicas"]) == 2
    assert not any(r["failed"] for r in done_tab["replicas"])

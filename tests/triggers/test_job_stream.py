"""The shared stream, driven by Airflow's own ``SharedStreamManager`` as the triggerer drives it, against the
local apiserver: one watch per (connection, namespace, kind), whatever the number of triggers."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid

import pytest
from airflow.triggers.shared_stream import SharedStreamManager

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.models.job import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.triggers.training_job import DELETED, FINISHED, TIMED_OUT, TrainingJobTrigger
from airflow_trainjob.watching.job_stream import StreamSource
from airflow_trainjob_local.testing.plugin import TEST_NAMESPACE_LABEL
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import in_triggerer, synced_stream
from tests.support.jobs import EXIT_1, OK, SLEEP, create, pytorch_specs

NAMESPACED_WATCHES = re.compile(
    r'^apiserver_longrunning_gauge\{(?=[^}]*resource="pytorchjobs")(?=[^}]*scope="namespace")(?=[^}]*verb="WATCH")'
    r"[^}]*\} (\S+)$",
    re.M,
)


def open_namespaced_watches(api_client) -> int:
    """The apiserver's own count of open namespace-scoped PyTorchJob watches. The controller and the garbage
    collector watch cluster-wide, so only triggers' streams count here."""
    resp = api_client.call_api(
        "/metrics", "GET", auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=True
    )
    found = NAMESPACED_WATCHES.search(resp.data.decode())
    return int(float(found.group(1))) if found else 0


def trigger_for(name: str, namespace: str, **kwargs) -> TrainingJobTrigger:
    return TrainingJobTrigger(kind="PyTorchJob", name=name, namespace=namespace, **kwargs)


def test_triggers_on_one_source_share_one_key_and_others_do_not():
    base = trigger_for("a", "ml", uid="1", started_at=1.0, timeout=4.0)
    assert (
        base.shared_stream_key()
        == trigger_for("b", "ml", uid="2", startup_timeout=9.0, target_conditions=["Running"]).shared_stream_key()
    )
    assert base.shared_stream_key() == StreamSource("kubernetes_default", None, None, None, "ml", "PyTorchJob")
    others = [
        trigger_for("a", "other"),
        TrainingJobTrigger(kind="TFJob", name="a", namespace="ml"),
        trigger_for("a", "ml", kubernetes_conn_id="prod"),
        trigger_for("a", "ml", cluster_context="ctx"),
    ]
    assert len({base.shared_stream_key(), *(t.shared_stream_key() for t in others)}) == 5
    hash(base.shared_stream_key())  # the triggerer keys a dict with it


@pytest.mark.alone  # counts the apiserver's open namespaced watches: another test's trigger would be counted
@pytest.mark.usefixtures("kubernetes_default_conn")
def test_many_jobs_two_namespaces_two_watches(namespace, core_v1, custom_objects, kube_api_client, tmp_path):
    other = f"{namespace[:50]}-b"
    core_v1.create_namespace({"metadata": {"name": other, "labels": {TEST_NAMESPACE_LABEL: "true"}}})
    finish = tmp_path / "finish"
    try:
        # Still running once the streams are up and counted, however long that takes on a loaded machine.
        wait = (
            f"import os, time\nend = time.time() + 300\n"
            f"while not os.path.exists({str(finish)!r}) and time.time() < end: time.sleep(0.1)\nprint('ok')"
        )
        names = {f"ok-{i}": namespace for i in range(4)} | {"fails": namespace, "ok-b": other}
        for name, ns in names.items():
            create(custom_objects, ns, name, EXIT_1 if name == "fails" else wait)
        before = open_namespaced_watches(kube_api_client)

        async def main():
            manager = SharedStreamManager()
            tasks = [
                asyncio.create_task(in_triggerer(manager, i, trigger_for(name, ns)))
                for i, (name, ns) in enumerate(names.items())
            ]
            deadline = time.monotonic() + 60  # starting a stream takes a while on a loaded machine (issue 14)
            during = before
            while during - before < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.25)
                during = await asyncio.to_thread(open_namespaced_watches, kube_api_client)
            await asyncio.sleep(0.5)  # and no third one opens
            during = await asyncio.to_thread(open_namespaced_watches, kube_api_client)
            finish.touch()
            events = await asyncio.wait_for(asyncio.gather(*tasks), 90)
            return during, dict(zip(names, events, strict=False))

        during, events = asyncio.run(main())
        assert during - before == 2  # six triggers, two namespaces: two watches
        assert {n: e["outcome"] for n, e in events.items()} == dict.fromkeys(names, FINISHED)
        assert all("Succeeded" in events[n]["message"] and events[n]["pods"] == [] for n in names if n != "fails")
        failed = events["fails"]
        assert "Failed" in failed["message"] and failed["job"]["status"]["replicaStatuses"]
        assert [p["metadata"]["name"] for p in failed["pods"]] == ["fails-master-0"]
        json.dumps(events)  # the payloads are what the triggerer persists: JSON
        # The last trigger out closes its stream.
        wait_for(lambda: open_namespaced_watches(kube_api_client), done=lambda n: n == before, what="watches closed")
    finally:
        core_v1.delete_namespace(other)


@pytest.mark.usefixtures("kubernetes_default_conn")
def test_a_trigger_joining_a_running_stream_reads_its_finished_job_at_once(namespace, custom_objects):
    create(custom_objects, namespace, "long", SLEEP)
    create(custom_objects, namespace, "done", OK)
    wait_for(
        lambda: custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", "done"),
        done=lambda j: any(c["type"] == "Succeeded" for c in (j.get("status") or {}).get("conditions") or []),
        what="the job 'done' succeeded",
    )

    async def main():
        manager = SharedStreamManager()
        waiting = asyncio.create_task(in_triggerer(manager, 1, trigger_for("long", namespace)))
        stream = await synced_stream(trigger_for("long", namespace))
        lists = stream.stats["lists"]
        joined = time.time()
        event = await asyncio.wait_for(in_triggerer(manager, 2, trigger_for("done", namespace)), 10)
        still_waiting = not waiting.done()
        waiting.cancel()
        return event, event["fired_at"] - joined, stream.stats["lists"] - lists, still_waiting

    event, seconds, extra_lists, still_waiting = asyncio.run(main())
    assert event["outcome"] == FINISHED and "Succeeded" in event["message"]
    assert seconds < 1.0 and extra_lists == 0  # read from the cache, not from a list or a change of its own
    assert still_waiting  # its neighbour's event did not end the other trigger's wait


@pytest.mark.usefixtures("kubernetes_default_conn")
def test_job_created_after_the_list_is_not_mistaken_for_deleted(namespace, custom_objects):
    create(custom_objects, namespace, "first", SLEEP)

    async def main():
        manager = SharedStreamManager()
        first = asyncio.create_task(in_triggerer(manager, 1, trigger_for("first", namespace)))
        await synced_stream(trigger_for("first", namespace))
        # As the operator does: create, then defer at once, before the watch can have delivered the creation.
        job = await asyncio.to_thread(create, custom_objects, namespace, "second", EXIT_1)
        event = await asyncio.wait_for(
            in_triggerer(manager, 2, trigger_for("second", namespace, uid=job["metadata"]["uid"])), 60
        )
        first.cancel()
        return event

    event = asyncio.run(main())
    assert event["outcome"] == FINISHED and "Failed" in event["message"]


def _status(phase: str) -> dict:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [
        {"type": "Created", "status": "True", "lastTransitionTime": now},
        {"type": "Running", "status": "True" if phase == "Running" else "False", "lastTransitionTime": now},
    ]
    if phase == "Succeeded":
        conditions.append(
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded", "lastTransitionTime": now}
        )
    return {"status": {"conditions": conditions}}


def test_apiserver_stopped_and_restarted_mid_wait(kubernetes_only_cluster, monkeypatch, fast_backoff):
    """Status is written by the test (no controller): the waits survive the outage, the stream lists again,
    and deadlines are judged only once the job has been read again. (The stream's reconnect backoff is shortened:
    what is asserted is what it does once the apiserver answers again, not how long it waited to ask.)"""
    from kubernetes import client

    cluster = kubernetes_only_cluster  # shared: its apiserver is back up when this test ends, whatever happens
    cluster.up()
    namespace = f"outage-{uuid.uuid4().hex[:6]}"
    custom = client.CustomObjectsApi(cluster.api_client())
    client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": namespace}})
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", cluster.airflow_connection(namespace))
    for name in ("finishes", "overruns", "vanishes"):
        manifest = build_manifest(
            spec=TrainingJobSpec.parse("PyTorchJob", pytorch_specs(OK, workers=0)), name=name, namespace=namespace
        )
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, "pytorchjobs", name, _status("Running"))

    async def main():
        manager = SharedStreamManager()
        started = time.time()
        deadline = started + 7  # passes while the apiserver is down
        tasks = {
            "finishes": asyncio.create_task(in_triggerer(manager, 1, trigger_for("finishes", namespace))),
            "overruns": asyncio.create_task(
                in_triggerer(manager, 2, trigger_for("overruns", namespace, started_at=started, timeout=7))
            ),
            "vanishes": asyncio.create_task(in_triggerer(manager, 3, trigger_for("vanishes", namespace))),
        }
        stream = await synced_stream(trigger_for("finishes", namespace))
        await asyncio.to_thread(cluster.stop_component, "kube-apiserver", timeout=1)  # then SIGKILL
        await asyncio.sleep(max(0.0, deadline - time.time()) + 3)
        fired_during_outage = [n for n, t in tasks.items() if t.done()]
        restarted = time.time()  # the apiserver answers (and the stream may judge) before up() returns
        await asyncio.to_thread(cluster.up)
        await asyncio.to_thread(
            custom.patch_namespaced_custom_object_status,
            GROUP,
            VERSION,
            namespace,
            "pytorchjobs",
            "finishes",
            _status("Succeeded"),
        )
        await asyncio.to_thread(
            custom.delete_namespaced_custom_object, GROUP, VERSION, namespace, "pytorchjobs", "vanishes"
        )
        events = {
            n: e for n, e in zip(tasks, await asyncio.wait_for(asyncio.gather(*tasks.values()), 90), strict=False)
        }
        return events, fired_during_outage, restarted, dict(stream.stats)

    try:
        events, fired_during_outage, restarted, stats = asyncio.run(main())
    finally:
        cluster.up()  # started nothing when it ran through
    assert fired_during_outage == []  # an outage ends nobody's wait, and a deadline is not judged blind
    assert events["finishes"]["outcome"] == FINISHED and "Succeeded" in events["finishes"]["message"]
    assert events["overruns"]["outcome"] == TIMED_OUT and events["overruns"]["fired_at"] >= restarted
    assert "Running" in events["overruns"]["message"]  # judged on the state read after the restart
    assert events["vanishes"]["outcome"] == DELETED
    assert stats["failures"] >= 1 and stats["lists"] >= 2, stats

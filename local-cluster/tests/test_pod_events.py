"""Pod Events from the process kubelet and its binder, read back as ``kubectl get events
--field-selector involvedObject.name=<pod>`` reads them: Scheduled, Pulled, Created, Started, Killing, BackOff
and a Warning Failed, with the source, field path and counts a real node writes."""

from __future__ import annotations

import functools
import textwrap
from typing import Any

import pytest

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.kubelet import events as kubelet_events
from airflow_trainjob_local.testing import waiting

TIMEOUT = 60.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


@pytest.fixture
def workloads(local_cluster) -> None:
    """The cluster tests need the process kubelet."""
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the training controller and the process kubelet")


def pod_events(core_v1, namespace: str, pod: str) -> list[Any]:
    items = core_v1.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}").items
    return sorted(items, key=lambda e: (e.first_timestamp, e.metadata.name))


def reasons(core_v1, namespace: str, pod: str) -> list[str]:
    return [e.reason for e in pod_events(core_v1, namespace, pod)]


def wait_reasons(core_v1, namespace: str, pod: str, *wanted: str) -> list[Any]:
    wait_for(
        lambda: reasons(core_v1, namespace, pod), lambda got: set(wanted) <= set(got), what=f"events {wanted} on {pod}"
    )
    return pod_events(core_v1, namespace, pod)


def pod(name: str, script: str, restart_policy: str = "Never", **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11-slim",
                    "command": ["python", "-u", "-c", textwrap.dedent(script)],
                    **container,
                }
            ],
        },
    }


def by_reason(items: list[Any], reason: str) -> Any:
    return next(e for e in items if e.reason == reason)


def test_a_job_pod_run_to_completion_has_the_scheduler_and_kubelet_events(
    workloads, local_cluster, core_v1, custom_objects, namespace
):
    body = {
        "apiVersion": c.API_VERSION,
        "kind": "PyTorchJob",
        "metadata": {"name": "ev"},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": "python:3.11",
                                    "command": ["python", "-c", "print('done')"],
                                }
                            ]
                        }
                    },
                }
            },
        },
    }
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", body)
    name = "ev-master-0"
    wait_for(
        lambda: [
            p.status.phase for p in core_v1.list_namespaced_pod(namespace, field_selector=f"metadata.name={name}").items
        ],
        lambda phases: phases == ["Succeeded"],
        what=f"{name} Succeeded",
    )
    items = wait_reasons(core_v1, namespace, name, "Scheduled", "Pulled", "Created", "Started")
    uid = core_v1.read_namespaced_pod(name, namespace).metadata.uid
    node = local_cluster.node_name
    assert [r for r in (e.reason for e in items) if r in ("Scheduled", "Pulled", "Created", "Started")] == [
        "Scheduled",
        "Pulled",
        "Created",
        "Started",
    ]

    scheduled = by_reason(items, "Scheduled")
    assert scheduled.type == "Normal"
    assert scheduled.source.component == "default-scheduler"
    assert scheduled.message == f"Successfully assigned {namespace}/{name} to {node}"
    assert scheduled.involved_object.field_path is None

    for reason, message in (
        ("Pulled", 'Container image "python:3.11" already present on machine'),
        ("Created", "Created container pytorch"),
        ("Started", "Started container pytorch"),
    ):
        event = by_reason(items, reason)
        assert event.type == "Normal" and event.message == message
        assert event.source.component == "kubelet" and event.source.host == node
        assert event.involved_object.field_path == "spec.containers{pytorch}"
    for event in items:
        assert (event.involved_object.kind, event.involved_object.name, event.involved_object.uid) == ("Pod", name, uid)
        assert event.involved_object.namespace == namespace and event.metadata.namespace == namespace
        assert event.count == 1 and event.first_timestamp and event.last_timestamp


def test_deleting_a_running_pod_records_killing(workloads, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, pod("sleeper", "import time; print('up', flush=True); time.sleep(300)"))
    wait_reasons(core_v1, namespace, "sleeper", "Started")
    wait_for(
        lambda: core_v1.read_namespaced_pod("sleeper", namespace).status.phase,
        lambda p: p == "Running",
        what="sleeper Running",
    )
    core_v1.delete_namespaced_pod("sleeper", namespace)
    items = wait_reasons(core_v1, namespace, "sleeper", "Killing")
    killing = by_reason(items, "Killing")
    assert killing.type == "Normal" and killing.message == "Stopping container main"
    assert killing.involved_object.field_path == "spec.containers{main}"
    assert killing.source.component == "kubelet"
    wait_for(lambda: waiting.pod_gone(core_v1, namespace, "sleeper"), what="sleeper gone")


def test_a_finished_pod_deleted_records_no_killing(workloads, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, pod("quick", "print('hi')"))
    wait_for(
        lambda: core_v1.read_namespaced_pod("quick", namespace).status.phase,
        lambda p: p == "Succeeded",
        what="quick Succeeded",
    )
    wait_reasons(core_v1, namespace, "quick", "Started")
    core_v1.delete_namespaced_pod("quick", namespace)
    wait_for(lambda: waiting.pod_gone(core_v1, namespace, "quick"), what="quick gone")
    assert "Killing" not in reasons(core_v1, namespace, "quick")


def test_a_crash_looping_container_records_backoff_and_counts_repeats(workloads, core_v1, namespace):
    core_v1.create_namespaced_pod(namespace, pod("crasher", "raise SystemExit(3)", restart_policy="OnFailure"))
    items = wait_for(
        lambda: pod_events(core_v1, namespace, "crasher"),
        lambda got: (
            any(e.reason == "BackOff" for e in got) and any(e.reason == "Started" and e.count >= 3 for e in got)
        ),
        what="BackOff and Started x3 on crasher",
    )
    backoff = by_reason(items, "BackOff")
    uid = core_v1.read_namespaced_pod("crasher", namespace).metadata.uid
    assert backoff.type == "Warning"
    assert backoff.message == f"Back-off restarting failed container main in pod crasher_{namespace}({uid})"
    assert backoff.involved_object.field_path == "spec.containers{main}"
    started = [e for e in items if e.reason == "Started"]
    assert len(started) == 1 and started[0].last_timestamp >= started[0].first_timestamp
    core_v1.delete_namespaced_pod("crasher", namespace, grace_period_seconds=0)


def test_a_container_that_cannot_start_records_a_warning(workloads, core_v1, namespace):
    body = pod("nobinary", "")
    body["spec"]["containers"][0]["command"] = ["no-such-binary-here"]
    core_v1.create_namespaced_pod(namespace, body)
    items = wait_reasons(core_v1, namespace, "nobinary", "Failed")
    failed = by_reason(items, "Failed")
    assert failed.type == "Warning"
    assert failed.message.startswith("Error: ") and "no-such-binary-here" in failed.message
    assert failed.involved_object.field_path == "spec.containers{main}"
    assert "Started" not in {e.reason for e in items}


def test_a_missing_config_map_records_a_warning(workloads, core_v1, namespace):
    body = pod(
        "nocm", "print('x')", env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "absent", "key": "k"}}}]
    )
    core_v1.create_namespaced_pod(namespace, body)
    failed = by_reason(wait_reasons(core_v1, namespace, "nocm", "Failed"), "Failed")
    assert failed.type == "Warning" and failed.message.startswith("Error: ") and "absent" in failed.message
    core_v1.delete_namespaced_pod("nocm", namespace, grace_period_seconds=0)


def test_init_container_events_name_the_init_container(workloads, core_v1, namespace):
    body = pod("withinit", "print('main')")
    body["spec"]["initContainers"] = [{"name": "prep", "image": "busybox", "command": ["python", "-c", "pass"]}]
    core_v1.create_namespaced_pod(namespace, body)
    wait_for(
        lambda: core_v1.read_namespaced_pod("withinit", namespace).status.phase,
        lambda p: p == "Succeeded",
        what="withinit Succeeded",
    )
    items = wait_for(
        lambda: pod_events(core_v1, namespace, "withinit"),
        lambda got: sum(e.reason == "Started" for e in got) == 2,
        what="two Started events",
    )
    paths = {e.involved_object.field_path for e in items if e.reason == "Started"}
    assert paths == {"spec.initContainers{prep}", "spec.containers{main}"}
    pulled = next(e for e in items if e.reason == "Pulled" and e.involved_object.field_path.startswith("spec.init"))
    assert pulled.message == 'Container image "busybox" already present on machine'


# --- the recorder, without a cluster ----------------------------------------------------------------------


class FakeCore:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []

    def create_namespaced_event(self, namespace, body, **_):
        self.created.append(body)

    def patch_namespaced_event(self, name, namespace, body, **_):
        self.patched.append((name, body))


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"}}


def test_recorder_aggregates_identical_events_into_a_count():
    core = FakeCore()
    recorder = kubelet_events.EventRecorder(core, "node-a")
    recorder.start()
    try:
        for _ in range(3):
            recorder.container_event(POD, "main", "Warning", "BackOff", "Back-off restarting failed container main")
        recorder.container_event(POD, "main", "Normal", "Started", "Started container main")
        assert recorder.flush()
    finally:
        recorder.stop()
    assert [e["reason"] for e in core.created] == ["BackOff", "Started"]
    first = core.created[0]
    assert first["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "7",
        "fieldPath": "spec.containers{main}",
    }
    assert first["source"] == {"component": "kubelet", "host": "node-a"} and first["count"] == 1
    assert first["metadata"]["name"].startswith("p.")
    assert [body["count"] for _, body in core.patched] == [2, 3]
    assert {name for name, _ in core.patched} == {first["metadata"]["name"]}


def test_recorder_scheduler_events_have_no_host():
    core = FakeCore()
    recorder = kubelet_events.EventRecorder(core, "node-a")
    recorder.start()
    recorder.pod_event(
        POD, "Normal", "Scheduled", "Successfully assigned ns/p to node-a", component="default-scheduler"
    )
    assert recorder.flush()
    recorder.stop()
    (event,) = core.created
    assert event["source"] == {"component": "default-scheduler"} and "fieldPath" not in event["involvedObject"]


def test_a_pod_whose_node_selector_no_node_matches_is_pending_and_marked_unschedulable(
    workloads, local_cluster, core_v1, namespace
):
    """As kube-scheduler marks it (a runtime patch's nodeSelector, e.g. upstream's 02-runtime-patches.yaml):
    Pending, PodScheduled False/Unschedulable, one Warning FailedScheduling from default-scheduler."""
    body = pod("unmatched", "print('never')")
    body["spec"]["nodeSelector"] = {"node-type": "training"}
    core_v1.create_namespaced_pod(namespace, body)
    items = wait_reasons(core_v1, namespace, "unmatched", kubelet_events.REASON_FAILED_SCHEDULING)
    event = by_reason(items, kubelet_events.REASON_FAILED_SCHEDULING)
    assert (event.type, event.source.component) == ("Warning", "default-scheduler")
    assert event.message.startswith("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.")
    got = core_v1.read_namespaced_pod("unmatched", namespace)
    assert got.status.phase == "Pending" and not got.spec.node_name
    scheduled = next(cond for cond in got.status.conditions if cond.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason, scheduled.message) == ("False", "Unschedulable", event.message)
    assert "Scheduled" not in reasons(core_v1, namespace, "unmatched")

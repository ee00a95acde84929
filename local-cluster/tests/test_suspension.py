"""``runPolicy.suspend`` and ``runPolicy.managedBy`` on the local cluster: the real kube-apiserver, the local
training controller and the process kubelet of the session's ``local_cluster``, observed through the API.

Upstream: ``pkg/controller.v1/common/job.go`` (``ReconcileJobs``: the suspended branch, the resumed branch,
``CleanupJob`` skipping the TTL of a suspended job, ``ManagedByExternalController``) and
``pkg/controller.v1/pytorch/pytorchjob_controller.go`` (``Reconcile`` skipping a job managed elsewhere) of
kubeflow/training-operator release-1.9. Skipped when the session cluster runs without workloads.
"""

from __future__ import annotations

import datetime as dt
import functools
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.kube import MERGE_PATCH, ApiException
from airflow_trainjob_local.testing import waiting
from airflow_trainjob_local.testing.jobs import pytorch_job

TIMEOUT = 90.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


@pytest.fixture(autouse=True)
def _needs_workloads(local_cluster) -> None:
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the training controller and the process kubelet")


# --- helpers ----------------------------------------------------------------------------------------------


def python_replica(script: str, replicas: int = 1) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": "Never",
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "python:3.11",
                        "command": ["python", "-c", textwrap.dedent(script)],
                    }
                ]
            }
        },
    }


def create(custom_objects, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    return custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", body)


def get(custom_objects, namespace: str, name: str) -> dict[str, Any]:
    return custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", name)


def reader(custom_objects, namespace: str, name: str) -> Callable[[], dict[str, Any]]:
    return lambda: get(custom_objects, namespace, name)


def set_suspend(custom_objects, namespace: str, name: str, suspend: bool) -> None:
    custom_objects.patch_namespaced_custom_object(
        c.GROUP,
        c.VERSION,
        namespace,
        "pytorchjobs",
        name,
        {"spec": {"runPolicy": {"suspend": suspend}}},
        _content_type=MERGE_PATCH,
    )


def condition(job: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((x for x in (job.get("status") or {}).get("conditions") or [] if x["type"] == ctype), None)


def has(ctype: str, status: str = "True") -> Callable[[dict[str, Any]], bool]:
    return lambda job: (condition(job, ctype) or {}).get("status") == status


def pod_phases(core_v1, namespace: str, job: str) -> dict[str, str]:
    items = core_v1.list_namespaced_pod(namespace, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {p.metadata.name: p.status.phase for p in items}


def service_names(core_v1, namespace: str, job: str) -> set[str]:
    items = core_v1.list_namespaced_service(namespace, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {s.metadata.name for s in items}


def job_events(core_v1, namespace: str, job: str) -> list[Any]:
    return [e for e in core_v1.list_namespaced_event(namespace).items if e.involved_object.name == job]


def ts(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def stays(read: Callable[[], Any], ok: Callable[[Any], bool], seconds: float, what: str) -> Any:
    """``ok(read())`` holds on every look for ``seconds``; returns the last value."""
    deadline = time.monotonic() + seconds
    value = read()
    while True:
        assert ok(value), f"{what}: {value!r}"
        if time.monotonic() >= deadline:
            return value
        time.sleep(0.3)
        value = read()


QUICK = "print('done')"
SLEEP = "import time; time.sleep(120)"


# --- suspension -------------------------------------------------------------------------------------------


def test_a_job_created_suspended_gets_no_pods_until_resumed_then_runs_to_success(core_v1, custom_objects, namespace):
    """job.go ReconcileJobs: suspended → Suspended True (``<Kind>Suspended``), no pods; suspend false →
    Suspended False (``<Kind>Resumed``), startTime set then, pods as usual."""
    create(
        custom_objects, namespace, pytorch_job("sus", python_replica(QUICK), python_replica(QUICK), {"suspend": True})
    )
    job = wait_for(reader(custom_objects, namespace, "sus"), has("Suspended"), what="Suspended")
    suspended = condition(job, "Suspended")
    assert (suspended["reason"], suspended["message"]) == ("PyTorchJobSuspended", "PyTorchJob sus is suspended.")
    assert condition(job, "Created")["status"] == "True"
    assert condition(job, "Running") is None
    assert not job["status"].get("startTime"), "a job that never ran has no startTime"
    stays(lambda: pod_phases(core_v1, namespace, "sus"), lambda p: p == {}, 4, "pods of a suspended job")
    assert service_names(core_v1, namespace, "sus") == set()
    event = next(e for e in job_events(core_v1, namespace, "sus") if e.reason == "PyTorchJobSuspended")
    assert (event.type, event.message) == ("Normal", "PyTorchJob sus is suspended.")

    before_resume = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    set_suspend(custom_objects, namespace, "sus", False)
    job = wait_for(reader(custom_objects, namespace, "sus"), has("Suspended", "False"), what="resumed")
    resumed = condition(job, "Suspended")
    assert (resumed["reason"], resumed["message"]) == ("PyTorchJobResumed", "PyTorchJob sus is resumed.")
    assert ts(job["status"]["startTime"]) >= before_resume - dt.timedelta(seconds=1)
    job = wait_for(reader(custom_objects, namespace, "sus"), has("Succeeded"), what="Succeeded")
    assert job["status"]["replicaStatuses"]["Master"]["succeeded"] == 1
    assert set(pod_phases(core_v1, namespace, "sus")) == {"sus-master-0", "sus-worker-0"}
    event = next(e for e in job_events(core_v1, namespace, "sus") if e.reason == "PyTorchJobResumed")
    assert (event.type, event.message) == ("Normal", "PyTorchJob sus is resumed.")


def test_suspending_a_running_job_deletes_its_pods_and_resuming_runs_it_again(
    core_v1, custom_objects, namespace, tmp_path: Path
):
    """job.go ReconcileJobs: suspending deletes the active pods and services whatever cleanPodPolicy says
    (CleanUpResources on an unfinished job), zeroes active, turns Running False with reason ``<Kind>Suspended``;
    resuming resets startTime and the job runs again."""
    # First run: every replica sleeps (and leaves a mark); the run after resumption finishes at once.
    script = f"""
        import os, pathlib, time
        mark = pathlib.Path({str(tmp_path)!r}) / ("ran-" + os.environ["RANK"])
        if not mark.exists():
            mark.write_text("x")
            time.sleep(120)
    """
    create(
        custom_objects,
        namespace,
        pytorch_job("run", python_replica(script), python_replica(script), {"cleanPodPolicy": "None"}),
    )
    job = wait_for(
        reader(custom_objects, namespace, "run"),
        lambda j: has("Running")(j) and j["status"]["replicaStatuses"]["Worker"].get("active") == 1,
        what="Running with the worker active",
    )
    first_start = ts(job["status"]["startTime"])
    wait_for(lambda: service_names(core_v1, namespace, "run"), lambda s: len(s) == 2, what="two services")
    # A running pod's process may not have reached its mark yet (Python starting on a loaded machine): suspended
    # before that, it would write the mark in the run after resumption and sleep there.
    marks = [tmp_path / "ran-0", tmp_path / "ran-1"]
    wait_for(lambda: all(m.exists() for m in marks), what="both replicas in their first run")

    set_suspend(custom_objects, namespace, "run", True)
    job = wait_for(reader(custom_objects, namespace, "run"), has("Suspended"), what="Suspended")
    running = condition(job, "Running")
    assert (running["status"], running["reason"], running["message"]) == (
        "False",
        "PyTorchJobSuspended",
        "PyTorchJob run is suspended.",
    )
    assert all(not entry.get("active") for entry in job["status"]["replicaStatuses"].values())
    wait_for(lambda: pod_phases(core_v1, namespace, "run"), lambda p: not p, timeout=60, what="pods deleted")
    wait_for(lambda: service_names(core_v1, namespace, "run"), lambda s: not s, what="services deleted")
    assert not has("Failed")(get(custom_objects, namespace, "run"))
    stays(lambda: pod_phases(core_v1, namespace, "run"), lambda p: p == {}, 2, "no pod is recreated while suspended")
    reasons = [e.reason for e in job_events(core_v1, namespace, "run")]
    assert "SuccessfulDeletePod" in reasons and "PyTorchJobSuspended" in reasons

    time.sleep(1)  # startTime has whole seconds: make the new one visibly later
    set_suspend(custom_objects, namespace, "run", False)
    job = wait_for(reader(custom_objects, namespace, "run"), has("Succeeded"), what="Succeeded after resumption")
    assert condition(job, "Suspended")["status"] == "False"
    assert condition(job, "Suspended")["reason"] == "PyTorchJobResumed"
    assert ts(job["status"]["startTime"]) > first_start
    assert (tmp_path / "ran-0").exists() and (tmp_path / "ran-1").exists()


def test_active_deadline_counts_from_the_start_after_resumption(core_v1, custom_objects, namespace):
    """job.go: the deadline check comes after the suspended branch (no deadline while suspended) and the
    resumed branch sets a new startTime, which PastActiveDeadline counts from."""
    create(
        custom_objects,
        namespace,
        pytorch_job("dls", python_replica(SLEEP), run_policy={"suspend": True, "activeDeadlineSeconds": 4}),
    )
    wait_for(reader(custom_objects, namespace, "dls"), has("Suspended"), what="Suspended")
    stays(
        reader(custom_objects, namespace, "dls"),
        lambda j: not has("Failed")(j),
        6,
        "a suspended job is not failed by its deadline",
    )

    resumed_at = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    set_suspend(custom_objects, namespace, "dls", False)
    wait_for(
        lambda: pod_phases(core_v1, namespace, "dls"),
        lambda p: p.get("dls-master-0") == "Running",
        what="the master running after resumption",
    )
    job = wait_for(reader(custom_objects, namespace, "dls"), has("Failed"), timeout=30, what="Failed by the deadline")
    assert condition(job, "Failed")["message"] == (
        "Job dls has failed because it was active longer than specified deadline"
    )
    start, done = ts(job["status"]["startTime"]), ts(job["status"]["completionTime"])
    assert start >= resumed_at - dt.timedelta(seconds=1)
    assert (done - start).total_seconds() >= 4


def test_ttl_is_not_applied_while_a_finished_job_is_suspended(custom_objects, namespace):
    """job.go CleanupJob: no TTL deletion while the job is suspended; once it is not, the TTL applies."""
    create(
        custom_objects,
        namespace,
        pytorch_job("ttls", python_replica(QUICK), run_policy={"suspend": True, "ttlSecondsAfterFinished": 1}),
    )
    job = wait_for(reader(custom_objects, namespace, "ttls"), has("Suspended"), what="Suspended")
    # Someone (here: the test) finished the suspended job an hour ago.
    long_ago = "2024-01-01T00:00:00Z"
    conditions = job["status"]["conditions"] + [
        {
            "type": "Succeeded",
            "status": "True",
            "reason": "PyTorchJobSucceeded",
            "message": "done",
            "lastUpdateTime": long_ago,
            "lastTransitionTime": long_ago,
        }
    ]
    custom_objects.patch_namespaced_custom_object_status(
        c.GROUP,
        c.VERSION,
        namespace,
        "pytorchjobs",
        "ttls",
        {"status": {"conditions": conditions, "completionTime": long_ago}},
        _content_type=MERGE_PATCH,
    )
    stays(reader(custom_objects, namespace, "ttls"), has("Succeeded"), 4, "the suspended job stays")

    set_suspend(custom_objects, namespace, "ttls", False)

    def gone() -> bool:
        try:
            get(custom_objects, namespace, "ttls")
            return False
        except ApiException as exc:
            return exc.status == 404

    wait_for(gone, bool, timeout=30, what="the job deleted by its TTL once not suspended")


# --- managedBy --------------------------------------------------------------------------------------------


def test_a_job_managed_by_multikueue_is_left_alone(core_v1, custom_objects, namespace):
    """pytorchjob_controller.go Reconcile / job.go ManagedByExternalController: managedBy naming another
    controller → not reconciled at all (no status, no pods, no events)."""
    create(
        custom_objects,
        namespace,
        pytorch_job("mk", python_replica(QUICK), run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}),
    )
    create(
        custom_objects,
        namespace,
        pytorch_job("ours", python_replica(QUICK), run_policy={"managedBy": "kubeflow.org/training-operator"}),
    )
    wait_for(reader(custom_objects, namespace, "ours"), has("Succeeded"), what="the job managed by us Succeeded")
    stays(reader(custom_objects, namespace, "mk"), lambda j: not j.get("status"), 3, "no status on the MultiKueue job")
    assert pod_phases(core_v1, namespace, "mk") == {}
    assert job_events(core_v1, namespace, "mk") == []

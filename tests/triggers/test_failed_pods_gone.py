"""A deferred wait names the failed replicas when their pods are gone before its trigger lists them (issue 24, item 4;
the CI flake of ``tests/ui/test_e2e_try_ends.py``: the controller deleted both failed pods with the job's failure,
the trigger's event had ``pods: []`` and the task's error named no replica).

Against the local cluster, with the test as the job's controller, so that the order is the one the flake had, every
time: the job is handed to another controller (``managedBy`` MultiKueue: the stand-in leaves it alone); the test
creates its Master and Worker pods (owned by the job, labelled as the training operator labels them), which the
kubelet runs and which exit 1; then it deletes them and waits until they are gone; only then does it write the
job's ``Failed`` condition. No ``ExitedWithCode`` event exists (no training operator saw the pods). The trigger,
run as the triggerer runs a shared-stream trigger, must carry both failed pods in its event, from its pod watch;
the resumed task (the operator deferred, the deferrable sensor) must name both replicas and their exit code. The
operator's trigger also reads each failed run's log tail when its pod watch first sees it fail (as a controller with
``cleanPodPolicy: All`` deletes the pods, logs and all, at the failure): the resumed task quotes them, masked.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred, mask_secret

from airflow_trainjob.constants import (
    GROUP,
    LABEL_JOB_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    VERSION,
    ManagedBy,
)
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob.triggers.training_job import FINISHED, TrainingJobTrigger
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import rebuild, synced_stream
from tests.support.jobs import jobs, python_container, pytorch_specs

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: Each replica's container: a line, then exit 1.
FAILS = "import sys; print('bad shard', flush=True); sys.exit(1)"
REPLICAS = ("Master", "Worker")
#: The job's ``runPolicy``: another controller reconciles it (the stand-in leaves it to the test).
MULTIKUEUE = {"managedBy": ManagedBy.MULTIKUEUE.value}


def owned_pod(job: dict[str, Any], replica_type: str, code: str = FAILS) -> dict[str, Any]:
    """Replica ``replica_type``-0 of ``job`` as the training operator makes it: named, labelled, owned by the job."""
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{replica_type.lower()}-0",
            "labels": {LABEL_JOB_NAME: name, LABEL_REPLICA_TYPE: replica_type.lower(), LABEL_REPLICA_INDEX: "0"},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": job["kind"],
                    "name": name,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"restartPolicy": "Never", "containers": [python_container(code)]},
    }


def play_the_controller(
    core_v1, custom_objects, job: dict[str, Any], code: str = FAILS, before_deleting: Callable[[], None] = lambda: None
) -> None:
    """Run the job's pods (``code``) until both failed, then ``before_deleting()``; delete them, wait until they are
    gone, then fail the job."""
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    for replica_type in REPLICAS:
        core_v1.create_namespaced_pod(namespace, owned_pod(job, replica_type, code))
    selector = f"{LABEL_JOB_NAME}={name}"

    def phases() -> list[str]:
        return [p.status.phase for p in core_v1.list_namespaced_pod(namespace, label_selector=selector).items]

    wait_for(phases, lambda found: found == ["Failed", "Failed"], timeout=60, what="both pods failed")
    before_deleting()
    for replica_type in REPLICAS:
        core_v1.delete_namespaced_pod(f"{name}-{replica_type.lower()}-0", namespace, grace_period_seconds=0)
    wait_for(phases, lambda found: found == [], timeout=60, what="both pods gone")
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    failed = f"PyTorchJob {name} has failed because it has reached the specified backoff limit"
    status = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "lastTransitionTime": now},
            {
                "type": "Failed",
                "status": "True",
                "reason": "PyTorchJobFailed",
                "message": failed,
                "lastTransitionTime": now,
            },
        ],
        "completionTime": now,
    }
    custom_objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "pytorchjobs", name, {"status": status}
    )


async def as_the_triggerer(trigger: TrainingJobTrigger) -> dict[str, Any]:
    """Run ``trigger`` on its shared stream (``open_shared_stream``, ``filter_shared_stream``) to its event."""
    changes = TrainingJobTrigger.open_shared_stream(trigger.serialize()[1])
    try:
        async for event in trigger.filter_shared_stream(changes):
            return event.payload
        raise AssertionError("the trigger ended without an event")
    finally:
        await changes.aclose()  # type: ignore[attr-defined]  # (an async generator)


def event_of_a_failure_whose_pods_went_first(
    trigger: TrainingJobTrigger, core_v1, custom_objects, job, code: str = FAILS, tails: int = 0
) -> dict:
    """``trigger``'s event, the job's pods (``code``) failed and deleted before the job failed
    (:func:`play_the_controller`), once the trigger follows the job (its stream listed the jobs, its pod watch the
    pods); with ``tails``, deleted once the trigger has read that many failed runs' tails (else a race)."""

    def tails_read() -> None:
        if tails:
            reader = trigger._tails_reader
            assert reader is not None, "the trigger reads no tail"
            wait_for(lambda: len(reader.tails) >= tails, timeout=30, what=f"{tails} tails read by the trigger")

    async def scenario() -> dict[str, Any]:
        waiting = asyncio.ensure_future(as_the_triggerer(trigger))
        stream = await asyncio.wait_for(synced_stream(trigger), 60)
        watch = getattr(stream, "failed_pods", None)  # (before the fix, no pod watch: nothing to wait for)
        while watch is not None and not watch.stats["lists"]:
            assert not waiting.done(), waiting.result()
            await asyncio.sleep(0.05)
        await asyncio.to_thread(play_the_controller, core_v1, custom_objects, job, code, tails_read)
        return await asyncio.wait_for(waiting, 60)

    return asyncio.run(scenario())


def assert_names_both(event: dict[str, Any], error: str) -> None:
    """The event carries both failed pods with exit code 1; the error names both replicas, exit code 1, the class
    and a first failure."""
    assert event["outcome"] == FINISHED and "failed" in event["message"].lower(), event["message"]
    exits = {
        p["metadata"]["name"].rsplit("-", 2)[-2]: [
            c["state"]["terminated"]["exitCode"] for c in p["status"]["containerStatuses"]
        ]
        for p in event["pods"]
    }
    assert exits == {"master": [1], "worker": [1]}, event["pods"]
    first = re.search(r"First failure \([^)]*\): (\w+-\d+) ", error)
    assert first is not None and first.group(1) in {"Master-0", "Worker-0"}, error
    assert "Master-0" in error and "Worker-0" in error and "exit code 1" in error and "Permanent" in error, error


def test_a_deferred_task_names_the_replicas_whose_pods_went_before_the_job_failed(
    ti, namespace, core_v1, custom_objects
):
    """... and quotes each one's log tail, read by the trigger when its pod watch first saw it fail, and masked: a
    secret the task's masker knows is in no event and no message."""
    secret = f"hf_{uuid.uuid4().hex}"
    mask_secret(secret)  # what reading a sensitive Variable in a template does (the trigger runs in this process)
    code = f"import sys; print('bad shard', flush=True); print('token {secret}', flush=True); sys.exit(1)"
    operator = TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(FAILS, restartPolicy="Never"),
        run_policy=MULTIKUEUE,
        deferrable=True,
    )
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    (job,) = jobs(custom_objects, namespace)
    trigger = rebuild(deferred.value.trigger)
    event = event_of_a_failure_whose_pods_went_first(trigger, core_v1, custom_objects, job, code, tails=2)
    with pytest.raises(AirflowFailException) as raised:
        operator.execute_complete({"ti": ti}, event)
    assert_names_both(event, str(raised.value))
    assert set(event.get("tails") or {}) == {"Master-0", "Worker-0"}, event
    assert secret not in json.dumps(event)
    message = str(raised.value)
    for replica in ("Master-0", "Worker-0"):  # read by the trigger: the pods are gone at resume
        assert f"Last log lines of {replica}:\n  | bad shard\n  | token ***" in message, message
    assert secret not in message


def test_a_deferrable_sensor_names_the_replicas_whose_pods_went_before_the_job_failed(
    namespace, core_v1, custom_objects
):
    from airflow_trainjob.models import TrainingJobSpec
    from airflow_trainjob.models.manifest import build_manifest

    spec = TrainingJobSpec.parse("PyTorchJob", pytorch_specs(FAILS, restartPolicy="Never"), MULTIKUEUE)
    manifest = build_manifest(spec=spec, name="made-elsewhere", namespace=namespace)
    job = custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)
    sensor = TrainingJobSensor(
        task_id="watch", kind="PyTorchJob", job_name="made-elsewhere", deferrable=True, timeout=120
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    event = event_of_a_failure_whose_pods_went_first(rebuild(deferred.value.trigger), core_v1, custom_objects, job)
    with pytest.raises(AirflowFailException) as raised:
        sensor.execute_complete({}, event)
    assert_names_both(event, str(raised.value))

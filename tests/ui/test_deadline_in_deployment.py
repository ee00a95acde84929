"""The issue's case in a real Airflow deployment (api-server, scheduler, dag-processor, triggerer): with
``queue_timeout=8`` and the default ``startup_timeout`` (600 s), a job that a queue suspends right after its creation
(as Kueue's controller does: ``runPolicy.suspend``, then the ``Suspended`` condition a moment later) fails its task
about 8 s after the suspension, synchronous and deferred -- not when the 600 s would have passed.

The fire time is read from the task log as the api-server serves it: the time of the record of the timeout's
message (synchronous: the worker's; deferred: the triggerer's ``Trigger fired event``), from the moment the test
suspended the job. The task's ``end_date`` is printed as well (deferred, it adds the resumed task's scheduling).
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from datetime import datetime
from typing import Any

import pytest

from airflow_trainjob.constants import GROUP, LABEL_TASK_ID, VERSION
from tests.support.deployment import AirflowDeployment
from tests.support.report import record

DAG_ID = "e2e_queue_timeout"
TASKS = ("train_sync", "train_deferred")
#: The issue's queue_timeout (seconds).
QUEUE_TIMEOUT = 8.0
#: Seconds the timeout may fire after its time (the watch's whole-second end, the change's way to the wait, a loaded
#: machine); and before it, when the trigger's first look found the job already suspended: the queue clock then
#: starts at the server's whole-second timestamp of the suspension.
LATE, SERVER_SECOND = 3.0, 1.0
DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    CODE = "import time; time.sleep(600)"
    MASTER = {{
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {{"spec": {{"containers": [
            {{"name": "pytorch", "image": "python:3.11-slim", "command": [{sys.executable!r}, "-c", CODE]}}
        ]}}}},
    }}

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        for deferrable in (False, True):
            TrainingJobOperator(
                task_id="train_deferred" if deferrable else "train_sync",
                kind="PyTorchJob",
                replica_specs={{"Master": MASTER}},
                queue_name="team-a",
                queue_timeout={QUEUE_TIMEOUT!r},
                deferrable=deferrable,
                retries=0,
            )
    """
)


@pytest.fixture(scope="module")
def airflow(start_airflow) -> AirflowDeployment:
    # The queue clock is what is timed here: a suspension sent as the job is created starts it before the task
    # defers, so the trigger's hold after a deferral (opt-in, tests/triggers/test_deferral_hold.py) would move an
    # 8 s deadline: off here whatever the default.
    return start_airflow(
        dags={f"{DAG_ID}.py": DAG_SOURCE}, dag_ids=[DAG_ID], env={"AIRFLOW__TRAINJOB__MIN_DEFERRAL_SECONDS": "0"}
    )


def suspend_each_job_once_created(custom_objects, namespace: str, timeout: float = 600.0) -> dict[str, float]:
    """Act as Kueue's controller on this module's jobs: set ``runPolicy.suspend`` on each the moment it exists.
    Task id -> when its job's suspension was sent (epoch seconds)."""
    suspended: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(suspended) < len(TASKS):
        assert time.monotonic() < deadline, f"jobs suspended: {suspended}"
        for job in custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs")["items"]:
            task_id = job["metadata"]["labels"].get(LABEL_TASK_ID)
            if task_id in TASKS and task_id not in suspended:
                suspended[task_id] = time.time()
                custom_objects.patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    namespace,
                    "pytorchjobs",
                    job["metadata"]["name"],
                    {"spec": {"runPolicy": {"suspend": True}}},
                )
        time.sleep(0.1)
    return suspended


def fired_at(entries: list[Any], text: str) -> float:
    """Epoch seconds of the first task log record whose message holds ``text``."""
    for entry in entries:
        if isinstance(entry, dict) and text in str(entry.get("event", "")):
            return datetime.fromisoformat(str(entry["timestamp"]).replace("Z", "+00:00")).timestamp()
    raise AssertionError(f"no record with {text!r} in the task log: {[e for e in entries if isinstance(e, dict)][-5:]}")


def whole_log(entries: list[Any]) -> str:
    """Every record of the task log as JSON text (an exception's message is in the record's error details)."""
    return "\n".join(json.dumps(entry, default=str) for entry in entries)


def test_queue_timeout_fires_8_s_after_a_suspension_right_after_creation(
    airflow: AirflowDeployment, custom_objects, module_namespace: str
) -> None:
    api = airflow.api("admin")
    run_id = api.trigger(DAG_ID)["dag_run_id"]
    suspended = suspend_each_job_once_created(custom_objects, module_namespace)
    # When the deadline fired: the synchronous task failed; the trigger fired (the resumed task fails after).
    marks = {"train_sync": "Task failed with exception", "train_deferred": "Trigger fired event"}
    for task_id in TASKS:
        ti = api.wait_for_task_state(DAG_ID, run_id, task_id, "failed", timeout=120)
        entries = api.task_log(DAG_ID, run_id, task_id)
        text = whole_log(entries)
        assert "queue_timeout of 8 s passed while the job waited in Kueue queue 'team-a'" in text, text[-3000:]
        after = fired_at(entries, marks[task_id]) - suspended[task_id]
        ended = datetime.fromisoformat(ti["end_date"].replace("Z", "+00:00")).timestamp() - suspended[task_id]
        on_time = QUEUE_TIMEOUT - SERVER_SECOND <= after <= QUEUE_TIMEOUT + LATE
        record("deadline_timing", wait=f"deployment {task_id}", deadline="queue_timeout", on_time=on_time)
        print(f"{task_id}: queue_timeout of 8 s fired {after:.2f} s after the suspension; task ended {ended:.2f} s")
        assert on_time, f"{task_id}: queue_timeout of 8 s fired {after:.2f} s after the suspension"

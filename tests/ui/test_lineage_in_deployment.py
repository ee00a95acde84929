"""OpenLineage events in a real Airflow deployment (api-server, scheduler, dag-processor, triggerer), every task
deferred: the trigger waits in the triggerer and ``execute_complete`` runs in a new task process, whose COMPLETE or
FAIL event must still describe the job's end. The DAG and the checks are the ``airflow dags test`` ones
(:mod:`tests.support.lineage_events`); events go to the openlineage provider's file transport."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_trainjob.constants import TRAINER_GROUP, TRAINER_VERSION
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment
from tests.support.lineage_events import (
    DAG_FILE,
    DAG_ID,
    SECRET,
    TASKS,
    all_task_events,
    check_pytorch_fails,
    check_pytorch_ok,
    check_trainjob_fails,
    check_trainjob_ok,
    initializer_runtime_body,
    task_events,
)

ENDS = {"pytorch_ok": "COMPLETE", "pytorch_fails": "FAIL", "trainjob_ok": "COMPLETE", "trainjob_fails": "FAIL"}


@pytest.fixture(scope="module")
def runtime(custom_objects, module_namespace) -> Iterator[str]:
    body = initializer_runtime_body(f"lineage-{module_namespace}"[:63])
    custom_objects.create_cluster_custom_object(TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", body)
    yield body["metadata"]["name"]
    custom_objects.delete_cluster_custom_object(
        TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", body["metadata"]["name"]
    )


@pytest.fixture(scope="module")
def deployment(start_airflow, runtime, tmp_path_factory) -> tuple[AirflowDeployment, Path]:
    events = tmp_path_factory.mktemp("lineage") / "events.jsonl"
    env = {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(events), "append": True}),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "lineage-tests",
        "LINEAGE_DEFERRABLE": "1",
        "LINEAGE_RUNTIME": runtime,
        "LINEAGE_PYTHON": sys.executable,
        "LINEAGE_SECONDS": "15",
    }
    airflow = start_airflow(
        dags={DAG_FILE.name: DAG_FILE.read_text()}, dag_ids=[DAG_ID], users={"admin": "admin"}, env=env
    )
    return airflow, events


def test_deferred_tasks_send_their_end_with_the_jobs_end_from_the_resumed_process(
    deployment, module_namespace, runtime
):
    airflow, events_file = deployment
    api = airflow.api("admin")
    run_id = str(api.trigger(DAG_ID)["dag_run_id"])
    for task in TASKS:
        api.wait_for_task_state(DAG_ID, run_id, task, "success" if ENDS[task] == "COMPLETE" else "failed", timeout=300)
    # The listener writes the end event as the task process finishes: wait for the four.
    wait_for(
        lambda: events_file.exists() and all(ENDS[t] in task_events(events_file, t) for t in TASKS),
        timeout=60,
        what="a COMPLETE or FAIL event of each task",
    )
    assert SECRET not in events_file.read_text()
    for task in TASKS:
        types = [e["eventType"] for e in all_task_events(events_file, task)]
        # Deferred: the first process's START, the resumed one's START, then its end (nothing at the deferral).
        assert types == ["START", "START", ENDS[task]], f"{task}: {types}"
        assert api.task_instance(DAG_ID, run_id, task)["try_number"] == 1
    check_pytorch_ok(task_events(events_file, "pytorch_ok"), module_namespace)
    check_pytorch_fails(task_events(events_file, "pytorch_fails"), module_namespace)
    check_trainjob_ok(task_events(events_file, "trainjob_ok"), module_namespace, runtime)
    check_trainjob_fails(task_events(events_file, "trainjob_fails"), module_namespace)

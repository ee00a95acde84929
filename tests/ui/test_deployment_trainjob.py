"""TrainJobs in a real Airflow deployment (api-server, scheduler, dag-processor, triggerer) on the local cluster, as
users meet them: triggered by REST, synchronously and deferred; a success with node 0's output in the task log, a
failure naming the failed node, a task marked failed while its TrainJob runs (``on_kill`` deletes it), and the
Training job tab's API showing the TrainJob's runtime, nodes and steps.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import httpx
import pytest

from airflow_trainjob.constants import TRAINER_GROUP, TRAINER_VERSION
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment

DAG_ID = "e2e_trainjob"
JOB_LINE = "trainjob e2e: hello from node"
MODES = {"sync": False, "deferred": True}
DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_trainjob.operators.trainjob import TrainJobOperator

    OK = (
        "import os, time; print({JOB_LINE!r}, os.environ['PET_NODE_RANK'], 'of', os.environ['PET_NNODES'], "
        "flush=True); time.sleep(15)"
    )
    FAILS = (
        "import os, sys, time\\n"
        "if os.environ['PET_NODE_RANK'] == '1':\\n"
        "    print('bad input', flush=True); sys.exit(1)\\n"
        "time.sleep(90)"
    )
    LONG = "import time; print('training for long', flush=True); time.sleep(600)"

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        for mode, deferrable in {MODES!r}.items():
            for name, code in (("ok", OK), ("fails", FAILS), ("long", LONG)):
                TrainJobOperator(
                    task_id=f"{{name}}_{{mode}}",
                    runtime="torch-distributed",
                    trainer={{"numNodes": 2, "command": [{sys.executable!r}, "-c", code]}},
                    deferrable=deferrable,
                    poll_interval=1,
                    startup_timeout=120,
                    timeout=400,
                )
    """
)


@pytest.fixture(scope="module")
def airflow(start_airflow) -> AirflowDeployment:
    return start_airflow(dags={"e2e_trainjob.py": DAG_SOURCE}, dag_ids=[DAG_ID], users={"admin": "admin"})


@pytest.fixture(scope="module")
def run_id(airflow: AirflowDeployment) -> str:
    """One run of the DAG, triggered by REST: the ok and fails tasks ended, the long ones marked failed (killed)
    while their TrainJobs ran."""
    api = airflow.api("admin")
    run = api.trigger(DAG_ID)
    run_id = str(run["dag_run_id"])
    for mode in MODES:
        api.wait_for_task_state(DAG_ID, run_id, f"ok_{mode}", "success", timeout=300)
        api.wait_for_task_state(DAG_ID, run_id, f"fails_{mode}", "failed", timeout=300)
    return run_id


def tab(airflow: AirflowDeployment, run_id: str, task_id: str) -> dict[str, Any]:
    """The Training job tab's answer for the task instance (``GET /trainjob/api/task-instance``), latest try first."""
    response = httpx.get(
        f"{airflow.base_url}/trainjob/api/task-instance",
        params={"dag_id": DAG_ID, "run_id": run_id, "task_id": task_id, "map_index": -1},
        headers={"Authorization": f"Bearer {airflow.token('admin')}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.parametrize("mode", MODES)
def test_a_trainjob_task_succeeds_with_node_0s_output_in_its_log(airflow, run_id, mode):
    log = airflow.api("admin").task_log_text(DAG_ID, run_id, f"ok_{mode}", 1)
    assert f"{JOB_LINE} 0 of 2" in log, log[-3000:]
    assert "Complete (AllJobsCompleted" in log, log[-3000:]
    if mode == "deferred":
        assert "Pausing task as DEFERRED" in log and "Trigger fired event" in log, log[-3000:]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_node_fails_the_task_naming_it(airflow, run_id, mode):
    """The try's error, as the Training job tab shows it (the record the task wrote at its end)."""
    api = airflow.api("admin")
    assert api.task_instance(DAG_ID, run_id, f"fails_{mode}")["try_number"] == 1  # exit code 1: not retried
    (latest, *_) = tab(airflow, run_id, f"fails_{mode}")["tries"]
    assert latest["outcome"] == "failed" and latest["phase"] == "Failed", latest
    message = latest["outcome_message"]
    assert "failed: FailedJobs" in message, message
    assert "First failure (permanent: not retried): node-1 (pod " in message, message
    assert "| bad input" in message, message


@pytest.mark.parametrize("mode", MODES)
def test_the_tab_shows_the_trainjobs_runtime_nodes_and_steps(airflow, run_id, mode):
    (latest, *_) = tab(airflow, run_id, f"ok_{mode}")["tries"]
    assert latest["runtime"] == "torch-distributed" and latest["nodes"] == 2, latest
    assert [s["name"] for s in latest["steps"] or []] == ["node"], latest


@pytest.mark.parametrize("mode", MODES)
def test_a_task_marked_failed_while_its_trainjob_runs_deletes_it(
    airflow, run_id, mode, custom_objects, module_namespace
):
    api = airflow.api("admin")
    task_id = f"long_{mode}"

    def trainjob() -> dict[str, Any] | None:
        listed = custom_objects.list_namespaced_custom_object(
            TRAINER_GROUP, TRAINER_VERSION, module_namespace, "trainjobs"
        )["items"]
        mine = [j for j in listed if j["metadata"].get("annotations", {}).get("airflow-trainjob/task-id") == task_id]
        return mine[0] if mine else None

    def ready_nodes() -> int:
        return sum(j.get("ready") or 0 for j in ((trainjob() or {}).get("status") or {}).get("jobsStatus") or [])

    wait_for(ready_nodes, timeout=180, what="the long TrainJob running")
    if mode == "deferred":
        api.wait_for_task_state(DAG_ID, run_id, task_id, "deferred", timeout=60)
    api.set_task_state(DAG_ID, run_id, task_id, "failed")
    wait_for(lambda: trainjob() is None, timeout=120, what="on_kill to delete the TrainJob")

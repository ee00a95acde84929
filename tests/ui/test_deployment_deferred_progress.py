"""A deferred TrainJob try's progress over time in the Training job tab WHILE it waits in the triggerer, in a real
Airflow deployment (api-server, scheduler, dag-processor, triggerer) on the local cluster.

One deferred TrainJobOperator task whose node runs until the test releases it; meanwhile the test writes the
TrainJob's ``status.trainerStatus`` through its status subresource in two steps, as a trainer with Kubeflow Trainer's
``TrainJobStatus`` feature would. Asserted, while the task is still deferred: the trigger wrote both points to the
task instance's XCom (``airflow_trainjob_try_progress``, through the triggerer's supervisor: the first report at once,
the second once the write interval has passed, with no further report), and the tab's answer has both in its
``progress_history`` (the first from that XCom: the job itself carries only the second), as does its "Metrics over
time" table in headless Chromium. Once released and succeeded: the try's record has both points, each once (the
XCom survived the resume, Airflow clears a deferred task's XComs only when a next try starts, and the record wins).
"""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from airflow_trainjob.domain.progress import unpacked
from airflow_trainjob.domain.trigger_progress import MIN_WRITE_SECONDS, TRIGGER_PROGRESS_KEY
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment
from tests.ui.test_deployment_trainjob_progress import PROGRESS_JS, report, running_trainjobs
from tests.ui.test_e2e_ui import ADMIN, no_script_errors, open_view, tab_url

if TYPE_CHECKING:
    from tests.support.browser import Browser

DAG_ID = "e2e_deferred_progress"
TASK_ID = "train_deferred"
#: Where the test releases the node (pods are processes of this machine: they see it).
RELEASE = Path(tempfile.gettempdir()) / f"deferred-progress-{os.getpid()}"
#: The two reports the test writes, in order: (percentage, seconds left, metrics).
STEPS = [(30, 240, {"loss": "0.6120", "accuracy": "0.8100"}), (70, 120, {"loss": "0.2210", "accuracy": "0.9400"})]
DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_trainjob.operators.trainjob import TrainJobOperator

    code = (
        "import os, time\\n"
        "while not os.path.exists({str(RELEASE)!r}):\\n"
        "    time.sleep(0.5)\\n"
        "print('trained', flush=True)"
    )

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        TrainJobOperator(
            task_id={TASK_ID!r},
            runtime="torch-distributed",
            trainer={{"numNodes": 1, "command": ["python", "-c", code]}},
            deferrable=True,
            poll_interval=1,
            startup_timeout=180,
            timeout=600,
        )
    """
)


@pytest.fixture(scope="module")
def airflow(start_airflow) -> Iterator[AirflowDeployment]:
    RELEASE.unlink(missing_ok=True)
    yield start_airflow(dags={"e2e_deferred_progress.py": DAG_SOURCE}, dag_ids=[DAG_ID], users={ADMIN: ADMIN})
    RELEASE.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def browser(airflow: AirflowDeployment, new_browser) -> Browser:
    made = new_browser(width=1400, height=900)
    made.login(airflow.base_url, ADMIN, airflow.passwords[ADMIN])
    return made


def trigger_points(airflow: AirflowDeployment, run_id: str) -> list[tuple[Any, ...]]:
    """The points the trigger wrote to the task instance's XCom (Airflow's REST API), as (percentage, seconds left,
    metrics); [] when there is no such XCom yet."""
    path = f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{TASK_ID}/xcomEntries/{TRIGGER_PROGRESS_KEY}"
    try:
        value = airflow.api(ADMIN).request("GET", path)["value"]
    except httpx.HTTPStatusError as e:
        if e.response.status_code == 404:
            return []
        raise
    value = json.loads(value) if isinstance(value, str) else value
    assert value["try_number"] == 1, value
    return [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in unpacked(value["progress"])]


def tries(airflow: AirflowDeployment, run_id: str) -> list[dict[str, Any]]:
    """The Training job tab's answer's tries (``GET /trainjob/api/task-instance``), latest first."""
    params = {"dag_id": DAG_ID, "run_id": run_id, "task_id": TASK_ID, "map_index": -1}
    with airflow.client(ADMIN) as client:
        response = client.get("/trainjob/api/task-instance", params=params, timeout=60)
    assert response.status_code == 200, response.text
    return list(response.json()["tries"])


def points_of(tried: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in tried["progress_history"]]


def state(airflow: AirflowDeployment, run_id: str) -> str | None:
    return airflow.api(ADMIN).task_instance(DAG_ID, run_id, TASK_ID).get("state")


def test_the_tab_shows_a_deferred_trys_points_over_time_while_it_waits_then_its_whole_course(
    airflow: AirflowDeployment, custom_objects, module_namespace: str, browser: Browser
) -> None:
    started = time.monotonic()
    run_id = str(airflow.api(ADMIN).trigger(DAG_ID)["dag_run_id"])
    name = wait_for(
        lambda: running_trainjobs(custom_objects, module_namespace).get(TASK_ID),
        timeout=300,
        what="the TrainJob running",
    )
    wait_for(lambda: state(airflow, run_id), lambda s: s == "deferred", timeout=120, what="the task deferred")
    report(custom_objects, module_namespace, name, STEPS[0])
    wait_for(  # the first report goes at once
        lambda: trigger_points(airflow, run_id),
        lambda found: found == STEPS[:1],
        timeout=60,
        what="the first point in the trigger's XCom",
    )
    report(custom_objects, module_namespace, name, STEPS[1])  # then no report: the trigger writes it all the same
    wait_for(
        lambda: trigger_points(airflow, run_id),
        lambda found: found == STEPS,
        timeout=MIN_WRITE_SECONDS + 60,
        what="both points in the trigger's XCom, the interval after the first",
    )
    assert state(airflow, run_id) == "deferred", "still waiting in the triggerer"
    waiting = tries(airflow, run_id)[0]
    assert (waiting["exists"], waiting["try_ended"], waiting["outcome"]) == (True, False, None), waiting
    assert points_of(waiting) == STEPS, "the trigger's first point and the job's report now"

    open_view(browser, tab_url(airflow.base_url, DAG_ID, run_id, TASK_ID))
    shown = wait_for(
        lambda: browser.script(PROGRESS_JS),
        lambda s: s["now"] == "70" and len(s["rows"]) == 2,
        timeout=60,
        what="the deferred try's tab with two rows of metrics over time",
    )
    assert shown["columns"] == ["Reported", "Progress", "Time left", "loss", "accuracy"], shown
    assert [row[1:] for row in shown["rows"]] == [
        ["30%", "4 min", "0.6120", "0.8100"],
        ["70%", "2 min", "0.2210", "0.9400"],
    ], shown
    no_script_errors(browser)
    assert state(airflow, run_id) == "deferred", "the tab was read while the task waited"

    RELEASE.touch()
    airflow.api(ADMIN).wait_for_task_state(DAG_ID, run_id, TASK_ID, "success", timeout=300)
    ended = wait_for(
        lambda: tries(airflow, run_id)[0],
        lambda t: t["outcome"] == "succeeded",
        timeout=120,
        what="the try's end recorded",
    )
    assert points_of(ended) == STEPS, "the whole course, each point once"
    assert trigger_points(airflow, run_id) == STEPS, "the trigger's XCom survived the resume"
    print(f"deferred progress in the tab: {time.monotonic() - started:.0f} s from the trigger of the run")

"""The end-to-end harness works: a real Airflow deployment (api-server, scheduler, dag-processor, triggerer) runs a
small PyTorchJob on the local cluster, synchronously and deferred, triggered by REST with no logical date; the task
logs carry the job's output; the test auth manager denies a DAG to a user limited to others; and headless Chromium
signs in and shows the task instance page, in light and dark mode.
"""

from __future__ import annotations

import struct
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.support.deployment import AirflowDeployment

DAG_ID = "e2e_smoke"
#: What the Master prints; the task log must show it.
JOB_LINE = "smoke: hello from rank"
DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime, timedelta

    from airflow.sdk import DAG

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    # The process kubelet runs the command with the host's Python and ignores the image. The job lasts 20 s: when
    # a trigger fires before the deferring worker's exit has reached the scheduler (a loaded machine), Airflow 3.3.2
    # fails the resumed task ("task state changed externally", apache/airflow#66374, #72716). Should it still, the
    # retry returns the job's success without training again (the provider's answer to that race).
    CODE = (
        "import os, time; print({JOB_LINE!r}, os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], flush=True); "
        "time.sleep(20)"
    )
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
                deferrable=deferrable,
                poll_interval=1,
                startup_timeout=120,
                timeout=300,
                retries=1,
                retry_delay=timedelta(seconds=1),
            )
    """
)


@pytest.fixture(scope="module")
def airflow(start_airflow) -> AirflowDeployment:
    return start_airflow(
        dags={"e2e_smoke.py": DAG_SOURCE},
        dag_ids=[DAG_ID],
        users={"admin": "admin", "viewer": "viewer"},
        dag_access={"viewer": ["some_other_dag"]},
    )


@pytest.fixture(scope="module")
def run_id(airflow: AirflowDeployment) -> str:
    """One run of the DAG, triggered by REST with ``{"logical_date": null}``, both tasks succeeded."""
    api = airflow.api("admin")
    run = api.trigger(DAG_ID)
    assert run["logical_date"] is None
    for task_id in ("train_sync", "train_deferred"):
        api.wait_for_task_state(DAG_ID, run["dag_run_id"], task_id, "success", timeout=240)
    return str(run["dag_run_id"])


@pytest.mark.parametrize("task_id", ["train_sync", "train_deferred"])
def test_task_log_shows_the_jobs_output(airflow: AirflowDeployment, run_id: str, task_id: str) -> None:
    log = airflow.api("admin").task_log_text(DAG_ID, run_id, task_id, 1)  # the try that trained
    assert f"{JOB_LINE} 0 of 1" in log, log[-3000:]
    assert "PyTorchJob" in log, log[-3000:]


def test_the_deferred_task_went_through_the_triggerer(airflow: AirflowDeployment, run_id: str) -> None:
    """The first try deferred on a worker, its trigger run by the triggerer process, resumed on a worker; the task
    log (as the api-server serves it) holds the trigger's lines too. (A second try is Airflow's race, above.)"""
    api = airflow.api("admin")
    log = api.task_log_text(DAG_ID, run_id, "train_deferred", 1)
    assert "Pausing task as DEFERRED" in log, log[-3000:]
    assert "Trigger fired event" in log, log[-3000:]
    assert "Pausing task as DEFERRED" not in api.task_log_text(DAG_ID, run_id, "train_sync")


def test_a_user_limited_to_other_dags_is_denied(airflow: AirflowDeployment, run_id: str) -> None:
    with airflow.client("viewer") as viewer, airflow.client(None) as anonymous:
        assert viewer.get(f"/api/v2/dags/{DAG_ID}").status_code == 403
        assert viewer.get(f"/api/v2/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/train_sync").status_code == 403
        assert DAG_ID not in [d["dag_id"] for d in viewer.get("/api/v2/dags").json()["dags"]]
        assert anonymous.get(f"/api/v2/dags/{DAG_ID}").status_code == 401
    assert airflow.api("admin").request("GET", f"/dags/{DAG_ID}")["dag_id"] == DAG_ID


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    return width, height


def test_the_browser_shows_the_task_instance_page(
    airflow: AirflowDeployment, run_id: str, new_browser, screenshot_dir: Path
) -> None:
    browser = new_browser(width=1400, height=900)
    browser.login(airflow.base_url, "admin", airflow.passwords["admin"])
    browser.open(f"{airflow.base_url}/dags/{DAG_ID}/runs/{quote(run_id, safe='')}/tasks/train_sync")
    browser.wait_for_text("train_sync", exact=True)
    browser.wait_for_text("Success", exact=True)
    browser.wait_for_text(JOB_LINE, timeout=60)
    light = browser.screenshot(screenshot_dir / "smoke-task-instance.png")
    assert _png_size(light) == (1400, 900)

    browser.set_color_mode("dark")
    assert browser.color_mode() == "dark"
    dark = browser.screenshot(screenshot_dir / "smoke-task-instance-dark.png")
    assert _png_size(dark) == (1400, 900)
    assert dark.read_bytes() != light.read_bytes()
    browser.set_color_mode("light")
    assert browser.color_mode() == "light"
    assert browser.console_errors() == []


def test_marked_failed_then_cleared_the_task_runs_again(airflow: AirflowDeployment, run_id: str) -> None:
    """Mark failed and Clear as the UI does them (last in this module: it changes the run)."""
    api = airflow.api("admin")
    api.set_task_state(DAG_ID, run_id, "train_sync", "failed")
    assert api.task_instance(DAG_ID, run_id, "train_sync")["state"] == "failed"
    api.clear_task(DAG_ID, run_id, ["train_sync"])
    ti = api.wait_for_task_state(DAG_ID, run_id, "train_sync", "success", timeout=240)
    assert ti["try_number"] == 2
    assert f"{JOB_LINE} 0 of 1" in api.task_log_text(DAG_ID, run_id, "train_sync", 2)

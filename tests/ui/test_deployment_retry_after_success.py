"""A success survives Airflow running the task again, in a real Airflow deployment (api-server, scheduler with
LocalExecutor, dag-processor, triggerer), synchronous and deferred.

Try 1 of each task runs its job to success; its cleanup deletes the job (``on_finish`` default,
``delete_succeeded_job``) and then its worker is SIGKILLed, before the task runner reports the success (the DAG's
operator kills its own process on try 1): Airflow's supervisor sees the task process die and puts the task up for
retry — what a worker lost after the cleanup causes, and what the scheduler's race after a deferred resume
(apache/airflow#72716) leaves behind. Try 2, run by the scheduler after ``retry_delay``, returns try 1's summary as
its XCom without creating a job, and says so in its log; the Training job tab says so too. Clearing the task then
trains again (try 3, a new job). A watch counts the jobs each task created.
"""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import datetime
from typing import Any
from urllib.parse import quote

import pytest

from airflow_trainjob.constants import LABEL_TASK_ID
from airflow_trainjob.domain.names import sanitize_label_value
from tests.support.deployment import AirflowDeployment
from tests.support.faults import JobCreations
from tests.support.report import record

DAG_ID = "e2e_retry_after_success"
TASKS = {"train_sync": "synchronous", "train_deferred": "deferred"}
KILLED = "try 1: the cleanup is done; killing this worker before it reports the success"
DAG_SOURCE = textwrap.dedent(
    f"""
    import os
    import signal
    from datetime import datetime, timedelta

    from airflow.sdk import DAG

    from airflow_trainjob.operators.training_job import TrainingJobOperator


    class LostAfterItsCleanup(TrainingJobOperator):
        # Try 1's worker dies right after the try's cleanup deleted its succeeded job (execute, or the resumed
        # execute_complete, has returned the summary; the task runner has not reported it yet).
        def execute(self, context):
            return self._die_on_try_1(context, super().execute(context))

        def execute_complete(self, context, event):
            return self._die_on_try_1(context, super().execute_complete(context, event))

        def _die_on_try_1(self, context, summary):
            if context["ti"].try_number == 1:
                print({KILLED!r}, flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            return summary


    # The job lasts 20 s: a trigger that fires before the deferring worker's exit has reached the scheduler (a loaded
    # machine) sets off Airflow's own race (apache/airflow#72716), which would add a try of its own to the count below.
    CODE = "import time; print('trained', flush=True); time.sleep(20)"
    MASTER = {{
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {{"spec": {{"containers": [
            {{"name": "pytorch", "image": "python:3.11-slim", "command": [{sys.executable!r}, "-c", CODE]}}
        ]}}}},
    }}

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        for task_id, deferrable in (("train_sync", False), ("train_deferred", True)):
            LostAfterItsCleanup(
                task_id=task_id,
                kind="PyTorchJob",
                replica_specs={{"Master": MASTER}},
                deferrable=deferrable,
                poll_interval=1,
                startup_timeout=120,
                timeout=300,
                retries=2,
                retry_delay=timedelta(seconds=1),
            )
    """
)


@pytest.fixture(scope="module")
def airflow(start_airflow) -> AirflowDeployment:
    return start_airflow(dags={"e2e_retry_after_success.py": DAG_SOURCE}, dag_ids=[DAG_ID])


@pytest.fixture(scope="module")
def creations(kube_api_client, module_namespace):
    watcher = JobCreations(kube_api_client, module_namespace).start()
    yield watcher
    watcher.stop()


def jobs_created(creations: JobCreations, task_id: str) -> int:
    """Distinct jobs ever seen for ``task_id`` (its label)."""
    value = sanitize_label_value(task_id)
    return sum(1 for labels in creations.seen.values() if labels.get(LABEL_TASK_ID) == value)


def xcom(airflow: AirflowDeployment, run_id: str, task_id: str, key: str) -> Any:
    """The XCom ``key`` of the task instance, as the REST API returns it."""
    path = f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/{key}"
    value = airflow.api("admin").request("GET", path)["value"]
    return json.loads(value) if isinstance(value, str) and value[:1] in "{[" else value


def seconds(ti: dict[str, Any]) -> float:
    start, end = (datetime.fromisoformat(ti[k].replace("Z", "+00:00")) for k in ("start_date", "end_date"))
    return (end - start).total_seconds()


def execute_seconds(entries: list[Any]) -> float | None:
    """Seconds from the end of the task log's "Pre Execute" group to the start of "Post Execute": the operator's
    ``execute`` (None when the log does not have both)."""
    last_end: datetime | None = None
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("timestamp"):
            continue
        at = datetime.fromisoformat(str(entry["timestamp"]).replace("Z", "+00:00"))
        if entry.get("event") == "::endgroup::":
            last_end = at
        elif entry.get("event") == "::group::Post Execute" and last_end is not None:
            return round((at - last_end).total_seconds(), 3)
    return None


def tab_tries(airflow: AirflowDeployment, run_id: str, task_id: str) -> list[dict[str, Any]]:
    """The Training job tab's tries (``GET /trainjob/api/task-instance``), latest first."""
    with airflow.client("admin") as client:
        response = client.get(
            "/trainjob/api/task-instance",
            params={"dag_id": DAG_ID, "run_id": run_id, "task_id": task_id, "map_index": -1},
        )
    assert response.status_code == 200, response.text
    return list(response.json()["tries"])


@pytest.fixture(scope="module")
def run_id(airflow: AirflowDeployment, creations: JobCreations) -> str:
    """One run, triggered by REST with no logical date; each task's try 1 killed after its cleanup, try 2 done."""
    api = airflow.api("admin")
    run = api.trigger(DAG_ID)
    for task_id in TASKS:
        api.wait_for_task_state(DAG_ID, run["dag_run_id"], task_id, "success", timeout=300)
    return str(run["dag_run_id"])


@pytest.mark.parametrize("task_id", list(TASKS))
def test_the_retry_returns_the_success_without_a_job(airflow, creations, run_id, task_id, capsys):
    api = airflow.api("admin")
    ti = api.task_instance(DAG_ID, run_id, task_id)
    assert ti["try_number"] == 2 and ti["state"] == "success"
    first = api.task_log_text(DAG_ID, run_id, task_id, 1)
    assert KILLED in first, first[-3000:]
    retry = api.task_log_text(DAG_ID, run_id, task_id, 2)
    namespace, name = (xcom(airflow, run_id, task_id, key) for key in ("job_namespace", "job_name"))
    said = f"Not training again: try 1's PyTorchJob {namespace}/{name} succeeded"
    assert said in retry, retry[-3000:]
    assert "Created PyTorchJob" not in retry and "Pausing task as DEFERRED" not in retry
    assert jobs_created(creations, task_id) == 1

    value = xcom(airflow, run_id, task_id, "return_value")
    assert value["name"] == name and value["conditions"][-1]["type"] == "Succeeded"

    latest, earlier = tab_tries(airflow, run_id, task_id)
    assert (latest["try_number"], latest["reused_from_try"], latest["outcome"]) == (2, 1, "succeeded")
    assert (latest["uid"], latest["exists"]) == (earlier["uid"], False) and earlier["outcome"] == "succeeded"

    took, entries = seconds(ti), api.task_log(DAG_ID, run_id, task_id, 2)
    executed = execute_seconds(entries)
    record(
        "deployment_retry_after_success",
        mode=TASKS[task_id],
        retry_ms=round(took * 1000),
        execute_ms=None if executed is None else round(executed * 1000),
    )
    with capsys.disabled():  # what the retry logged and how long it took, for the record of the run
        print(f"\n[{TASKS[task_id]}] try 2 took {took:.2f} s (start_date to end_date); its log:")
        print(f"  of which execute (from the end of Pre Execute to Post Execute): {executed} s")
        for entry in entries:
            if isinstance(entry, dict):
                print(f"  {entry.get('timestamp', '')} {entry.get('level', '')}: {entry.get('event', '')}")
    assert took < 60, f"the retry took {took:.1f} s"


def test_the_tab_says_the_retry_did_not_train(airflow, run_id, new_browser, screenshot_dir):
    """The Training job tab of try 2: the job as try 1 recorded it (gone), and that try 2 returned its success."""
    browser = new_browser(width=1400, height=900)
    browser.login(airflow.base_url, "admin", airflow.passwords["admin"])
    browser.open(f"{airflow.base_url}/dags/{DAG_ID}/runs/{quote(run_id, safe='')}/tasks/train_sync/plugin/training-job")
    browser.driver.switch_to.frame(browser.wait_for("iframe[src*='trainjob/ui/']"))
    browser.wait_for_text("Did not train again: returned the success of try 1's job", timeout=60)
    browser.wait_for_text("No longer exists", timeout=10)
    browser.screenshot(screenshot_dir / "ui-task-retry-after-success-light.png")
    assert browser.console_errors() == []


def test_a_clear_then_trains_again(airflow, creations, run_id):
    """Last in this module: it changes the run."""
    api = airflow.api("admin")
    api.clear_task(DAG_ID, run_id, list(TASKS))
    for task_id in TASKS:
        ti = api.wait_for_task_state(DAG_ID, run_id, task_id, "success", timeout=300)
        assert ti["try_number"] == 3
        log = api.task_log_text(DAG_ID, run_id, task_id, 3)
        assert "but the task was cleared since (clear_number 0, max_tries 2 then, clear_number 1, max_tries 4 now)" in (
            log
        ), log[-3000:]
        assert "Created PyTorchJob" in log and "Not training again" not in log
        assert jobs_created(creations, task_id) == 2
        assert [t["reused_from_try"] for t in tab_tries(airflow, run_id, task_id)] == [None, 1, None]

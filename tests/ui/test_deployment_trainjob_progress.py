"""A TrainJob's own progress where DAG authors look, in a real Airflow deployment (api-server, scheduler,
dag-processor, triggerer) on the local cluster: one DAG run holds a synchronous and a deferred TrainJob task whose
nodes run until the test releases them; meanwhile the test writes each TrainJob's ``status.trainerStatus`` through its
status subresource in two steps, as a trainer with Kubeflow Trainer's ``TrainJobStatus`` feature would (the local
trainer's status writes are merge patches: they keep it).

Asserted: each step is one progress line in the task log, in both modes (the deferred one's from its trigger); the
Training job tab of the running synchronous task, in headless Chromium, shows the progress bar at the last percentage
(``role=progressbar`` and its ``aria-valuenow``), the estimate in words and the metrics as a table over time (one row per
report, one column per metric), saved as a screenshot; the Training jobs page shows the progress in the TrainJob's
row; once both succeeded (and their TrainJobs were deleted), the tab's answer still has both reports of each try,
the deferred one's handed over by its trigger's event.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from airflow_trainjob.constants import LABEL_TASK_ID, TRAINER_GROUP, TRAINER_VERSION
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowDeployment
from tests.ui.test_e2e_ui import ADMIN, no_script_errors, open_view, screenshot, tab_url

if TYPE_CHECKING:
    from tests.support.browser import Browser

DAG_ID = "e2e_trainjob_progress"
MODES = ("sync", "deferred")
#: Where the test releases the nodes (pods are processes of this machine: they see it).
RELEASES = Path(tempfile.gettempdir()) / f"trainjob-progress-{os.getpid()}"
#: The two reports the test writes, in order: (percentage, seconds left, metrics).
STEPS = [(45, 300, {"loss": "0.2347", "accuracy": "0.9876"}), (80, 75, {"loss": "0.1021", "accuracy": "0.9950"})]
LINES = [
    "45% done, about 300 s left; loss 0.2347, accuracy 0.9876",
    "80% done, about 75 s left; loss 0.1021, accuracy 0.9950",
]
DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_trainjob.operators.trainjob import TrainJobOperator

    def until_released(mode):
        path = {str(RELEASES)!r} + "/" + mode
        return (
            "import os, time\\n"
            f"while not os.path.exists({{path!r}}):\\n"
            "    time.sleep(0.5)\\n"
            "print('trained', flush=True)"
        )

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        for mode in {list(MODES)!r}:
            TrainJobOperator(
                task_id=f"train_{{mode}}",
                runtime="torch-distributed",
                trainer={{"numNodes": 1, "command": ["python", "-c", until_released(mode)]}},
                deferrable=mode == "deferred",
                poll_interval=1,
                startup_timeout=180,
                timeout=600,
            )
    """
)
#: What the tab's progress shows, in its frame.
PROGRESS_JS = """
const q = (s, el) => (el || document).querySelector(s);
const qa = (s, el) => Array.from((el || document).querySelectorAll(s));
const bar = q(".progress-view [role=progressbar]");
const table = q(".progress-view table.metrics.history");
return {
  now: bar ? bar.getAttribute("aria-valuenow") : null,
  min: bar ? bar.getAttribute("aria-valuemin") : null,
  max: bar ? bar.getAttribute("aria-valuemax") : null,
  text: q(".progress-view .progress-text") ? q(".progress-view .progress-text").innerText.trim() : null,
  updated: q(".progress-view .progress-updated") ? q(".progress-view .progress-updated").innerText.trim() : null,
  columns: table ? qa("thead th", table).map(th => th.innerText.trim()) : [],
  rows: table ? qa("tbody tr", table).map(tr => Array.from(tr.cells).map(c => c.innerText.trim())) : [],
};
"""
#: The Training jobs page's progress cells: the bar's value and its words, per TrainJob row.
JOBS_PROGRESS_JS = """
return Array.from(document.querySelectorAll("section[aria-labelledby='jobs-h'] tbody tr [role=progressbar]")).map(
  bar => [bar.getAttribute("aria-valuenow"), bar.closest("td").innerText.trim()]);
"""


@pytest.fixture(scope="module")
def airflow(start_airflow) -> Iterator[AirflowDeployment]:
    RELEASES.mkdir(parents=True, exist_ok=True)
    yield start_airflow(dags={"e2e_trainjob_progress.py": DAG_SOURCE}, dag_ids=[DAG_ID], users={ADMIN: ADMIN})
    shutil.rmtree(RELEASES, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(airflow: AirflowDeployment, new_browser) -> Browser:
    made = new_browser(width=1400, height=900)
    made.login(airflow.base_url, ADMIN, airflow.passwords[ADMIN])
    return made


def trainer_status(percent: int, left: int, metrics: dict[str, str]) -> dict[str, Any]:
    return {
        "progressPercentage": percent,
        "estimatedRemainingSeconds": left,
        "metrics": [{"name": k, "value": v} for k, v in metrics.items()],
        "lastUpdatedTime": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def tries(airflow: AirflowDeployment, run_id: str, task_id: str) -> list[dict[str, Any]]:
    """The Training job tab's answer's tries (``GET /trainjob/api/task-instance``), latest first."""
    response = httpx.get(
        f"{airflow.base_url}/trainjob/api/task-instance",
        params={"dag_id": DAG_ID, "run_id": run_id, "task_id": task_id, "map_index": -1},
        headers={"Authorization": f"Bearer {airflow.token(ADMIN)}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return list(response.json()["tries"])


def has_line(line: str, log: str) -> bool:
    return line in log


def latest_try(airflow: AirflowDeployment, run_id: str, task_id: str) -> dict[str, Any]:
    return tries(airflow, run_id, task_id)[0]


def running_trainjobs(custom_objects, namespace: str) -> dict[str, str]:
    """Task id -> the name of its TrainJob, for each TrainJob of the namespace whose node Job is ready."""
    items = custom_objects.list_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs")[
        "items"
    ]
    return {
        j["metadata"]["labels"][LABEL_TASK_ID]: j["metadata"]["name"]
        for j in items
        if any(s.get("ready") for s in (j.get("status") or {}).get("jobsStatus") or [])
    }


@pytest.fixture(scope="module")
def run_id(airflow: AirflowDeployment, custom_objects, module_namespace) -> str:
    """One run of the DAG, both TrainJobs running; each reported in two steps, each step seen in its task log."""
    api = airflow.api(ADMIN)
    run_id = str(api.trigger(DAG_ID)["dag_run_id"])
    names = wait_for(
        lambda: running_trainjobs(custom_objects, module_namespace),
        lambda found: len(found) == len(MODES),
        timeout=300,
        what="both TrainJobs running",
    )
    for (percent, left, metrics), line in zip(STEPS, LINES, strict=True):
        for mode in MODES:
            task_id = f"train_{mode}"
            body = {"status": {"trainerStatus": trainer_status(percent, left, metrics)}}
            custom_objects.patch_namespaced_custom_object_status(
                TRAINER_GROUP, TRAINER_VERSION, module_namespace, "trainjobs", names[task_id], body
            )
            wait_for(
                functools.partial(api.task_log_text, DAG_ID, run_id, task_id, 1),
                functools.partial(has_line, line),
                timeout=120,
                what=f"{task_id}'s progress line {line!r}",
            )
    return run_id


def test_each_report_is_one_progress_line_in_the_task_log_in_both_modes(airflow, run_id):
    for mode in MODES:
        log = airflow.api(ADMIN).task_log_text(DAG_ID, run_id, f"train_{mode}", 1)
        for line in LINES:
            assert log.count(f"1 active, 1 ready; {line}") == 1, f"{mode}: {line!r} not once in:\n{log[-3000:]}"


def test_the_tab_shows_the_bar_the_estimate_and_the_metrics_over_time(
    airflow: AirflowDeployment, run_id: str, browser: Browser, screenshot_dir: Path
) -> None:
    wait_for(  # the synchronous wait wrote both reports into the try's record
        lambda: tries(airflow, run_id, "train_sync")[0]["progress_history"],
        lambda points: [p["percentage"] for p in points] == [45, 80],
        timeout=60,
        what="both reports in the running try's record",
    )
    open_view(browser, tab_url(airflow.base_url, DAG_ID, run_id, "train_sync"))
    shown = wait_for(
        lambda: browser.script(PROGRESS_JS),
        lambda s: s["now"] == "80" and len(s["rows"]) == 2,
        timeout=60,
        what="the tab's progress at 80% with two reports",
    )
    assert (shown["min"], shown["max"]) == ("0", "100")
    assert shown["text"] == "80% · about 1 min left", shown
    assert shown["updated"].startswith("Last reported "), shown
    assert shown["columns"] == ["Reported", "Progress", "Time left", "loss", "accuracy"], shown
    assert [row[1:] for row in shown["rows"]] == [
        ["45%", "5 min", "0.2347", "0.9876"],
        ["80%", "1 min", "0.1021", "0.9950"],
    ], shown
    browser.script("document.querySelector('.progress-view').scrollIntoView({block: 'center'})")
    path = screenshot(browser, screenshot_dir, "ui-trainjob-progress-light.png")
    print(f"screenshot: {path}")
    no_script_errors(browser)


def test_the_jobs_page_shows_the_progress_in_the_trainjobs_row(airflow: AirflowDeployment, run_id: str, browser):
    open_view(browser, f"{airflow.base_url}/plugin/training-jobs")
    cells = wait_for(
        lambda: browser.script(JOBS_PROGRESS_JS),
        lambda found: len(found) == len(MODES),
        timeout=60,
        what="a progress bar in each TrainJob's row",
    )
    assert all(value == "80" and "80% · about 1 min left" in said for value, said in cells), cells


def test_after_success_each_try_keeps_both_reports(airflow: AirflowDeployment, run_id: str) -> None:
    api = airflow.api(ADMIN)
    for mode in MODES:
        (RELEASES / mode).touch()
    for mode in MODES:
        api.wait_for_task_state(DAG_ID, run_id, f"train_{mode}", "success", timeout=300)
        latest = wait_for(
            functools.partial(latest_try, airflow, run_id, f"train_{mode}"),
            lambda t: not t["exists"] and t["outcome"] == "succeeded",
            timeout=120,
            what=f"train_{mode}'s TrainJob deleted and its end recorded",
        )
        points = [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in latest["progress_history"]]
        assert points == STEPS, f"{mode}: {points}"
        path = f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/train_{mode}/xcomEntries/return_value"
        value = api.request("GET", path)["value"]
        summary = json.loads(value) if isinstance(value, str) else value
        assert summary["progress"]["percentage"] == 80 and summary["progress"]["metrics"] == STEPS[1][2], summary

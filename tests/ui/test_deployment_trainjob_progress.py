"""A TrainJob's own progress where DAG authors look, in a real Airflow deployment (api-server, scheduler,
dag-processor, triggerer) on the local cluster: one DAG run holds four TrainJob tasks whose nodes run until the test
releases them -- a synchronous and a deferred one that succeed, a deferred one marked failed and a synchronous one
cleared; meanwhile the test writes each TrainJob's ``status.trainerStatus`` through its status subresource (two steps
for the first two, one for the others), as a trainer with Kubeflow Trainer's ``TrainJobStatus`` feature would (the
local trainer's status writes are merge patches: they keep it).

Asserted: each step is one progress line in the task log, in both modes (the deferred one's from its trigger); the
Training job tab of the running synchronous task, in headless Chromium, shows the progress bar at the last percentage
(``role=progressbar`` and its ``aria-valuenow``), the estimate in words and the metrics as a table over time (one row per
report, one column per metric), saved as a screenshot; the Training jobs page shows the progress in the TrainJob's
row; the killed try's tab shows the report its trigger saw (parked with its end), the cleared try's the one it
recorded while it ran (and its next try, whose TrainJob reports nothing, none); once the first two succeeded (and
their TrainJobs were deleted), the tab's answer still has both reports of each try (the deferred one's handed over by
its trigger's event), and the XCom summary the last.
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
#: Where the test releases the nodes (pods are processes of this machine: they see it).
RELEASES = Path(tempfile.gettempdir()) / f"trainjob-progress-{os.getpid()}"
#: The two reports the test writes, in order: (percentage, seconds left, metrics).
STEPS = [(45, 300, {"loss": "0.2347", "accuracy": "0.9876"}), (80, 75, {"loss": "0.1021", "accuracy": "0.9950"})]
LINES = [
    "45% done, about 300 s left; loss 0.2347, accuracy 0.9876",
    "80% done, about 75 s left; loss 0.1021, accuracy 0.9950",
]
#: The tasks: the two that succeed once released; a deferred one marked failed (killed in the triggerer) and a
#: synchronous one cleared (killed on its worker), each after one report.
SUCCEEDING = {"train_sync": False, "train_deferred": True}
KILLED, CLEARED = "killed_deferred", "cleared_sync"
TASKS = {**SUCCEEDING, KILLED: True, CLEARED: False}
DAG_SOURCE = textwrap.dedent(
    f"""
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_trainjob.operators.trainjob import TrainJobOperator

    def until_released(task_id):
        path = {str(RELEASES)!r} + "/" + task_id
        return (
            "import os, time\\n"
            f"while not os.path.exists({{path!r}}):\\n"
            "    time.sleep(0.5)\\n"
            "print('trained', flush=True)"
        )

    with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
        for task_id, deferrable in {TASKS!r}.items():
            TrainJobOperator(
                task_id=task_id,
                runtime="torch-distributed",
                trainer={{"numNodes": 1, "command": ["python", "-c", until_released(task_id)]}},
                deferrable=deferrable,
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


def report(custom_objects, namespace: str, name: str, step: tuple[int, int, dict[str, str]]) -> None:
    """Write ``step`` as the TrainJob's ``status.trainerStatus`` through its status subresource."""
    body = {"status": {"trainerStatus": trainer_status(*step)}}
    custom_objects.patch_namespaced_custom_object_status(
        TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", name, body
    )


@pytest.fixture(scope="module")
def run_id(airflow: AirflowDeployment, custom_objects, module_namespace) -> str:
    """One run of the DAG, every TrainJob running; the succeeding ones reported in two steps, the others in one,
    each step seen in its task's log."""
    api = airflow.api(ADMIN)
    run_id = str(api.trigger(DAG_ID)["dag_run_id"])
    names = wait_for(
        lambda: running_trainjobs(custom_objects, module_namespace),
        lambda found: len(found) == len(TASKS),
        timeout=300,
        what="every TrainJob running",
    )
    for index, (step, line) in enumerate(zip(STEPS, LINES, strict=True)):
        for task_id in TASKS if index == 0 else SUCCEEDING:
            report(custom_objects, module_namespace, names[task_id], step)
            wait_for(
                functools.partial(api.task_log_text, DAG_ID, run_id, task_id, 1),
                functools.partial(has_line, line),
                timeout=120,
                what=f"{task_id}'s progress line {line!r}",
            )
    return run_id


def test_each_report_is_one_progress_line_in_the_task_log_in_both_modes(airflow, run_id):
    for task_id in SUCCEEDING:
        log = airflow.api(ADMIN).task_log_text(DAG_ID, run_id, task_id, 1)
        for line in LINES:
            assert log.count(f"1 active, 1 ready; {line}") == 1, f"{task_id}: {line!r} not once in:\n{log[-3000:]}"


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
        lambda found: len(found) == len(TASKS),
        timeout=60,
        what="a progress bar in each TrainJob's row",
    )
    assert sorted(value for value, _ in cells) == ["45", "45", "80", "80"], cells
    assert all("80% · about 1 min left" in said for value, said in cells if value == "80"), cells
    assert all("45% · about 5 min left" in said for value, said in cells if value == "45"), cells


def test_a_deferred_try_marked_failed_shows_the_progress_its_trigger_saw(airflow: AirflowDeployment, run_id: str):
    airflow.api(ADMIN).set_task_state(DAG_ID, run_id, KILLED, "failed")
    latest = wait_for(
        functools.partial(latest_try, airflow, run_id, KILLED),
        lambda t: not t["exists"] and t["outcome"] == "stopped",
        timeout=120,
        what=f"{KILLED}'s TrainJob deleted and its end parked by its trigger",
    )
    assert latest["seen_by"] == "trigger", latest
    points = [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in latest["progress_history"]]
    assert points == STEPS[:1], points


def test_a_cleared_synchronous_try_shows_the_progress_it_recorded_while_it_ran(
    airflow: AirflowDeployment, run_id: str
) -> None:
    # The run's fixture saw the report's line: the synchronous wait records its point as it logs it (a cleared try's
    # own end is refused: Airflow replaced its task instance's id), so the first try's tab shows it after the clear.
    wait_for(
        functools.partial(latest_try, airflow, run_id, CLEARED),
        lambda t: [p["percentage"] for p in t["progress_history"]] == [45],
        timeout=60,
        what=f"{CLEARED}'s report in its tab",
    )
    api = airflow.api(ADMIN)
    api.clear_task(DAG_ID, run_id, [CLEARED])
    first, second = wait_for(
        lambda: tries(airflow, run_id, CLEARED)[::-1],
        lambda found: len(found) == 2 and not found[0]["exists"],
        timeout=240,
        what=f"{CLEARED}'s second try, its first try's TrainJob deleted",
    )
    points = [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in first["progress_history"]]
    assert points == STEPS[:1], first
    assert second["progress_history"] == [], "the second try's TrainJob reported nothing"
    (RELEASES / CLEARED).touch()
    api.wait_for_task_state(DAG_ID, run_id, CLEARED, "success", timeout=300)


def test_after_success_each_try_keeps_both_reports(airflow: AirflowDeployment, run_id: str) -> None:
    api = airflow.api(ADMIN)
    for task_id in SUCCEEDING:
        (RELEASES / task_id).touch()
    for task_id in SUCCEEDING:
        api.wait_for_task_state(DAG_ID, run_id, task_id, "success", timeout=300)
        latest = wait_for(
            functools.partial(latest_try, airflow, run_id, task_id),
            lambda t: not t["exists"] and t["outcome"] == "succeeded",
            timeout=120,
            what=f"{task_id}'s TrainJob deleted and its end recorded",
        )
        points = [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in latest["progress_history"]]
        assert points == STEPS, f"{task_id}: {points}"
        path = f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value"
        value = api.request("GET", path)["value"]
        summary = json.loads(value) if isinstance(value, str) else value
        assert summary["progress"]["percentage"] == 80 and summary["progress"]["metrics"] == STEPS[1][2], summary

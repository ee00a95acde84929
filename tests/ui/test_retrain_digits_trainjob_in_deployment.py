"""The TrainJob example in a real Airflow deployment (api-server, scheduler, dag-processor, triggerer), synchronously
and deferred: the example DAG file as shipped, a run triggered through the REST API with ``{"logical_date": null}``
and the run its ``@weekly`` schedule makes on unpausing (with a logical date); each trains the digits classifier as a
TrainJob on ``torch-distributed`` (2 nodes) and ``report`` reads its metrics.

The training's own progress as users see it: node 0 reports each epoch into the TrainJob's ``status.trainerStatus``
(the local cluster's status server, Kubeflow Trainer's ``TrainJobStatus``). Asserted in both modes: the train task's
log has a progress line per report it saw (percentages rising to 100, with the epoch's training loss, which falls,
and the test accuracy), the Training job tab's answer (``GET /trainjob/api/task-instance``) has the same points in
``progress_history``, and the XCom summary's ``progress`` is the last (100%, the final loss and accuracy of the
metrics file). The synchronous wait
follows the TrainJob by its watch, so it sees every report: one point per epoch. The deferred try's trigger looks at
the shared stream's latest state of the job when it wakes, so reports that come faster than it wakes are seen as the
latest of them: its points are a rising part of the epochs', ending at 100%. The synchronous try's tab, in headless
Chromium, shows the bar at 100% and the metrics over time, one row per epoch, saved as a screenshot."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deployment import AirflowApi, AirflowDeployment
from tests.support.examples import EXAMPLES
from tests.ui.test_deployment_trainjob_progress import PROGRESS_JS
from tests.ui.test_e2e_ui import no_script_errors, open_view, screenshot, tab_url

if TYPE_CHECKING:
    from tests.support.browser import Browser

DAG_ID = "retrain_digits_trainjob"
#: Seconds a run may take: two trainings side by side on a loaded machine.
RUN_WITHIN = 600
EPOCHS = 5
#: The percentage each epoch's report gives (``epoch * 100 // epochs``).
EPOCH_PERCENTAGES = [epoch * 100 // EPOCHS for epoch in range(1, EPOCHS + 1)]
#: A progress line's report: ``...; 40% done, about 2 s left; loss 0.1234, accuracy 0.9567`` (no estimate once the
#: TrainJob is terminal).
PROGRESS_LINE = re.compile(r"; (\d+)% done(?:, about \d+ s left)?; loss (\d+\.\d{4}), accuracy (\d+\.\d{4})")
SCREENSHOT = "ui-trainjob-example-progress-light.png"

pytestmark = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("sklearn") is None,
    reason="the example trains with torch on scikit-learn's digits (scripts/test.sh installs both)",
)


def _runs(api: AirflowApi) -> list[dict]:
    return api.request("GET", f"/dags/{DAG_ID}/dagRuns")["dag_runs"]


def _check_run(api: AirflowApi, run_id: str, deferrable: bool) -> dict[str, Any]:
    """The run's ``train`` followed node 0 and (deferred) went through the triggerer; ``report`` read the metrics
    node 0 wrote, named after the TrainJob. The metrics."""
    api.wait_for_task_state(DAG_ID, run_id, "report", "success", timeout=RUN_WITHIN)
    train_log = api.task_log_text(DAG_ID, run_id, "train", 1)
    assert "[node-0] rank 0/2: 673 training images" in train_log, train_log[-3000:]
    job = re.search(r"TrainJob \S+/(retrain-digits-trainjob-\w+): Complete", train_log).group(1)
    assert ("Pausing task as DEFERRED" in train_log) is deferrable, train_log[-3000:]
    report_log = api.task_log_text(DAG_ID, run_id, "report")
    path = Path(re.search(r"metrics from (\S+\.json)", report_log).group(1))
    assert path.name == f"metrics-{job}.json"
    metrics = json.loads(path.read_text())
    assert metrics["world_size"] == 2 and metrics["epochs"] == EPOCHS and metrics["accuracy"] >= 0.8
    assert "final metrics: " + json.dumps(metrics, sort_keys=True) in report_log
    return metrics


def reports_in_log(log: str) -> list[tuple[int, str, str]]:
    """The training's reports the task log's progress lines name, each once: ``(percentage, loss, accuracy)``, in
    order (a line logged again for another change of the job, its nodes ending, names the same report)."""
    found = [(int(m[1]), m[2], m[3]) for m in PROGRESS_LINE.finditer(log)]
    return [report for i, report in enumerate(found) if i == 0 or found[i - 1] != report]


def tab_tries(airflow: AirflowDeployment, run_id: str) -> list[dict[str, Any]]:
    """The Training job tab's answer's tries of ``train`` (``GET /trainjob/api/task-instance``), latest first."""
    response = httpx.get(
        f"{airflow.base_url}/trainjob/api/task-instance",
        params={"dag_id": DAG_ID, "run_id": run_id, "task_id": "train", "map_index": -1},
        headers={"Authorization": f"Bearer {airflow.token('admin')}"},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    return list(response.json()["tries"])


def _check_progress(
    airflow: AirflowDeployment, run_id: str, deferrable: bool, metrics: dict[str, Any]
) -> list[dict[str, Any]]:
    """The training's reports in the task log, the tab's ``progress_history`` and the XCom summary (see the module's
    docstring). The tab's points."""
    api = airflow.api("admin")
    train_log = api.task_log_text(DAG_ID, run_id, "train", 1)
    logged = reports_in_log(train_log)
    percentages = [percentage for percentage, _, _ in logged]
    if deferrable:  # the reports the trigger's looks saw: rising, the last one among them
        assert percentages == sorted(set(percentages)) and set(percentages) <= set(EPOCH_PERCENTAGES), logged
        assert percentages[-1:] == [100], train_log[-3000:]
    else:  # the watch saw each
        assert percentages == EPOCH_PERCENTAGES, train_log[-3000:]
    losses = [float(loss) for _, loss, _ in logged]
    assert losses == sorted(losses, reverse=True), f"the epochs' training loss does not fall: {logged}"
    final = (100, f"{metrics['final_loss']:.4f}", f"{metrics['accuracy']:.4f}")
    assert logged[-1] == final, (logged, metrics)

    tried = wait_for(  # the try's end (its points) is recorded as the task ends
        lambda: tab_tries(airflow, run_id),
        lambda found: len(found) == 1 and found[0]["outcome"] == "succeeded",
        timeout=60,
        what="the train try's end in its tab",
    )[0]
    points = tried["progress_history"]
    assert [(p["percentage"], p["metrics"]["loss"], p["metrics"]["accuracy"]) for p in points] == logged, points
    assert all(list(p["metrics"]) == ["loss", "accuracy"] for p in points), points
    assert points[-1]["estimated_remaining_seconds"] == 0, points

    path = f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/train/xcomEntries/return_value"
    value = api.request("GET", path)["value"]
    summary = json.loads(value) if isinstance(value, str) else value
    progress = summary["progress"]
    assert progress["percentage"] == 100 and progress["estimated_remaining_seconds"] == 0, summary
    assert progress["metrics"] == {"loss": final[1], "accuracy": final[2]}, summary
    return points


def _check_tab(
    airflow: AirflowDeployment, run_id: str, points: list[dict[str, Any]], browser: Browser, screenshot_dir: Path
) -> Path:
    """The synchronous try's Training job tab, in headless Chromium: the bar at 100%, the metrics over time (one row
    per epoch's report, a column per metric). The screenshot's path."""
    open_view(browser, tab_url(airflow.base_url, DAG_ID, run_id, "train"))
    shown = wait_for(
        lambda: browser.script(PROGRESS_JS),
        lambda s: s["now"] == "100" and len(s["rows"]) == len(points),
        timeout=60,
        what="the tab's progress at 100% with a row per epoch",
    )
    assert (shown["min"], shown["max"]) == ("0", "100"), shown
    assert shown["text"] == "100%", shown  # the TrainJob finished: no time left said
    assert shown["updated"].startswith("Last reported "), shown
    assert shown["columns"] == ["Reported", "Progress", "Time left", "loss", "accuracy"], shown
    assert [(row[1], row[3], row[4]) for row in shown["rows"]] == [
        (f"{p['percentage']}%", p["metrics"]["loss"], p["metrics"]["accuracy"]) for p in points
    ], shown
    browser.script("document.querySelector('.progress-view').scrollIntoView({block: 'center'})")
    path = screenshot(browser, screenshot_dir, SCREENSHOT)
    print(f"screenshot: {path}")  # with -s
    no_script_errors(browser)
    return path


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_the_trainjob_example_runs_in_a_deployment(
    start_airflow, new_browser: Callable[..., Browser], screenshot_dir: Path, tmp_path: Path, deferrable: bool
) -> None:
    airflow: AirflowDeployment = start_airflow(
        dags={name: EXAMPLES / name for name in ("retrain_digits_trainjob.py", "train_digits.py")},
        dag_ids=[DAG_ID],
        deferrable=deferrable,
        env={"TRAINJOB_EXAMPLE_METRICS_DIR": str(tmp_path / "metrics"), "TRAINJOB_EXAMPLE_EPOCHS": str(EPOCHS)},
    )
    api = airflow.api("admin")
    triggered = api.trigger(DAG_ID)  # unpauses it: the scheduler makes the last @weekly interval's run too
    assert triggered["logical_date"] is None
    metrics = {triggered["dag_run_id"]: _check_run(api, triggered["dag_run_id"], deferrable)}
    for run in _runs(api):
        if run["dag_run_id"] not in metrics:
            assert run["logical_date"] is not None, run
            metrics[run["dag_run_id"]] = _check_run(api, run["dag_run_id"], deferrable)
    accuracies = {run_id: m["accuracy"] for run_id, m in metrics.items()}
    print(f"{'deferred' if deferrable else 'sync'}: accuracy by run {accuracies}")  # with -s
    assert len(accuracies) == 2, accuracies
    points = {run_id: _check_progress(airflow, run_id, deferrable, m) for run_id, m in metrics.items()}
    print(
        f"{'deferred' if deferrable else 'sync'}: percentages by run",
        {r: [p["percentage"] for p in ps] for r, ps in points.items()},
    )
    if not deferrable:
        browser = new_browser(width=1400, height=900)
        browser.login(airflow.base_url, "admin", airflow.passwords["admin"])
        _check_tab(airflow, triggered["dag_run_id"], points[triggered["dag_run_id"]], browser, screenshot_dir)

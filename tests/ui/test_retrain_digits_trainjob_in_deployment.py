"""The TrainJob example in a real Airflow deployment (api-server, scheduler, dag-processor, triggerer), synchronously
and deferred: the example DAG file as shipped, a run triggered through the REST API with ``{"logical_date": null}``
and the run its ``@weekly`` schedule makes on unpausing (with a logical date); each trains the digits classifier as a
TrainJob on ``torch-distributed`` (2 nodes) and ``report`` reads its metrics."""

from __future__ import annotations

import json
import re
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.support.deployment import AirflowApi, AirflowDeployment
from tests.support.examples import EXAMPLES

DAG_ID = "retrain_digits_trainjob"
#: Seconds a run may take: two trainings side by side on a loaded machine.
RUN_WITHIN = 600

pytestmark = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("sklearn") is None,
    reason="the example trains with torch on scikit-learn's digits (scripts/test.sh installs both)",
)


def _runs(api: AirflowApi) -> list[dict]:
    return api.request("GET", f"/dags/{DAG_ID}/dagRuns")["dag_runs"]


def _check_run(api: AirflowApi, run_id: str, deferrable: bool) -> float:
    """The run's ``train`` followed node 0 and (deferred) went through the triggerer; ``report`` read the metrics
    node 0 wrote, named after the TrainJob. The accuracy."""
    api.wait_for_task_state(DAG_ID, run_id, "report", "success", timeout=RUN_WITHIN)
    train_log = api.task_log_text(DAG_ID, run_id, "train", 1)
    assert "[node-0] rank 0/2: 673 training images" in train_log, train_log[-3000:]
    job = re.search(r"TrainJob \S+/(retrain-digits-trainjob-\w+): Complete", train_log).group(1)
    assert ("Pausing task as DEFERRED" in train_log) is deferrable, train_log[-3000:]
    report_log = api.task_log_text(DAG_ID, run_id, "report")
    path = Path(re.search(r"metrics from (\S+\.json)", report_log).group(1))
    assert path.name == f"metrics-{job}.json"
    metrics = json.loads(path.read_text())
    assert metrics["world_size"] == 2 and metrics["epochs"] == 5 and metrics["accuracy"] >= 0.8
    assert "final metrics: " + json.dumps(metrics, sort_keys=True) in report_log
    return metrics["accuracy"]


@pytest.mark.parametrize("deferrable", [False, True], ids=["sync", "deferred"])
def test_the_trainjob_example_runs_in_a_deployment(start_airflow, tmp_path: Path, deferrable: bool) -> None:
    airflow: AirflowDeployment = start_airflow(
        dags={name: EXAMPLES / name for name in ("retrain_digits_trainjob.py", "train_digits.py")},
        dag_ids=[DAG_ID],
        deferrable=deferrable,
        env={"TRAINJOB_EXAMPLE_METRICS_DIR": str(tmp_path / "metrics"), "TRAINJOB_EXAMPLE_EPOCHS": "5"},
    )
    api = airflow.api("admin")
    triggered = api.trigger(DAG_ID)  # unpauses it: the scheduler makes the last @weekly interval's run too
    assert triggered["logical_date"] is None
    accuracies = {triggered["dag_run_id"]: _check_run(api, triggered["dag_run_id"], deferrable)}
    for run in _runs(api):
        if run["dag_run_id"] not in accuracies:
            assert run["logical_date"] is not None, run
            accuracies[run["dag_run_id"]] = _check_run(api, run["dag_run_id"], deferrable)
    print(f"{'deferred' if deferrable else 'sync'}: accuracy by run {accuracies}")  # with -s
    assert len(accuracies) == 2, accuracies

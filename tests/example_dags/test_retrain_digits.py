"""The main job: the example retraining DAG, run end to end on the local cluster, with a logical date
(``airflow dags test``) and without one (as the REST API's ``{"logical_date": null}`` makes it)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.support.examples import BOTH_WAYS, EXAMPLES, LOGICAL_DATE, assert_logical_date, output_of

trains = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("sklearn") is None,
    reason="the example trains with torch on scikit-learn's digits (scripts/test.sh installs both)",
)


@trains
@BOTH_WAYS
def test_retrain_digits_end_to_end(run_example, logical_date):
    output = output_of(run_example("retrain_digits", logical_date))
    assert_logical_date(output, "retrain_digits", logical_date)
    if logical_date is None:  # the dataset date is the day the run was due (run_after, printed by the driver)
        run_after = re.search(r"dag run \S+: success \(logical_date=None, run_after=(\S+)\)", output).group(1)
        dataset_date = datetime.fromisoformat(run_after).strftime("%Y-%m-%d")
    else:
        dataset_date = logical_date

    assert f"[Master-0] rank 0/2: 673 training images (dataset date {dataset_date})" in output  # the lead's log
    job = re.search(r"PyTorchJob \S+/(retrain-digits-train-\w+): Succeeded", output).group(1)
    metrics_file = run_example.metrics_dir / f"metrics-{job}.json"  # named after the job, found from its summary
    assert f"metrics from {metrics_file}" in output
    metrics = json.loads(metrics_file.read_text())
    assert metrics["dataset_date"] == dataset_date
    assert metrics["world_size"] == 2 and metrics["epochs"] == 5
    assert metrics["accuracy"] >= 0.8
    assert "final metrics: " + json.dumps(metrics, sort_keys=True) in output


def test_retrain_digits_train_marked_success(run_example):
    """``train`` marked success without running (no summary in XCom): the run succeeds, ``report`` is skipped
    and says why; no job, no metrics."""
    output = output_of(run_example("retrain_digits", LOGICAL_DATE, "--mark-success-pattern", "^train$"))
    assert "Marking success for <Task(TrainingJobOperator): train>" in output
    assert "Skipping task." in output and "nothing to report: train returned no job summary" in output
    assert "PyTorchJob" not in output
    assert not run_example.metrics_dir.exists()


def report_function():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(EXAMPLES / "retrain_digits.py"))
    assert bag.import_errors == {}
    return bag.dags["retrain_digits"].get_task("report").python_callable


def test_report_without_a_summary_skips():
    """What the UI's "mark success" on ``train`` leaves ``report``: ``None`` for ``train.output``."""
    from airflow.sdk.exceptions import AirflowSkipException

    with pytest.raises(AirflowSkipException, match="nothing to report: train returned no job summary"):
        report_function()(None)


def test_report_reads_the_metrics_of_the_job_in_the_summary(tmp_path: Path, monkeypatch, capsys):
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("TRAINJOB_EXAMPLE_METRICS_DIR", str(tmp_path))
    report = report_function()
    summary = {"kind": "PyTorchJob", "name": "retrain-digits-train-0123abcd", "namespace": "ml", "duration": 12.0}
    with pytest.raises(AirflowFailException, match=f"wrote no metrics at {tmp_path}/metrics-retrain-digits-train"):
        report(summary)

    metrics = {"accuracy": 0.91, "dataset_date": "2026-11-29"}
    (tmp_path / "metrics-retrain-digits-train-0123abcd.json").write_text(json.dumps(metrics))
    assert report(summary) == metrics
    assert "job ml/retrain-digits-train-0123abcd took 12.0 s" in capsys.readouterr().out

    (tmp_path / "metrics-retrain-digits-train-0123abcd.json").write_text(json.dumps({**metrics, "accuracy": 0.5}))
    with pytest.raises(AirflowFailException, match=r"accuracy 0\.5 is below 0\.8"):
        report(summary)

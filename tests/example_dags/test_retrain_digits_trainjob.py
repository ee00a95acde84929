"""The TrainJob example: ``retrain_digits`` with its training task as a Kubeflow Trainer v2 TrainJob on
``torch-distributed`` (2 nodes), run end to end on the local cluster with a logical date and without one, as
``test_retrain_digits`` runs the PyTorchJob one; and the pipeline around ``train`` is ``retrain_digits``'s."""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
from datetime import datetime
from importlib.util import find_spec

import pytest

from tests.support.examples import BOTH_WAYS, EXAMPLES, LOGICAL_DATE, assert_logical_date, output_of

trains = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("sklearn") is None,
    reason="the example trains with torch on scikit-learn's digits (scripts/test.sh installs both)",
)


@trains
@BOTH_WAYS
def test_retrain_digits_trainjob_end_to_end(run_example, logical_date):
    output = output_of(run_example("retrain_digits_trainjob", logical_date))
    assert_logical_date(output, "retrain_digits_trainjob", logical_date)
    if logical_date is None:  # the dataset date is the day the run was due (run_after, printed by the driver)
        run_after = re.search(r"dag run \S+: success \(logical_date=None, run_after=(\S+)\)", output).group(1)
        dataset_date = datetime.fromisoformat(run_after).strftime("%Y-%m-%d")
    else:
        dataset_date = logical_date

    assert f"[node-0] rank 0/2: 673 training images (dataset date {dataset_date})" in output  # node 0's log
    # The generated name: dag_id and task_id cut to fit 33 characters, and a hash of the task instance.
    job = re.search(r"TrainJob \S+/(retrain-digits-trainjob-\w+): Complete", output).group(1)
    metrics_file = run_example.metrics_dir / f"metrics-{job}.json"  # named after the TrainJob, from its summary
    assert f"metrics from {metrics_file}" in output
    metrics = json.loads(metrics_file.read_text())
    assert metrics["dataset_date"] == dataset_date
    assert metrics["world_size"] == 2 and metrics["epochs"] == 5 and metrics["train_images"] == 1346
    assert metrics["accuracy"] >= 0.8
    assert "final metrics: " + json.dumps(metrics, sort_keys=True) in output


def test_retrain_digits_trainjob_train_marked_success(run_example):
    """``train`` marked success without running: the run succeeds, ``report`` is skipped and says why; no
    TrainJob, no metrics (as in ``retrain_digits``)."""
    output = output_of(run_example("retrain_digits_trainjob", LOGICAL_DATE, "--mark-success-pattern", "^train$"))
    assert "Marking success for <Task(TrainJobOperator): train>" in output
    assert "Skipping task." in output and "nothing to report: train returned no job summary" in output
    assert "TrainJob " not in output
    assert not run_example.metrics_dir.exists()


def _dags():
    from airflow.dag_processing.dagbag import DagBag

    dags = {}
    for dag_id in ("retrain_digits", "retrain_digits_trainjob"):
        bag = DagBag(dag_folder=str(EXAMPLES / f"{dag_id}.py"))
        assert bag.import_errors == {}
        dags[dag_id] = bag.dags[dag_id]
    return dags["retrain_digits"], dags["retrain_digits_trainjob"]


def _code_of(function) -> str:
    """The function's code without its docstring (the two examples' docstrings name their own job's parts)."""
    definition = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    assert isinstance(definition, ast.FunctionDef)
    definition.body = [
        s for s in definition.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    return ast.dump(definition)


def test_only_the_training_task_differs():
    """The pipeline is the PyTorchJob example's: the same tasks in the same order, the same schedule, and the same
    ``report`` (its code, which reads the metrics file named after the job)."""
    v1, v2 = _dags()
    assert [t.task_id for t in v2.topological_sort()] == [t.task_id for t in v1.topological_sort()]
    assert (v2.timetable, v2.start_date, v2.catchup) == (v1.timetable, v1.start_date, v1.catchup)
    assert _code_of(v2.get_task("report").python_callable) == _code_of(v1.get_task("report").python_callable)
    train = v2.get_task("train")
    assert type(train).__name__ == "TrainJobOperator"
    assert train.runtime == "torch-distributed" and train.trainer["numNodes"] == 2
    assert train.active_deadline_seconds == v1.get_task("train").run_policy["activeDeadlineSeconds"]

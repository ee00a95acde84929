"""Every example DAG imports without errors (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).parents[2] / "example_dags"


def test_example_dags_import_cleanly():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(EXAMPLES))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == {
        "retrain_digits",
        "retrain_digits_trainjob",
        "tfjob_config_check",
        "watch_external_job",
        "queued_training",
    }
    retrain = bag.dags["retrain_digits"]
    assert [t.task_id for t in retrain.topological_sort()] == ["train", "report"]

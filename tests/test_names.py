"""names.py: DNS names that leave room for the operator's pod names, labels, deterministic job names."""

from __future__ import annotations

import re

import pytest

from airflow_trainjob.domain import names

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def test_max_length_leaves_room_for_the_longest_pod_name():
    assert names.max_job_name_length({"Master": 0, "Worker": 9}) == 63 - len("-worker-9")
    assert names.max_job_name_length({"Evaluator": 0, "Worker": 99}) == 63 - len("-evaluator-0")
    assert names.max_job_name_length({"Evaluator": 0, "Worker": 1000}) == 63 - len("-worker-1000")
    assert names.max_job_name_length({}) == 63
    name = "a" * names.max_job_name_length({"Launcher": 0})
    assert len(name + names.replica_pod_suffix("Launcher", 0)) == 63


def test_valid_names_pass():
    for name in ("train", "t", "train-model-2", "a" * 54):
        assert names.job_name_problem(name, 54) is None


@pytest.mark.parametrize(
    ("dag_id", "task_id"),
    [
        ("retrain", "train"),
        ("Retrain_Daily.v2", "train_Model"),
        ("123", "456"),
        ("___", "..."),
        ("a" * 250, "b" * 250),
        ("données", "entraînement"),
    ],
)
def test_generated_names_are_valid_deterministic_and_bounded(dag_id, task_id):
    for max_length in (63, 54, 40, 20):
        name = names.generate_job_name(dag_id, task_id, "scheduled__2026-11-29T00:00:00+00:00", -1, max_length)
        assert DNS1035.match(name), name
        assert len(name) <= max_length
        assert name == names.generate_job_name(dag_id, task_id, "scheduled__2026-11-29T00:00:00+00:00", -1, max_length)
        assert names.job_name_problem(name, max_length) is None


def test_generated_names_differ_per_task_instance():
    base = dict(dag_id="retrain", task_id="train", run_id="scheduled__2026-11-28", map_index=-1, max_length=54)
    seen = {
        names.generate_job_name(**base),
        names.generate_job_name(**{**base, "run_id": "scheduled__2026-11-29"}),
        names.generate_job_name(**{**base, "map_index": 0}),
        names.generate_job_name(**{**base, "map_index": 1}),
        names.generate_job_name(**{**base, "task_id": "train2"}),
    }
    assert len(seen) == 5
    assert names.generate_job_name(**base).startswith("retrain-train-")


def test_label_values_are_sanitised_without_collisions():
    assert names.sanitize_label_value("retrain") == "retrain"
    assert names.sanitize_label_value(3) == "3"
    run_ids = ["manual__2026-11-29T10:00:00+00:00", "manual__2026-11-29T10:00:00-00:00", "x" * 200, "+++"]
    cleaned = [names.sanitize_label_value(r) for r in run_ids]
    assert len(set(cleaned)) == len(run_ids)
    for value in cleaned:
        assert names.label_value_problem(value) is None, value


def test_label_keys():
    assert names.label_key_problem("training.kubeflow.org/job-name") is None
    assert names.label_key_problem("team") is None
    assert names.label_key_problem("/team") is not None
    assert names.label_key_problem("a/b/c") is not None
    assert names.label_key_problem("x" * 64) is not None


def test_namespaces():
    assert names.namespace_problem("default") is None
    assert names.namespace_problem("1team") is None  # DNS-1123 allows a leading digit
    assert names.namespace_problem("Team") is not None

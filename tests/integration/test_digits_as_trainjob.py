"""The example's digits training run two ways on the local cluster, side by side: as the PyTorchJob the example
DAG makes (a Master and a Worker, the training operator's environment) and as a Kubeflow Trainer v2 TrainJob on
the installed ``torch-distributed`` ClusterTrainingRuntime with two nodes (``torchrun`` reading the trainer's
``PET_*`` environment). Same script, same data, same seed: the same accuracy."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from airflow_trainjob_local.testing.waiting import wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "example_dags" / "train_digits.py"
EPOCHS = "5"  # as the example DAG in the test suite

pytestmark = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("sklearn") is None,
    reason="the example trains with torch on scikit-learn's digits (scripts/test.sh installs both)",
)


def _command(metrics: Path) -> list[str]:
    return ["python", "-c", EXAMPLE.read_text(), "2026-12-07", str(metrics), EPOCHS]


def _pytorch_job(name: str, metrics: Path) -> dict:
    def replica() -> dict:
        container = {"name": "pytorch", "image": "python:3.11-slim", "command": _command(metrics)}
        return {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica()}},
    }


def _train_job(name: str, metrics: Path) -> dict:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            # torchrun starts one process per node (PET_NPROC_PER_NODE) and gives it RANK and WORLD_SIZE.
            "trainer": {"numNodes": 2, "command": ["torchrun", "--no-python", *_command(metrics)]},
        },
    }


def _condition(obj: dict, kinds: tuple[str, ...]) -> str | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] in kinds and condition["status"] == "True":
            return condition["type"]
    return None


def test_the_digits_example_trains_to_the_same_accuracy_as_a_trainjob(custom_objects, namespace, tmp_path):
    v1_metrics, v2_metrics = tmp_path / "pytorchjob.json", tmp_path / "trainjob.json"
    custom_objects.create_namespaced_custom_object(
        "kubeflow.org", "v1", namespace, "pytorchjobs", _pytorch_job("digits-v1", v1_metrics)
    )
    custom_objects.create_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs", _train_job("digits-v2", v2_metrics)
    )

    def ends() -> tuple[str | None, str | None]:
        v1 = custom_objects.get_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs", "digits-v1")
        v2 = custom_objects.get_namespaced_custom_object(
            "trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs", "digits-v2"
        )
        return _condition(v1, ("Succeeded", "Failed")), _condition(v2, ("Complete", "Failed"))

    assert wait_for(ends, lambda e: None not in e, timeout=300, what="both jobs to end") == ("Succeeded", "Complete")

    v1, v2 = json.loads(v1_metrics.read_text()), json.loads(v2_metrics.read_text())
    assert v2["world_size"] == v1["world_size"] == 2
    assert v2["train_images"] == v1["train_images"] == 1346
    print(f"PyTorchJob {v1}\nTrainJob {v2}")  # the figures, with -s
    assert v2["accuracy"] == v1["accuracy"] >= 0.8, (v1, v2)

    # The TrainJob's nodes were given the status server (TrainJobStatus, on locally): rank 0 reported every epoch,
    # the last report being the end of training with the model's test accuracy.
    v2_job = custom_objects.get_namespaced_custom_object(
        "trainer.kubeflow.org", "v1alpha1", namespace, "trainjobs", "digits-v2"
    )
    reported = v2_job["status"]["trainerStatus"]
    assert (reported["progressPercentage"], reported["estimatedRemainingSeconds"]) == (100, 0), reported
    metrics = {m["name"]: float(m["value"]) for m in reported["metrics"]}
    assert list(metrics) == ["loss", "accuracy"]
    assert metrics["accuracy"] == pytest.approx(v2["accuracy"], abs=1e-4)
    assert metrics["loss"] == pytest.approx(v2["final_loss"], abs=1e-4)

"""The DAG of tests/integration/test_lineage_events.py: a PyTorchJob and a TrainJob that succeed, and one of each that
fails, on the local cluster (the test's namespace through ``kubernetes_default``). Read from the environment:
``LINEAGE_DEFERRABLE`` (``1``: every task defers), ``LINEAGE_RUNTIME`` (a ClusterTrainingRuntime with dataset and model
initializer steps), ``LINEAGE_PYTHON`` (the interpreter the process kubelet runs the containers with),
``LINEAGE_SECONDS`` (how long each container runs first: a deployment's scheduler must see a deferred task's first
process end before its trigger fires, or it takes the resumed process for one that should not run)."""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, Asset

from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator

PYTHON = os.environ.get("LINEAGE_PYTHON", "python")
DEFERRABLE = os.environ.get("LINEAGE_DEFERRABLE") == "1"
PAUSE = f"import time; time.sleep({float(os.environ.get('LINEAGE_SECONDS', '0'))})\n"
OK = PAUSE + "print('trained', flush=True)"
FAILS = PAUSE + "import sys; print('bad input', flush=True); sys.exit(3)"
SECRET = "lineage-secret-value"


def container(code: str) -> dict:
    # The env value is a stand-in for a secret: no event may carry it.
    return {
        "name": "pytorch",
        "image": "pytorch/pytorch:2.4",
        "command": [PYTHON, "-c", code],
        "env": [{"name": "API_TOKEN", "value": SECRET}],
    }


def pytorch_specs(master_code: str) -> dict:
    # The Master decides a PyTorchJob's end: it fails the job, or its success is the job's.
    return {
        "Master": {"replicas": 1, "template": {"spec": {"containers": [container(master_code)]}}},
        "Worker": {"replicas": 1, "template": {"spec": {"containers": [container(OK)]}}},
    }


with DAG("lineage_events", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    common = {"deferrable": DEFERRABLE, "poll_interval": 0.5, "retries": 0, "on_finish": "delete_job"}
    TrainingJobOperator(
        task_id="pytorch_ok",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(OK),
        run_policy={"backoffLimit": 0, "cleanPodPolicy": "All"},
        inlets=[Asset("file:///data/digits/train.csv")],
        outlets=[Asset("file:///models/digits/model.pt")],
        **common,
    )
    TrainingJobOperator(
        task_id="pytorch_fails",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(FAILS),
        run_policy={"backoffLimit": 0},
        **common,
    )
    TrainJobOperator(
        task_id="trainjob_ok",
        runtime=os.environ.get("LINEAGE_RUNTIME", "torch-distributed"),
        trainer={"numNodes": 1, "image": "ghcr.io/example/train:1", "command": [PYTHON, "-c", OK]},
        initializer={
            "dataset": {"storageUri": "hf://tatsu-lab/alpaca", "env": [{"name": "HF_TOKEN", "value": SECRET}]},
            "model": {"storageUri": "s3://model-bucket/llama/3b"},
        },
        active_deadline_seconds=600,
        outlets=[Asset("file:///models/alpaca/adapter")],
        **common,
    )
    TrainJobOperator(
        task_id="trainjob_fails",
        runtime="torch-distributed",
        trainer={"numNodes": 1, "command": [PYTHON, "-c", FAILS]},
        **common,
    )

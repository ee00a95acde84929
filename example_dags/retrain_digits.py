"""Weekly retraining: a PyTorchJob (1 Master + 1 Worker) trains a digits classifier with
torch.distributed, then a downstream task reads the job's summary and the metrics it wrote.

Locally (``./scripts/demo.sh``) the replicas run as processes of the local cluster's process
kubelet with the host's Python; on a real cluster set ``TRAINJOB_EXAMPLE_IMAGE`` to an image with
torch and scikit-learn, and ``TRAINJOB_EXAMPLE_METRICS_DIR`` to a path on a volume both the job
and the Airflow worker see.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, task

from airflow_trainjob.operators.training_job import TrainingJobOperator

TRAIN_SCRIPT = Path(__file__).with_name("train_digits.py").read_text()
IMAGE = os.environ.get("TRAINJOB_EXAMPLE_IMAGE", "python:3.11-slim")
METRICS_DIR = os.environ.get("TRAINJOB_EXAMPLE_METRICS_DIR", "/tmp/airflow-trainjob-example/metrics")
EPOCHS = os.environ.get("TRAINJOB_EXAMPLE_EPOCHS", "10")


def replica(replicas: int) -> dict:
    container = {
        "name": "pytorch",
        "image": IMAGE,
        # The dataset date comes from Jinja: every weekly run trains on its own snapshot.
        "command": ["python", "-c", TRAIN_SCRIPT, "{{ ds }}", METRICS_DIR, EPOCHS],
        "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
    }
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}


with DAG(
    dag_id="retrain_digits",
    schedule="@weekly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["airflow-trainjob", "example"],
) as dag:
    train = TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs={"Master": replica(1), "Worker": replica(1)},
        run_policy={"cleanPodPolicy": "All", "activeDeadlineSeconds": 1800, "backoffLimit": 2},
        poll_interval=2,
        startup_timeout=300,
        timeout=3600,
    )

    @task
    def report(summary: dict, ds: str | None = None) -> dict:
        """Print the job's summary and the metrics its Master wrote; return the metrics."""
        metrics = json.loads((Path(METRICS_DIR) / f"metrics-{ds}.json").read_text())
        print(f"job {summary['namespace']}/{summary['name']} took {summary['duration']} s")
        print("final metrics: " + json.dumps(metrics, sort_keys=True))
        if metrics["accuracy"] < 0.8:
            raise ValueError(f"accuracy {metrics['accuracy']} is below 0.8: not publishing this model")
        return metrics

    report(train.output)

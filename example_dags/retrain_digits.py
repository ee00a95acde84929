"""Weekly retraining: a PyTorchJob (1 Master + 1 Worker) trains a digits classifier with
torch.distributed, then a downstream task reads the job's summary and the metrics it wrote.

It runs however the run was made. A scheduled run, or one triggered with a date, has a logical
date; a run triggered through the REST API with ``{"logical_date": null}`` (the API's default), by
an asset event, or by ``TriggerDagRunOperator`` without a date has none, and then ``ds``,
``logical_date`` and ``data_interval_*`` are undefined in templates. So this DAG uses only what
every run has:

- **The dataset date** each run trains on is ``dag_run.logical_date`` when the run has one, else
  ``dag_run.run_after`` (when the run was due: the trigger time for a dateless manual run).
- **The metrics file** is named after the training job, not after a date: each pod learns its own
  job's name from the downward API (the ``training.kubeflow.org/job-name`` label the training
  operator puts on every pod of a job) and the Master writes ``metrics-<job name>.json``. ``report``
  finds it from what ``train`` returned (its XCom: kind, name, namespace, conditions, ...), so the two
  tasks agree on the file even when two runs share a date. When ``train`` was marked success by hand
  there is no summary: ``report`` is skipped and says so.

Locally (``./scripts/demo.sh``) the replicas run as processes of the local cluster's process
kubelet with the host's Python; on a real cluster set ``TRAINJOB_EXAMPLE_IMAGE`` to an image with
torch and scikit-learn, and ``TRAINJOB_EXAMPLE_METRICS_DIR`` to a path on a volume both the job
and the Airflow worker see. ``TRAINJOB_EXAMPLE_EPOCHS`` sets the epochs (default 10).
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_trainjob.operators.training_job import TrainingJobOperator

TRAIN_SCRIPT = Path(__file__).with_name("train_digits.py").read_text()
IMAGE = os.environ.get("TRAINJOB_EXAMPLE_IMAGE", "python:3.11-slim")
METRICS_DIR = os.environ.get("TRAINJOB_EXAMPLE_METRICS_DIR", "/tmp/airflow-trainjob-example/metrics")
EPOCHS = os.environ.get("TRAINJOB_EXAMPLE_EPOCHS", "10")

#: The run's logical date if it has one, else when it was due. Defined in every run, unlike ``{{ ds }}``.
DATASET_DATE = "{{ (dag_run.logical_date or dag_run.run_after) | ds }}"


def metrics_path(job_name: str) -> str:
    """Where the Master of job ``job_name`` writes its metrics (``$(JOB_NAME)`` in the container)."""
    return f"{METRICS_DIR}/metrics-{job_name}.json"


def replica(replicas: int) -> dict:
    container = {
        "name": "pytorch",
        "image": IMAGE,
        # $(JOB_NAME) is expanded by the kubelet from the env below, as Kubernetes does for any container.
        "command": ["python", "-c", TRAIN_SCRIPT, DATASET_DATE, metrics_path("$(JOB_NAME)"), EPOCHS],
        "env": [
            {
                "name": "JOB_NAME",
                "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['training.kubeflow.org/job-name']"}},
            }
        ],
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
    def report(summary: dict | None) -> dict:
        """Print the job's summary and the metrics its Master wrote; return the metrics.

        :param summary: what ``train`` returned; ``None`` when ``train`` was marked success by hand
            (UI or REST API) and so returned nothing: skipped then, there is nothing to report.
        :raises AirflowSkipException: no summary.
        :raises AirflowFailException: the metrics file is missing, or the accuracy is below 0.8.
        """
        if summary is None:
            raise AirflowSkipException(
                "nothing to report: train returned no job summary (it was marked success by hand, "
                "so no finished job's result reached this task)"
            )
        path = Path(metrics_path(summary["name"]))
        if not path.is_file():
            raise AirflowFailException(
                f"{summary['kind']} {summary['namespace']}/{summary['name']} succeeded but wrote no metrics at "
                f"{path}: TRAINJOB_EXAMPLE_METRICS_DIR must be on a volume both the job and this worker see"
            )
        metrics = json.loads(path.read_text())
        print(f"job {summary['namespace']}/{summary['name']} took {summary['duration']} s")
        print(f"dataset date {metrics['dataset_date']}, metrics from {path}")
        print("final metrics: " + json.dumps(metrics, sort_keys=True))
        if metrics["accuracy"] < 0.8:
            raise AirflowFailException(f"accuracy {metrics['accuracy']} is below 0.8: not publishing this model")
        return metrics

    report(train.output)  # type: ignore[arg-type]  # an XComArg: the summary dict, at run time

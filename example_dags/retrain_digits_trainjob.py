"""Weekly retraining as a Kubeflow Trainer v2 ``TrainJob``: ``retrain_digits`` with its one training task moved
from a PyTorchJob to a TrainJob on the ``torch-distributed`` ClusterTrainingRuntime (2 nodes). The script, the
dataset date, the metrics file and the ``report`` task are ``retrain_digits``'s, unchanged: a team moving from
PyTorchJob to TrainJob changes one task, not its pipeline.

What changed in the task (the README's "From PyTorchJob to TrainJob" maps every parameter):

- ``kind="PyTorchJob"`` -> ``runtime="torch-distributed"``: the runtime holds the pod template and the launcher.
- ``replica_specs`` (a Master and a Worker, each a pod template) -> ``trainer``: ``numNodes: 2`` and the one
  container's image, command, env and ``resourcesPerNode``. ``torch-distributed`` starts each node with the
  ``PET_*`` environment ``torchrun`` reads, so the command is the script behind ``torchrun --no-python``; torchrun
  gives each process the ``RANK``/``WORLD_SIZE``/``MASTER_ADDR`` the training operator gave each replica.
- ``run_policy``: ``activeDeadlineSeconds`` -> ``active_deadline_seconds``. ``cleanPodPolicy`` has no counterpart
  (a TrainJob's pods go when it is deleted: ``on_finish`` decides, as before); ``backoffLimit`` lives in the
  runtime's JobSet template, not in the TrainJob.
- The job's name reaches each pod from the ``jobset.sigs.k8s.io/jobset-name`` label (a TrainJob's JobSet is named
  after it) instead of ``training.kubeflow.org/job-name``.

Locally (``./scripts/demo.sh --trainjob``) the nodes run as processes of the local cluster's process kubelet with
the host's Python; on a real cluster set ``TRAINJOB_EXAMPLE_IMAGE`` to an image with torch and scikit-learn, and
``TRAINJOB_EXAMPLE_METRICS_DIR`` to a path on a volume both the job and the Airflow worker see.
``TRAINJOB_EXAMPLE_EPOCHS`` sets the epochs (default 10).
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, task
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from airflow_trainjob.operators.trainjob import TrainJobOperator

TRAIN_SCRIPT = Path(__file__).with_name("train_digits.py").read_text()
IMAGE = os.environ.get("TRAINJOB_EXAMPLE_IMAGE", "python:3.11-slim")
METRICS_DIR = os.environ.get("TRAINJOB_EXAMPLE_METRICS_DIR", "/tmp/airflow-trainjob-example/metrics")
EPOCHS = os.environ.get("TRAINJOB_EXAMPLE_EPOCHS", "10")

#: The run's logical date if it has one, else when it was due. Defined in every run, unlike ``{{ ds }}``.
DATASET_DATE = "{{ (dag_run.logical_date or dag_run.run_after) | ds }}"


def metrics_path(job_name: str) -> str:
    """Where node 0 of TrainJob ``job_name`` writes its metrics (``$(JOB_NAME)`` in the container)."""
    return f"{METRICS_DIR}/metrics-{job_name}.json"


with DAG(
    dag_id="retrain_digits_trainjob",
    schedule="@weekly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["airflow-trainjob", "example"],
) as dag:
    train = TrainJobOperator(
        task_id="train",
        runtime="torch-distributed",
        trainer={
            "numNodes": 2,
            "image": IMAGE,
            # torchrun starts one process per node (the runtime's PET_NPROC_PER_NODE) and gives it RANK and
            # WORLD_SIZE; $(JOB_NAME) is expanded by the kubelet from the env below.
            "command": ["torchrun", "--no-python", "python", "-c", TRAIN_SCRIPT, DATASET_DATE]
            + [metrics_path("$(JOB_NAME)"), EPOCHS],
            "env": [
                {
                    "name": "JOB_NAME",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['jobset.sigs.k8s.io/jobset-name']"}},
                }
            ],
            "resourcesPerNode": {"limits": {"cpu": "1", "memory": "2Gi"}},
        },
        active_deadline_seconds=1800,
        poll_interval=2,
        startup_timeout=300,
        timeout=3600,
    )

    @task
    def report(summary: dict | None) -> dict:
        """Print the job's summary and the metrics its node 0 wrote; return the metrics (as ``retrain_digits``).

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

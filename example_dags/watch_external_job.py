"""A sensor watching a training job created outside the sensor's task.

The first task stands in for "somebody else": it submits an XGBoostJob with the hook directly.
The TrainingJobSensor then waits for it in reschedule mode, freeing its worker slot between
pokes, and fails with the operator's message if the job fails.

The job's name comes from the run id, which every run has (with or without a logical date): a short
hash of it, so each run submits its own job and a retry or a cleared run finds the one it submitted.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from airflow.sdk import DAG, task
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.sensors.training_job import TrainingJobSensor

WORK = "import os; print('xgboost replica', os.environ.get('RANK'), 'of', os.environ.get('WORLD_SIZE'))"


def replica(replicas: int) -> dict:
    container = {"name": "xgboost", "image": "python:3.11-slim", "command": ["python", "-c", WORK]}
    return {"replicas": replicas, "template": {"spec": {"containers": [container]}}}


with DAG(
    dag_id="watch_external_job",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["airflow-trainjob", "example"],
) as dag:

    @task
    def submit_elsewhere(run_id: str | None = None) -> str:  # run_id: from the task's context
        """Create the job the way another system would; return its name (one job per DAG run)."""
        hook = TrainingJobHook()
        name = "external-" + hashlib.sha256(str(run_id).encode()).hexdigest()[:12]
        spec = TrainingJobSpec.parse("XGBoostJob", {"Master": replica(1), "Worker": replica(2)})
        try:
            hook.create_job(build_manifest(spec=spec, name=name, namespace=hook.resolve_namespace()))
        except ApiException as e:
            if e.status != 409:
                raise
            print(f"XGBoostJob {name} already exists (submitted by an earlier try of this run): watching it")
        return name

    TrainingJobSensor(
        task_id="wait_for_job",
        kind="XGBoostJob",
        job_name=submit_elsewhere(),  # type: ignore[arg-type]  # an XComArg: the name, at run time
        mode="reschedule",
        poke_interval=5,
        timeout=600,
    )

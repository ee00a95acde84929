"""A whole job from a YAML file, submitted to a Kueue queue.

``job_template_file`` is a PyTorchJob as ``kubectl apply`` would take it (``jobs/digits_pytorchjob.yaml``, beside
this file), rendered with the run's context. ``queue_name`` labels it ``kueue.x-k8s.io/queue-name``: on a cluster
with Kueue, Kueue's webhook creates it suspended and the task logs that it waits in the queue, for how long, and
when it is admitted. ``startup_timeout`` counts from admission, so a job that waits for quota is not failed as one
that cannot start; ``queue_timeout`` bounds the wait in the queue. Without Kueue (the local cluster) the label is
inert and the job runs at once.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Param

from airflow_trainjob.operators.training_job import TrainingJobOperator

with DAG(
    dag_id="queued_training",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={"queue_name": Param("team-a", type="string", description="Kueue LocalQueue in the job's namespace")},
    tags=["airflow-trainjob", "example", "kueue"],
) as dag:
    TrainingJobOperator(
        task_id="train",
        job_template_file="jobs/digits_pytorchjob.yaml",
        queue_name="{{ params.queue_name }}",
        queue_timeout=4 * 3600,  # seconds in the queue before the task gives up (and deletes the job)
        startup_timeout=600,  # seconds from admission until Running
        timeout=8 * 3600,  # seconds for the whole job, queue included
        on_finish="keep_job",
    )

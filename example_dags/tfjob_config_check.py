"""A TFJob (1 Chief + 2 Workers) whose replicas check the TF_CONFIG the operator gives them.

Each replica parses TF_CONFIG, prints its task and the cluster it belongs to, and fails if the
cluster spec does not list one chief and two workers. No TensorFlow needed: this shows another
kind, its replica types and its environment, with the same operator.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_trainjob.operators.training_job import TrainingJobOperator

CHECK = """
import json, os, sys
config = json.loads(os.environ["TF_CONFIG"])
cluster, task = config["cluster"], config["task"]
print("task", task["type"], task["index"], "cluster", json.dumps(cluster, sort_keys=True))
sys.exit(0 if len(cluster.get("chief", [])) == 1 and len(cluster.get("worker", [])) == 2 else 3)
"""


def replica(replicas: int) -> dict:
    container = {"name": "tensorflow", "image": "python:3.11-slim", "command": ["python", "-c", CHECK]}
    return {"replicas": replicas, "template": {"spec": {"containers": [container]}}}


with DAG(
    dag_id="tfjob_config_check",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["airflow-trainjob", "example"],
) as dag:
    TrainingJobOperator(
        task_id="check_tf_config",
        kind="TFJob",
        replica_specs={"Chief": replica(1), "Worker": replica(2)},
        run_policy={"cleanPodPolicy": "All"},
        kind_fields={"successPolicy": "AllWorkers"},
        poll_interval=2,
    )

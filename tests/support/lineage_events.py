"""What the lineage tests share (tests/integration/test_lineage_events.py with ``airflow dags test``,
tests/ui/test_lineage_in_deployment.py in a deployment): the DAG they run, a runtime with initializer steps, and the
field-by-field checks of the events its tasks emit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from airflow_trainjob import __version__
from airflow_trainjob.constants import TRAINER_GROUP, TRAINER_VERSION

DAG_FILE = Path(__file__).parents[1] / "integration" / "lineage_dag.py"
DAG_ID = "lineage_events"
TASKS = ("pytorch_ok", "pytorch_fails", "trainjob_ok", "trainjob_fails")
#: The env value of every container of the DAG: no event may carry it.
SECRET = "lineage-secret-value"
SCHEMAS = f"https://raw.githubusercontent.com/airflow-trainjob/airflow-trainjob/v{__version__}/docs/lineage-facets.json"


def initializer_runtime_body(name: str) -> dict:
    """A ClusterTrainingRuntime ``name`` with ``dataset-initializer`` and ``model-initializer`` steps (each prints the
    ``STORAGE_URI`` it was given) before the ``node`` step."""
    steps = [
        {
            "name": step,
            **(
                {"dependsOn": [{"name": "dataset-initializer", "status": "Complete"}]}
                if step == "model-initializer"
                else {}
            ),
            "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": step}},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": step,
                                    "image": f"ghcr.io/kubeflow/trainer/{step}",
                                    "command": [sys.executable, "-c", "import os; print(os.environ['STORAGE_URI'])"],
                                }
                            ]
                        }
                    }
                },
            },
        }
        for step in ("dataset-initializer", "model-initializer")
    ]
    node = {
        "name": "node",
        "dependsOn": [{"name": "model-initializer", "status": "Complete"}],
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [{"name": "node", "image": "pytorch/pytorch"}]}}},
        },
    }
    return {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [*steps, node]}},
        },
    }


def all_task_events(events: Path, task_id: str) -> list[dict]:
    """The events of task ``task_id``, in the order they were sent."""
    every = [json.loads(line) for line in events.read_text().splitlines()]
    return [event for event in every if event["job"]["name"] == f"{DAG_ID}.{task_id}"]


def task_events(events: Path, task_id: str) -> dict[str, dict]:
    """The events of task ``task_id``, by type (``START`` ... the last of each type)."""
    return {event["eventType"]: event for event in all_task_events(events, task_id)}


def facet(event: dict, where: str, key: str) -> dict:
    """The facet ``key`` of the event's ``run`` or ``job``, its schema URL checked."""
    value = event[where]["facets"][key]
    definition = {
        "airflowTrainjob_job": "TrainingJobJobFacet",
        "airflowTrainjob_run": "TrainingJobRunFacet",
        "airflowTrainjob_failure": "TrainingJobFailureRunFacet",
    }[key]
    assert value["_schemaURL"] == f"{SCHEMAS}#/$defs/{definition}"
    return value


def datasets(items: list[dict]) -> list[tuple[str, str]]:
    return [(d["namespace"], d["name"]) for d in items]


def check_pytorch_ok(events: dict[str, dict], namespace: str) -> None:
    start, complete = events["START"], events["COMPLETE"]
    for event in (start, complete):
        job = facet(event, "job", "airflowTrainjob_job")
        assert {k: v for k, v in job.items() if not k.startswith("_")} == {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "namespace": namespace,
            "replicas": {"Master": 1, "Worker": 1},
            "images": {"Master": ["pytorch/pytorch:2.4"], "Worker": ["pytorch/pytorch:2.4"]},
            "runPolicy": {"backoffLimit": 0, "cleanPodPolicy": "All"},
        }
        assert datasets(event["inputs"]) == [("file", "/data/digits/train.csv")]
        assert datasets(event["outputs"]) == [("file", "/models/digits/model.pt")]
    started = facet(start, "run", "airflowTrainjob_run")
    assert started["namespace"] == namespace and started["name"].startswith("lineage-events-pytorch-ok")
    run = facet(complete, "run", "airflowTrainjob_run")
    assert run["name"] == started["name"] and run["namespace"] == namespace
    assert len(run["uid"]) == 36 and run["phase"] == "Succeeded"
    assert [(c["type"], c["status"]) for c in run["conditions"]][-1] == ("Succeeded", "True")
    assert run["conditions"][-1]["reason"] == "PyTorchJobSucceeded"
    assert run["startTime"] <= run["completionTime"] and 0 <= run["durationSeconds"] < 300
    assert "airflowTrainjob_failure" not in complete["run"]["facets"]


def check_pytorch_fails(events: dict[str, dict], namespace: str) -> None:
    assert "COMPLETE" not in events
    fail = events["FAIL"]
    job = facet(fail, "job", "airflowTrainjob_job")
    assert (job["kind"], job["replicas"], job["runPolicy"]) == (
        "PyTorchJob",
        {"Master": 1, "Worker": 1},
        {"backoffLimit": 0, "cleanPodPolicy": "Running"},  # the default the provider writes
    )
    run = facet(fail, "run", "airflowTrainjob_run")
    assert run["phase"] == "Failed" and run["conditions"][-1]["type"] == "Failed" and run["uid"]
    failure = facet(fail, "run", "airflowTrainjob_failure")
    assert failure["permanent"] is True
    (replica,) = failure["failedReplicas"]
    assert {k: replica[k] for k in ("replica", "container", "exitCode", "reason", "exitClass", "failedRuns")} == {
        "failedRuns": 1,
        "replica": "Master-0",
        "container": "pytorch",
        "exitCode": 3,
        "reason": "Error",
        "exitClass": "Permanent",
    }
    assert replica["pod"] == f"{run['name']}-master-0"
    assert "First failure (permanent: not retried): Master-0" in fail["run"]["facets"]["errorMessage"]["message"]


def check_trainjob_ok(events: dict[str, dict], namespace: str, runtime: str) -> None:
    start, complete = events["START"], events["COMPLETE"]
    for event in (start, complete):
        job = facet(event, "job", "airflowTrainjob_job")
        assert {k: v for k, v in job.items() if not k.startswith("_")} == {
            "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
            "kind": "TrainJob",
            "namespace": namespace,
            "runtime": {"name": runtime, "kind": "ClusterTrainingRuntime", "apiGroup": TRAINER_GROUP},
            "replicas": {"node": 1},
            "images": {"node": ["ghcr.io/example/train:1"]},
            "runPolicy": {"activeDeadlineSeconds": 600},
            "initializers": ["dataset", "model"],
        }
        assert datasets(event["inputs"]) == [("hf", "tatsu-lab/alpaca"), ("s3://model-bucket", "llama/3b")]
        assert datasets(event["outputs"]) == [("file", "/models/alpaca/adapter")]
    run = facet(complete, "run", "airflowTrainjob_run")
    assert run["namespace"] == namespace and run["uid"] and run["phase"] == "Complete"
    assert run["conditions"][-1]["type"] == "Complete" and run["conditions"][-1]["status"] == "True"
    assert run["startTime"] <= run["completionTime"] and 0 <= run["durationSeconds"] < 300


def check_trainjob_fails(events: dict[str, dict], namespace: str) -> None:
    assert "COMPLETE" not in events
    fail = events["FAIL"]
    job = facet(fail, "job", "airflowTrainjob_job")
    assert (job["kind"], job["runtime"]["name"], job["replicas"]) == ("TrainJob", "torch-distributed", {"node": 1})
    assert fail["inputs"] == [] and fail["outputs"] == []
    run = facet(fail, "run", "airflowTrainjob_run")
    assert run["phase"] == "Failed" and run["conditions"][-1]["type"] == "Failed"
    failure = facet(fail, "run", "airflowTrainjob_failure")
    assert failure["permanent"] is True
    (replica,) = failure["failedReplicas"]  # one replica; its container may have been restarted and stopped since
    assert replica["pod"].startswith(f"{run['name']}-node-0-0-") and replica["failedRuns"] >= 1
    assert {k: replica[k] for k in ("replica", "container", "exitCode", "exitClass")} == {
        "replica": "node-0",
        "container": "node",
        "exitCode": 3,
        "exitClass": "Permanent",
    }


def print_trimmed(events: dict[str, dict]) -> None:
    """Print an event as the docs quote it (the Airflow facets left out)."""
    for event in events.values():
        trimmed = {
            "eventType": event["eventType"],
            "job": {
                "name": event["job"]["name"],
                "facets": {k: v for k, v in event["job"]["facets"].items() if "Trainjob" in k},
            },
            "run": {
                "facets": {k: v for k, v in event["run"]["facets"].items() if "Trainjob" in k or k == "errorMessage"}
            },
            "inputs": event["inputs"],
            "outputs": event["outputs"],
        }
        print(json.dumps(trimmed, indent=1)[:4000])

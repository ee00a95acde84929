"""The trigger's event and progress line, pure: what the event keeps of a job and its pods within its budget, and
the one line both waits log per change. No cluster (the trigger's runs against the apiserver are in
``test_training_job.py``)."""

from __future__ import annotations

import json

from airflow_trainjob.constants import (
    LABEL_JOB_NAME,
    LABEL_KUEUE_QUEUE_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    PYTORCH_JOB,
)
from airflow_trainjob.domain import conditions
from airflow_trainjob.triggers.events import EVENT_BUDGET, FINISHED, TIMED_OUT, event_payload
from airflow_trainjob.triggers.training_job import TrainingJobTrigger

SCRIPT = "# " + "s" * 30000
SELECTOR = "training.kubeflow.org/job-name=train,training.kubeflow.org/operator-name=pytorchjob-controller"


def job(**status):
    container = {"name": "pytorch", "command": ["python", "-c", SCRIPT], "env": [{"name": "TOKEN", "value": "v"}]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "u-1",
            "labels": {"team": "ml", LABEL_KUEUE_QUEUE_NAME: "team-a"},
            "annotations": {"a": "b" * 500},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None", "suspend": False},
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}},
                "Worker": {
                    "replicas": 20,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [container]}},
                },
            },
        },
        "status": status
        or {
            "conditions": [
                {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": "created"},
                {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "message": "failed"},
            ],
            "replicaStatuses": {
                "Master": {"active": 1, "selector": SELECTOR},
                "Worker": {"failed": 20, "selector": SELECTOR},
            },
            "startTime": "2026-12-02T05:00:00Z",
            "completionTime": "2026-12-02T05:05:00Z",
            "lastReconcileTime": "2026-12-02T05:05:00Z",
        },
    }


def pod(index: int, finished_at: str, exit_code: int | None = 1) -> dict:
    state = {"terminated": {"exitCode": exit_code, "reason": "Error", "finishedAt": finished_at}} if exit_code else {}
    return {
        "metadata": {
            "name": f"train-worker-{index}",
            "uid": f"p-{index}",
            "labels": {LABEL_JOB_NAME: "train", LABEL_REPLICA_TYPE: "worker", LABEL_REPLICA_INDEX: str(index)},
            "ownerReferences": [{"uid": "u-1", "kind": "PyTorchJob", "name": "train"}],
        },
        "spec": {"containers": [{"name": "pytorch", "command": ["python", "-c", SCRIPT]}]},
        "status": {
            "phase": "Failed" if exit_code else "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "pytorch", "restartCount": 0, "image": "x", "imageID": "y", "state": state}],
        },
    }


def event_of(the_job: dict, pods: list[dict]) -> dict:
    trigger = TrainingJobTrigger(kind="PyTorchJob", name="train", namespace="ml", uid="u-1")
    return trigger._event(
        FINISHED, "PyTorchJob ml/train: Failed (PyTorchJobFailed: failed)", the_job, pods=pods
    ).payload


def test_the_event_keeps_what_the_resumed_task_needs_and_no_template():
    payload = event_of(job(), [])
    assert payload["job"] == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "uid": "u-1", "labels": {LABEL_KUEUE_QUEUE_NAME: "team-a"}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [{"name": "pytorch"}]}},
                },
                "Worker": {
                    "replicas": 20,
                    "restartPolicy": "OnFailure",
                    "template": {"spec": {"containers": [{"name": "pytorch"}]}},
                },
            }
        },
        "status": {
            "conditions": job()["status"]["conditions"],
            "replicaStatuses": {"Master": {"active": 1}, "Worker": {"failed": 20}},  # counts, not selectors
            "startTime": "2026-12-02T05:00:00Z",
            "completionTime": "2026-12-02T05:05:00Z",
        },
    }


def test_a_queued_job_keeps_its_suspension():
    queued = job()
    queued["spec"]["runPolicy"]["suspend"] = True
    assert event_of(queued, [])["job"]["spec"]["runPolicy"] == {"suspend": True}


def test_twenty_failed_pods_fit_as_many_as_the_budget_holds_the_first_failures_first():
    pods = [pod(i, f"2026-12-02T05:04:{59 - i:02d}Z") for i in range(20)] + [pod(99, "", exit_code=None)]
    payload = event_of(job(), pods)
    assert len(json.dumps(payload)) <= EVENT_BUDGET < 2048
    kept = [p["metadata"]["name"] for p in payload["pods"]]
    assert 0 < len(kept) < 20
    assert kept == [f"train-worker-{i}" for i in range(19, 19 - len(kept), -1)]  # earliest failure first
    assert payload["pods"][0] == {
        "metadata": {"name": "train-worker-19", "labels": {LABEL_REPLICA_TYPE: "worker", LABEL_REPLICA_INDEX: "19"}},
        "status": {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "pytorch",
                    "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-12-02T05:04:40Z"}},
                }
            ],
        },
    }


def test_long_condition_messages_are_shortened_to_fit():
    long_status = job()["status"]
    for condition in long_status["conditions"]:
        condition["message"] = "m" * 3000
        condition["lastUpdateTime"] = "2026-12-02T05:05:00Z"
    payload = event_of(job(**long_status), [])
    assert len(json.dumps(payload)) <= EVENT_BUDGET
    assert all(len(c["message"]) <= 203 and "lastUpdateTime" not in c for c in payload["job"]["status"]["conditions"])
    assert long_status["conditions"][0]["message"] == "m" * 3000  # the trigger's copy of the job is left alone


def test_the_progress_line_and_its_desired_counts():
    status = {
        "conditions": [{"type": "Running", "status": "True", "reason": "PyTorchJobRunning", "message": "running"}],
        "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 3, "failed": 1}},
    }
    assert PYTORCH_JOB.desired_replicas(job()) == {"Master": 1, "Worker": 20}
    master_only = {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Master": {}}}}
    assert PYTORCH_JOB.desired_replicas(master_only) == {"Master": 1}
    assert conditions.progress_line("PyTorchJob ml/train", status, PYTORCH_JOB.desired_replicas(job())) == (
        "PyTorchJob ml/train: Running (PyTorchJobRunning: running) — Master 1/1 active, Worker 3/20 active (1 failed)"
    )


def test_a_job_made_elsewhere_counts_its_replica_types_in_the_apis_spelling():
    """The training operator reports replica statuses under the API's spelling whatever case the spec used: the
    desired counts match it, so the line shows ``Worker 3/4 active``, not a ``worker`` type next to a ``Worker``."""
    made_elsewhere = job()
    made_elsewhere["spec"]["pytorchReplicaSpecs"] = {
        "master": {"replicas": 1},
        "WORKER": {"replicas": 4},
        "Evaluator": None,  # not a PyTorchJob type: kept as written, the API's default count
    }
    status = {"replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 3}}}
    desired = PYTORCH_JOB.desired_replicas(made_elsewhere)
    assert desired == {"Master": 1, "Worker": 4, "Evaluator": 1}
    assert conditions.replica_counts(status, desired) == "Master 1/1 active, Worker 3/4 active, Evaluator 0/1 active"


def test_a_count_that_is_no_count_is_the_apis_default_and_no_spec_desires_nothing():
    odd = {"spec": {"pytorchReplicaSpecs": {"Master": {"replicas": None}, "Worker": {"replicas": "2"}}}}
    assert PYTORCH_JOB.desired_replicas(odd) == {"Master": 1, "Worker": 1}
    assert PYTORCH_JOB.desired_replicas({"metadata": {"name": "recorded"}}) == {}
    assert PYTORCH_JOB.desired_replicas(None) == {}


def test_the_trigger_fires_the_payload_of_the_events_module():
    """The trigger's event is :func:`event_payload` plus the trigger's cursor: the resumed task reads one shape."""
    failed = [pod(i, f"2026-12-02T05:04:{59 - i:02d}Z") for i in range(3)]
    message = "PyTorchJob ml/train: Failed (PyTorchJobFailed: failed)"
    assert event_payload(FINISHED, message, job(), failed) == event_of(job(), failed)
    cursor = {"pod": "train-master-0", "lines": 3}
    made = event_payload(TIMED_OUT, "late", job(), lead_log=cursor, which="timeout")
    assert list(made) == ["outcome", "message", "job", "pods", "lead_log", "which"]
    assert made["lead_log"] == cursor and made["pods"] == [] and made["which"] == "timeout"

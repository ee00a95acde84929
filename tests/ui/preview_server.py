"""A development preview of the UI pages: serves ``airflow_trainjob/ui/static`` at the paths the plugin uses and
answers ``/trainjob/api/*`` with sample JSON shaped as the issue 13 contract says, so the pages can be looked at
(and screenshotted) without an api-server or a cluster. Not part of the package, not a test.

Run: ``python tests/ui/preview_server.py [--port 18180]`` (listens on 127.0.0.1 only), then open
``/trainjob/ui/task-instance?dag_id=<scenario>&run_id=r&task_id=train&map_index=-1`` or ``/trainjob/ui/jobs``.
The ``dag_id`` picks the scenario (see ``SCENARIOS``); ``/preview/airflow?src=<page URL>&mode=dark`` shows a page
in an iframe sandboxed as Airflow 3.3 sandboxes plugin views, with the parent's colour mode set as Airflow sets it
(class ``dark``/``light`` on <html>).
"""

from __future__ import annotations

import argparse
import json
import mimetypes
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

STATIC = Path(__file__).resolve().parents[2] / "airflow_trainjob" / "ui" / "static"
PAGES = {"/trainjob/ui/task-instance": "task_instance.html", "/trainjob/ui/jobs": "jobs.html"}
#: The sandbox Airflow 3.3's UI puts on a plugin's external view (its bundle, ``r2t``'s caller).
AIRFLOW_SANDBOX = "allow-scripts allow-same-origin allow-forms allow-downloads"
STARTED = datetime.now(timezone.utc)

Json = dict[str, Any]


def at(seconds_ago: float) -> str:
    """An RFC 3339 UTC time ``seconds_ago`` before now (negative: after)."""
    return (
        (datetime.now(timezone.utc) - timedelta(seconds=seconds_ago))
        .isoformat(timespec="seconds")
        .replace("+00:00", "Z")
    )


def since_start() -> float:
    return (datetime.now(timezone.utc) - STARTED).total_seconds()


MANIFEST = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  namespace: default
  labels:
    airflow-trainjob/dag-id: {dag}
    airflow-trainjob/task-id: train
    airflow-trainjob/run-id: scheduled__2026-12-02T05.00.00-00.00-5f1c
    airflow-trainjob/try-number: "{try_number}"
  annotations:
    airflow-trainjob/dag-id: {dag}
    airflow-trainjob/run-id: scheduled__2026-12-02T05:00:00+00:00
spec:
  runPolicy:
    cleanPodPolicy: None
    backoffLimit: 3
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.local/retrain-digits:1.4.2
              command: ["python", "-m", "train", "--epochs", "20"]
              env:
                - name: WANDB_API_KEY
                  value: '***'
              resources:
                limits: {{cpu: "2", memory: 4Gi}}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.local/retrain-digits:1.4.2
              command: ["python", "-m", "train", "--epochs", "20"]
              resources:
                limits: {{cpu: "2", memory: 2Gi}}
"""


def replica(rtype: str, index: int, pod: str, phase: str, created: float, **extra: Any) -> Json:
    row = {
        "replica_type": rtype,
        "index": index,
        "pod": pod,
        "container": "pytorch",
        "phase": phase,
        "restarts": 0,
        "exit_code": None,
        "reason": None,
        "exit_class": None,
        "node": "kind-worker-" + str(index + (0 if rtype == "Master" else 1)),
        "created_at": at(created),
        "lead": rtype in ("Master", "Chief", "Launcher"),
    }
    row.update(extra)
    return row


def base_try(try_number: int, name: str, dag: str, **extra: Any) -> Json:
    tr = {
        "try_number": try_number,
        "kubernetes_conn_id": "kubernetes_default",
        "kind": "PyTorchJob",
        "namespace": "default",
        "name": name,
        "uid": "7f3c2a4e-1b9d-4f0e-9a61-2c8d5e4b7a10",
        "created_at": at(420),
        "attached": False,
        "exists": True,
        "source": "live",
        "phase": "Running",
        "reason": None,
        "message": None,
        "summary": None,
        "start_time": None,
        "completion_time": None,
        "duration_seconds": None,
        "timeline": [],
        "restarts": [],
        "replica_counts": {},
        "replicas": [],
        "events": [],
        "link": None,
        "manifest_yaml": MANIFEST.format(name=name, dag=dag, try_number=try_number),
        "outcome": None,
        "ended_at": None,
        "error": None,
        "refresh_seconds": None,
    }
    tr.update(extra)
    return tr


def running_try(dag: str) -> Json:
    name = "retrain-digits-train-5f1c-2"
    up = 400 + since_start()
    return base_try(
        2,
        name,
        dag,
        created_at=at(up + 20),
        phase="Running",
        reason="PyTorchJobRunning",
        message=f"PyTorchJob default/{name} is running.",
        summary="Running: Master 1/1, Worker 2/2 active",
        start_time=at(up),
        duration_seconds=up,
        timeline=[
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "message": f"PyTorchJob {name} is created.",
                "time": at(up + 20),
            },
            {
                "type": "Running",
                "status": "True",
                "reason": "PyTorchJobRunning",
                "message": f"PyTorchJob default/{name} is running.",
                "time": at(up - 12),
            },
        ],
        restarts=[
            {"replica": "Worker-1", "time": at(up - 150), "exit_code": 137, "reason": "OOMKilled"},
            {"replica": "Worker-1", "time": at(up - 260), "exit_code": 137, "reason": "OOMKilled"},
        ],
        replica_counts={
            "Master": {"desired": 1, "active": 1, "succeeded": 0, "failed": 0, "text": "1/1 active"},
            "Worker": {"desired": 2, "active": 2, "succeeded": 0, "failed": 0, "text": "2/2 active"},
        },
        replicas=[
            replica("Master", 0, name + "-master-0", "Running", up + 18),
            replica("Worker", 0, name + "-worker-0", "Running", up + 18),
            replica(
                "Worker",
                1,
                name + "-worker-1",
                "Running",
                up + 18,
                restarts=2,
                exit_code=137,
                reason="OOMKilled",
                exit_class="resources",
            ),
        ],
        events=list(
            reversed(
                [
                    {
                        "time": at(up + 19),
                        "type": "Normal",
                        "reason": "SuccessfulCreatePod",
                        "message": f"Created pod: {name}-master-0",
                        "object": f"PyTorchJob/{name}",
                        "count": 1,
                    },
                    {
                        "time": at(up + 19),
                        "type": "Normal",
                        "reason": "SuccessfulCreatePod",
                        "message": f"Created pod: {name}-worker-0",
                        "object": f"PyTorchJob/{name}",
                        "count": 1,
                    },
                    {
                        "time": at(up + 18),
                        "type": "Normal",
                        "reason": "Scheduled",
                        "message": f"Successfully assigned default/{name}-worker-1 to kind-worker-2",
                        "object": f"Pod/{name}-worker-1",
                        "count": 1,
                    },
                    {
                        "time": at(up + 2),
                        "type": "Normal",
                        "reason": "Pulled",
                        "message": 'Container image "registry.local/retrain-digits:1.4.2" already present on machine',
                        "object": f"Pod/{name}-worker-1",
                        "count": 3,
                    },
                    {
                        "time": at(up - 150),
                        "type": "Warning",
                        "reason": "BackOff",
                        "message": "Back-off restarting failed container pytorch in pod " + name + "-worker-1",
                        "object": f"Pod/{name}-worker-1",
                        "count": 2,
                    },
                    {
                        "time": at(up - 151),
                        "type": "Normal",
                        "reason": "ExitedWithCode",
                        "message": "Pod: default." + name + "-worker-1 exited with code 137",
                        "object": f"PyTorchJob/{name}",
                        "count": 2,
                    },
                ]
            )
        ),
        link="http://127.0.0.1:18180/preview/dashboard#/pytorchjobs/default/" + name,
        refresh_seconds=5,
    )


def failed_try(dag: str, try_number: int, exists: bool) -> Json:
    name = f"retrain-digits-train-5f1c-{try_number}"
    return base_try(
        try_number,
        name,
        dag,
        uid="1d2e3f40-aaaa-4bbb-8ccc-0123456789ab",
        created_at=at(3900),
        exists=exists,
        source="live" if exists else "recorded",
        phase="Failed",
        reason="PyTorchJobFailed",
        message=f"PyTorchJob default/{name} is failed because 1 Worker replica(s) failed.",
        summary="Failed: Worker-0 OOMKilled (exit 137)",
        start_time=at(3870),
        completion_time=at(3320),
        duration_seconds=550.0,
        timeline=[
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": None, "time": at(3900)},
            {"type": "Running", "status": "False", "reason": "PyTorchJobRunning", "message": None, "time": at(3860)},
            {
                "type": "Restarting",
                "status": "False",
                "reason": "PyTorchJobRestarting",
                "message": "Worker-0 restarting",
                "time": at(3600),
            },
            {
                "type": "Failed",
                "status": "True",
                "reason": "PyTorchJobFailed",
                "message": f"PyTorchJob default/{name} is failed because 1 Worker replica(s) failed.",
                "time": at(3320),
            },
        ],
        restarts=[
            {"replica": "Worker-0", "time": at(3600), "exit_code": 137, "reason": "OOMKilled"},
            {"replica": "Worker-0", "time": at(3450), "exit_code": 137, "reason": "OOMKilled"},
        ],
        replica_counts={
            "Master": {"desired": 1, "active": None, "succeeded": 0, "failed": 1, "text": "1 failed"},
            "Worker": {"desired": 2, "active": None, "succeeded": 1, "failed": 1, "text": "1 succeeded, 1 failed"},
        },
        replicas=[
            replica(
                "Master", 0, name + "-master-0", "Failed", 3895, exit_code=1, reason="Error", exit_class="application"
            ),
            replica(
                "Worker",
                0,
                name + "-worker-0",
                "Failed",
                3895,
                restarts=3,
                exit_code=137,
                reason="OOMKilled",
                exit_class="resources",
            ),
            replica(
                "Worker",
                1,
                name + "-worker-1",
                "Succeeded",
                3895,
                exit_code=0,
                reason="Completed",
                exit_class="success",
            ),
        ],
        events=[
            {
                "time": at(3320),
                "type": "Normal",
                "reason": "PyTorchJobFailed",
                "message": f"PyTorchJob default/{name} is failed because 1 Worker replica(s) failed.",
                "object": f"PyTorchJob/{name}",
                "count": 1,
            },
            {
                "time": at(3330),
                "type": "Warning",
                "reason": "OOMKilling",
                "message": "Memory cgroup out of memory: Killed process 4242 (python)",
                "object": f"Pod/{name}-worker-0",
                "count": 3,
            },
            {
                "time": at(3890),
                "type": "Normal",
                "reason": "SuccessfulCreatePod",
                "message": f"Created pod: {name}-worker-0",
                "object": f"PyTorchJob/{name}",
                "count": 1,
            },
        ],
        outcome="failed",
        ended_at=at(3310),
        refresh_seconds=None,
    )


def succeeded_gone_try(dag: str) -> Json:
    name = "nightly-finetune-train-a9e0-1"
    return base_try(
        1,
        name,
        dag,
        kind="TFJob",
        created_at=at(7300),
        exists=False,
        source="recorded",
        phase="Succeeded",
        reason="TFJobSucceeded",
        message=f"TFJob default/{name} successfully completed.",
        start_time=at(7280),
        completion_time=at(5400),
        duration_seconds=1880.0,
        timeline=[
            {"type": "Created", "status": "True", "reason": "TFJobCreated", "message": None, "time": at(7300)},
            {"type": "Running", "status": "False", "reason": "TFJobRunning", "message": None, "time": at(7260)},
            {
                "type": "Succeeded",
                "status": "True",
                "reason": "TFJobSucceeded",
                "message": f"TFJob default/{name} successfully completed.",
                "time": at(5400),
            },
        ],
        replica_counts={
            "Chief": {"desired": 1, "active": None, "succeeded": 1, "failed": 0, "text": "1 succeeded"},
            "Worker": {"desired": 2, "active": None, "succeeded": 2, "failed": 0, "text": "2 succeeded"},
        },
        replicas=[
            replica(
                "Chief",
                0,
                name + "-chief-0",
                "Succeeded",
                7295,
                exit_code=0,
                reason="Completed",
                container="tensorflow",
            ),
            replica(
                "Worker",
                0,
                name + "-worker-0",
                "Succeeded",
                7295,
                exit_code=0,
                reason="Completed",
                container="tensorflow",
            ),
            replica(
                "Worker",
                1,
                name + "-worker-1",
                "Succeeded",
                7295,
                exit_code=0,
                reason="Completed",
                container="tensorflow",
            ),
        ],
        events=[
            {
                "time": at(5400),
                "type": "Normal",
                "reason": "TFJobSucceeded",
                "message": "TFJob default/" + name + " successfully completed.",
                "object": "TFJob/" + name,
                "count": 1,
            }
        ],
        outcome="succeeded",
        ended_at=at(5390),
    )


def stopped_try(dag: str) -> Json:
    """A deferred try marked failed while its job ran: the trigger's last sight of it, the try ended (never live)."""
    name = "retrain-digits-train-5f1c-1"
    running = f"PyTorchJob {name} is running."
    return base_try(
        1,
        name,
        dag,
        created_at=at(700),
        exists=False,
        source="recorded",
        seen_by="trigger",
        seen_at=at(300),
        phase="Running",
        badge="Stopped",
        reason="PyTorchJobRunning",
        message=running,
        start_time=at(690),
        duration_seconds=390.0,
        timeline=[
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": None, "time": at(700)},
            {"type": "Running", "status": "True", "reason": "PyTorchJobRunning", "message": running, "time": at(690)},
        ],
        replica_counts={
            "Master": {"desired": 1, "active": 1, "succeeded": 0, "failed": 0, "text": "1/1 active"},
            "Worker": {"desired": 2, "active": 2, "succeeded": 0, "failed": 0, "text": "2/2 active"},
        },
        replicas=[
            replica(r, i, f"{name}-{r.lower()}-{i}", "Stopped", 695, reason="removed with its job", age_seconds=395.0)
            for r, i in (("Master", 0), ("Worker", 0), ("Worker", 1))
        ],
        outcome="stopped",
        outcome_message="Airflow stopped the deferred task (marked it failed or success, or cleared it)",
        ended_at=at(300),
        try_ended=True,
        airflow_state="failed",
        airflow_ended_at=at(301),
    )


def queued_try(dag: str) -> Json:
    return base_try(
        1,
        "batch-embed-train-77aa-1",
        dag,
        created_at=at(95),
        phase="Queued",
        reason="Suspended",
        message="Workload is waiting in LocalQueue team-a",
        uid=None,
        timeline=[
            {"type": "Created", "status": "True", "reason": "PyTorchJobCreated", "message": None, "time": at(95)},
            {
                "type": "Suspended",
                "status": "True",
                "reason": "Suspended",
                "message": "Workload is waiting in LocalQueue team-a",
                "time": at(94),
            },
        ],
        replica_counts={
            "Master": {"desired": 1, "active": 0, "succeeded": 0, "failed": 0, "text": "0/1 active"},
            "Worker": {"desired": 4, "active": 0, "succeeded": 0, "failed": 0, "text": "0/4 active"},
        },
        refresh_seconds=5,
    )


def trainjob(failed: bool = False) -> tuple[Json, list[Json]]:
    """A TrainJob on ``torch-distributed`` with two nodes, its dataset initializer done, and its pods (node 1 failed
    with exit 1 when ``failed``), as the API would return them, with times relative to now."""
    from tests.families import trainer_v2_objects as v2

    made = v2.train_job(
        {
            "conditions": [
                v2.condition("Failed", "True", "FailedJobs", "jobset failed due to one or more job failures", at(5))
            ]
            if failed
            else [],
            "jobsStatus": v2.jobs(
                dataset_initializer={"succeeded": 1}, node={"failed": 1} if failed else {"active": 1, "ready": 1}
            ),
            "trainerStatus": {
                "progressPercentage": 42,
                "estimatedRemainingSeconds": 380,
                "metrics": [{"name": "loss", "value": "0.2481"}, {"name": "accuracy", "value": "0.914"}],
                "lastUpdatedTime": at(4),
            },
        }
    )
    made["metadata"].update(name="digits-v2", namespace="default", creationTimestamp=at(300))
    done = v2.terminated("dataset-initializer", 0, "Completed", at(240))
    pods = [
        v2.pod("dataset-initializer", 0, phase="Succeeded", containers=("dataset-initializer",),
               container_statuses=[done], created=at(295)),
    ]  # fmt: skip
    for index in (0, 1):
        ended = failed and index == 1
        statuses = [v2.terminated("node", 1, "Error", at(6))] if ended else None
        pods.append(
            v2.pod("node", index, phase="Failed" if ended else "Running", container_statuses=statuses, created=at(230))
        )
    for p in pods:
        p["metadata"]["name"] = p["metadata"]["name"].replace(v2.NAME, "digits-v2")
        p["spec"]["nodeName"] = "local-node"
    return made, pods


def trainjob_try(dag: str, failed: bool = False) -> Json:
    """A try of a TrainJob, as :func:`airflow_trainjob.ui.try_view.try_view` answers it."""
    from airflow_trainjob.ui.try_view import try_view

    made, pods = trainjob(failed)
    record = {
        "try_number": 1,
        "kubernetes_conn_id": "kubernetes_default",
        "kind": "TrainJob",
        "namespace": "default",
        "name": "digits-v2",
        "uid": made["metadata"]["uid"],
        "created_at": at(300),
        "attached": False,
        "manifest_yaml": "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: digits-v2\n",
        "final": None,
    }
    return try_view(record, live=made, live_pods=pods, now=datetime.now(timezone.utc))


def error(status: int, detail: str) -> Callable[[], tuple[int, Json]]:
    return lambda: (status, {"detail": detail})


def task_instance(dag: str) -> tuple[int, Json]:
    tries: list[Json]
    if dag == "retrain_digits":
        tries = [running_try(dag), failed_try(dag, 1, exists=False)]
    elif dag == "retrain_failed":
        tries = [failed_try(dag, 2, exists=True), failed_try(dag, 1, exists=False)]
    elif dag == "nightly_finetune":
        tries = [succeeded_gone_try(dag)]
    elif dag == "batch_embed":
        tries = [queued_try(dag)]
    elif dag == "retrain_stopped":
        tries = [stopped_try(dag)]
    elif dag == "many_tries":
        tries = [failed_try(dag, n, exists=n == 8) for n in range(8, 0, -1)]
    elif dag == "train_digits_v2":
        tries = [trainjob_try(dag)]
    elif dag == "train_digits_v2_failed":
        tries = [trainjob_try(dag, failed=True)]
    elif dag == "empty":
        tries = []
    elif dag == "minimal":  # only what every try has: the page must cope with every other field absent
        tries = [{"try_number": 1, "kind": "PyTorchJob", "namespace": "default", "name": "x", "exists": False}]
    elif dag in ERRORS:
        return ERRORS[dag]()
    else:
        return 404, {"detail": f"No task instance {dag}"}
    return 200, {"dag_id": dag, "run_id": "r", "task_id": "train", "map_index": -1, "tries": tries}


ERRORS = {
    "err401": error(401, "Not authenticated"),
    "err403": error(403, "The user may not read task instances of DAG err403"),
    "err500": error(500, "Internal Server Error"),
}


def log(pod: str) -> tuple[int, Json]:
    if pod.endswith("-1-master-0") or pod.endswith("-1-worker-0") or pod.endswith("-1-worker-1") or "nightly" in pod:
        return 200, {
            "pod": pod,
            "container": "pytorch",
            "lines": [],
            "running": False,
            "available": False,
            "message": f"The pod {pod} no longer exists: its log went with it.",
        }
    running = "-2-" in pod
    steps = int(since_start() // 2) + 60 if running else 400
    lines = [
        f"[rank {0 if 'master' in pod else 1}] 2026-12-02 05:0{i // 100 % 10}:{i % 60:02d} INFO train.py:88 epoch {i // 40 + 1:2d} step {i:4d}  loss={2.3 / (1 + i / 40):.4f}  lr=0.001"
        for i in range(max(0, steps - 200), steps)
    ]
    if "worker-1" in pod:
        lines[-3:-3] = [
            "Traceback (most recent call last):",
            '  File "/app/train.py", line 142, in <module>',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ]
    return 200, {
        "pod": pod,
        "container": "pytorch",
        "lines": lines,
        "running": running,
        "available": True,
        "message": None,
    }


def job_rows() -> list[Json]:
    def row(
        name: str, dag: str, phase: str, ago: float, duration: float | None, active: int, desired: int, **extra: Any
    ) -> Json:
        run = "scheduled__2026-12-02T05:00:00+00:00"
        base = f"/dags/{dag}/runs/{run.replace(':', '%3A').replace('+', '%2B')}/tasks/train"
        r = {
            "kind": "PyTorchJob",
            "namespace": "default",
            "name": name,
            "uid": name + "-uid",
            "phase": phase,
            "reason": None,
            "dag_id": dag,
            "run_id": run,
            "task_id": "train",
            "map_index": -1,
            "try_number": 1,
            "created_at": at(ago + 10),
            "start_time": at(ago),
            "duration_seconds": duration,
            "replicas_active": None if phase in ("Succeeded", "Failed") else active,  # as views.job_row
            "replicas_desired": desired,
            "replicas_succeeded": desired if phase == "Succeeded" else 0,
            "replicas_failed": 1 if phase == "Failed" else 0,
            "last_failure_reason": None,
            "dag_url": f"/dags/{dag}",
            "run_url": base.rsplit("/tasks/", 1)[0],
            "task_instance_url": base,
            "training_job_url": base + "/plugin/training-job",
        }
        r.update(extra)
        return r

    up = 400 + since_start()
    return [
        row("batch-embed-train-77aa-1", "batch_embed", "Queued", 90, None, 0, 5, reason="Suspended", start_time=None),
        row(
            "retrain-digits-train-5f1c-2",
            "retrain_digits",
            "Running",
            up,
            up,
            3,
            3,
            reason="PyTorchJobRunning",
            try_number=2,
            last_failure_reason="PyTorchJobRestarting: Worker-1 exited with code 137",
        ),
        row(
            "shard-eval-train-0c3d-1",
            "shard_eval",
            "Running",
            800,
            800,
            2,
            2,
            kind="MPIJob",
            task_id="evaluate",
            map_index=3,
            reason="MPIJobRunning",
        ),
        row(
            "shard-eval-train-0c3d-1b",
            "shard_eval",
            "Restarting",
            900,
            900,
            1,
            2,
            kind="MPIJob",
            task_id="evaluate",
            map_index=2,
            reason="MPIJobRestarting",
            last_failure_reason="MPIJobRestarting: Launcher-0 exited with code 1",
        ),
        row(
            "retrain-digits-train-5f1c-1",
            "retrain_digits",
            "Failed",
            3870,
            550.0,
            0,
            3,
            reason="PyTorchJobFailed",
            last_failure_reason="PyTorchJobFailed: 1 Worker replica(s) failed (OOMKilled)",
        ),
        row(
            "nightly-finetune-train-a9e0-1",
            "nightly_finetune",
            "Succeeded",
            7280,
            1880.0,
            0,
            3,
            kind="TFJob",
            reason="TFJobSucceeded",
        ),
        row(
            "nightly-finetune-train-a9e0-0",
            "nightly_finetune",
            "Succeeded",
            93600,
            1790.0,
            0,
            3,
            kind="TFJob",
            reason="TFJobSucceeded",
        ),
        row("xgb-rank-train-1111-1", "xgb_rank", "Created", 30, None, 0, 2, kind="XGBoostJob", start_time=None),
        row(
            "xgb-rank-train-1111-0",
            "xgb_rank",
            "Suspended",
            4000,
            None,
            0,
            2,
            kind="XGBoostJob",
            start_time=None,
            reason="Suspended",
        ),
    ]


def trainjob_row() -> Json:
    """The jobs page's row of the running TrainJob, as :func:`airflow_trainjob.ui.views.job_row` answers it."""
    from airflow_trainjob.domain.ownership import TaskInstanceIdentity
    from airflow_trainjob.ui.views import job_row

    owner = TaskInstanceIdentity("train_digits_v2", "train", "scheduled__2026-12-02T05:00:00+00:00", -1, 1)
    return job_row(trainjob()[0], owner, datetime.now(timezone.utc))


def jobs(query: dict[str, str]) -> tuple[int, Json]:
    if query.get("preview") in ERRORS:
        return ERRORS[query["preview"]]()
    rows = [] if query.get("preview") == "empty" else [trainjob_row(), *job_rows()]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["phase"]] = counts.get(r["phase"], 0) + 1
    kept = [
        r
        for r in rows
        if (not query.get("phase") or r["phase"] == query["phase"])
        and (not query.get("dag_id") or r["dag_id"] == query["dag_id"])
    ]
    sources = [
        {"connection": "kubernetes_default", "namespace": "default", "error": None},
        {
            "connection": "kubernetes_gpu",
            "namespace": "research",
            "error": 'pytorchjobs.kubeflow.org is forbidden: User "system:serviceaccount:airflow:airflow" cannot list resource "pytorchjobs" in the namespace "research" (HTTP 403)',
        },
    ]
    return 200, {"counts": counts, "jobs": kept, "sources": sources}


FRAME = """<!doctype html>
<html class="{mode}" style="height:100%;color-scheme:{mode}"><head><meta charset="utf-8"><title>Airflow (preview)</title>
<style>
 body{{margin:0;height:100%;font-family:Inter,-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;display:flex;
   background:{bg};color:{fg}}}
 nav{{width:64px;background:{nav};border-right:1px solid {border}}}
 .main{{flex:1;display:flex;flex-direction:column;padding:8px}}
 .tabs{{display:flex;gap:16px;border-bottom:1px solid {border};padding:8px 8px 0;font-size:14px}}
 .tabs span{{padding-bottom:8px}} .tabs .on{{border-bottom:2px solid {fg};font-weight:600}}
 iframe{{flex:1;border:none;display:block;width:100%}}
 button{{position:fixed;right:8px;bottom:8px}}
</style></head>
<body><nav></nav><div class="main"><div class="tabs"><span>Logs</span><span>Rendered Templates</span><span>XCom</span><span>Details</span>
<span class="on">Training job</span></div>
<iframe title="Training job" sandbox="{sandbox}" src="{src}"></iframe></div>
<button id="toggle" onclick="var c=document.documentElement.classList;var d=c.contains('dark');c.remove(d?'dark':'light');c.add(d?'light':'dark');">toggle colour mode</button>
</body></html>
"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path in PAGES:
            return self.send_file(STATIC / PAGES[url.path])
        if url.path.startswith("/trainjob/static/"):
            name = url.path.rsplit("/", 1)[-1]
            return (
                self.send_file(STATIC / name)
                if (STATIC / name).is_file()
                else self.send_json(404, {"detail": "Not Found"})
            )
        if url.path == "/trainjob/api/task-instance":
            return self.send_json(*task_instance(query.get("dag_id", "")))
        if url.path == "/trainjob/api/task-instance/log":
            if query.get("dag_id") in ERRORS:
                return self.send_json(*ERRORS[query["dag_id"]]())
            return self.send_json(*log(query.get("pod", "")))
        if url.path == "/trainjob/api/jobs":
            # the jobs page asks without parameters; ``?preview=err401|empty`` on the page picks a scenario
            page_query = parse_qs(urlsplit(self.headers.get("Referer", "")).query)
            return self.send_json(*jobs({**query, "preview": page_query.get("preview", [""])[-1]}))
        if url.path == "/preview/airflow":
            dark = query.get("mode") == "dark"
            page = FRAME.format(
                mode="dark" if dark else "light",
                bg="oklch(0.23185 0.0323 266.44)" if dark else "#fff",
                fg="oklch(0.985 0.004 253)" if dark else "oklch(0.23185 0.0323 266.44)",
                nav="oklch(0.11 0.025 251)" if dark else "oklch(0.985 0.004 253)",
                border="oklch(0.28 0.035 251)" if dark else "oklch(0.915 0.01 253)",
                sandbox=AIRFLOW_SANDBOX,
                src=escape(query.get("src", "/trainjob/ui/jobs")),
            )
            return self.send_body(200, page.encode(), "text/html; charset=utf-8")
        if url.path.startswith("/dags/") or url.path.startswith("/preview/dashboard"):
            return self.send_body(
                200, f"<h1>Airflow would show {escape(url.path)}</h1>".encode(), "text/html; charset=utf-8"
            )
        self.send_json(404, {"detail": "Not Found"})

    def send_file(self, path: Path) -> None:
        self.send_body(
            200,
            path.read_bytes(),
            (mimetypes.guess_type(path.name)[0] or "application/octet-stream") + "; charset=utf-8",
        )

    def send_json(self, status: int, body: Json) -> None:
        self.send_body(status, json.dumps(body).encode(), "application/json")

    def send_body(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status, HTTPStatus(status).phrase)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the pages poll
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=18180)
    args = parser.parse_args()
    # the TrainJob scenarios answer through the provider's own views (the repository's root on the path)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"preview on http://127.0.0.1:{args.port}/trainjob/ui/jobs", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

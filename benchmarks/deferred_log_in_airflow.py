"""A deferred training's log in a real Airflow deployment: when the lead replica's lines reach the task log, as the
REST API (and so the UI) shows it, and whether each is there once at the end.

Starts its own local cluster (the controller and the process kubelet run the training; port base ``--port-base``,
default 56743) and a real Airflow deployment (``tests/support/deployment.py``: api-server, scheduler with the
LocalExecutor, dag-processor, triggerer; ``[operators] default_deferrable = True``; api-server on port base + 50). The
DAG's one task is a ``TrainingJobOperator`` whose Master prints a first line (with a Variable that Airflow treats as a
secret), then ``--epochs`` numbered lines over ``--minutes`` minutes, each with the time it was printed; the job has
``cleanPodPolicy: All``, so its pod is gone once the task has ended.

While the task runs, the script reads the task log through ``GET /api/v2/.../logs/<try>`` every ``--poll`` seconds and
records when each line first shows there. ``--restart-triggerer-at S`` stops the triggerer (SIGTERM, as a deploy does)
S seconds into the training and starts it again. At the end it prints: the task log's line count, how many epoch
lines it holds and how many of them twice, whether the first line and the secret's mask are there, and the delay
from a line's printing to its showing in the task log (while deferred, and for the rest at the resume).

Run: ``python benchmarks/deferred_log_in_airflow.py --minutes 4`` (about 6 minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: tests.support.deployment
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pct, say

NAMESPACE = "ml"
SECRET = "hf_SECRETvalue0123456789"

DAG = """
from datetime import datetime
from airflow.sdk import DAG
from airflow_trainjob.operators.training_job import TrainingJobOperator

TRAINING = {training!r}

with DAG("deferred_log", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs={{
            "Master": {{
                "replicas": 1,
                "template": {{"spec": {{"containers": [{{
                    "name": "pytorch",
                    "image": "python:3.11-slim",
                    "command": [{python!r}, "-c", TRAINING],
                    "env": [{{"name": "HF_TOKEN", "value": "{{{{ var.value.hf_token }}}}"}}],
                }}]}}}},
            }}
        }},
        run_policy={{"cleanPodPolicy": "All"}},
        poll_interval=30,
    )
"""

TRAINING = """
import os, time
print(f"job starts: {epochs} epochs; token {{os.environ['HF_TOKEN']}}", flush=True)
for i in range(1, {epochs} + 1):
    print(f"epoch {{i:03d}}/{epochs} loss={{1 / i:.4f}} printed {{time.time():.3f}}", flush=True)
    time.sleep({pause})
"""

_EPOCH = re.compile(r"\[Master-0\] epoch (\d{3})/\d+ loss=\S+ printed (\d+\.\d+)")


def restart(deployment, name: str) -> float:
    """SIGTERM the component's process group (as a deploy does), wait for it to exit, start it again; the seconds
    it was away."""
    from tests.support.deployment import AIRFLOW, COMPONENTS

    process = deployment.processes[name]
    started = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with deployment.log_path(name).open("ab") as log:
        deployment.processes[name] = subprocess.Popen(
            [AIRFLOW, *COMPONENTS[name]],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=deployment.root,
            env=deployment.env,
            start_new_session=True,
        )
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=4.0, help="the training's length (default 4)")
    parser.add_argument("--epochs", type=int, default=250, help="numbered lines it prints (default 250)")
    parser.add_argument("--poll", type=float, default=5.0, help="seconds between two reads of the task log (5)")
    parser.add_argument("--restart-triggerer-at", type=float, help="seconds into the training to restart it")
    parser.add_argument("--port-base", type=int, default=56743, help="the local cluster's ports (default 56743)")
    parser.add_argument("--sync", action="store_true", help="run the task synchronously instead (for comparison)")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir (logs) after the run")
    args = parser.parse_args()

    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports
    from tests.support.deployment import AirflowDeployment

    work = Path(tempfile.mkdtemp(prefix="trainjob-airflow-log-", dir="/tmp"))
    cluster = LocalCluster(work / "cluster", Ports.from_base(args.port_base))
    training = TRAINING.format(epochs=args.epochs, pause=args.minutes * 60 / args.epochs)
    try:
        cluster.up()
        client.CoreV1Api(cluster.api_client()).create_namespace({"metadata": {"name": NAMESPACE}})
        with AirflowDeployment(
            work / "airflow",
            port=args.port_base + 50,
            dags={"deferred_log.py": DAG.format(training=training, python=sys.executable)},
            dag_ids=["deferred_log"],
            connection=cluster.airflow_connection(NAMESPACE),
            deferrable=not args.sync,
            env={"AIRFLOW_VAR_HF_TOKEN": SECRET},
        ) as airflow:
            api = airflow.api("admin")
            run_id = api.trigger("deferred_log")["dag_run_id"]
            say(f"triggered {run_id}")
            first_seen: dict[int, float] = {}
            printed: dict[int, float] = {}
            states: Counter[str] = Counter()
            restarted_after = None
            began = None
            while True:
                ti = api.task_instance("deferred_log", run_id, "train")
                states[ti["state"]] += 1
                if ti["state"] in ("success", "failed", "upstream_failed"):
                    break
                if ti["state"] in ("deferred", "running") and began is None:
                    began = time.time()
                if (
                    args.restart_triggerer_at is not None
                    and restarted_after is None
                    and began is not None
                    and time.time() - began > args.restart_triggerer_at
                ):
                    restarted_after = restart(airflow, "triggerer")
                    say(f"triggerer restarted ({restarted_after:.1f} s away)")
                if ti["try_number"]:
                    now = time.time()
                    text = api.task_log_text("deferred_log", run_id, "train", ti["try_number"])
                    for m in _EPOCH.finditer(text):
                        epoch = int(m.group(1))
                        first_seen.setdefault(epoch, now)
                        printed[epoch] = float(m.group(2))
                    say(f"{ti['state']}: {len(first_seen)} epoch lines in the task log")
                time.sleep(args.poll)
            ended = time.time()
            text = api.task_log_text("deferred_log", run_id, "train", ti["try_number"])
            for m in _EPOCH.finditer(text):
                first_seen.setdefault(int(m.group(1)), ended)
                printed[int(m.group(1))] = float(m.group(2))
            epochs = Counter(int(m.group(1)) for m in _EPOCH.finditer(text))
            (work / "task.log").write_text(text)
            live = [e for e, t in first_seen.items() if t < ended]
            delays_live = [first_seen[e] - printed[e] for e in live if e in printed]
            first_line = [line for line in text.splitlines() if "job starts:" in line]
            pods = client.CoreV1Api(cluster.api_client()).list_namespaced_pod(NAMESPACE).items
            result = {
                "state": ti["state"],
                "task log lines": len(text.splitlines()),
                "epoch lines": sum(epochs.values()),
                "distinct epochs": f"{len(epochs)} of {args.epochs}",
                "epochs twice or more": sorted(e for e, c in epochs.items() if c > 1),
                "first line": first_line[0].strip() if first_line else None,
                "secret shown in the log": SECRET in text,
                "pods left": len(pods),
                "epoch lines seen while deferred": len(live),
                "delay printed -> shown while deferred, p50 / p99 / max (s)": (
                    f"{pct(delays_live, 50):.0f} / {pct(delays_live, 99):.0f} / {max(delays_live):.0f}"
                    if delays_live
                    else "-"
                ),
                "first epoch line shown at (s after deferral)": (
                    f"{min(first_seen.values()) - began:.0f}" if first_seen and began else "-"
                ),
                "triggerer restarted (s away)": None if restarted_after is None else round(restarted_after, 1),
                "log polls by state": dict(states),
            }
            timeline = sorted(Counter(round(first_seen[e] - began) for e in first_seen).items()) if began else []
            print(json.dumps(result, indent=1))
            print("epoch lines first shown, by seconds after deferral:", timeline)
        return 0
    finally:
        cluster.down()
        if args.keep:
            say(f"kept {work}")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

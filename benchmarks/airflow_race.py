"""Meets Airflow's own race around a deferred task's resume (apache/airflow#72716) for real, and counts what the
provider does after it: how many tasks Airflow ran again after their job had succeeded, and how many jobs each task
instance created (one each: no success trained twice).

A real Airflow deployment (``tests/support/deployment.py``: api-server, scheduler with LocalExecutor, dag-processor,
triggerer; SQLite) on the tests' local cluster (``$AIRFLOW_TRAINJOB_TEST_STATE_DIR`` /
``$AIRFLOW_TRAINJOB_TEST_PORT_BASE``; started if none runs, stopped again then), the api-server on the cluster's port
base + 60 (as ``tests/ui``: not while those run). Each round triggers two runs of a DAG of ``--tasks`` deferrable
tasks (``retries=2``, ``retry_delay`` 1 s) whose PyTorchJob succeeds within 2 s: a trigger that fires before the
deferring worker's exit has reached the scheduler sets the race off. Whether it strikes is up to the scheduler and the
machine's load (``--busy K`` adds K processes that spin on the CPU during each round). ``--holds`` runs the rounds
once per value of ``[trainjob] min_deferral_seconds`` (the trigger's hold after a deferral:
:mod:`airflow_trainjob.domain.deferral_hold`), alternating round by round so that each value meets the same load.
Prints a Markdown table per round and the total per hold; ``--keep`` keeps the deployments' directories (task logs,
component logs) and prints them.

Run: ``.venv/bin/python benchmarks/airflow_race.py --tasks 8 --rounds 4 --holds 0,10 --busy 4`` (about 1-5 minutes a
round).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DAG_ID = "airflow_race"
#: What the scheduler logs when the race strikes (the end differs: "... is running", "... is queued").
RACE_LINE = "but the task instance's state attribute is"


def dag_source(tasks: int) -> str:
    return textwrap.dedent(
        f"""
        import sys
        from datetime import datetime, timedelta
        from airflow.sdk import DAG
        from airflow_trainjob.operators.training_job import TrainingJobOperator

        MASTER = {{"replicas": 1, "restartPolicy": "Never", "template": {{"spec": {{"containers": [
            {{"name": "pytorch", "image": "python:3.11-slim", "command": [{sys.executable!r}, "-c", "print(1)"]}}
        ]}}}}}}
        with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
                 max_active_tasks=16):
            for i in range({tasks}):
                TrainingJobOperator(
                    task_id=f"t{{i}}", kind="PyTorchJob", replica_specs={{"Master": MASTER}}, deferrable=True,
                    poll_interval=1, startup_timeout=120, timeout=300, retries=2, retry_delay=timedelta(seconds=1),
                )
        """
    )


def first_provider_line(log: Path) -> str:
    """The retry's first line about its job: ``Not training again: ...``, ``Created ...``, ``Replacing ...``."""
    if not log.exists():
        return "(no log)"
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = str(json.loads(line).get("event", ""))
        except ValueError:
            continue
        if event.startswith(("Not training again", "Created ", "Replacing ", "Attaching ", "Try ")):
            return event[:160]
    return "(none)"


def one_round(cluster, tasks: int, work: Path, hold: float) -> dict:
    from kubernetes import client

    from airflow_trainjob.constants import LABEL_RUN_ID, LABEL_TASK_ID
    from tests.support.deployment import AirflowDeployment
    from tests.support.faults import JobCreations

    api_client = cluster.api_client()
    core = client.CoreV1Api(api_client)
    namespace = f"t-race-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    creations = JobCreations(api_client, namespace).start()
    root = work / namespace
    try:
        with AirflowDeployment(
            root,
            port=cluster.ports.apiserver + 60,
            dags={"airflow_race.py": dag_source(tasks)},
            dag_ids=[DAG_ID],
            connection=cluster.airflow_connection(namespace),
            env={"AIRFLOW__TRAINJOB__MIN_DEFERRAL_SECONDS": str(hold)},
        ) as airflow:
            api = airflow.api("admin")
            runs = [api.trigger(DAG_ID)["dag_run_id"] for _ in range(2)]
            finished = [
                (run_id, f"t{i}", api.wait_for_task_state(DAG_ID, run_id, f"t{i}", ["success", "failed"], timeout=900))
                for run_id in runs
                for i in range(tasks)
            ]
            races = Counter(
                line[line.index(RACE_LINE) :].split(".")[0]
                for line in airflow.log_path("scheduler").read_text(errors="replace").splitlines()
                if RACE_LINE in line
            )
    finally:
        creations.stop()
        core.delete_namespace(namespace)
        api_client.close()
    jobs = Counter((labels.get(LABEL_RUN_ID), labels.get(LABEL_TASK_ID)) for labels in creations.seen.values())
    logs = root / "home" / "logs" / f"dag_id={DAG_ID}"
    again = [
        (task_id, ti["try_number"], first_provider_line(logs / f"run_id={run_id}" / f"task_id={task_id}" /
                                                        f"attempt={ti['try_number']}.log"))
        for run_id, task_id, ti in finished
        if ti["try_number"] > 1
    ]  # fmt: skip
    return {
        "hold": hold,
        "tasks": len(finished),
        "succeeded": sum(ti["state"] == "success" for _, _, ti in finished),
        "run_again": len(again),
        "races": dict(races),
        "jobs": sum(jobs.values()),
        "most_jobs_per_task": max(jobs.values(), default=0),
        "again": again,
        "root": str(root),
    }


def busy(count: int) -> list[subprocess.Popen]:
    """``count`` processes that spin on the CPU (the load of a busy scheduler's machine); stopped by :func:`stop`."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.kill()
        process.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8, help="deferrable tasks per DAG run (two runs a round)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per hold, one deployment each")
    parser.add_argument("--holds", default="10", help="values of [trainjob] min_deferral_seconds, comma-separated")
    parser.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU during each round")
    parser.add_argument("--keep", action="store_true", help="keep the deployments' directories")
    args = parser.parse_args()
    holds = [float(value) for value in args.holds.split(",")]

    from airflow_trainjob_local.cluster import LocalCluster, Ports

    state = os.environ.get("AIRFLOW_TRAINJOB_TEST_STATE_DIR")
    base = os.environ.get("AIRFLOW_TRAINJOB_TEST_PORT_BASE")
    cluster = LocalCluster(Path(state) if state else None, Ports.from_base(int(base)) if base else None)
    owned = "kube-apiserver" in cluster.up()
    work = Path(tempfile.mkdtemp(prefix="trainjob-race-"))
    results = []
    try:
        for number in range(1, args.rounds + 1):
            for hold in holds:
                spinning = busy(args.busy)
                try:
                    result = one_round(cluster, args.tasks, work, hold)
                finally:
                    stop(spinning)
                result["round"] = number
                results.append(result)
                print(f"\nround {number}: {json.dumps({k: v for k, v in result.items() if k != 'again'})}")
                for task_id, try_number, line in result["again"]:
                    print(f"  {task_id} try {try_number}: {line}")
    finally:
        if owned:
            cluster.down()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n--busy {args.busy}, {args.tasks} tasks x 2 runs a round")
    print(
        "\n| hold (s) | round | tasks | races in the scheduler's log | run again after their job succeeded "
        "| jobs created | most per task | succeeded |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['hold']:g} | {r['round']} | {r['tasks']} | {sum(r['races'].values())} | {r['run_again']} | "
            f"{r['jobs']} | {r['most_jobs_per_task']} | {r['succeeded']} |"
        )
    ok = True
    for hold in holds:
        mine = [r for r in results if r["hold"] == hold]
        total = {k: sum(r[k] for r in mine) for k in ("tasks", "run_again", "jobs", "succeeded")}
        races = sum(sum(r["races"].values()) for r in mine)
        print(
            f"| {hold:g} | all | {total['tasks']} | {races} | {total['run_again']} | {total['jobs']} | "
            f"{max((r['most_jobs_per_task'] for r in mine), default=0)} | {total['succeeded']} |"
        )
        ok = ok and total["jobs"] == total["tasks"] == total["succeeded"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

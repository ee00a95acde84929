"""Stalls of a real triggerer's event loop while training triggers start, and what caused each.

A real Airflow deployment (api-server, scheduler with the LocalExecutor, dag-processor, triggerer: separate processes,
``tests/support/deployment.py``) on a local cluster of its own, with ``benchmarks/loop_probe.py`` installed in the
triggerer (``benchmarks/probe_site/sitecustomize.py``). One DAG, one deferrable ``TrainingJobOperator``; the script
triggers ``--runs`` DAG runs ``--every`` seconds apart, so each trigger starts on its own, and waits for them all.
Each run's training lasts ``--train-seconds``: ``--load idle`` sleeps; ``--load busy`` burns a core in each of the
Master and the Worker (what a real training does to a 2-core machine).

It prints, per scenario, the triggerer's own ``Triggerer's async thread was blocked for`` warnings (from its log)
and the probe's stalls of the trigger runner's loop, each with its cause (``loop_probe.cause``): the loop's own work
(and where: the most sampled stack), a garbage collection, another thread holding the GIL, or the process not
scheduled while the cores were busy.

Each scenario runs with ``[trainjob] triggerer_gc_freeze`` off (the provider before it froze the triggerer's heap),
then on (``--gc-freeze``), each in a new deployment: a triggerer's first training trigger is the one that stalls.
Run (about 4 minutes per scenario): ``.venv/bin/python benchmarks/triggerer_stalls.py --load idle --load busy
--repeat 2``. ``--code DIR`` runs the provider in DIR instead (a checkout of an earlier commit).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import loop_probe  # noqa: E402
from _common import end_run, say  # noqa: E402

PORT_BASE = 58743
AIRFLOW_PORT = PORT_BASE + 60
DAG_ID = "stall_probe"
BLOCKED = re.compile(r"async thread was blocked for (\d+(?:\.\d+)?) seconds")


def dag_source(train_seconds: int, busy: bool) -> str:
    work = "while time.time() < end: pass" if busy else "time.sleep(max(0, end - time.time()))"
    code = f"import time\nend = time.time() + {train_seconds}\n{work}\nprint('done', flush=True)"
    return textwrap.dedent(
        f"""
        from datetime import datetime

        from airflow.sdk import DAG

        from airflow_trainjob.operators.training_job import TrainingJobOperator

        CODE = {code!r}
        REPLICA = {{
            "replicas": 1,
            "restartPolicy": "Never",
            "template": {{"spec": {{"containers": [
                {{"name": "pytorch", "image": "python:3.11-slim", "command": [{sys.executable!r}, "-c", CODE]}}
            ]}}}},
        }}

        with DAG(dag_id={DAG_ID!r}, schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
                 max_active_runs=16) as dag:
            TrainingJobOperator(
                task_id="train",
                kind="PyTorchJob",
                replica_specs={{"Master": REPLICA, "Worker": REPLICA}},
                deferrable=True,
                startup_timeout=300,
                timeout=1200,
            )
        """
    )


def trigger(api, attempts: int = 5) -> str:
    """Trigger a run; SQLite answers "database is locked" (500) now and then while tasks write: try again."""
    for attempt in range(attempts):
        try:
            return api.trigger(DAG_ID)["dag_run_id"]
        except Exception as e:  # httpx.HTTPStatusError
            if attempt == attempts - 1 or " 500 " not in str(e):
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def scenario(
    work: Path, cluster, load: str, freeze: bool, runs: int, every: float, train_seconds: int, code: Path | None
) -> dict:
    from tests.support.deployment import AirflowDeployment

    namespace = "default"
    label = f"{load}, gc freeze {'on' if freeze else 'off'}"
    name = f"{load}-{'freeze' if freeze else 'nofreeze'}-{int(time.time())}"
    probe_out = work / f"probe-{name}.jsonl"
    pythonpath = [str(HERE / "probe_site")] + ([str(code)] if code else [])
    # The provider's bytecode compiled beforehand, as pip does when it installs a wheel: a checkout under
    # PYTHONDONTWRITEBYTECODE would otherwise compile every module of it at each import, on the loop too.
    pycache = work / "pycache"
    provider = (code or HERE.parent) / "airflow_trainjob"
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(provider)],
        env={**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)},
        check=True,
    )
    env = {
        "PYTHONPYCACHEPREFIX": str(pycache),
        "LOOP_PROBE_OUT": str(probe_out),
        "AIRFLOW__TRAINJOB__TRIGGERER_GC_FREEZE": str(freeze),
        "PYTHONPATH": os.pathsep.join([*pythonpath, str(HERE.parent), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
    }
    deployment = AirflowDeployment(
        work / f"airflow-{name}",
        port=AIRFLOW_PORT,
        dags={"stalls.py": dag_source(train_seconds, load == "busy")},
        dag_ids=[DAG_ID],
        connection=cluster.airflow_connection(namespace),
        deferrable=True,
        env=env,
    )
    with deployment as airflow:
        api = airflow.api("admin")
        api.unpause(DAG_ID)
        started_at: list[float] = []
        run_ids = []
        for i in range(runs):
            if i:
                time.sleep(every)
            started_at.append(time.time())
            run_ids.append(trigger(api))
            say(f"{label}: run {i + 1}/{runs} triggered")
        states = []
        for run_id in run_ids:
            try:
                states.append(
                    api.wait_for_task_state(DAG_ID, run_id, "train", "success", timeout=train_seconds + 600)["state"]
                )
            except AssertionError as e:  # ended otherwise, or too late: counted, and the stalls still reported
                say(f"{label}: {e}")
                states.append("not success")
        log_text = airflow.log_path("triggerer").read_text(errors="replace")
    records = [json.loads(line) for line in probe_out.read_text().splitlines()] if probe_out.exists() else []
    return {
        "load": label,
        "states": Counter(states),
        "warnings": [float(m.group(1)) for m in BLOCKED.finditer(log_text)],
        "stalls": records,
    }


def report(results: list[dict]) -> None:
    print(
        "| load | runs ok | triggerer warnings (longest 8, s) | probe stalls > 0.1 s | by cause | longest: cause, loop CPU, "
        "process CPU, machine busy |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        stalls = r["stalls"]
        causes = Counter(loop_probe.cause(s) for s in stalls)
        worst = max(stalls, key=lambda s: s["lag"], default=None)
        longest = (
            f"{worst['lag']:.2f} s: {loop_probe.cause(worst)}, {worst['loop_cpu']:.2f} / {worst['process_cpu']:.2f} "
            f"CPU s, {worst['machine_busy']:.0%}"
            if worst
            else "-"
        )
        print(
            f"| {r['load']} | {r['states'].get('success', 0)}/{sum(r['states'].values())} | "
            f"{len(r['warnings'])}: {', '.join(f'{w:.2f}' for w in sorted(r['warnings'])[-8:]) or '-'} | {len(stalls)} | "
            f"{', '.join(f'{c} {n}' for c, n in causes.most_common()) or '-'} | {longest} |"
        )
    print()
    for r in results:
        loop_stalls = [s for s in r["stalls"] if loop_probe.cause(s) in ("loop", "gc", "other thread")]
        if not loop_stalls:
            continue
        print(f"Stalls of {r['load']} that the process spent itself (stack: innermost first):")
        for s in sorted(loop_stalls, key=lambda s: -s["lag"])[:8]:
            site = s["stacks"][0][0] if s["stacks"] else "(no sample)"
            gcs = ", ".join(f"gen{g['generation']} {g['seconds']:.2f} s" for g in s["gc"]) or "no gc"
            print(f"- {s['lag']:.2f} s, {loop_probe.cause(s)}, {gcs}: {site}")
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", action="append", choices=["idle", "busy"], help="scenario(s); default: both")
    parser.add_argument("--runs", type=int, default=3, help="deferred trainings per scenario")
    parser.add_argument("--every", type=float, default=20.0, help="seconds between two runs' starts")
    parser.add_argument("--train-seconds", type=int, default=60, help="each training's length")
    parser.add_argument("--code", type=Path, help="a checkout whose provider to run instead of this one")
    parser.add_argument(
        "--gc-freeze",
        choices=["both", "on", "off"],
        default="both",
        help="[trainjob] triggerer_gc_freeze: both = each scenario with it off, then on (side by side)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="times to run each scenario (a new triggerer each)")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, probe output)")
    args = parser.parse_args()
    from airflow_trainjob_local.cluster import LocalCluster, Ports

    work = Path(tempfile.mkdtemp(prefix="trainjob-stalls-"))
    cluster = LocalCluster(work / "cluster", Ports.from_base(PORT_BASE))
    try:
        cluster.up()
        freezes = {"both": [False, True], "on": [True], "off": [False]}[args.gc_freeze]
        results = [
            scenario(work, cluster, load, freeze, args.runs, args.every, args.train_seconds, args.code)
            for _ in range(args.repeat)
            for load in (args.load or ["idle", "busy"])
            for freeze in freezes
        ]
    finally:
        end_run(cluster, work, args.keep)
    report(results)


if __name__ == "__main__":
    main()

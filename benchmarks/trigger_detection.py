"""Detection benchmark: TrainingJobTrigger on a shared stream vs. 10 s GET polling, on the same jobs, in one run.

Starts its own local cluster (``--no-workloads``; state under /tmp, port base 56443), creates N PyTorchJobs (or,
with ``--kind TrainJob``, N TrainJobs), and lets a scripted writer play the training operator (Kubeflow Trainer v2's
controller) through the status subresource: ``Running`` for all (a TrainJob: its ``node`` Job ready in
``jobsStatus``), then ``Succeeded`` (``Complete``) for each at a recorded time, spread over ``--window`` seconds. Two tracker processes follow
the same jobs at the same time, each one asyncio loop:

* ours:  N ``TrainingJobTrigger``s run the way Airflow 3.3's triggerer runs shared-stream triggers: each is
  subscribed to Airflow's own ``SharedStreamManager`` under its ``shared_stream_key()`` and fires through
  ``filter_shared_stream`` (real trigger code, env-var Airflow connection);
* peers: each job read with a GET every 10 s (the Kubeflow SDK wait loop / cncf.kubernetes job trigger),
  with kubernetes_asyncio on one shared client.

Requests come from the apiserver's own ``/metrics`` (``apiserver_request_total``, diffed before/after). 1.20 has
no user-agent label, so the trackers are told apart by the request's labels: the peers GET the job through its
``status`` subresource (same object, same cost, one GET per poll), ours LIST, WATCH and GET the main resource
and LIST pods; the writer only PATCHes ``status`` and the garbage collector's LIST/WATCH are cluster-scoped.

Run: ``python benchmarks/trigger_detection.py --jobs 100 --window 60 [--kind TrainJob]``. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import KIND, KINDS, JobKind, end_run, pct, request_counts, say

NAMESPACE = "bench"
CONN_ID = "trainjob_bench"
POLL_INTERVAL = 10.0
PORT_BASE = 56443


# --- tracker processes -------------------------------------------------------------------------------------------


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def _until_stopped(stop_file: Path, deadline: float) -> None:
    while not stop_file.exists() and time.time() < deadline:
        await asyncio.sleep(0.5)


async def _track(
    role: str,
    names: list[str],
    kubeconfig: str,
    ready_file: Path,
    stop_file: Path,
    deadline: float,
    spec: JobKind = KINDS[KIND],
) -> dict:
    """One asyncio loop following every job; returns when all were seen terminal or the main process says stop."""
    # Import everything first, so the baseline RSS holds the libraries and the difference is per-job cost.
    if role == "ours":
        from airflow.sdk import BaseHook
        from airflow.triggers.shared_stream import SharedStreamManager

        from airflow_trainjob.triggers import kubernetes_side
        from airflow_trainjob.triggers.training_job import TrainingJobTrigger

        # The first trigger of a triggerer imports the clients (in a worker thread): a cost per process, not per job.
        await kubernetes_side.load()
        # Airflow loads its settings and secrets backends on the first connection lookup: a one-off cost,
        # paid here so that the baseline holds it and "added per job" does not.
        BaseHook.get_connection(CONN_ID)
    else:
        from kubernetes_asyncio import client, config
    baseline_rss, cpu0 = _rss_kb(), _cpu_s()
    seen: dict[str, list] = {}
    errors: Counter = Counter()
    rng = random.Random(1)

    async def drive_trigger(manager, trigger_id: int, trigger) -> None:
        # What the triggerer's run_trigger does for a trigger with a shared_stream_key.
        key = trigger.shared_stream_key()
        try:
            async for event in trigger.filter_shared_stream(
                manager.subscribe(trigger_id=trigger_id, trigger=trigger, key=key)
            ):
                seen[trigger.name] = [time.time(), event.payload["outcome"]]
                if event.payload["outcome"] != "finished":
                    errors[event.payload["message"][:120]] += 1
                return  # a task's trigger fires once; the triggerer then stops it
        finally:
            await manager.unsubscribe(trigger_id, key)

    async def poll(custom, name: str) -> None:
        await asyncio.sleep(rng.uniform(0, POLL_INTERVAL))  # peers start at different times: random phase
        while True:
            try:
                obj = await custom.get_namespaced_custom_object_status(
                    spec.group, spec.version, NAMESPACE, spec.plural, name
                )
                if spec.is_terminal(obj):
                    seen[name] = [time.time(), "finished"]
                    return
            except Exception as e:
                errors[f"{type(e).__name__}: {str(e)[:80]}"] += 1
            await asyncio.sleep(POLL_INTERVAL)

    api = None
    if role == "ours":
        manager = SharedStreamManager()
        tasks = [
            asyncio.create_task(
                drive_trigger(
                    manager,
                    i,
                    TrainingJobTrigger(
                        kind=spec.kind,
                        name=n,
                        namespace=NAMESPACE,
                        kubernetes_conn_id=CONN_ID,
                        poll_interval=POLL_INTERVAL,
                    ),
                )
            )
            for i, n in enumerate(names)
        ]
    else:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        api = client.ApiClient(configuration)
        custom = client.CustomObjectsApi(api)
        tasks = [asyncio.create_task(poll(custom, n)) for n in names]
    start = time.time()
    await asyncio.sleep(0)
    ready_file.write_text(str(start))
    stopper = asyncio.create_task(_until_stopped(stop_file, deadline))
    everyone = asyncio.create_task(asyncio.wait(tasks))
    await asyncio.wait([everyone, stopper], return_when=asyncio.FIRST_COMPLETED)
    for t in [*tasks, stopper, everyone]:
        t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
            errors[f"{type(r).__name__}: {str(r)[:80]}"] += 1
    if api is not None:
        await api.close()
    await asyncio.sleep(0.5)  # let aiohttp close its connections, so the server records the ended watches
    return {
        "start": start,
        "seen": seen,
        "errors": dict(errors),
        "baseline_rss_kb": baseline_rss,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "cpu_s": _cpu_s() - cpu0,
    }


def tracker_main(args: argparse.Namespace) -> None:
    if args.code and args.role == "ours":  # the provider from this directory instead of the installed (editable) one
        sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
        sys.path.insert(0, args.code)
    work = Path(args.work)
    names = json.loads((work / "jobs.json").read_text())
    out = asyncio.run(
        _track(
            args.role,
            names,
            args.kubeconfig,
            work / f"{args.role}.ready",
            work / "stop",
            args.deadline,
            KINDS[args.kind],
        )
    )
    (work / f"{args.role}.json").write_text(json.dumps(out))


# --- main process: cluster, jobs, writer, metrics, table ---------------------------------------------------------


def _attribute(diff: Counter, plural: str = KINDS[KIND].plural) -> dict[str, Counter]:
    """Split request counts between the trackers by their labels (see the module docstring)."""
    by: dict[str, Counter] = {"ours": Counter(), "peers": Counter(), "writer": Counter()}
    for (verb, res, sub, scope), n in diff.items():
        if n <= 0 or scope == "cluster":
            continue
        # 1.20 labels a GET of one custom object as verb LIST (scope namespace), like a list of the collection:
        # for our tracker the two are counted together.
        if res == plural and sub == "status":
            by["peers" if verb in ("GET", "LIST") else "writer"]["GET job/status" if verb != "PATCH" else verb] += n
        elif res == plural and verb in ("GET", "WATCH", "LIST"):
            by["ours"]["WATCH jobs" if verb == "WATCH" else "LIST/GET jobs"] += n
        elif res == "pods" and verb == "LIST":
            by["ours"]["LIST pods"] += n
    return by


def _table(n: int, window: float, res: dict, written: dict, by: dict, spec: JobKind) -> str:
    rows = []
    col: dict[str, dict] = {}
    for role in ("ours", "peers"):
        r = res[role]
        lat = [r["seen"][j][0] - written[j] for j in written if j in r["seen"]]
        job_h = sum(max(0.0, r["seen"][j][0] - r["start"]) for j in r["seen"]) / 3600
        reqs = sum(by[role].values())
        col[role] = {
            "seen": f"{len(r['seen'])}/{n}",
            "p50": f"{pct(lat, 50):.3f} s" if lat else "-",
            "p99": f"{pct(lat, 99):.3f} s" if lat else "-",
            "max": f"{max(lat):.3f} s" if lat else "-",
            "reqs": f"{reqs:.0f} ({', '.join(f'{k} {v:.0f}' for k, v in sorted(by[role].items()))})",
            "rph": reqs / job_h if job_h else float("nan"),  # printed with 2 decimals: ours is near zero
            "cpu": f"{r['cpu_s']:.1f} s",
            "rss": f"{r['peak_rss_kb'] / 1024:.0f} MB (baseline {r['baseline_rss_kb'] / 1024:.0f} MB)",
            "added": f"{(r['peak_rss_kb'] - r['baseline_rss_kb']) / 1024 * 1000 / n:.0f} MB",
            "err": "; ".join(f"{v}× {k}" for k, v in r["errors"].items()) or "none",
        }
    o, p = col["ours"], col["peers"]
    ratio = p["rph"] / o["rph"] if o["rph"] else float("inf")
    rows += [
        ("jobs seen terminal", "all", o["seen"], p["seen"]),
        ("detection latency p50", "", o["p50"], p["p50"]),
        ("detection latency p99", "< 1 s", o["p99"], p["p99"]),
        ("detection latency max", "", o["max"], p["max"]),
        ("API requests (apiserver_request_total)", "", o["reqs"], p["reqs"]),
        (
            "requests per job-hour (this run)",
            f"≥ 50× fewer than peers (got {ratio:.1f}×)",
            f"{o['rph']:.2f}",
            f"{p['rph']:.0f}",
        ),
        ("CPU seconds of the loop", "", o["cpu"], p["cpu"]),
        ("peak RSS of the loop", "", o["rss"], p["rss"]),
        ("RSS added per 1,000 jobs", "< 100 MB", o["added"], p["added"]),
        ("errors / non-finished events", "none", o["err"], p["err"]),
    ]
    head = (
        f"N = {n} {spec.kind}s, {spec.success} writes spread over {window:.0f} s; "
        f"ours = {n} TrainingJobTrigger on the shared stream (one watch per namespace and kind), peers = GET every {POLL_INTERVAL:.0f} s\n\n"
    )
    lines = ["| metric | target | ours (TrainingJobTrigger) | peers (GET every 10 s) |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return head + "\n".join(lines)


def main_run(args: argparse.Namespace) -> int:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports

    n, spec = args.jobs, KINDS[args.kind]
    work = Path(tempfile.mkdtemp(prefix="trainjob-bench-", dir="/tmp"))
    cluster = LocalCluster(work / "cluster", Ports.from_base(args.port_base), workloads=False)
    procs: list[subprocess.Popen] = []
    try:
        cluster.up()
        api_client = cluster.api_client()
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        names = [f"bench-{i:05d}" for i in range(n)]
        (work / "jobs.json").write_text(json.dumps(names))
        t = time.time()
        with ThreadPoolExecutor(8) as pool:  # creation is setup, not measured: parallel to keep it short
            list(
                pool.map(
                    lambda nm: custom.create_namespaced_custom_object(
                        spec.group, spec.version, NAMESPACE, spec.plural, spec.job(nm, NAMESPACE)
                    ),
                    names,
                )
            )
        say(f"created {n} jobs in {time.time() - t:.1f} s")

        before = request_counts(api_client)
        env = {
            **os.environ,
            f"AIRFLOW_CONN_{CONN_ID.upper()}": cluster.airflow_connection(NAMESPACE),
            "AIRFLOW_HOME": str(work / "airflow"),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        }
        # Hard stop for the trackers, whatever happens here: setup + the window + generous slack.
        deadline = time.time() + 120 + n * 0.1 + args.window + 120
        for role in ("ours", "peers"):
            log = open(work / f"{role}.log", "w")
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--role",
                        role,
                        "--work",
                        str(work),
                        "--kubeconfig",
                        str(cluster.kubeconfig),
                        "--deadline",
                        str(deadline),
                        "--kind",
                        args.kind,
                        *(["--code", str(Path(args.code).resolve())] if args.code else []),
                    ],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        limit = time.time() + 180
        while not all((work / f"{r}.ready").exists() for r in ("ours", "peers")):
            if time.time() > limit or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a tracker did not start; see {work}/ours.log, {work}/peers.log")
            time.sleep(0.2)
        settle = 5 + n / 100  # let every trigger subscribe and the stream list before anything changes
        say(f"trackers ready; settling {settle:.0f} s")
        time.sleep(settle)

        # The writer: Running for every job, then Succeeded at scheduled times over the window.
        t = time.time()
        for nm in names:
            custom.patch_namespaced_custom_object_status(
                spec.group, spec.version, NAMESPACE, spec.plural, nm, spec.status("Running")
            )
        say(f"all Running in {time.time() - t:.1f} s; finishing over {args.window:.0f} s")
        order = names[:]
        random.Random(0).shuffle(order)
        t0 = time.time() + 5
        written: dict[str, float] = {}
        for i, nm in enumerate(order):
            delay = t0 + args.window * i / max(1, n - 1) - time.time()
            if delay > 0:
                time.sleep(delay)
            custom.patch_namespaced_custom_object_status(
                spec.group, spec.version, NAMESPACE, spec.plural, nm, spec.status(spec.success)
            )
            written[nm] = time.time()  # the write is committed once the PATCH has returned
        lag = max(written[nm] - (t0 + args.window * i / max(1, n - 1)) for i, nm in enumerate(order))
        say(f"all {spec.success} written (max writer lag behind schedule {lag:.2f} s); waiting for the trackers")

        # Polling needs up to one interval; give both that plus slack, then tell them to stop.
        grace_end = time.time() + POLL_INTERVAL + 20
        while time.time() < grace_end and any(p.poll() is None for p in procs):
            time.sleep(0.5)
        (work / "stop").touch()
        for p in procs:
            p.wait(timeout=60)
        time.sleep(2)  # the apiserver counts a WATCH when it ends
        diff = request_counts(api_client)
        diff.subtract(before)
        for key, v in sorted(diff.items(), key=str):  # the raw figures the attribution below is made from
            if v > 0 and key[1] in (spec.plural, "pods"):
                say(f"apiserver_request_total +{v:.0f} verb/resource/subresource/scope={'/'.join(key)}")
        res = {r: json.loads((work / f"{r}.json").read_text()) for r in ("ours", "peers")}
        print(_table(n, args.window, res, written, _attribute(diff, spec.plural), spec))
        print(
            f"\nRequests attributed by labels (verb/resource/subresource/scope): peers GET the `status` "
            f"subresource; ours LIST/WATCH/GET the jobs and LIST pods (1.20 labels a custom-object GET as LIST). Writer (PATCH status, not counted above): "
            f"{sum(_attribute(diff, spec.plural)['writer'].values()):.0f}. Requests per job-hour = requests / sum over jobs "
            f"of (seen − tracker start); this run's jobs last about {args.window / 2 + settle + 5:.0f} s on "
            f"average, so one-off costs weigh heavily."
        )
        from airflow_trainjob.watching.job_stream import WATCH_SECONDS

        # Not measured, for long jobs: while nothing changes, a stream re-opens its one watch every WATCH_SECONDS,
        # shared by all the jobs of its namespace and kind; a 10 s poller makes 360 GETs per job-hour.
        per_stream = 3600 / WATCH_SECONDS
        print(
            f"Derived steady state for long, quiet jobs: ours {per_stream:.0f} WATCH requests per hour per "
            f"namespace and kind, {per_stream / n:.3f} per job-hour at N = {n}, vs {3600 / POLL_INTERVAL:.0f} "
            f"per job-hour for 10 s polling."
        )
        return 0
    finally:
        end_run(cluster, work, args.keep, procs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100, help="number of jobs (default 100)")
    parser.add_argument("--kind", choices=sorted(KINDS), default=KIND, help=f"the jobs' kind (default {KIND})")
    parser.add_argument("--window", type=float, default=60.0, help="seconds over which jobs finish (default 60)")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir (logs) after the run")
    parser.add_argument("--port-base", type=int, default=PORT_BASE, help=f"cluster ports (default {PORT_BASE})")
    parser.add_argument(
        "--code",
        help="run the triggers of the provider in this directory (holding airflow_trainjob/) instead of the installed "
        "one, e.g. a commit's: git archive <commit> airflow_trainjob | tar -x -C /tmp/before",
    )
    # Internal: the tracker processes.
    parser.add_argument("--role", choices=["ours", "peers"], help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        tracker_main(args)
        return 0
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())

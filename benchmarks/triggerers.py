"""Several triggerers: N TrainingJobTriggers split over k processes (k = 2, then 4) vs. 10 s GET polling, one run.

Airflow scales the triggerer by running more of them: each claims up to ``[triggerer] capacity`` rows of the
``trigger`` table, and each process runs its own ``SharedStreamManager``, so each opens its own stream (one LIST
and one WATCH per namespace and kind) for the triggers it holds. This benchmark measures what that costs at large
N: it starts its own local cluster (``--no-workloads``; state under /tmp, port base 59443), creates N PyTorchJobs,
and runs, one after another on the same jobs,

* ``poll``: one process GETs every job every 10 s (the Kubeflow SDK wait loop / cncf.kubernetes job trigger);
* ``k = 2``, ``k = 4``: k processes, each running N/k triggers (every k-th job) on Airflow's own
  ``SharedStreamManager``, the way a triggerer runs shared-stream triggers.

The trackers are :func:`trigger_detection._track` (the single-process benchmark's): one asyncio loop per process.
Each phase starts with every job ``Running``; a scripted writer (4 threads) flips them to ``Succeeded`` over
``--window`` seconds and records when each write returned. Requests are the apiserver's ``apiserver_request_total``
diffed around each phase (only one tracker kind runs at a time, so the diff is theirs; the writer's PATCHes are
left out). Prints a Markdown table.

Run: ``python benchmarks/triggerers.py --jobs 4000``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling benchmark, when imported from elsewhere
import trigger_detection as single  # its trackers and their request attribution
from _common import GROUP, PLURAL, VERSION, end_run, job, pct, request_counts, say, status, stop_processes

PORT_BASE = 59443
#: Writer threads: enough to keep the schedule (N / window writes per second) while the apiserver is busy.
WRITERS = 4


# --- tracker processes -------------------------------------------------------------------------------------------


def tracker_main(args: argparse.Namespace) -> None:
    """One tracker process: every ``parts``-th job, starting at ``part``."""
    phase = Path(args.phase_dir)
    names = json.loads((phase.parent / "jobs.json").read_text())[args.part :: args.parts]
    tag = f"{args.role}-{args.part}"
    out = asyncio.run(
        single._track(args.role, names, args.kubeconfig, phase / f"{tag}.ready", phase / "stop", args.deadline)
    )
    (phase / f"{tag}.json").write_text(json.dumps(out))


# --- main process ------------------------------------------------------------------------------------------------


def _reset_running(custom, names: list[str]) -> None:
    """Every job back to ``Running``, dropping what an earlier phase's ``Succeeded`` left (a merge patch keeps
    keys it does not name). Setup, not measured: parallel to keep it short."""
    body = status("Running")
    body["status"]["completionTime"] = None
    body["status"]["replicaStatuses"]["Master"]["succeeded"] = None
    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda nm: custom.patch_namespaced_custom_object_status(
                    GROUP, VERSION, single.NAMESPACE, PLURAL, nm, body
                ),
                names,
            )
        )


def _finish_over_window(custom, names: list[str], window: float) -> tuple[dict[str, float], float]:
    """The writer: each job to ``Succeeded`` at its scheduled time over ``window`` seconds, in random order.

    :data:`WRITERS` threads share the schedule (every ``WRITERS``-th job each), so one slow PATCH does not delay the
    rest. Returns when each write returned (job -> epoch seconds) and the most any write ran behind its schedule.
    """
    order = names[:]
    random.Random(0).shuffle(order)
    t0 = time.time() + 2
    due = {nm: t0 + window * i / max(1, len(order) - 1) for i, nm in enumerate(order)}
    written: dict[str, float] = {}

    def write(share: list[str]) -> None:
        for nm in share:
            time.sleep(max(0.0, due[nm] - time.time()))  # (one reading of the clock: a late write goes at once)
            custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, single.NAMESPACE, PLURAL, nm, status("Succeeded")
            )
            written[nm] = time.time()  # the write is committed once the PATCH has returned

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, [order[w::WRITERS] for w in range(WRITERS)]))
    return written, max(written[nm] - due[nm] for nm in order)


def _run_phase(shape: str, names: list[str], work: Path, cluster, custom, api_client, env: dict, window: float) -> dict:
    """Run one shape (``poll`` or a process count) over all jobs; return its figures."""
    n = len(names)
    role, parts = ("peers", 1) if shape == "poll" else ("ours", int(shape))
    phase = work / f"phase-{shape}"
    phase.mkdir()
    t = time.time()
    _reset_running(custom, names)
    say(f"[{shape}] all {n} jobs Running in {time.time() - t:.1f} s")
    before = request_counts(api_client)
    deadline = time.time() + 180 + n * 0.05 + window + 120  # hard stop for the trackers, whatever happens here
    procs = []
    for part in range(parts):
        log = open(phase / f"{role}-{part}.log", "w")
        cmd = [sys.executable, __file__, "--role", role, "--phase-dir", str(phase), "--part", str(part)]
        cmd += ["--parts", str(parts), "--kubeconfig", str(cluster.kubeconfig), "--deadline", str(deadline)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        limit = time.time() + 240
        while not all((phase / f"{role}-{p}.ready").exists() for p in range(parts)):
            if time.time() > limit or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"a tracker did not start; see {phase}/*.log")
            time.sleep(0.2)
        settle = 5 + n / 200  # every trigger subscribed and each stream listed before anything changes
        say(f"[{shape}] {parts} tracker process(es) ready; settling {settle:.0f} s")
        time.sleep(settle)

        written, lag = _finish_over_window(custom, names, window)
        say(f"[{shape}] all Succeeded written (max writer lag {lag:.2f} s); waiting for the trackers")
        grace_end = time.time() + single.POLL_INTERVAL + 30
        while time.time() < grace_end and any(p.poll() is None for p in procs):
            time.sleep(0.5)
        (phase / "stop").touch()
        for p in procs:
            p.wait(timeout=90)
    finally:
        stop_processes(procs)
    time.sleep(2)  # the apiserver counts a WATCH when it ends
    diff = request_counts(api_client)
    diff.subtract(before)
    by = single._attribute(diff)[role]
    results = [json.loads((phase / f"{role}-{p}.json").read_text()) for p in range(parts)]
    seen = {nm: s for r in results for nm, s in r["seen"].items()}
    lat = [seen[nm][0] - written[nm] for nm in written if nm in seen]
    starts = {nm: r["start"] for r in results for nm in r["seen"]}
    job_h = sum(max(0.0, seen[nm][0] - starts[nm]) for nm in seen) / 3600
    errors: Counter = Counter()
    for r in results:
        errors.update(r["errors"])
    return {
        "shape": shape,
        "processes": parts,
        "seen": len(seen),
        "lat": lat,
        "requests": by,
        "job_hours": job_h,
        "tracked_s": max(seen[nm][0] for nm in seen) - min(r["start"] for r in results) if seen else 0.0,
        "rss_mb": [r["peak_rss_kb"] / 1024 for r in results],
        "baseline_mb": [r["baseline_rss_kb"] / 1024 for r in results],
        "cpu_s": sum(r["cpu_s"] for r in results),
        "errors": dict(errors),
        "writer_lag": lag,
    }


def _table(n: int, window: float, phases: list[dict]) -> str:
    lines = [
        f"N = {n} PyTorchJobs, Succeeded writes spread over {window:.0f} s; each shape run alone on the same jobs",
        "",
        "| shape | processes | jobs seen terminal | detection p50 | detection p99 | detection max | API requests "
        "| requests per job-hour | CPU s (all processes) | peak RSS per process (baseline) | RSS added per process "
        "| errors |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for ph in phases:
        lat, reqs = ph["lat"], sum(ph["requests"].values())
        label = "GET every 10 s" if ph["shape"] == "poll" else f"TrainingJobTrigger, {ph['processes']} triggerers"
        p50, p99, worst = ("-", "-", "-")
        if lat:
            p50, p99, worst = (f"{v:.3f} s" for v in (pct(lat, 50), pct(lat, 99), max(lat)))
        breakdown = ", ".join(f"{k} {v:.0f}" for k, v in sorted(ph["requests"].items()))
        per_job_hour = f"{reqs / ph['job_hours']:.2f}" if ph["job_hours"] else "-"
        rss = ", ".join(f"{r:.0f}" for r in ph["rss_mb"])
        base = ", ".join(f"{b:.0f}" for b in ph["baseline_mb"])
        added = max(r - b for r, b in zip(ph["rss_mb"], ph["baseline_mb"], strict=True))
        errors = "; ".join(f"{v}x {k}" for k, v in ph["errors"].items()) or "none"
        lines.append(
            f"| {label} | {ph['processes']} | {ph['seen']}/{n} | {p50} | {p99} | {worst} | {reqs:.0f} ({breakdown}) "
            f"| {per_job_hour} | {ph['cpu_s']:.1f} | {rss} MB ({base} MB) | ≤ {added:.0f} MB "
            f"| {errors} |"
        )
    poll = next((ph for ph in phases if ph["shape"] == "poll" and ph["job_hours"]), None)
    if poll:
        per_job_hour = sum(poll["requests"].values()) / poll["job_hours"]
        lines += [
            "",
            f"Polling made {per_job_hour:.0f} GETs per job-hour; 10 s polling asks for {3600 / single.POLL_INTERVAL:.0f} "
            f"(fewer, with a p99 over {single.POLL_INTERVAL:.0f} s, means the loop fell behind its interval).",
        ]
    lines.append(
        "Writer lag behind schedule (max): "
        + ", ".join(f"{ph['shape']} {ph['writer_lag']:.2f} s" for ph in phases)
        + ". Requests per job-hour = requests / sum over jobs of (seen − tracker start)."
    )
    return "\n".join(lines)


def main_run(args: argparse.Namespace) -> int:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports

    n = args.jobs
    work = Path(tempfile.mkdtemp(prefix="trainjob-triggerers-", dir="/tmp"))
    cluster = LocalCluster(work / "cluster", Ports.from_base(args.port_base), workloads=False)
    try:
        cluster.up()
        api_client = cluster.api_client()
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        core.create_namespace({"metadata": {"name": single.NAMESPACE}})
        names = [f"bench-{i:05d}" for i in range(n)]
        (work / "jobs.json").write_text(json.dumps(names))
        t = time.time()
        with ThreadPoolExecutor(8) as pool:
            list(
                pool.map(
                    lambda nm: custom.create_namespaced_custom_object(
                        GROUP, VERSION, single.NAMESPACE, PLURAL, job(nm, single.NAMESPACE)
                    ),
                    names,
                )
            )
        say(f"created {n} jobs in {time.time() - t:.1f} s")
        env = {
            **os.environ,
            f"AIRFLOW_CONN_{single.CONN_ID.upper()}": cluster.airflow_connection(single.NAMESPACE),
            "AIRFLOW_HOME": str(work / "airflow"),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        }
        phases = [
            _run_phase(shape, names, work, cluster, custom, api_client, env, args.window)
            for shape in args.shapes.split(",")
        ]
        print(_table(n, args.window, phases))
        from airflow_trainjob.watching.job_stream import WATCH_SECONDS

        # Not measured, for long jobs: each triggerer process re-opens its one watch every WATCH_SECONDS while
        # nothing changes, so k triggerers make k times that, shared by all N jobs.
        per_stream = 3600 / WATCH_SECONDS
        print(
            f"Derived steady state for long, quiet jobs: k triggerers make {per_stream:.0f}·k WATCH requests per hour "
            f"per namespace and kind ({per_stream * 4 / n:.4f} per job-hour at k = 4, N = {n}); 10 s polling makes "
            f"{3600 / single.POLL_INTERVAL:.0f} per job-hour."
        )
        return 0
    finally:
        end_run(cluster, work, args.keep)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4000, help="number of PyTorchJobs (default 4000)")
    parser.add_argument("--window", type=float, default=60.0, help="seconds over which jobs finish (default 60)")
    parser.add_argument("--shapes", default="poll,2,4", help="phases, in order: poll and/or process counts")
    parser.add_argument("--port-base", type=int, default=PORT_BASE, help="the cluster's ports (default 59443)")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir (logs) after the run")
    # Internal: the tracker processes.
    parser.add_argument("--role", choices=["ours", "peers"], help=argparse.SUPPRESS)
    parser.add_argument("--phase-dir", help=argparse.SUPPRESS)
    parser.add_argument("--part", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parts", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        tracker_main(args)
        return 0
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())

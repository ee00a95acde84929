"""Deferred lead logs: what copying N waiting jobs' lead-replica logs into their task logs costs, on one triggerer.

Starts its own local cluster (``--no-workloads``: no controller, no process kubelet; state under /tmp, port base
``--port-base``, default 56643) and plays the rest itself, so that N = 1,000 running lead replicas cost a file each
instead of a process each:

* a Node ``bench-logs`` whose kubelet endpoint is this process's own HTTPS log server: the local cluster's
  (``airflow_trainjob_local.kubelet``'s ``LogServer`` and ``LogStore``, the code the process kubelet serves
  ``pods/log`` with), so the API server proxies every log request to it as it would to a kubelet;
* N PyTorchJobs ``Running`` (the status subresource), each with its lead pod ``<job>-master-0`` bound to that node,
  ``Running``, and a CRI log file that a writer thread appends one line to every ``--line-seconds`` (each line says
  when it was written).

Then, one after the other on the same jobs, a tracker process (one asyncio loop, an env-var Airflow connection)
follows all N jobs for a window, in one of these shapes:

* ``today``: N ``TrainingJobTrigger``s of the provider in ``--code DIR`` (the code before this change: ``git archive
  <commit> airflow_trainjob | tar -x -C DIR``), on Airflow's own ``SharedStreamManager``, as ``trigger_detection.py``
  runs them: they read no log while the task waits (the last 50 lines at the end);
* ``paced``: the same with this provider and ``follow_lead_log=True``: each looks at its lead's log as
  :mod:`airflow_trainjob.triggers.log_pacing` allows (short timestamped reads, no stream);
* ``streams``: a follow stream per job (``pods/log?follow=true``, the synchronous wait's mechanism), all on one
  ``kubernetes_asyncio`` client whose pool allows N connections: what a trigger that streamed would hold.

Measured per shape: requests from the apiserver's ``/metrics`` (``pods/log`` GETs, pod LISTs, job PATCHes: the
cursor's record; diffed around the window; only the tracker makes them), per job-hour; the tracker's TCP connections
to the apiserver (ESTABLISHED sockets of its own, sampled every second: most and median); lines copied against lines
written in the window and the delay from a line's writing to its copy (p50/p99); the loop's longest lag (a 10 ms
monitor task) and CPU seconds. Prints a Markdown table.

Run: ``python benchmarks/deferred_logs.py --jobs 1000 --window 900 --code /tmp/before`` (about 25 minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import GROUP, KIND, PLURAL, VERSION, end_run, job, pct, request_counts, say, status

NAMESPACE = "bench"
CONN_ID = "trainjob_bench"
NODE = "bench-logs"
CONTAINER = "pytorch"
SHAPES = ("today", "paced", "streams")
_LINE = re.compile(r"line (\d+) of (\S+) written (\d+\.\d+)")


# --- tracker processes -------------------------------------------------------------------------------------------


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _apiserver_connections(port: int) -> int:
    """This process's ESTABLISHED TCP connections to 127.0.0.1:``port`` (its sockets' inodes in ``/proc/net/tcp``)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if state == "01" and int(remote.rsplit(":", 1)[1], 16) == port and inode in inodes:
                count += 1
    return count


async def _track(role: str, names: list[str], uids: dict[str, str], args: argparse.Namespace) -> dict:
    work = Path(args.work)
    start = time.time()  # lines written before (the backlog of the shape before) are not counted
    copied: list[tuple[float, float]] = []  # (written, copied) of each line written since start and copied
    counted: Counter[str] = Counter()
    lags: list[tuple[float, float]] = []  # (when, lag)
    connections: list[int] = []
    intervals: list[float] = []  # the paced budget's look interval, sampled every second
    collections: list[tuple[float, float, int]] = []  # (when, seconds, generation) of each garbage collection
    began: dict[str, float] = {}

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            began["at"] = time.perf_counter()
        elif "at" in began:
            collections.append((time.time(), time.perf_counter() - began.pop("at"), info["generation"]))

    gc.callbacks.append(on_gc)
    if role in ("today", "paced"):
        from airflow.sdk import BaseHook
        from airflow.triggers.shared_stream import SharedStreamManager

        from airflow_trainjob.triggers import kubernetes_side
        from airflow_trainjob.triggers.training_job import TrainingJobTrigger

        await kubernetes_side.load()
        BaseHook.get_connection(CONN_ID)
        if role == "paced":
            write = TrainingJobTrigger._write

            def record(self, lines):  # the lines go to the task log as well (here: a file), then are counted
                now = time.time()
                for out in lines:
                    m = _LINE.search(out.text)
                    if m and float(m.group(3)) >= start:
                        copied.append((float(m.group(3)), now))
                        counted[m.group(2)] += 1
                write(self, lines)

            TrainingJobTrigger._write = record  # type: ignore[method-assign]  # counted, then written
    else:
        from kubernetes_asyncio import client, config
    cpu0 = _cpu_s()

    async def monitor() -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            lags.append((time.time(), time.monotonic() - before - 0.01))

    async def sample() -> None:
        budget = None
        if role == "paced":
            from airflow_trainjob.triggers import log_pacing

            budget = log_pacing.budget()
        while True:
            connections.append(_apiserver_connections(args.apiserver_port))
            if budget is not None and budget.readers:
                intervals.append(budget.look_interval())
            await asyncio.sleep(1.0)

    async def drive_trigger(manager, trigger_id: int, trigger) -> None:
        key = trigger.shared_stream_key()
        try:
            async for _ in trigger.filter_shared_stream(
                manager.subscribe(trigger_id=trigger_id, trigger=trigger, key=key)
            ):
                return
        finally:
            await manager.unsubscribe(trigger_id, key)

    async def stream_log(api, name: str) -> None:
        response = await client.CoreV1Api(api).read_namespaced_pod_log(
            f"{name}-master-0", NAMESPACE, container=CONTAINER, follow=True, _preload_content=False
        )
        try:
            while line := await response.content.readline():
                m = _LINE.search(line.decode(errors="replace"))
                if m and float(m.group(3)) >= start:
                    copied.append((float(m.group(3)), time.time()))
                    counted[m.group(2)] += 1
        finally:
            response.release()

    api = None
    tasks: list[asyncio.Task] = []
    if role in ("today", "paced"):
        manager = SharedStreamManager()
        for i, name in enumerate(names):
            extra = {"follow_lead_log": True} if role == "paced" else {"log_tail_lines": 50}
            trigger = TrainingJobTrigger(
                kind=KIND,
                name=name,
                namespace=NAMESPACE,
                uid=uids[name],
                kubernetes_conn_id=CONN_ID,
                try_number=1,
                owner_labels={"bench": "1"},
                **extra,
            )
            tasks.append(asyncio.create_task(drive_trigger(manager, i, trigger)))
            await asyncio.sleep(0)  # as the triggerer creates its triggers, one per pass of the loop
    else:
        configuration = client.Configuration()
        await config.load_kube_config(config_file=args.kubeconfig, client_configuration=configuration)
        configuration.connection_pool_maxsize = len(names) + 10  # a stream per job needs a connection per job
        api = client.ApiClient(configuration)
        for name in names:
            tasks.append(asyncio.create_task(stream_log(api, name)))
    helpers = [asyncio.create_task(monitor()), asyncio.create_task(sample())]
    (work / f"{role}.ready").write_text(str(start))
    while not (work / f"{role}.stop").exists():
        await asyncio.sleep(0.5)
    end = time.time()
    for t in [*tasks, *helpers]:
        t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    errors = Counter(
        f"{type(r).__name__}: {str(r)[:80]}"
        for r in results
        if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)
    )
    if api is not None:
        await api.close()
    budget = {}
    if role == "paced":
        from airflow_trainjob.triggers import log_pacing

        found = log_pacing.budget()
        budget = {
            "requests": found.requests,
            "peak_in_flight": found.peak,
            "interval_median": statistics.median(intervals) if intervals else None,
        }
    await asyncio.sleep(0.5)
    delays = [c - w for w, c in copied]
    steady = start + args.settle  # after the first looks of every job
    steady_delays = [c - w for w, c in copied if w >= steady]
    start_lags = [lag for when, lag in lags if when < steady]
    steady_lags = [lag for when, lag in lags if when >= steady]
    steady_gc = [seconds for when, seconds, _ in collections if when >= steady]
    return {
        "start": start,
        "end": end,
        "lines": len(copied),
        "jobs_with_lines": len(counted),
        "delay_p50": pct(delays, 50) if delays else None,
        "delay_p99": pct(delays, 99) if delays else None,
        "steady_delay_p50": pct(steady_delays, 50) if steady_delays else None,
        "steady_delay_p99": pct(steady_delays, 99) if steady_delays else None,
        "connections_max": max(connections, default=0),
        "connections_median": statistics.median(connections) if connections else 0,
        "lag_start_max": max(start_lags, default=0.0),
        "lag_max": max(steady_lags, default=0.0),
        "lag_p99": pct(steady_lags, 99) if steady_lags else 0.0,
        "gc_max": max(steady_gc, default=0.0),
        "gc_full": sum(1 for when, _, generation in collections if when >= steady and generation == 2),
        "cpu_s": _cpu_s() - cpu0,
        "errors": dict(errors),
        "budget": budget,
    }


def tracker_main(args: argparse.Namespace) -> None:
    if args.code and args.role == "today":
        sys.path.insert(0, args.code)  # the provider before the change, ahead of the installed one
    work = Path(args.work)
    names = json.loads((work / "jobs.json").read_text())
    uids = json.loads((work / "uids.json").read_text())
    out = asyncio.run(_track(args.role, names, uids, args))
    (work / f"{args.role}.json").write_text(json.dumps(out))


# --- main process: cluster, node, log server, jobs and pods, the writer, metrics, table ----------------------------


class LineWriter(threading.Thread):
    """Appends one CRI log line to every pod's log file every ``every`` seconds (spread over the interval)."""

    def __init__(self, paths: dict[str, Path], every: float) -> None:
        super().__init__(name="line-writer", daemon=True)
        self.paths, self.every = paths, every
        self.stopped = threading.Event()
        self.written: Counter[str] = Counter()
        self.log: list[tuple[float, str]] = []  # (when, job) of each line

    def run(self) -> None:
        from airflow_trainjob_local.kubelet.logs import format_timestamp

        names = list(self.paths)
        fds = {n: os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640) for n, p in self.paths.items()}
        gap = self.every / max(1, len(names))

        while not self.stopped.is_set():
            for name in names:
                if self.stopped.is_set():
                    break
                now = time.time()
                self.written[name] += 1
                text = f"line {self.written[name]} of {name} written {now:.3f} loss={1 / self.written[name]:.5f}"
                os.write(fds[name], f"{format_timestamp(time.time_ns())} stdout F {text}\n".encode())
                self.log.append((now, name))
                self.stopped.wait(gap)
        for fd in fds.values():
            os.close(fd)


def _attribute(diff: Counter) -> Counter:
    """The tracker's requests by kind (the writer only PATCHes ``status``; the garbage collector is cluster-wide)."""
    by: Counter[str] = Counter()
    for (verb, res, sub, scope), n in diff.items():
        if n <= 0 or scope == "cluster":
            continue
        if res == "pods" and sub == "log":
            by["GET pods/log"] += n
        elif res == "pods" and verb == "LIST":
            by["LIST pods"] += n
        elif res == PLURAL and sub == "" and verb == "PATCH":
            by["PATCH job (cursor)"] += n
        elif res == PLURAL and sub == "" and verb in ("LIST", "WATCH", "GET"):
            by[f"{verb} jobs"] += n
    return by


def _pods(core, names: list[str], uids: dict[str, str], store) -> dict[str, Path]:
    """Create each job's lead pod on the bench node, Running, and its log file; returns job -> log path."""
    paths = {}

    def one(name: str) -> None:
        pod = core.create_namespaced_pod(
            NAMESPACE,
            {
                "metadata": {
                    "name": f"{name}-master-0",
                    "labels": {
                        "training.kubeflow.org/job-name": name,
                        "training.kubeflow.org/replica-type": "master",
                        "training.kubeflow.org/replica-index": "0",
                    },
                    "ownerReferences": [
                        {
                            "apiVersion": f"{GROUP}/{VERSION}",
                            "kind": KIND,
                            "name": name,
                            "uid": uids[name],
                            "controller": True,
                        }
                    ],
                },
                "spec": {"nodeName": NODE, "containers": [{"name": CONTAINER, "image": "bench/none:0"}]},
            },
        )
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        core.patch_namespaced_pod_status(
            pod.metadata.name,
            NAMESPACE,
            {
                "status": {
                    "phase": "Running",
                    "containerStatuses": [
                        {
                            "name": CONTAINER,
                            "ready": True,
                            "restartCount": 0,
                            "image": "bench/none:0",
                            "imageID": "bench",
                            "state": {"running": {"startedAt": started}},
                        }
                    ],
                }
            },
        )
        store.register_pod(NAMESPACE, pod.metadata.name, pod.metadata.uid)
        path = store.log_path(NAMESPACE, pod.metadata.name, pod.metadata.uid, CONTAINER, 0)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        store.set_active(path, True)
        paths[name] = path

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, names))
    return paths


def _run_shape(role: str, args, work: Path, api_client, cluster, writer: LineWriter, window: float) -> dict:
    env = {
        **os.environ,
        f"AIRFLOW_CONN_{CONN_ID.upper()}": cluster.airflow_connection(NAMESPACE),
        "AIRFLOW_HOME": str(work / "airflow"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    }
    command = [
        sys.executable,
        __file__,
        "--role",
        role,
        "--work",
        str(work),
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--apiserver-port",
        str(cluster.ports.apiserver),
    ]
    if args.code:
        command += ["--code", str(Path(args.code).resolve())]
    command += ["--settle", str(min(args.settle, window / 2))]
    with open(work / f"{role}.log", "w") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        limit = time.time() + 300
        while not (work / f"{role}.ready").exists():
            if time.time() > limit or process.poll() is not None:
                raise RuntimeError(f"the {role} tracker did not start; see {work}/{role}.log")
            time.sleep(0.2)
        before = request_counts(api_client)
        t0 = float((work / f"{role}.ready").read_text())  # the tracker's start: lines written since count
        t0 = min(t0, time.time())
        say(f"{role}: tracking for {window:.0f} s")
        settle = min(args.settle, window / 2)
        time.sleep(settle)
        at_settle = request_counts(api_client)
        time.sleep(window - settle)
        # Counted before the tracker stops: its way out (cancelled triggers record their cursors) is not the wait's.
        after, stopped = request_counts(api_client), time.time()
        (work / f"{role}.stop").touch()
        process.wait(timeout=300)
        written = sum(1 for when, _ in list(writer.log) if t0 <= when <= stopped)
        diff, steady = after.copy(), after.copy()
        diff.subtract(before)
        steady.subtract(at_settle)
        out = json.loads((work / f"{role}.json").read_text())
        out.update(
            requests=_attribute(diff),
            steady_requests=_attribute(steady),
            steady_window=stopped - (out["start"] + settle),
            written=written,
            window=stopped - out["start"],
        )
        return out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _table(n: int, every: float, settle: float, results: dict[str, dict]) -> str:
    shapes = [s for s in SHAPES if s in results]
    heads = {
        "today": "today (HEAD before: tail at the end)",
        "paced": "paced reads (this change)",
        "streams": "a follow stream per job",
    }
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, value) -> None:
        rows.append((label, [value(results[s]) for s in shapes]))

    def log_requests(r: dict, key: str = "requests") -> int:
        return sum(v for k, v in r[key].items() if k in ("GET pods/log", "LIST pods", "PATCH job (cursor)"))

    def steady_requests(r: dict) -> int:
        return log_requests(r, "steady_requests")

    row("window", lambda r: f"{r['window']:.0f} s")
    row(
        "log requests (GET pods/log, LIST pods, PATCH job)",
        lambda r: (
            f"{log_requests(r)} ({r['requests']['GET pods/log']}, {r['requests']['LIST pods']}, "
            f"{r['requests']['PATCH job (cursor)']})"
        ),
    )
    row("log requests per job-hour, whole window", lambda r: f"{log_requests(r) / (n * r['window'] / 3600):.1f}")
    row(
        "log requests per job-hour / per second, after the first looks",
        lambda r: (
            f"{steady_requests(r) / (n * r['steady_window'] / 3600):.1f} / "
            f"{steady_requests(r) / r['steady_window']:.2f}"
        ),
    )
    row(
        "job stream (LIST, WATCH jobs)",
        lambda r: f"{r['requests']['LIST jobs'] + r['requests']['GET jobs']}, {r['requests']['WATCH jobs']}",
    )
    row(
        "connections to the apiserver, most / median", lambda r: f"{r['connections_max']} / {r['connections_median']:g}"
    )
    row(
        "lines written in the window: copied in it / written",
        lambda r: f"{r['lines']} / {r['written']} ({r['jobs_with_lines']} of {n} jobs)",
    )
    row(
        "delay from a line's writing to its copy, p50 / p99",
        lambda r: f"{r['delay_p50']:.0f} / {r['delay_p99']:.0f} s" if r["delay_p50"] is not None else "never (end)",
    )
    row(
        "... of lines written after the first looks",
        lambda r: (
            f"{r['steady_delay_p50']:.0f} / {r['steady_delay_p99']:.0f} s" if r["steady_delay_p50"] is not None else "-"
        ),
    )
    row("loop lag while the trackers start, longest", lambda r: f"{r['lag_start_max'] * 1000:.0f} ms")
    row("loop lag after that, longest / p99", lambda r: f"{r['lag_max'] * 1000:.0f} / {r['lag_p99'] * 1000:.0f} ms")
    row(
        "... its longest garbage collection (full collections)",
        lambda r: f"{r['gc_max'] * 1000:.0f} ms ({r['gc_full']})",
    )
    row("CPU seconds of the tracker", lambda r: f"{r['cpu_s']:.1f} s")
    row("errors", lambda r: "; ".join(f"{v}x {k}" for k, v in r["errors"].items()) or "none")
    lines = [
        f"N = {n} jobs, each lead writing a line every {every:g} s; one tracker process (one asyncio loop) per shape, "
        "one after the other on the same jobs\n",
        "| | " + " | ".join(heads[s] for s in shapes) + " |",
        "|---|" + "---|" * len(shapes),
    ]
    lines += [f"| {label} | " + " | ".join(values) + " |" for label, values in rows]
    paced = results.get("paced", {}).get("budget")
    if paced:
        lines.append(
            f"\npaced: look interval (median while jobs followed their logs) {paced['interval_median'] or 0:.0f} s, "
            f"requests through the budget {paced['requests']}, most in flight at once {paced['peak_in_flight']}; "
            f"'after the first looks' = from {settle:.0f} s into each window"
        )
    if "streams" in results:
        lines.append(
            "streams: the API server counts a request when it ends; the follow streams were still open when the "
            "requests were counted (the connections row is what they held)"
        )
    return "\n".join(lines)


def main_run(args: argparse.Namespace) -> int:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports
    from airflow_trainjob_local.kubelet.certs import ensure_serving_cert
    from airflow_trainjob_local.kubelet.log_server import LogServer
    from airflow_trainjob_local.kubelet.logs import LogStore
    from airflow_trainjob_local.kubelet.node import NodeAgent

    shapes = [s.strip() for s in args.shapes.split(",")]
    if "today" in shapes and not args.code:
        raise SystemExit("--code DIR is needed for the 'today' shape (the provider before the change)")
    n = args.jobs
    work = Path(tempfile.mkdtemp(prefix="trainjob-bench-logs-", dir="/tmp"))
    cluster = LocalCluster(work / "cluster", Ports.from_base(args.port_base), workloads=False)
    log_port = args.port_base + 20
    server = agent = writer = None
    try:
        cluster.up()
        api_client = cluster.api_client()
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        cert, key = ensure_serving_cert(work / "node", NODE)
        store = LogStore(work / "pod-logs")
        server = LogServer(store, port=log_port, cert=cert, key=key)
        server.start()
        agent = NodeAgent(core, NODE, log_port, work)
        agent.register()
        agent.start()
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        names = [f"bench-{i:05d}" for i in range(n)]
        t = time.time()
        with ThreadPoolExecutor(8) as pool:
            created = list(
                pool.map(
                    lambda nm: custom.create_namespaced_custom_object(
                        GROUP, VERSION, NAMESPACE, PLURAL, job(nm, NAMESPACE)
                    ),
                    names,
                )
            )
            list(
                pool.map(
                    lambda nm: custom.patch_namespaced_custom_object_status(
                        GROUP, VERSION, NAMESPACE, PLURAL, nm, status("Running")
                    ),
                    names,
                )
            )
        uids = {j["metadata"]["name"]: j["metadata"]["uid"] for j in created}
        paths = _pods(core, names, uids, store)
        (work / "jobs.json").write_text(json.dumps(names))
        (work / "uids.json").write_text(json.dumps(uids))
        say(f"{n} jobs Running with their lead pods in {time.time() - t:.1f} s")
        writer = LineWriter(paths, args.line_seconds)
        writer.start()
        results = {}
        for role in shapes:
            window = args.window if role == "paced" else args.short_window
            results[role] = _run_shape(role, args, work, api_client, cluster, writer, window)
            say(f"{role}: {json.dumps(results[role])}")
        print(_table(n, args.line_seconds, args.settle, results))
        return 0
    finally:
        if writer is not None:
            writer.stopped.set()
        if agent is not None:
            agent.stop(mark_not_ready=False)
        if server is not None:
            server.stop()
        end_run(cluster, work, args.keep)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100, help="number of jobs (default 100)")
    parser.add_argument("--window", type=float, default=900.0, help="seconds the paced shape runs (default 900)")
    parser.add_argument("--short-window", type=float, default=120.0, help="seconds the other shapes run (default 120)")
    parser.add_argument("--line-seconds", type=float, default=5.0, help="seconds between two lines of a job (5)")
    parser.add_argument(
        "--settle",
        type=float,
        default=450.0,
        help="seconds after a tracker's start when its steady state is measured from (450: the first looks of 1,000 "
        "jobs take 400 s at the default budget)",
    )
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"which shapes, comma-separated ({SHAPES})")
    parser.add_argument("--code", help="the provider before the change, for the 'today' shape")
    parser.add_argument("--port-base", type=int, default=56643, help="the local cluster's ports (default 56643)")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir (logs) after the run")
    parser.add_argument("--role", choices=SHAPES, help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    parser.add_argument("--apiserver-port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        tracker_main(args)
        return 0
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())

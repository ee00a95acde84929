"""Synchronous wait benchmark: TrainingJobOperator's wait vs. the Kubeflow SDK's wait vs. 10 s GET polling, on the
same jobs, in one run.

Starts its own local cluster (``--no-workloads``; state under /tmp, port base 57443), creates N PyTorchJobs (or,
with ``--kind TrainJob``, N TrainJobs) and lets a scripted writer play the training operator (Kubeflow Trainer v2's
controller) through the status subresource: ``Running`` for all before the trackers start (a TrainJob: its ``node``
Job ready in ``jobsStatus``), nothing for a quiet phase, then ``Succeeded`` (``Complete``) for each at a recorded
time, spread over ``--window`` seconds. Three tracker processes follow the same jobs at the same time, each with N threads (as N
worker slots would wait), each thread with its own client:

* ours: the synchronous wait of a ``TrainingJobRun`` (``SynchronousWait.follow_to_end``: what ``wait()`` runs
  between recording that the try follows the job and the verdict): the job's watch with its deadlines, the pod watch
  (``PodFeed``: one LIST, then a watch) and the lead log follower (no pod ever exists here, so it sends nothing);
  the create/attach before it and the cleanup after it are not measured;
* sdk: kubeflow-training 1.9.4's ``TrainingClient.wait_for_job_conditions`` at its default ``polling_interval``
  (15 s), run by the SDK's own environment (it needs kubernetes<36): ``--sdk-python``; for TrainJobs the SDK v2's
  (``kubeflow`` 0.5) ``TrainerClient.wait_for_job_status`` at its default ``polling_interval`` (2 s), whose every
  poll GETs the TrainJob, its runtime (a namespaced TrainingRuntime of that name, 404 here, then the
  ClusterTrainingRuntime) and LISTs the job's pods;
* poll: a GET of the job's ``status`` subresource every 10 s (sync kubernetes client).

The SDK and the pollers start at a random phase of their interval (tasks do not start in step).

Requests come from the apiserver's own ``/metrics`` (``apiserver_request_total``, diffed). 1.20 has no
user-agent label, so the trackers are told apart by the request's labels: ours WATCHes the jobs and LISTs and
WATCHes pods (and would GET ``pods/log``); the SDK GETs the job itself (the SDK v2 also its runtimes, the
trainer's public ConfigMap once per client, and LISTs pods: the pod LISTs are split by ours' own count of its LISTs,
the rest are the SDK's); the pollers GET its ``status`` subresource; the writer only PATCHes ``status``; other
cluster-scoped requests (the garbage collector) are left out.
The apiserver counts a WATCH when it ends, so a quiet phase shorter than ours' watches (``WATCH_SECONDS``, 900 s)
measures ours' other requests (none expected) and the steady state of ours is derived from the mechanism (two
watches, each re-opened every ``WATCH_SECONDS``); ``--quiet 1850`` measures two whole windows instead.

Run: ``python benchmarks/sync_wait.py --jobs 100 [--kind TrainJob]``. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import KIND, KINDS, JobKind, end_run, pct, request_counts, say

NAMESPACE = "bench"
CONN_ID = "trainjob_bench"
POLL_INTERVAL = 10.0
#: ``TrainingClient.wait_for_job_conditions``' default ``polling_interval`` (kubeflow-training 1.9.4), seconds.
SDK_POLL_INTERVAL = 15
#: ``TrainerClient.wait_for_job_status``' default ``polling_interval`` (the SDK v2, ``kubeflow`` 0.5), seconds.
SDK2_POLL_INTERVAL = 2
#: What the SDK v2 requests per poll: GET the TrainJob, GET a namespaced TrainingRuntime (404 here), GET the
#: ClusterTrainingRuntime, LIST the job's pods.
SDK2_REQUESTS_PER_POLL = 4
PORT_BASE = 57443
ROLES = ("ours", "sdk", "poll")


def sdk_interval(kind: str) -> int:
    """The default polling interval, in seconds, of the Kubeflow SDK's wait for ``kind`` (v1's, or the SDK v2's)."""
    return SDK2_POLL_INTERVAL if kind == "TrainJob" else SDK_POLL_INTERVAL


def labels(kind: str) -> dict[str, str]:
    """The table's column heads for ``kind``."""
    sdk = (
        f"Kubeflow SDK v2 wait_for_job_status ({SDK2_POLL_INTERVAL} s)"
        if kind == "TrainJob"
        else f"Kubeflow SDK wait_for_job_conditions ({SDK_POLL_INTERVAL} s)"
    )
    return {"ours": "ours (TrainingJobOperator wait)", "sdk": sdk, "poll": f"GET every {POLL_INTERVAL:.0f} s"}


# --- tracker processes -------------------------------------------------------------------------------------------


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _ours(jobs: list[dict], seen: dict, errors: Counter, kubeconfig: str, timeout: float, spec: JobKind) -> Any:
    """Start one TrainingJobRun wait per job; returns a function telling whether every pod feed has listed."""
    from airflow.sdk import BaseHook

    from airflow_trainjob.domain.ownership import TaskInstanceIdentity
    from airflow_trainjob.hooks.training_job import TrainingJobHook
    from airflow_trainjob.operators.run import RunSettings, TrainingJobRun
    from airflow_trainjob.watching.job_watch import JobWatch, PodFeed

    BaseHook.get_connection(CONN_ID)  # Airflow's settings and secrets backends load once: paid in the baseline
    log = logging.getLogger("bench.ours")
    log.addHandler(logging.NullHandler())
    log.setLevel(logging.INFO)  # the progress lines are formatted as in a task; nobody prints them
    log.propagate = False
    watches: list[Any] = []
    pod_lists: Counter = Counter()  # ours' own LISTs of pods: the SDK v2 LISTs pods too, and /metrics has no client

    def counting(method: Any) -> Any:
        def listed(*args: Any, **kwargs: Any) -> Any:
            pod_lists["pod LISTs"] += 1
            return method(*args, **kwargs)

        return listed

    def wait(obj: dict) -> None:
        name = obj["metadata"]["name"]
        identity = TaskInstanceIdentity(dag_id="bench", task_id=name, run_id="bench", map_index=-1, try_number=1)
        hook = TrainingJobHook(kubernetes_conn_id=CONN_ID)
        hook.list_job_pods_and_version = counting(hook.list_job_pods_and_version)  # type: ignore[method-assign]
        hook.list_job_pods = counting(hook.list_job_pods)  # type: ignore[method-assign]

        def job_watch(*args: Any, **kwargs: Any) -> JobWatch:
            watches.append(JobWatch(*args, **kwargs))
            return watches[-1]

        def pod_feed(*args: Any, **kwargs: Any) -> PodFeed:
            feed = PodFeed(*args, **kwargs)
            watches.append(feed.watch)
            return feed

        run = TrainingJobRun(
            hook,
            identity,
            RunSettings(kubernetes_conn_id=CONN_ID, poll_interval=POLL_INTERVAL),
            manifest=obj,
            log=log,
            watch=job_watch,
            pod_feed=pod_feed,
        )
        try:
            final = run._sync.follow_to_end(f"{spec.kind} {NAMESPACE}/{name}", obj, obj)
            seen[name] = [time.time(), "finished" if spec.is_terminal(final) else "not terminal"]
        except Exception as e:
            errors[f"{type(e).__name__}: {str(e)[:80]}"] += 1
        finally:
            run._sync.stop()

    for obj in jobs:
        threading.Thread(target=wait, args=(obj,), daemon=True).start()

    def stats() -> dict:
        total: Counter = Counter(pod_lists)
        for w in list(watches):
            total.update({f"{type(w).__name__} {k}": v for k, v in w.stats.items()})
        return dict(total)

    def ready() -> bool:
        pod_watches = [w for w in watches if type(w).__name__ == "PodWatch"]
        return len(pod_watches) == len(jobs) and all(w.stats["watches"] for w in pod_watches)

    return ready, stats


def _sdk(jobs: list[dict], seen: dict, errors: Counter, kubeconfig: str, timeout: float, spec: JobKind) -> Any:
    if spec.kind == "TrainJob":
        return _sdk2(jobs, seen, errors, kubeconfig, timeout)
    from kubeflow.training import TrainingClient

    rng = random.Random(2)
    started: list[str] = []

    def wait(name: str, phase: float) -> None:
        try:
            training = TrainingClient(config_file=kubeconfig, namespace=NAMESPACE, job_kind=spec.kind)
            started.append(name)
            time.sleep(phase)
            training.wait_for_job_conditions(
                name, namespace=NAMESPACE, job_kind=spec.kind, wait_timeout=int(timeout - time.time())
            )
            seen[name] = [time.time(), "finished"]
        except Exception as e:
            errors[f"{type(e).__name__}: {str(e)[:80]}"] += 1

    for obj in jobs:
        threading.Thread(
            target=wait, args=(obj["metadata"]["name"], rng.uniform(0, SDK_POLL_INTERVAL)), daemon=True
        ).start()
    return (lambda: len(started) == len(jobs)), dict


def _sdk2(jobs: list[dict], seen: dict, errors: Counter, kubeconfig: str, timeout: float) -> Any:
    """The SDK v2's wait on each TrainJob, at its default interval, one ``TrainerClient`` per thread."""
    from kubeflow.common.types import KubernetesBackendConfig
    from kubeflow.trainer import TrainerClient

    rng = random.Random(2)
    started: list[str] = []

    def wait(name: str, phase: float) -> None:
        try:
            trainer = TrainerClient(KubernetesBackendConfig(namespace=NAMESPACE, config_file=kubeconfig))
            started.append(name)
            time.sleep(phase)
            trainer.wait_for_job_status(name, status={"Complete"}, timeout=int(timeout - time.time()))
            seen[name] = [time.time(), "finished"]
        except Exception as e:
            errors[f"{type(e).__name__}: {str(e)[:80]}"] += 1

    for obj in jobs:
        threading.Thread(
            target=wait, args=(obj["metadata"]["name"], rng.uniform(0, SDK2_POLL_INTERVAL)), daemon=True
        ).start()
    return (lambda: len(started) == len(jobs)), dict


def _poll(jobs: list[dict], seen: dict, errors: Counter, kubeconfig: str, timeout: float, spec: JobKind) -> Any:
    from kubernetes import client, config

    rng = random.Random(1)
    started: list[str] = []

    def wait(name: str, phase: float) -> None:
        configuration = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        custom = client.CustomObjectsApi(client.ApiClient(configuration))
        started.append(name)
        time.sleep(phase)
        while time.time() < timeout:
            try:
                obj = custom.get_namespaced_custom_object_status(spec.group, spec.version, NAMESPACE, spec.plural, name)
                if spec.is_terminal(obj):
                    seen[name] = [time.time(), "finished"]
                    return
            except Exception as e:
                errors[f"{type(e).__name__}: {str(e)[:80]}"] += 1
            time.sleep(POLL_INTERVAL)

    for obj in jobs:
        threading.Thread(
            target=wait, args=(obj["metadata"]["name"], rng.uniform(0, POLL_INTERVAL)), daemon=True
        ).start()
    return (lambda: len(started) == len(jobs)), dict


def _write_json(path: Path, value: Any) -> None:
    """Write ``value`` to ``path`` whole (a reader never sees half of it)."""
    part = path.with_suffix(".part")
    part.write_text(json.dumps(value))
    part.replace(path)


def tracker_main(args: argparse.Namespace) -> None:
    work = Path(args.work)
    jobs = json.loads((work / "jobs.json").read_text())
    seen: dict[str, list] = {}
    errors: Counter = Counter()
    start = {"ours": _ours, "sdk": _sdk, "poll": _poll}[args.role]
    # Import the libraries first, so that the baseline holds them and the difference is the waits' own cost.
    if args.role == "ours":
        import airflow_trainjob.operators.run  # noqa: F401
    elif args.role == "sdk":
        importlib.import_module(SDK_MODULES[args.kind])
    else:
        import kubernetes  # noqa: F401
    base = {"rss_kb": _rss_kb(), "cpu_s": _cpu_s()}
    (work / f"{args.role}.base").write_text(json.dumps(base))
    ready, stats = start(jobs, seen, errors, args.kubeconfig, args.deadline, KINDS[args.kind])
    while not ready() and time.time() < args.deadline:
        time.sleep(0.2)
    (work / f"{args.role}.ready").write_text(str(time.time()))
    while not (work / "stop").exists() and len(seen) < len(jobs) and time.time() < args.deadline:
        _write_json(work / f"{args.role}.stats", stats())  # what the main process reads around the quiet phase
        time.sleep(0.2)
    time.sleep(1)  # the waits that saw their job stop their watches (the apiserver counts a WATCH when it ends)
    out = {
        "seen": seen,
        "errors": dict(errors),
        "stats": stats(),
        "base": base,
        "cpu_s": _cpu_s() - base["cpu_s"],
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }
    (work / f"{args.role}.json").write_text(json.dumps(out))
    os._exit(0)  # daemon threads still blocked in a request need not be joined


# --- main process: cluster, jobs, writer, metrics, table ---------------------------------------------------------


def attribute(diff: Counter, spec: JobKind, ours_pod_lists: int) -> dict[str, Counter]:
    """Split request counts between the trackers by their labels (see the module docstring).

    :param diff: ``apiserver_request_total`` increments by (verb, resource, subresource, scope).
    :param spec: the kind the run waits on.
    :param ours_pod_lists: the LISTs of pods ours made meanwhile, by its own count: for a TrainJob the SDK v2 LISTs
        pods too, so the pod LISTs beyond ours' are the SDK's (for the v1 kinds the SDK reads no pods).
    """
    by: dict[str, Counter] = {role: Counter() for role in (*ROLES, "writer")}
    v2 = spec.kind == "TrainJob"
    for (verb, res, sub, scope), n in diff.items():
        if n <= 0:
            continue
        if v2 and res == "clustertrainingruntimes" and verb == "GET":
            by["sdk"]["GET clustertrainingruntime"] += (
                n  # the runtime the TrainJob names, at every poll (scope resource)
            )
        elif scope == "cluster":
            continue  # the garbage collector's
        elif res == spec.plural and sub == "status":
            by["writer" if verb == "PATCH" else "poll"][f"{verb} job/status"] += n
        elif res == spec.plural and sub == "":
            by["ours" if verb == "WATCH" else "sdk"][f"{verb} job"] += n  # 1.20 may label a GET of one as LIST
        elif v2 and (res == "trainingruntimes" or (res, verb) == ("configmaps", "GET")):
            by["sdk"][f"{verb} {res[:-1]}"] += n  # a namespaced runtime first (404); the trainer's public ConfigMap
        elif res == "pods" and verb == "LIST" and v2:
            by["ours"]["LIST pods"] += min(n, ours_pod_lists)
            by["sdk"]["LIST pods"] += n - min(n, ours_pod_lists)
        elif res == "pods":
            by["ours"][f"{verb} pods{'/' + sub if sub else ''}"] += n
    for counter in by.values():
        counter += Counter()  # drop the zero counts
    return by


def _proc(pid: int) -> tuple[float, int]:
    """CPU seconds and resident set (kB) of a process, now."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = next(
        int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line[:6] == "VmRSS:"
    )
    return cpu, rss


def _reqs(counter: Counter) -> str:
    return f"{sum(counter.values()):.0f} ({', '.join(f'{k} {v:.0f}' for k, v in sorted(counter.items())) or '-'})"


def _table(n: int, args: argparse.Namespace, res: dict, written: dict, quiet: dict, whole: dict, load: dict) -> str:
    from airflow_trainjob.watching.job_watch import WATCH_SECONDS

    sdk_per_poll = SDK2_REQUESTS_PER_POLL if args.kind == "TrainJob" else 1
    derived = {
        "ours": 2 * 3600 / WATCH_SECONDS,
        "sdk": sdk_per_poll * 3600 / sdk_interval(args.kind),
        "poll": 3600 / POLL_INTERVAL,
    }
    col: dict[str, dict[str, str]] = {}
    for role in ROLES:
        r = res[role]
        lat = [r["seen"][j][0] - written[j] for j in written if j in r["seen"]]
        quiet_rate = sum(quiet[role].values()) / (n * args.quiet / 3600)
        col[role] = {
            "seen": f"{sum(1 for v in r['seen'].values() if v[1] == 'finished')}/{n}",
            "p50": f"{pct(lat, 50):.3f} s" if lat else "-",
            "p99": f"{pct(lat, 99):.3f} s" if lat else "-",
            "derived": f"{derived[role]:.0f}",
            "quiet": f"{quiet_rate:.1f} ({_reqs(quiet[role])})",
            "whole": _reqs(whole[role]),
            "cpu": f"{r['cpu_s'] / n:.3f} s",
            "cpu_quiet": f"{load[role]['cpu_quiet'] / n * 3600 / args.quiet:.2f} s",
            "rss": f"{(load[role]['rss_kb'] - r['base']['rss_kb']) / 1024 / n:.2f} MB"
            f" (process {load[role]['rss_kb'] / 1024:.0f} MB, baseline {r['base']['rss_kb'] / 1024:.0f} MB)",
            "err": "; ".join(f"{v}× {k}" for k, v in r["errors"].items()) or "none",
        }
    success = KINDS[args.kind].success
    rows = [
        (f"jobs seen {success}", "all", "seen"),
        (f"detection p50 ({success} written → wait returns)", "", "p50"),
        ("detection p99", "< 1 s (ours)", "p99"),
        ("requests per job-hour, long quiet job (derived from the mechanism)", "≤ 20 (ours)", "derived"),
        (f"requests per job-hour in the quiet phase (measured, {args.quiet:.0f} s)", "", "quiet"),
        ("requests of the whole run (setup, quiet, finish)", "", "whole"),
        ("CPU seconds per wait (whole run)", "", "cpu"),
        ("CPU seconds per wait-hour (quiet phase)", "", "cpu_quiet"),
        ("RSS per wait (end of the quiet phase)", "", "rss"),
        ("errors", "none", "err"),
    ]
    head = (
        f"N = {n} waits (threads, one client each), one {args.kind} each; quiet {args.quiet:.0f} s, then {success} "
        f"writes spread over {args.window:.0f} s; {time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} cores\n\n"
    )
    lines = ["| metric | target | " + " | ".join(labels(args.kind)[r] for r in ROLES) + " |", "|---|---|---|---|---|"]
    lines += [f"| {a} | {b} | " + " | ".join(col[r][key] for r in ROLES) + " |" for a, b, key in rows]
    return head + "\n".join(lines)


#: The SDK each kind is waited on with: its environment's Python (default), its module, how to make it.
SDK_PYTHONS = {
    KIND: os.environ.get("AIRFLOW_TRAINJOB_SDK_PYTHON", ".venv-sdk/bin/python"),
    "TrainJob": os.environ.get("AIRFLOW_TRAINJOB_SDK2_PYTHON", ".venv-sdk2/bin/python"),
}
SDK_MODULES = {KIND: "kubeflow.training", "TrainJob": "kubeflow.trainer"}
SDK_HELP = {
    KIND: "build that environment first, e.g. python3.11 -m venv /tmp/sdk-venv && /tmp/sdk-venv/bin/pip install "
    "kubeflow-training==1.9.4 (or bash scripts/sdk-check.sh, which builds .venv-sdk)",
    "TrainJob": "build that environment first, e.g. python3.11 -m venv /tmp/sdk2-venv && /tmp/sdk2-venv/bin/pip "
    "install 'kubeflow==0.5.*' (or bash scripts/sdk2-check.sh, which builds .venv-sdk2)",
}


def _ours_pod_lists(work: Path) -> int:
    """The LISTs of pods ours has made so far, by its own count (its last stats file)."""
    try:
        return int(json.loads((work / "ours.stats").read_text()).get("pod LISTs", 0))
    except (OSError, ValueError):
        return 0


def main_run(args: argparse.Namespace) -> int:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports

    n, spec = args.jobs, KINDS[args.kind]
    sdk_python = Path(args.sdk_python or SDK_PYTHONS[args.kind])
    module = SDK_MODULES[args.kind]
    if not (sdk_python.exists() and subprocess.run([str(sdk_python), "-c", f"import {module}"]).returncode == 0):
        say(f"{sdk_python} cannot import {module}: {SDK_HELP[args.kind]}, then pass --sdk-python")
        return 2
    work = Path(tempfile.mkdtemp(prefix="trainjob-syncwait-", dir="/tmp"))
    cluster = LocalCluster(work / "cluster", Ports.from_base(args.port_base), workloads=False)
    procs: dict[str, subprocess.Popen] = {}
    try:
        cluster.up()
        api_client = cluster.api_client()
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        names = [f"bench-{i:05d}" for i in range(n)]
        t = time.time()

        def create_running(name: str) -> dict:
            custom.create_namespaced_custom_object(
                spec.group, spec.version, NAMESPACE, spec.plural, spec.job(name, NAMESPACE)
            )
            return custom.patch_namespaced_custom_object_status(
                spec.group, spec.version, NAMESPACE, spec.plural, name, spec.status("Running")
            )

        with ThreadPoolExecutor(8) as pool:  # setup, not measured: parallel to keep it short
            running = list(pool.map(create_running, names))
        (work / "jobs.json").write_text(json.dumps(running))  # the jobs as a try has them when its wait starts
        say(f"created {n} Running jobs in {time.time() - t:.1f} s")

        start_counts = request_counts(api_client)
        env = {
            **os.environ,
            f"AIRFLOW_CONN_{CONN_ID.upper()}": cluster.airflow_connection(NAMESPACE),
            "AIRFLOW_HOME": str(work / "airflow"),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
        }
        deadline = time.time() + 180 + args.quiet + args.window + 120
        for role in ROLES:
            python = str(sdk_python) if role == "sdk" else sys.executable
            command = [python, __file__, "--role", role, "--work", str(work), "--kubeconfig", str(cluster.kubeconfig)]
            command += ["--kind", args.kind]
            log = open(work / f"{role}.log", "w")
            procs[role] = subprocess.Popen(
                [*command, "--deadline", str(deadline)], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        limit = time.time() + 180
        while not all((work / f"{r}.ready").exists() for r in ROLES):
            if time.time() > limit or any(p.poll() is not None for p in procs.values()):
                raise RuntimeError(f"a tracker did not start; see the logs in {work} (--keep)")
            time.sleep(0.2)
        settle = 5 + n / 50
        say(f"trackers ready; settling {settle:.0f} s, then quiet for {args.quiet:.0f} s")
        time.sleep(settle)

        quiet_start, pod_lists_start = request_counts(api_client), _ours_pod_lists(work)
        cpu_start = {r: _proc(p.pid)[0] for r, p in procs.items()}
        time.sleep(args.quiet)
        quiet_diff = request_counts(api_client)
        quiet_diff.subtract(quiet_start)
        quiet_pod_lists = _ours_pod_lists(work) - pod_lists_start
        load = {r: dict(zip(("cpu", "rss_kb"), _proc(p.pid), strict=True)) for r, p in procs.items()}
        for r in ROLES:
            load[r]["cpu_quiet"] = load[r]["cpu"] - cpu_start[r]
        say(f"quiet phase over; finishing {n} jobs over {args.window:.0f} s")

        order = names[:]
        random.Random(0).shuffle(order)
        t0 = time.time() + 2
        written: dict[str, float] = {}
        for i, nm in enumerate(order):
            delay = t0 + args.window * i / max(1, n - 1) - time.time()
            if delay > 0:
                time.sleep(delay)
            written[nm] = time.time()  # sent: a watch may deliver the change before the PATCH's answer arrives
            custom.patch_namespaced_custom_object_status(
                spec.group, spec.version, NAMESPACE, spec.plural, nm, spec.status(spec.success)
            )
        say(f"all {spec.success} written; waiting for the trackers")
        grace_end = time.time() + sdk_interval(args.kind) + 20
        while time.time() < grace_end and any(p.poll() is None for p in procs.values()):
            time.sleep(0.5)
        (work / "stop").touch()
        for p in procs.values():
            p.wait(timeout=60)
        time.sleep(2)  # the apiserver counts a WATCH when it ends
        whole_diff = request_counts(api_client)
        whole_diff.subtract(start_counts)
        for key, v in sorted(whole_diff.items(), key=str):  # the raw figures the attribution is made from
            if v > 0 and key[1] in (spec.plural, "pods", "trainingruntimes", "clustertrainingruntimes", "configmaps"):
                say(f"apiserver_request_total +{v:.0f} verb/resource/subresource/scope={'/'.join(map(str, key))}")
        res = {r: json.loads((work / f"{r}.json").read_text()) for r in ROLES}
        whole = attribute(whole_diff, spec, res["ours"]["stats"].get("pod LISTs", 0))
        print(_table(n, args, res, written, attribute(quiet_diff, spec, quiet_pod_lists), whole, load))
        print(
            f"\nours' client-side counts: {res['ours']['stats']}. Writer (PATCH status, not counted above): "
            f"{sum(whole['writer'].values()):.0f}. Detection = the tracker's clock when its wait returned minus "
            "the writer's when it sent the PATCH (one machine; the PATCH's own latency included)."
            + (
                f" Pod LISTs: ours' own count ({quiet_pod_lists} in the quiet phase), the rest the SDK's."
                if args.kind == "TrainJob"
                else ""
            )
        )
        return 0
    finally:
        end_run(cluster, work, args.keep, procs.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100, help="number of jobs and of waits each (default 100)")
    parser.add_argument("--kind", choices=sorted(KINDS), default=KIND, help=f"the jobs' kind (default {KIND})")
    parser.add_argument("--quiet", type=float, default=150.0, help="seconds of the quiet phase (default 150)")
    parser.add_argument("--window", type=float, default=30.0, help="seconds over which jobs finish (default 30)")
    parser.add_argument(
        "--sdk-python",
        help="a Python with kubeflow-training==1.9.4 (default $AIRFLOW_TRAINJOB_SDK_PYTHON or .venv-sdk/bin/python); "
        "with --kind TrainJob one with kubeflow==0.5.* (default $AIRFLOW_TRAINJOB_SDK2_PYTHON or .venv-sdk2/bin/python)",
    )
    parser.add_argument("--port-base", type=int, default=PORT_BASE, help=f"the cluster's ports (default {PORT_BASE})")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir (logs) after the run")
    # Internal: the tracker processes.
    parser.add_argument("--role", choices=ROLES, help=argparse.SUPPRESS)
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

"""Memory of the shared stream's job cache per 1,000 jobs, apart from the one-time cost of importing the clients.

The triggerer's shared stream (and the api-server's UI cache, the same ``JobStream``) keeps every job of a namespace
and kind. This benchmark measures what that cache costs, in a fresh process per (provider, N), in this order:

1. the process starts (Python, the standard library);
2. the one-time costs: the trigger's module and its Kubernetes side are imported (``kubernetes_side.load()``, or the
   stream's module for a provider without it), and the N jobs' list answers are read as text with the kubernetes
   client (pages of 500, as the stream reads them); the resident set after that is the baseline;
3. the N jobs go into a ``JobCache`` page by page (``add_list_page``, what the stream's list does), then every job is
   read once (``cache[name].get("status")``: what the triggers do for their own jobs and the UI's jobs page for all);
   the resident set is read after each, and the same is done again under ``tracemalloc`` (the Python heap, exact),
   with the objects the garbage collector tracks counted after a full collection.

Its cluster: ``--cluster-dir DIR`` uses (and leaves running) a kept one, e.g. ``loop_stalls.py``'s; otherwise it starts
its own (``--no-workloads``, port base ``--port-base``, stopped at exit). It creates the PyTorchJobs the namespace lacks
and writes a ``Running`` status (as the training operator would) to those without one. ``--code DIR`` measures the
provider in DIR as well (the "before" column: ``git archive <commit> airflow_trainjob | tar -x -C DIR``).

Run: ``python benchmarks/cache_memory.py --jobs 1000 --jobs 10000 --code /tmp/before`` (about a minute on a kept
cluster that has its jobs).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trigger_detection as single  # its namespace
from _common import GROUP, PLURAL, VERSION, end_run, job, say, status

PORT_BASE = 58543
PAGE = 500
TRIGGERS = 1000  # the jobs read at a relist (each trigger reads its own)
TARGET_MB = 5.0  # per 1,000 jobs
KUBERNETES_SIDE = "airflow_trainjob.triggers.kubernetes_side"


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# --- the measuring process ---------------------------------------------------------------------------------------


def _import_provider() -> str:
    """What a triggerer imports for its first training trigger; returns the file of the cache's module."""
    importlib.import_module("airflow_trainjob.triggers.training_job")
    if importlib.util.find_spec(KUBERNETES_SIDE) is not None:
        asyncio.run(importlib.import_module(KUBERNETES_SIDE).load())
    return str(importlib.import_module("airflow_trainjob.watching.job_cache").__file__)


def _pages(kubeconfig: str, jobs: int) -> list[str]:
    """The list answers of the first ``jobs`` jobs of the namespace, as text, :data:`PAGE` items a page."""
    from kubernetes import config

    api = config.new_client_from_config(config_file=kubeconfig)
    pages: list[str] = []
    token = None
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{single.NAMESPACE}/{PLURAL}"
    while len(pages) * PAGE < jobs:
        query = [("limit", PAGE), *([("continue", token)] if token else [])]
        answer = api.call_api(path, "GET", query_params=query, auth_settings=["BearerToken"], _preload_content=False)
        text = answer.data.decode()
        pages.append(text)
        token = json.loads(text)["metadata"].get("continue")
        if not token:
            break
    api.close()
    return pages


def _fill_and_read(pages: list[str]) -> tuple[object, int]:
    from airflow_trainjob.watching.job_cache import JobCache

    cache = JobCache()
    for page in pages:
        cache.add_list_page(page)
    return cache, len(cache)


def _read_every_job(cache: object) -> None:
    for name in list(cache):  # type: ignore[call-overload]
        cache[name].get("status")  # type: ignore[index]


def _relist(cache: object, pages: list[str]) -> dict[str, int]:
    """What a relist leaves to the collector: a new cache from the same pages replaces ``cache`` and the first
    :data:`TRIGGERS` jobs are read (the triggers judge theirs), with young collections running as they come and full
    ones held back; then the objects that reached the oldest generation and are still tracked are counted (what counts
    toward CPython's next full collection: a quarter of the objects it kept at the last one sets it off)."""
    gc.collect()
    oldest = len(gc.get_objects(generation=2))
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 10**9)
    try:
        relisted, _ = _fill_and_read(pages)
        del cache
        for name in list(relisted)[:TRIGGERS]:  # type: ignore[call-overload]
            relisted[name].get("status")  # type: ignore[index]
        gc.collect(1)
        promoted = len(gc.get_objects(generation=2)) - oldest
    finally:
        gc.set_threshold(*thresholds)
    return {"promoted_by_relist": promoted}


def measure_main(args: argparse.Namespace) -> None:
    if args.code:  # the provider from this directory instead of the installed (editable) one
        sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
        sys.path.insert(0, args.code)
    out: dict[str, object] = {"rss_start": _rss_mb()}
    out["module"] = _import_provider()
    out["rss_imported"] = _rss_mb()
    pages = _pages(args.kubeconfig, args.jobs)
    gc.collect()
    out["rss_baseline"] = _rss_mb()
    # Pass 1: the resident set (no tracemalloc, whose own tables would count in it).
    cache, n = _fill_and_read(pages)
    gc.collect()
    out["rss_listed"] = _rss_mb()
    _read_every_job(cache)
    gc.collect()
    out["rss_read"] = _rss_mb()
    del cache
    gc.collect()
    # Pass 2: the Python heap, exactly, and the objects the collector tracks.
    tracked0 = len(gc.get_objects())
    tracemalloc.start()
    heap0 = tracemalloc.get_traced_memory()[0]
    cache, n = _fill_and_read(pages)
    gc.collect()
    out["heap_listed"] = (tracemalloc.get_traced_memory()[0] - heap0) / 2**20
    out["tracked_listed"] = len(gc.get_objects()) - tracked0
    _read_every_job(cache)
    gc.collect()
    out["heap_read"] = (tracemalloc.get_traced_memory()[0] - heap0) / 2**20
    out["tracked_read"] = len(gc.get_objects()) - tracked0
    out.update(_relist(cache, pages))
    out["jobs"] = n
    out["page_bytes"] = sum(len(p) for p in pages)
    Path(args.out).write_text(json.dumps(out))


# --- main process ------------------------------------------------------------------------------------------------


def _ensure_jobs(custom, names: list[str]) -> None:
    """Create the jobs the namespace lacks and give a ``Running`` status to those without one (8 threads)."""
    listed = custom.list_namespaced_custom_object(GROUP, VERSION, single.NAMESPACE, PLURAL)["items"]
    existing = {j["metadata"]["name"]: bool(j.get("status")) for j in listed}
    missing = [n for n in names if n not in existing]
    unstarted = [n for n in names if not existing.get(n)]

    def create(name: str) -> None:
        custom.create_namespaced_custom_object(GROUP, VERSION, single.NAMESPACE, PLURAL, job(name, single.NAMESPACE))

    def start(name: str) -> None:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, single.NAMESPACE, PLURAL, name, status("Running"))

    t = time.time()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, missing))
        list(pool.map(start, unstarted))
    say(f"created {len(missing)} jobs, wrote Running to {len(unstarted)}, in {time.time() - t:.1f} s")


def _table(runs: dict[tuple[str, int], dict]) -> str:
    codes = sorted({c for c, _ in runs}, key=lambda c: c != "before")
    sizes = sorted({n for _, n in runs})
    cols = [f"{c}, N = {n:,}" for n in sizes for c in codes]
    lines = [f"| per 1,000 cached jobs | target | {' | '.join(cols)} |", "|---|---|" + "---|" * len(cols)]

    def row(label: str, target: str, cell: Callable[[dict], str]) -> None:
        lines.append(f"| {label} | {target} | {' | '.join(cell(runs[(c, n)]) for n in sizes for c in codes)} |")

    def per_k(r: dict, key: str, base: str) -> str:
        return f"{(r[key] - r[base]) * 1000 / r['jobs']:.2f} MB"

    row(
        "Python heap added, listed (tracemalloc)",
        f"≤ {TARGET_MB:g} MB",
        lambda r: f"{r['heap_listed'] * 1000 / r['jobs']:.2f} MB",
    )
    row(
        "Python heap added, every job read once",
        f"≤ {TARGET_MB:g} MB",
        lambda r: f"{r['heap_read'] * 1000 / r['jobs']:.2f} MB",
    )
    row("RSS added, listed", "", lambda r: per_k(r, "rss_listed", "rss_baseline"))
    row("RSS added, every job read once", "", lambda r: per_k(r, "rss_read", "rss_baseline"))
    row(
        "objects the collector tracks, listed / read",
        "",
        lambda r: f"{r['tracked_listed'] * 1000 // r['jobs']:,} / {r['tracked_read'] * 1000 // r['jobs']:,}",
    )
    row("objects a relist leaves in the oldest generation", "", lambda r: f"{r['promoted_by_relist']:,}")
    row(
        "one-time: RSS of the imports (trigger + Kubernetes side)",
        "",
        lambda r: f"{r['rss_imported'] - r['rss_start']:.0f} MB",
    )
    row(
        "list answers read (JSON text, per 1,000 jobs)",
        "",
        lambda r: f"{r['page_bytes'] / r['jobs'] * 1000 / 2**20:.2f} MB",
    )
    return "\n".join(lines)


def main_run(args: argparse.Namespace) -> int:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports

    work = Path(tempfile.mkdtemp(prefix="trainjob-cachemem-", dir="/tmp"))
    kept = Path(args.cluster_dir) if args.cluster_dir else None
    cluster = LocalCluster(kept or work / "cluster", Ports.from_base(args.port_base), workloads=False)
    try:
        cluster.up()
        api_client = cluster.api_client()
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        if not core.list_namespace(field_selector=f"metadata.name={single.NAMESPACE}").items:
            core.create_namespace({"metadata": {"name": single.NAMESPACE}})
        _ensure_jobs(custom, [f"bench-{i:05d}" for i in range(max(args.jobs))])
        codes = {"after": None, **({"before": str(Path(args.code).resolve())} if args.code else {})}
        runs: dict[tuple[str, int], dict] = {}
        for n in args.jobs:
            for label, code in codes.items():
                out = work / f"{label}-{n}.json"
                command = [sys.executable, __file__, "--role", "measure", "--jobs", str(n), "--out", str(out)]
                command += ["--kubeconfig", str(cluster.kubeconfig), *(["--code", code] if code else [])]
                subprocess.run(command, check=True, timeout=600)
                runs[(label, n)] = json.loads(out.read_text())
                say(f"{label}, N = {n}: {runs[(label, n)]}")
        print(_table(runs))
        return 0
    finally:
        end_run(None if kept is not None else cluster, work, args.keep)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, action="append", help="jobs cached (repeatable; default 1000 and 10000)")
    parser.add_argument("--port-base", type=int, default=PORT_BASE, help=f"cluster ports (default {PORT_BASE})")
    parser.add_argument("--cluster-dir", help="use (and leave running) the cluster in this state dir")
    parser.add_argument("--code", help="measure the provider in this directory too, as 'before'")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir after the run")
    parser.add_argument("--role", choices=["measure"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        args.jobs = args.jobs[0]
        measure_main(args)
        return 0
    args.jobs = sorted(set(args.jobs or [1000, 10_000]))
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())

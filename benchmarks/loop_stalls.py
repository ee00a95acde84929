"""Event-loop stalls of the deferred path: the longest time the triggerer's loop cannot run anything else.

Airflow's triggerer warns ``Triggerer's async thread was blocked for X seconds`` when its watchdog's
``asyncio.sleep(0.1)`` returns late (``TriggerRunner.block_watchdog``). This benchmark measures the same lag, finer:
a monitor task sleeps 10 ms in a loop and records how late each wake-up is. It starts its own local cluster
(``--no-workloads``; state under /tmp, port base 58443), creates N PyTorchJobs (default 10,000; kubernetes client
in threads), then one fresh process (one asyncio loop, an env-var Airflow connection) goes through, measuring each
phase on its own:

* ``import``: the trigger class is imported on the loop, as the triggerer's ``get_trigger_by_classpath`` does;
* ``load``: the trigger's Kubernetes side (its stream, the hook, the clients) is imported in a worker thread, as a
  trigger's first entry point does (``await kubernetes_side.load()``); a provider without it (``--code`` of an older
  one) imports all of it in the ``import`` phase instead;
* ``start``: T ``TrainingJobTrigger``s (default 1,000) start on Airflow's own ``SharedStreamManager`` the way the
  3.3 triggerer runs shared-stream triggers (``trigger_detection._track``'s way, with the triggerer's
  ``await asyncio.sleep(0)`` between two trigger creations): the stream connects (connection, kubeconfig, client),
  lists all N jobs and every trigger judges its job; the phase ends 3 s after that list;
* ``relist``: the stream's next watch event is answered with 410 Gone (injected: the local apiserver compacts every
  5 minutes), so it lists all N jobs again and every trigger judges again; the phase ends 3 s after that list.

Both processes read compiled bytecode, as an installed provider does: a warm-up process (same imports, not measured)
writes it under the work dir (``PYTHONPYCACHEPREFIX``), so a ``PYTHONDONTWRITEBYTECODE`` environment does not add
the compilation of the provider's modules to the import phase.

``--code DIR`` measures the provider in DIR (the "before" of a change); ``--gc-freeze`` freezes the measuring
process's heap after its imports (``gc.freeze()``: a process-wide setting that is the triggerer's to make, shown for
comparison). ``--stacks`` also prints, for each stall over 50 ms, the loop thread's stack at that moment (a sampling thread):
where the blocking call is. ``--save FILE`` writes the figures as JSON, ``--compare FILE`` prints them as the
"before" column next to this run's.

Run: ``python benchmarks/loop_stalls.py`` (about 3 minutes at 10,000 jobs: most of it creating them).
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
import threading
import time
import traceback
from collections import Counter, defaultdict, deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trigger_detection as single  # its namespace, connection id and progress lines
from _common import GROUP, KIND, PLURAL, VERSION, end_run, job, say

PORT_BASE = 58443
TICK = 0.01  # seconds the monitor sleeps
LONG_GC = 0.02  # seconds: collections longer than this are listed one by one
STACK_THRESHOLD = 0.05  # seconds of lag after which the sampler records the loop thread's stack
TARGET = 0.1  # seconds: the longest stall allowed
PHASES = ("import", "load", "start", "relist")
#: The trigger class, as the triggerer imports it; the module of its lazy load (absent from older providers).
TRIGGER_CLASS = "airflow_trainjob.triggers.training_job.TrainingJobTrigger"
KUBERNETES_SIDE = "airflow_trainjob.triggers.kubernetes_side"


# --- the measuring process ---------------------------------------------------------------------------------------


class Monitor:
    """Records how late a 10 ms sleep returns, per phase; a sampler thread catches the stack of long stalls."""

    def __init__(self, stacks: bool) -> None:
        self.phase = "idle"
        self.worst: defaultdict[str, float] = defaultdict(float)
        self.ticks: Counter[str] = Counter()
        self.over: Counter[str] = Counter()  # ticks later than TARGET
        self._beat = time.monotonic()
        self._loop_thread = threading.get_ident()
        self.stalls: dict[str, Counter[str]] = {p: Counter() for p in PHASES}
        #: per phase: the longest cyclic garbage collection; the longest lag less the collections within it
        self.gc_worst: defaultdict[str, float] = defaultdict(float)
        self.full_gcs: Counter[str] = Counter()  # per phase: full collections (generation 2), in any thread
        #: collections longer than LONG_GC: (phase, generation, seconds)
        self.long_gcs: list[tuple[str, int, float]] = []
        self.worst_without_gc: defaultdict[str, float] = defaultdict(float)
        #: the most CPU the loop thread spent between two ticks, less the collections: work that blocked the loop,
        #: whatever the machine's load (a wall-clock lag also counts the time the OS ran other processes)
        self.worst_cpu: defaultdict[str, float] = defaultdict(float)
        self._gc_started = 0.0
        self._gc_running = False
        #: the collections since the last tick began: (start, end, ran on the loop thread); one may run in a worker
        #: thread (an import)
        self._gc_spans: deque[tuple[float, float, bool]] = deque()
        gc.callbacks.append(self._gc)
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True) if stacks else None

    async def run(self) -> None:
        if self._sampler:
            self._sampler.start()
        while True:
            before, cpu = time.monotonic(), time.thread_time()
            self._beat = before
            await asyncio.sleep(TICK)
            after = time.monotonic()
            lag = after - before - TICK
            # The collections within the tick, by their overlap with it: in any thread (they hold the GIL), and
            # those on the loop thread alone (part of its CPU time).
            while self._gc_spans and self._gc_spans[0][1] < before:  # ended before this tick (an import runs
                self._gc_spans.popleft()  # thousands of young collections: all of this tick's must be here)
            spans = list(self._gc_spans)
            if self._gc_running:  # a worker thread's collection whose stop callback lost the GIL to this thread
                spans.append((self._gc_started, after, False))  # before it could record the span
            overlaps = [(min(end, after) - max(start, before), on_loop) for start, end, on_loop in spans]
            in_gc = sum(o for o, _ in overlaps if o > 0)
            loop_gc = sum(o for o, on_loop in overlaps if o > 0 and on_loop)
            self.worst_cpu[self.phase] = max(self.worst_cpu[self.phase], time.thread_time() - cpu - loop_gc)
            self.ticks[self.phase] += 1
            self.worst[self.phase] = max(self.worst[self.phase], lag)
            self.worst_without_gc[self.phase] = max(self.worst_without_gc[self.phase], lag - in_gc)
            if lag > TARGET:
                self.over[self.phase] += 1

    def _gc(self, what: str, info: dict) -> None:
        if what == "start":
            self._gc_started = time.monotonic()
            self._gc_running = True
        else:
            end = time.monotonic()
            self._gc_spans.append((self._gc_started, end, threading.get_ident() == self._loop_thread))
            self._gc_running = False
            self.gc_worst[self.phase] = max(self.gc_worst[self.phase], end - self._gc_started)
            self.full_gcs[self.phase] += info["generation"] == 2
            if end - self._gc_started > LONG_GC:
                self.long_gcs.append((self.phase, info["generation"], round(end - self._gc_started, 3)))

    def _sample(self) -> None:
        seen_beat = None
        while not self._stop.wait(0.005):
            beat = self._beat
            if time.monotonic() - beat - TICK > STACK_THRESHOLD and beat != seen_beat and self.phase in self.stalls:
                seen_beat = beat  # one sample per stall: its site, not its length
                frame = sys._current_frames().get(self._loop_thread)
                if frame is not None:
                    stack = traceback.extract_stack(frame)[-6:]
                    site = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))
                    self.stalls[self.phase][site] += 1

    def stop(self) -> None:
        self._stop.set()


async def _measure(names: list[str], triggers: int, stacks: bool, gc_freeze: bool) -> dict:
    # What the triggerer has imported before any trigger is loaded.
    from airflow._shared.module_loading import import_string
    from airflow.jobs import triggerer_job_runner  # noqa: F401
    from airflow.triggers.shared_stream import SharedStreamManager

    monitor = Monitor(stacks)
    watcher = asyncio.create_task(monitor.run())
    await asyncio.sleep(0.2)

    monitor.phase = "import"
    t = time.monotonic()
    trigger_class = import_string(TRIGGER_CLASS)
    import_s = time.monotonic() - t
    say(f"measuring {sys.modules[trigger_class.__module__].__file__}")
    await asyncio.sleep(0.2)

    monitor.phase = "load"
    load_s = None
    if importlib.util.find_spec(KUBERNETES_SIDE) is not None:
        kubernetes_side = importlib.import_module(KUBERNETES_SIDE)
        t = time.monotonic()
        await kubernetes_side.load()
        load_s = time.monotonic() - t
    await asyncio.sleep(0.2)

    from kubernetes_asyncio.client.exceptions import ApiException

    from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook
    from airflow_trainjob.watching.job_stream import live_stream

    monitor.phase = "idle"
    if gc_freeze:  # what a triggerer could do once started: its own heap out of every later full collection
        gc.collect()
        gc.freeze()
        await asyncio.sleep(0.2)  # (that collection's own stall is the idle phase's, not the start's)
    heap = len(gc.get_objects())

    # The 410 of the relist phase: the next watch event after `expire` is set is answered with 410 Gone.
    expire = asyncio.Event()
    watch_jobs = AsyncTrainingJobHook.watch_jobs

    async def expiring_watch(self, *args, **kwargs):
        events = watch_jobs(self, *args, **kwargs)
        try:
            async for event in events:
                if expire.is_set():
                    expire.clear()
                    raise ApiException(status=410, reason="Gone (injected by the benchmark)")
                yield event
        finally:
            await events.aclose()

    AsyncTrainingJobHook.watch_jobs = expiring_watch  # type: ignore[method-assign]

    monitor.phase = "start"
    t0 = time.monotonic()
    manager = SharedStreamManager()
    judged: Counter[str] = Counter()

    async def drive(trigger_id: int, trigger) -> None:
        key = trigger.shared_stream_key()
        try:
            async for event in trigger.filter_shared_stream(
                manager.subscribe(trigger_id=trigger_id, trigger=trigger, key=key)
            ):
                judged[event.payload["outcome"]] += 1  # none expected: the jobs never change
                return
        finally:
            await manager.unsubscribe(trigger_id, key)

    tasks = []
    for i, name in enumerate(names[:triggers]):
        await asyncio.sleep(0)  # as the triggerer's create_triggers
        trigger = trigger_class(kind=KIND, name=name, namespace=single.NAMESPACE, kubernetes_conn_id=single.CONN_ID)
        tasks.append(asyncio.create_task(drive(i, trigger)))
    source = trigger.shared_stream_key()
    stream = None
    while stream is None or stream.stats["lists"] < 1 or not stream.synced:
        await asyncio.sleep(0.05)
        stream = live_stream(source)
    synced_s = time.monotonic() - t0
    await asyncio.sleep(3)

    monitor.phase = "relist"
    t1 = time.monotonic()
    expire.set()
    await asyncio.to_thread(_touch_one_job, names[-1])  # a watch event, answered with the 410
    listed = stream.jobs  # a list replaces the cache when its last page is in
    while stream.jobs is listed or not stream.synced:
        await asyncio.sleep(0.05)
    relist_s = time.monotonic() - t1
    await asyncio.sleep(3)
    monitor.phase = "done"

    for task in [*tasks, watcher]:
        task.cancel()
    await asyncio.gather(*tasks, watcher, return_exceptions=True)
    monitor.stop()
    return {
        "jobs": len(names),
        "triggers": len(tasks),
        "worst": {p: monitor.worst[p] for p in PHASES},
        "over": {p: monitor.over[p] for p in PHASES},
        "ticks": {p: monitor.ticks[p] for p in PHASES},
        "gc_worst": {p: monitor.gc_worst[p] for p in PHASES},
        "full_gcs": {p: monitor.full_gcs[p] for p in PHASES},
        "long_gcs": monitor.long_gcs,
        "worst_without_gc": {p: monitor.worst_without_gc[p] for p in PHASES},
        "worst_cpu": {p: monitor.worst_cpu[p] for p in PHASES},
        "loadavg": os.getloadavg()[0],
        "gc_freeze": gc_freeze,
        "heap_objects": [heap, len(gc.get_objects())],  # tracked by the collector: before the triggers, at the end
        "import_s": import_s,
        "load_s": load_s,
        "synced_s": synced_s,
        "relist_s": relist_s,
        "stream_jobs": len(stream.jobs),
        "events": dict(judged),
        "stalls": {p: monitor.stalls[p].most_common(8) for p in PHASES},
    }


def _touch_one_job(name: str) -> None:
    """Change one job (a label), so the stream's watch delivers an event."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=os.environ["LOOP_STALLS_KUBECONFIG"])
    try:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            single.NAMESPACE,
            PLURAL,
            name,
            {"metadata": {"labels": {"touched": str(int(time.time()))}}},
        )
    finally:
        api.close()


def measure_main(args: argparse.Namespace) -> None:
    if args.code:  # the provider from this directory instead of the installed (editable) one
        sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
        sys.path.insert(0, args.code)
    if args.role == "warm":  # compile what the measuring process imports (see the module's docstring)
        from airflow._shared.module_loading import import_string
        from airflow.jobs import triggerer_job_runner  # noqa: F401
        from airflow.triggers.shared_stream import SharedStreamManager  # noqa: F401

        import_string(TRIGGER_CLASS)
        if importlib.util.find_spec(KUBERNETES_SIDE) is not None:
            asyncio.run(importlib.import_module(KUBERNETES_SIDE).load())
        importlib.import_module("airflow_trainjob.watching.job_stream")
        return
    work = Path(args.work)
    names = json.loads((work / "jobs.json").read_text())
    out = asyncio.run(_measure(names, args.triggers, args.stacks, args.gc_freeze))
    (work / "measure.json").write_text(json.dumps(out))


# --- main process: cluster, jobs, table --------------------------------------------------------------------------


def _create_jobs(custom, names: list[str]) -> None:
    """Create the jobs from 8 threads (setup, not measured)."""

    def create(name: str) -> None:
        custom.create_namespaced_custom_object(GROUP, VERSION, single.NAMESPACE, PLURAL, job(name, single.NAMESPACE))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, names))


def _table(res: dict, before: dict | None) -> str:
    head = (
        f"N = {res['jobs']} PyTorchJobs in one namespace, T = {res['triggers']} TrainingJobTriggers on Airflow's "
        f"SharedStreamManager. Per phase, the longest lag of a 10 ms asyncio.sleep (what Airflow's watchdog "
        f"sees) / that lag less the garbage collections within it / the most CPU time the loop thread spent "
        f"between two ticks less collections (blocking work, whatever the machine's load); target < {TARGET} s\n\n"
    )
    labels = {
        "import": "import of the trigger class on the loop (the triggerer's get_trigger_by_classpath)",
        "load": "the trigger's Kubernetes side imported in a worker thread (kubernetes_side.load)",
        "start": f"{res['triggers']} triggers start: connect, LIST {res['jobs']} jobs, every trigger judges",
        "relist": f"relist after 410: LIST {res['jobs']} jobs again, every trigger judges",
    }

    def cell(r: dict, p: str) -> str:
        if p not in r["worst"]:  # (a --compare file from before this phase was measured)
            return "not measured"
        if p == "load" and r.get("load_s") is None:
            return "no lazy load: all of it in the import"
        own, cpu = r["worst_without_gc"][p], r["worst_cpu"][p]
        return (
            f"{r['worst'][p]:.3f} s / {own:.3f} s / {cpu:.3f} s ({r['over'][p]} of {r['ticks'][p]} ticks > {TARGET} s)"
        )

    cols = ["before", "after"] if before else ["this run"]
    runs = [before, res] if before else [res]
    lines = [f"| phase | target | {' | '.join(cols)} |", "|---|---|" + "---|" * len(cols)]
    for p in PHASES:
        lines.append(f"| {labels[p]} | < {TARGET} s | {' | '.join(cell(r, p) for r in runs)} |")
    gc_cells = [" / ".join(f"{r['gc_worst'].get(p, 0):.3f}" for p in ("load", "start", "relist")) + " s" for r in runs]
    lines.append(f"| longest cyclic garbage collection (load / start / relist) | | {' | '.join(gc_cells)} |")
    full = [" / ".join(str(r.get("full_gcs", {}).get(p, "—")) for p in ("load", "start", "relist")) for r in runs]
    lines.append(f"| full collections (load / start / relist) | | {' | '.join(full)} |")
    heaps = [f"{r['heap_objects'][0]:,} / {r['heap_objects'][1]:,}" for r in runs]
    lines.append(f"| objects the collector tracks (before the triggers / at the end) | | {' | '.join(heaps)} |")
    loads = [f"{r['loadavg']:.1f}" for r in runs]
    lines.append(f"| 1-minute load average of the machine | | {' | '.join(loads)} |")
    durations = [
        ("seconds of the import of the trigger class (import)", "import_s"),
        ("seconds of the Kubernetes side's import in its thread (load)", "load_s"),
        ("seconds until the first list was in (start)", "synced_s"),
        ("seconds of the relist", "relist_s"),
    ]
    for label, key in durations:
        figures = [f"{r[key]:.2f} s" if r.get(key) is not None else "—" for r in runs]
        lines.append(f"| {label} | | {' | '.join(figures)} |")
    return head + "\n".join(lines)


def main_run(args: argparse.Namespace) -> int:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster, Ports

    work = Path(tempfile.mkdtemp(prefix="trainjob-stalls-", dir="/tmp"))
    kept = Path(args.cluster_dir) if args.cluster_dir else None
    cluster = LocalCluster(kept or work / "cluster", Ports.from_base(args.port_base), workloads=False)
    try:
        cluster.up()
        api_client = cluster.api_client()
        core, custom = client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)
        names = [f"bench-{i:05d}" for i in range(args.jobs)]
        (work / "jobs.json").write_text(json.dumps(names))
        existing = set()
        if kept and core.list_namespace(field_selector=f"metadata.name={single.NAMESPACE}").items:
            listed = custom.list_namespaced_custom_object(GROUP, VERSION, single.NAMESPACE, PLURAL)
            existing = {j["metadata"]["name"] for j in listed["items"]}
        else:
            core.create_namespace({"metadata": {"name": single.NAMESPACE}})
        t = time.time()
        _create_jobs(custom, [n for n in names if n not in existing])
        say(f"created {len(set(names) - existing)} jobs in {time.time() - t:.1f} s")
        env = {
            **os.environ,
            f"AIRFLOW_CONN_{single.CONN_ID.upper()}": cluster.airflow_connection(single.NAMESPACE),
            "AIRFLOW_HOME": str(work / "airflow"),
            "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
            "LOOP_STALLS_KUBECONFIG": str(cluster.kubeconfig),
        }
        # Compiled bytecode for both processes, in the work dir (see the module's docstring).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        code = ["--code", str(Path(args.code).resolve())] if args.code else []
        subprocess.run([sys.executable, __file__, "--role", "warm", *code], env=env, check=True, timeout=600)
        command = [sys.executable, __file__, "--role", "measure", "--work", str(work), "--triggers", str(args.triggers)]
        command += ["--stacks"] if args.stacks else []
        command += ["--gc-freeze"] if args.gc_freeze else []
        command += code
        subprocess.run(command, env=env, check=True, timeout=900)
        res = json.loads((work / "measure.json").read_text())
        if args.save:
            Path(args.save).write_text(json.dumps(res, indent=1))
        before = json.loads(Path(args.compare).read_text()) if args.compare else None
        print(_table(res, before))
        long_gcs = ", ".join(f"{p} gen {g} {s:.3f} s" for p, g, s in res["long_gcs"]) or "none"
        print(f"\ncollections over {LONG_GC} s (phase, generation, seconds): {long_gcs}")
        print(f"\nstream cache: {res['stream_jobs']} jobs; trigger events: {res['events'] or 'none'} (none expected)")
        if args.stacks:
            for p in PHASES:
                for site, count in res["stalls"][p]:
                    print(f"stall > {STACK_THRESHOLD} s in {p} ({count}x): {site}", file=sys.stderr)
        return 0
    finally:
        end_run(None if kept is not None else cluster, work, args.keep)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="PyTorchJobs in the namespace (default 10000)")
    parser.add_argument("--triggers", type=int, default=1000, help="TrainingJobTriggers started (default 1000)")
    parser.add_argument("--port-base", type=int, default=PORT_BASE, help=f"cluster ports (default {PORT_BASE})")
    parser.add_argument("--stacks", action="store_true", help="print the loop thread's stack of each stall > 50 ms")
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() the measuring process once its imports are done (a triggerer-wide setting, for comparison)",
    )
    parser.add_argument("--save", help="write this run's figures to this JSON file")
    parser.add_argument("--compare", help="a --save file of an earlier run: printed as the 'before' column")
    parser.add_argument("--keep", action="store_true", help="keep the /tmp work dir after the run")
    parser.add_argument(
        "--cluster-dir",
        help="use (and leave running) the cluster in this state dir, creating only the jobs it lacks; "
        "stop it with: airflow-trainjob-local down --state-dir DIR",
    )
    parser.add_argument(
        "--code",
        help="measure the provider in this directory (holding airflow_trainjob/) instead of the installed one, "
        "e.g. the last commit's: git archive HEAD airflow_trainjob | tar -x -C /tmp/before",
    )
    parser.add_argument("--role", choices=["measure", "warm"], help=argparse.SUPPRESS)
    parser.add_argument("--work", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        measure_main(args)
        return 0
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())

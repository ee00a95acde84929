"""Where an asyncio loop stalls, and why: a probe for a real triggerer and for the benchmarks' stand-ins.

Airflow's triggerer says only ``Triggerer's async thread was blocked for X seconds``. This probe says what ran then.
:func:`install` patches asyncio's ``BaseEventLoop.run_forever``, so every loop that runs in the process (the
triggerer's trigger runner, forked after the patch, included) gets a probe: a task on the loop sleeps :data:`TICK`
seconds over and over and counts a stall when a sleep returns later than ``threshold`` (what Airflow's watchdog does,
finer), while a thread samples the loop thread's stack (and the other threads') whenever a tick is late. Each stall
becomes one JSON line in the output file, with what tells its cause apart:

- ``loop_cpu``: CPU seconds the loop thread itself spent in the stall (``time.thread_time``): its own work;
- ``process_cpu``: CPU seconds of the whole process (another thread holding the GIL shows as process, not loop, CPU);
- ``gc``: the garbage collections that overlapped it (generation, seconds, on the loop thread or not);
- ``machine_busy``: the share of all cores busy over it (``/proc/stat``): a process that was not scheduled because
  the machine was saturated spends little CPU of its own while the machine is busy;
- ``stacks``: the loop thread's stack at each sample (innermost frame first, site ``file:line function``).

:func:`cause` turns one record into one of ``gc``, ``loop``, ``other thread``, ``cpu starved`` or ``unknown``.

Use in a real triggerer: put ``benchmarks/probe_site`` on the triggerer's ``PYTHONPATH`` and set
``LOOP_PROBE_OUT`` (its ``sitecustomize`` installs the probe in a process whose command line names
``triggerer``). ``benchmarks/triggerer_stalls.py`` does that in a real Airflow deployment.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

#: Seconds between two watchdog ticks, and between two stack samples of a stall.
TICK = 0.01
#: Frames kept of each stack sample (innermost first).
STACK_DEPTH = 12
#: Share of a stall that makes a cause its cause (see :func:`cause`).
DOMINANT = 0.5


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from /proc/stat; (0, 0) when unreadable."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _site(frame: traceback.FrameSummary) -> str:
    parts = Path(frame.filename).parts
    short = "/".join(parts[-2:]) if len(parts) > 1 else frame.filename
    return f"{short}:{frame.lineno} {frame.name}"


class _Probe:
    """One loop's probe: a ticker task on the loop measures each stall exactly as Airflow's watchdog does (a sleep
    that returns late), with the loop thread's own CPU time; a sampler thread records the stacks meanwhile (it runs
    whenever the loop thread lets go of the GIL, which pure-Python work does every few milliseconds)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, out: Path, threshold: float) -> None:
        self.loop, self.out, self.threshold = loop, out, threshold
        self.loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._stacks: Counter[str] = Counter()
        self._others: Counter[str] = Counter()
        self._gcs: list[tuple[float, float, int, bool]] = []  # (start, end, generation, on the loop thread)
        self._gc_started: dict[int, float] = {}
        gc.callbacks.append(self._gc)
        threading.Thread(target=self._sample, name="loop-probe", daemon=True).start()

    def _gc(self, phase: str, info: dict[str, Any]) -> None:
        thread = threading.get_ident()
        if phase == "start":
            self._gc_started[thread] = time.monotonic()
        elif thread in self._gc_started:
            started = self._gc_started.pop(thread)
            self._gcs.append((started, time.monotonic(), info["generation"], thread == self.loop_thread))
            del self._gcs[:-50]

    async def tick(self) -> None:
        while True:
            before = self._beat = time.monotonic()
            cpu, process, machine = time.thread_time(), time.process_time(), _machine_ticks()
            self._stacks.clear()
            self._others.clear()
            await asyncio.sleep(TICK)
            lag = time.monotonic() - before - TICK
            if lag > self.threshold:
                self._record(before, lag, time.thread_time() - cpu, time.process_time() - process, machine)

    def _sample(self) -> None:
        while not self.loop.is_closed():
            time.sleep(TICK / 2)
            if time.monotonic() - self._beat - TICK <= self.threshold / 2:
                continue
            frames = sys._current_frames()
            for thread, frame in frames.items():
                summary = traceback.extract_stack(frame)[-STACK_DEPTH:]
                if thread == self.loop_thread:
                    self._stacks[" <- ".join(_site(f) for f in reversed(summary))] += 1
                elif thread != threading.get_ident():
                    self._others[" <- ".join(_site(f) for f in reversed(summary[-3:]))] += 1

    def _record(self, start: float, lag: float, loop_cpu: float, process_cpu: float, machine: tuple[int, int]) -> None:
        busy, total = _machine_ticks()
        end = start + TICK + lag
        gcs = [
            {"generation": g, "seconds": round(min(e, end) - max(s, start), 4), "on_loop": on_loop}
            for s, e, g, on_loop in self._gcs
            if e > start and s < end
        ]
        record = {
            "pid": os.getpid(),
            "at": round(time.time() - (time.monotonic() - start), 3),
            "lag": round(lag, 4),
            "loop_cpu": round(loop_cpu, 4),
            "process_cpu": round(process_cpu, 4),
            "machine_busy": round((busy - machine[0]) / (total - machine[1]), 3) if total > machine[1] else None,
            "load1": os.getloadavg()[0],
            "gc": gcs,
            "stacks": self._stacks.most_common(5),
            "other_threads": self._others.most_common(5),
        }
        with self.out.open("a") as f:
            f.write(json.dumps(record) + "\n")


def cause(record: dict[str, Any]) -> str:
    """The cause of one stall record: ``gc`` (collections overlapped most of it), ``loop`` (the loop thread's own
    work), ``other thread`` (the process ran, the loop thread did not: another thread held the GIL), ``cpu starved``
    (the process hardly ran while the machine was busy), else ``unknown``.

    :param record: one line the probe wrote (a dict).
    """
    lag = record["lag"]
    in_gc = sum(g["seconds"] for g in record["gc"])
    if in_gc >= DOMINANT * lag:
        return "gc"
    if record["loop_cpu"] - sum(g["seconds"] for g in record["gc"] if g["on_loop"]) >= DOMINANT * lag:
        return "loop"
    if record["process_cpu"] - record["loop_cpu"] >= DOMINANT * lag:
        return "other thread"
    if (record["machine_busy"] or 0) >= 0.9:
        return "cpu starved"
    return "unknown"


def install(out: str | os.PathLike[str], threshold: float = 0.1) -> None:
    """Watch every asyncio loop that runs in this process (and in processes forked from it) from now on.

    :param out: the file each stall is appended to, one JSON object per line.
    :param threshold: seconds of lag from which a tick counts as a stall.
    """
    path = Path(out)
    original = asyncio.BaseEventLoop.run_forever

    def run_forever(self: asyncio.BaseEventLoop) -> None:
        if not getattr(self, "_loop_probe", None):  # asyncio.run runs the loop again to cancel what is left
            probe = self._loop_probe = _Probe(self, path, threshold)  # type: ignore[attr-defined]
            self.call_soon(lambda: self.create_task(probe.tick()))
        original(self)

    asyncio.BaseEventLoop.run_forever = run_forever  # type: ignore[method-assign]

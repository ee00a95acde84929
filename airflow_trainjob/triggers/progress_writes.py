"""A deferred try's progress points, written by its trigger to the task instance's XCom while it waits, for the
Training job tab (:mod:`airflow_trainjob.domain.trigger_progress` decides when and what; this reads, feeds and acts).

The writes run in a task of their own, one at a time per trigger: the trigger's wait never waits for Airflow's API,
and a report held back (one came within the interval) is written once the interval has passed, another report or not.
Best effort: a write that fails is one warning in the task log (then the trigger tries again at its next due time)
and never fails the wait; the event still hands every point over at the end. Light on purpose (asyncio and the
domain only): the trigger's module imports it on the event loop; the XCom class comes from the trigger, loaded in a
worker thread.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_trainjob.domain.progress import Point
from airflow_trainjob.domain.trigger_progress import (
    TRIGGER_PROGRESS_KEY,
    has_new,
    progress_value,
    taken_up,
    write_delay,
    write_due,
    write_interval,
)
from airflow_trainjob.watching import cancel_safe

#: Seconds a read or a write of the XCom may take, at most (the triggerer's supervisor serves requests one by one).
XCOM_CALL_SECONDS = 30.0

#: How a held-back write waits for its turn (the unit tests' clock replaces it).
_sleep = asyncio.sleep

#: What the trigger hands in to write with: ``(records module, redact, XCom class)``, loaded in a worker thread.
Modules = Callable[[], tuple[Any, Any, Any]]


class ProgressWrites:
    """One trigger's writes of its points (:data:`~airflow_trainjob.domain.trigger_progress.TRIGGER_PROGRESS_KEY`).

    :param try_number: the deferred try.
    :param ref: the job, as the task log names it (``TrainJob ml/name``).
    :param log: the trigger's logger (the task log).
    :param modules: loads the records' module, Airflow's masker (``redact``) and the XCom class.
    """

    def __init__(self, try_number: int, ref: str, log: Any, modules: Modules) -> None:
        self.try_number, self.ref, self.log, self.modules = try_number, ref, log, modules
        self._written: Point | None = None  # the trigger's latest point in the last write that went through
        self._tried_at: float | None = None  # monotonic seconds the last attempt ended
        self._stored: Any = None  # what an earlier run of the trigger wrote for this try (read before the first write)
        self._read = False  # ... read
        self._warned = False  # a failure was said in the task log
        self._latest: list[Point] = []  # the points last offered
        self._where: dict[str, Any] = {}  # the task instance they are written for
        self._task: asyncio.Task[None] | None = None  # the write under way, or waiting for its turn

    def whole(self, points: Sequence[Mapping[str, Any]]) -> list[Point]:
        """``points`` with those an earlier run of the trigger wrote for the try (after a triggerer restart), once
        read: what the trigger writes, and what its event hands over.

        :param points: the trigger's points, oldest first.
        """
        return taken_up(self._stored, self.try_number, points) if self._read else [dict(p) for p in points]

    def offer(self, task_instance: Any, points: Sequence[Mapping[str, Any]]) -> None:
        """The trigger looked at its job and keeps waiting: have ``points`` written, at once when a write is due
        (:func:`~airflow_trainjob.domain.trigger_progress.write_due`), else when the interval has passed
        (:func:`~airflow_trainjob.domain.trigger_progress.write_delay`); a write already under way or waiting writes
        the latest points offered when its turn comes.

        :param task_instance: the trigger's ``task_instance`` (``dag_id``, ``task_id``, ``run_id``, ``map_index``).
        :param points: the trigger's points, oldest first.
        """
        if not points:
            return
        self._latest = [dict(p) for p in points]
        self._where = {
            "dag_id": task_instance.dag_id,
            "task_id": task_instance.task_id,
            "run_id": task_instance.run_id,
            "map_index": task_instance.map_index,
        }
        _writers().add(self)
        if (self._task is None or self._task.done()) and has_new(self._latest, self._written):
            self._task = asyncio.create_task(self._write_when_due(), name=f"progress of {self.ref} to XCom")

    async def stop(self) -> None:
        """The trigger stops waiting: a write under way (or waiting for its turn) is cancelled; the trigger no longer
        counts as a writer."""
        _writers().discard(self)
        task, self._task = self._task, None
        if task is not None:
            await cancel_safe.stop(task)

    async def _write_when_due(self) -> None:
        """Write the latest points each time a write is due, until none is new."""
        while True:
            interval, now = write_interval(len(_writers())), time.monotonic()
            if write_due(self._latest, self._written, self._tried_at, now, interval):
                await self._write(self._where, self._latest)
                self._tried_at = time.monotonic()  # from the end of a write: a slow supervisor is asked less often
            elif has_new(self._latest, self._written):
                await _sleep(write_delay(self._tried_at, now, interval))
            else:
                return

    async def _write(self, where: Mapping[str, Any], points: list[Point]) -> None:
        try:
            _, redact, xcom = await asyncio.to_thread(self.modules)
            if not self._read:  # never write over what an earlier run of the trigger wrote without reading it
                self._stored = await cancel_safe.within(
                    xcom.aget_one(key=TRIGGER_PROGRESS_KEY, **where), XCOM_CALL_SECONDS
                )
                self._read = True
            value = progress_value(self.try_number, self.whole(points), redact)
            await cancel_safe.within(xcom.aset(TRIGGER_PROGRESS_KEY, value, **where), XCOM_CALL_SECONDS)
        except Exception as e:  # the tab's points over time are no part of the wait
            self._say_failed(e)
            return
        if self._written is None:
            self.log.info(
                "Writing the training's progress to XCom %s for the Training job tab while the task waits (at most "
                "one write every %.0f s)",
                TRIGGER_PROGRESS_KEY,
                write_interval(len(_writers())),
            )
        self._written = points[-1]

    def _say_failed(self, e: Exception) -> None:
        said = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
        if self._warned:
            self.log.debug("Could not write the progress of %s for the Training job tab: %s", self.ref, said)
            return
        self._warned = True
        self.log.warning(
            "Could not write the progress of %s for the Training job tab (%s); the tab shows its points over time "
            "when the task resumes, and the trigger tries again meanwhile",
            self.ref,
            said,
        )


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.WeakSet[ProgressWrites]] = (
    weakref.WeakKeyDictionary()
)


def _writers() -> weakref.WeakSet[ProgressWrites]:
    """The triggers of the running event loop (one triggerer) whose jobs report progress now."""
    loop = asyncio.get_running_loop()
    found = _by_loop.get(loop)
    if found is None:
        found = _by_loop[loop] = weakref.WeakSet()
    return found

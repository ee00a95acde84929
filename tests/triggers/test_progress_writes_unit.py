"""A deferred try's trigger writes its progress points to the task instance's XCom while it waits
(:class:`~airflow_trainjob.triggers.progress_writes.ProgressWrites`), no cluster: the first at once, then only new
points and at most once an interval, never more than one write under way; before its first write it reads what an
earlier run of the trigger wrote for the try (a triggerer restart) and keeps it, in its writes and in its event; a
failure is one warning and never reaches the wait; the points are masked as records are."""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest

from airflow_trainjob.domain.progress import unpacked
from airflow_trainjob.domain.trigger_progress import TRIGGER_PROGRESS_KEY, progress_value
from airflow_trainjob.triggers import progress_writes
from airflow_trainjob.triggers.progress_writes import ProgressWrites

TI = types.SimpleNamespace(dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1)
WHERE = {"dag_id": "retrain", "task_id": "train", "run_id": "manual__1", "map_index": -1}


def point(second: int, percentage: int, loss: str = "0.5") -> dict[str, Any]:
    return {
        "at": f"2026-12-07T10:00:{second:02d}Z",
        "percentage": percentage,
        "estimated_remaining_seconds": 100 - percentage,
        "metrics": {"loss": loss},
    }


A, B, C, D = point(1, 10), point(2, 20), point(3, 30), point(4, 40)


class FakeXCom:
    """The XCom class as the trigger reaches it (``aget_one``, ``aset``), holding one value per key."""

    def __init__(self, stored: Any = None, fail: int = 0) -> None:
        self.values: dict[str, Any] = {TRIGGER_PROGRESS_KEY: stored} if stored is not None else {}
        self.calls: list[str] = []
        self.fail = fail  # the first this many calls raise
        self.release: asyncio.Event | None = None  # when set: aset waits for it

    async def aget_one(self, *, key: str, **where: Any) -> Any:
        assert where == WHERE, where
        self.calls.append("get")
        if self.fail:
            self.fail -= 1
            raise ConnectionError("the supervisor did not answer")
        return self.values.get(key)

    async def aset(self, key: str, value: Any, **where: Any) -> None:
        assert where == WHERE, where
        self.calls.append("set")
        if self.release is not None:
            await self.release.wait()
        self.values[key] = value


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def _say(self, level: str, message: str, *args: Any) -> None:
        self.lines.append((level, message % args))

    def info(self, message: str, *args: Any) -> None:
        self._say("info", message, *args)

    def warning(self, message: str, *args: Any) -> None:
        self._say("warning", message, *args)

    def debug(self, message: str, *args: Any) -> None:
        self._say("debug", message, *args)


def writes(xcom: FakeXCom, log: Log, try_number: int = 2) -> ProgressWrites:
    def modules() -> tuple[Any, Any, Any]:
        return None, lambda text: text.replace("s3cr3t", "***"), xcom

    return ProgressWrites(try_number, "TrainJob ml/t", log, modules)


async def settled(w: ProgressWrites) -> None:
    task = w._task
    if task is not None:
        await asyncio.wait((task,))


def written(xcom: FakeXCom) -> list[dict[str, Any]]:
    value = xcom.values[TRIGGER_PROGRESS_KEY]
    assert value["try_number"] == 2
    return unpacked(value["progress"])


@pytest.fixture
def interval(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The write interval, as the test sets it (seconds)."""
    seconds = [3600.0]
    monkeypatch.setattr(progress_writes, "write_interval", lambda writers: seconds[0])
    return seconds


class Clock:
    """The writes' clock (``time.monotonic``) and their wait for a turn: a wait advances the clock by what it waits
    once the test lets it go (:attr:`go`)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []
        self.go = asyncio.Event()

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        await self.go.wait()
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(progress_writes, "time", types.SimpleNamespace(monotonic=made.monotonic))
    monkeypatch.setattr(progress_writes, "_sleep", made.sleep)
    return made


def test_the_first_point_goes_at_once_then_new_ones_once_an_interval_even_without_another_report(interval, clock):
    interval[0] = 30.0
    xcom, log = FakeXCom(), Log()

    async def main() -> None:
        w = writes(xcom, log)
        w.offer(TI, [A])
        await settled(w)
        assert written(xcom) == [A] and xcom.calls == ["get", "set"], "the first at once, read once before it"
        w.offer(TI, [A])
        assert w._task is None or w._task.done(), "nothing new: nothing to write"
        clock.now += 10
        w.offer(TI, [A, B])  # new, 10 s after the write: held back for the other 20
        for _ in range(20):
            await asyncio.sleep(0)
        assert xcom.calls == ["get", "set"] and clock.waits == [20.0], (xcom.calls, clock.waits)
        w.offer(TI, [A, B, C])  # the latest offered is what goes
        clock.go.set()
        await settled(w)  # no other report comes: written when the interval has passed all the same
        assert written(xcom) == [A, B, C] and xcom.calls == ["get", "set", "set"]
        assert clock.waits == [20.0], "one write for both reports"
        w.offer(TI, [A, B, C])
        assert w._task is None or w._task.done(), "the same points are not written again"
        await w.stop()

    asyncio.run(main())
    assert [level for level, _ in log.lines] == ["info"], log.lines
    assert TRIGGER_PROGRESS_KEY in log.lines[0][1]


def test_one_write_at_a_time_and_stop_cancels_the_one_under_way(interval):
    interval[0] = 0.0
    xcom, log = FakeXCom(), Log()

    async def main() -> None:
        xcom.release = asyncio.Event()
        w = writes(xcom, log)
        w.offer(TI, [A])
        for _ in range(5):
            await asyncio.sleep(0)
        w.offer(TI, [A, B])  # the first write waits on Airflow: no second one
        for _ in range(5):
            await asyncio.sleep(0)
        assert xcom.calls == ["get", "set"]
        task = w._task
        await w.stop()
        assert task is not None and task.cancelled()
        assert len(progress_writes._writers()) == 0, "a stopped trigger no longer counts as a writer"

    asyncio.run(main())
    assert TRIGGER_PROGRESS_KEY not in xcom.values


def test_a_trigger_run_again_keeps_what_its_earlier_run_wrote_for_the_try(interval):
    xcom, log = FakeXCom(stored=progress_value(2, [A, B])), Log()
    other = FakeXCom(stored=progress_value(1, [A, B])), Log()

    async def main() -> None:
        w = writes(xcom, log)
        assert w.whole([C]) == [C], "before the read: its own"
        w.offer(TI, [C])
        await settled(w)
        assert written(xcom) == [A, B, C]
        assert w.whole([C, D]) == [A, B, C, D], "the event hands them over too"
        earlier_try = writes(*other)
        earlier_try.offer(TI, [C])
        await settled(earlier_try)
        assert unpacked(other[0].values[TRIGGER_PROGRESS_KEY]["progress"]) == [C], "an earlier try's are not kept"
        await w.stop()
        await earlier_try.stop()

    asyncio.run(main())


def test_a_failure_is_one_warning_and_nothing_is_written_over_what_could_not_be_read(interval, clock):
    interval[0] = 30.0
    xcom, log = FakeXCom(stored=progress_value(2, [A]), fail=2), Log()

    async def main() -> None:
        clock.go.set()
        w = writes(xcom, log)
        w.offer(TI, [B, C])
        await settled(w)  # tried again once the interval has passed, until it goes through
        assert xcom.calls == ["get", "get", "get", "set"] and clock.waits == [30.0, 30.0]
        assert written(xcom) == [A, B, C], "the earlier run's point kept: the read came first"
        await w.stop()

    asyncio.run(main())
    levels = [level for level, _ in log.lines]
    assert levels == ["warning", "debug", "info"], log.lines
    assert "the supervisor did not answer" in log.lines[0][1]


def test_the_points_are_masked_as_records_are(interval):
    xcom, log = FakeXCom(), Log()

    async def main() -> None:
        w = writes(xcom, log)
        w.offer(TI, [{**A, "metrics": {"note": "token s3cr3t"}}])
        await settled(w)
        await w.stop()

    asyncio.run(main())
    assert written(xcom)[0]["metrics"] == {"note": "token ***"}

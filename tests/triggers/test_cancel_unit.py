"""A cancellation is never lost (no cluster): the triggerer cancels a trigger once, with a message, when its task is
marked failed or success or cleared, and runs ``on_kill`` only when that cancellation ends the trigger. Each case
cancels at every pass of the event loop around the moment the awaited work finishes -- the window in which
``asyncio.wait_for`` (Python 3.10, 3.11) returned the result instead: a trigger woken by a change of its job then went
on waiting, and its job was left running (seen in CI: a deferred task marked failed, its job still running 195 s
later)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from airflow_trainjob.watching import cancel_safe
from airflow_trainjob.watching.job_stream import JobChanges
from tests.support.triggerer_model import (
    USER_ACTION,
    kill_as_the_triggerer_does,
)

#: Passes of the event loop tried after the work is released: more than the window, which is 1-3 passes.
PASSES = 12


async def cancelled_at(pass_number: int, start: Callable[[], Awaitable[object]], release: Callable[[], None]) -> str:
    """Start ``start()`` as a task, let it settle, ``release()`` what it waits for, cancel it ``pass_number`` passes
    later: ``"cancelled"`` (with Airflow's message), ``"ended first"`` (it had ended before the cancel), or what
    happened instead."""
    task = asyncio.ensure_future(start())
    for _ in range(20):
        await asyncio.sleep(0)
    release()
    for _ in range(pass_number):
        await asyncio.sleep(0)
    if not task.cancel(USER_ACTION):
        return "ended first"
    done, _ = await asyncio.wait((task,), timeout=2)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return "kept running"
    if not task.cancelled():
        return f"returned {task.exception() or task.result()!r}"
    try:
        task.result()
    except asyncio.CancelledError as e:
        return "cancelled" if e.args == (USER_ACTION,) else f"cancelled without the message: {e.args}"
    raise AssertionError("unreachable")


def every_pass(case: Callable[[int], Awaitable[str]]) -> dict[int, str]:
    return {n: asyncio.run(case(n)) for n in range(PASSES)}


def test_within_keeps_a_cancellation_at_every_pass():
    async def case(n: int) -> str:
        released = asyncio.Event()

        async def work() -> int:
            await released.wait()
            return 7

        return await cancelled_at(n, lambda: cancel_safe.within(work(), 60), released.set)

    outcomes = every_pass(case)
    assert set(outcomes.values()) <= {"cancelled", "ended first"}, outcomes
    assert outcomes[0] == "cancelled"


def test_set_within_keeps_a_cancellation_at_every_pass():
    async def case(n: int) -> str:
        event = asyncio.Event()
        return await cancelled_at(n, lambda: cancel_safe.set_within(event, 60), event.set)

    outcomes = every_pass(case)
    assert set(outcomes.values()) <= {"cancelled", "ended first"}, outcomes


def test_stop_keeps_a_cancellation_of_its_caller():
    async def case(n: int) -> str:
        release = asyncio.Event()

        async def helper() -> None:
            try:
                await asyncio.sleep(60)
            finally:
                await release.wait()  # ends a while after it is cancelled

        async def caller() -> str:
            started = asyncio.ensure_future(helper())
            await asyncio.sleep(0)  # (a task cancelled before its first step never runs its finally)
            await cancel_safe.stop(started)
            return "stopped"

        return await cancelled_at(n, caller, release.set)

    outcomes = every_pass(case)
    assert set(outcomes.values()) <= {"cancelled", "ended first"}, outcomes
    assert outcomes[0] == "cancelled"


def test_within_times_out_and_stops_the_work():
    async def main() -> tuple[bool, bool]:
        work = asyncio.ensure_future(asyncio.sleep(60))
        with pytest.raises(asyncio.TimeoutError):
            await cancel_safe.within(work, 0.05)
        return work.cancelled(), await cancel_safe.set_within(asyncio.Event(), 0.05)

    assert asyncio.run(main()) == (True, False)


def test_within_returns_and_raises_what_the_work_does():
    async def fails() -> None:
        raise ValueError("bad")

    async def main() -> int:
        with pytest.raises(ValueError, match="bad"):
            await cancel_safe.within(fails(), 5)
        return await cancel_safe.within(asyncio.sleep(0, 3), 5)

    assert asyncio.run(main()) == 3


def test_despite_cancellation_ends_the_work_through_repeated_cancellations_then_raises_the_first():
    """Airflow's triggerer cancels a killed trigger's task again at each sync until it ends, ``on_kill`` included:
    the work goes on to its end, and the first cancellation (with its message) is raised after it."""

    async def main() -> tuple[list[str], str]:
        done: list[str] = []

        async def work() -> None:
            await asyncio.sleep(0.3)
            done.append("work ended")

        task = asyncio.ensure_future(cancel_safe.despite_cancellation(work(), 5))
        for n in range(5):
            await asyncio.sleep(0.05)
            task.cancel(USER_ACTION if n == 0 else f"again {n}")
        await asyncio.wait((task,))
        try:
            task.result()
        except asyncio.CancelledError as e:
            return done, str(e.args)
        return done, "returned"

    assert asyncio.run(main()) == (["work ended"], str((USER_ACTION,)))


def test_despite_cancellation_returns_what_the_work_does_and_stops_it_after_its_seconds():
    async def main() -> tuple[int, bool]:
        returned = await cancel_safe.despite_cancellation(asyncio.sleep(0, 3), 5)
        work = asyncio.ensure_future(asyncio.sleep(60))
        with pytest.raises(asyncio.TimeoutError):
            await cancel_safe.despite_cancellation(work, 0.05)
        await asyncio.sleep(0)
        return returned, work.cancelled()

    assert asyncio.run(main()) == (3, True)


class _Unsynced:
    """A stream whose cache cannot be judged yet: the woken trigger goes back to waiting without a read."""

    synced = False
    error = None
    failed_pods = None  # (a stream without a pod watch, as the UI's)


def test_a_trigger_woken_by_its_job_as_it_is_cancelled_ends_with_airflows_message():
    """The trigger's wait (the shared stream's change naming its job wakes it) at every pass around the wake: the
    cancellation ends it, with the message Airflow runs on_kill for."""

    async def case(n: int) -> str:
        trigger = TrainingJobTrigger(kind="PyTorchJob", name="train", namespace="ml", poll_interval=1, timeout=600)
        feed: asyncio.Queue[JobChanges] = asyncio.Queue()

        async def shared() -> AsyncIterator[JobChanges]:
            while True:
                yield await feed.get()

        events = trigger.filter_shared_stream(shared())
        release = lambda: feed.put_nowait(JobChanges(frozenset({"train"}), _Unsynced()))
        try:
            return await cancelled_at(n, events.__anext__, release)
        finally:
            await events.aclose()  # type: ignore[attr-defined]  # (an async generator)

    outcomes = every_pass(case)
    assert set(outcomes.values()) == {"cancelled"}, outcomes


class _SlowKill:
    """An ``on_kill`` whose work takes ``steps`` awaits of ``pause`` seconds each, run through
    :func:`cancel_safe.despite_cancellation`, for at most ``seconds``."""

    def __init__(self, steps: int, pause: float, seconds: float) -> None:
        self.steps, self.pause, self.seconds = steps, pause, seconds
        self.done: list[int] = []

    async def work(self) -> None:
        for step in range(self.steps):
            await asyncio.sleep(self.pause)
            self.done.append(step)

    async def on_kill(self) -> None:
        await cancel_safe.despite_cancellation(self.work(), self.seconds)


def test_on_kill_goes_on_while_the_triggerer_cancels_it_again_at_every_pass():
    """Airflow's triggerer cancels the trigger again at every pass of its loop while on_kill runs: the work is done
    all the same (20 steps through about 100 cancellations). Airflow then sees a cancellation ("cut": raised again
    once the work has ended, or, up to Python 3.11, its ``asyncio.wait_for`` stops waiting at the second one and the
    work finishes on the loop by itself)."""
    kill = _SlowKill(steps=20, pause=0.005, seconds=5)
    ended = asyncio.run(kill_as_the_triggerer_does(kill, timeout=10, every=0.001, linger=1.0))
    assert ended == "cut", ended
    assert kill.done == list(range(20))


def test_on_kill_stops_its_work_at_its_deadline():
    """Past its own deadline on_kill's work stops, whether a cancellation comes then or not: a triggerer that shuts
    down waits no longer, and nothing of it runs on."""
    kill = _SlowKill(steps=1000, pause=0.005, seconds=0.1)
    ended = asyncio.run(kill_as_the_triggerer_does(kill, timeout=10, every=0.01, linger=0.5))
    assert ended in {"cut", "raised: TimeoutError()"} and 5 <= len(kill.done) < 40, (ended, len(kill.done))


def test_the_model_of_the_triggerer_cuts_an_on_kill_that_does_not_go_on():
    """The model is right about Airflow: an on_kill that awaits its work directly is cut at the first cancellation
    that comes after it started (what the triggerer did to the provider's on_kill before)."""

    class Plain(_SlowKill):
        async def on_kill(self) -> None:
            await self.work()

    kill = Plain(steps=20, pause=0.005, seconds=5)
    assert asyncio.run(kill_as_the_triggerer_does(kill, timeout=10, every=0.001, linger=0.5)) == "cut"
    assert len(kill.done) < 20

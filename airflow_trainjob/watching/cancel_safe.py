"""Waits with a time limit, and stops of helper tasks, that never lose a cancellation of the task that waits.

The triggerer cancels a trigger once, with a message, when its task instance is marked failed or success or cleared,
and runs ``on_kill`` only when that cancellation ends the trigger. Two common idioms can lose it:

- ``asyncio.wait_for`` on Python 3.10 and 3.11 returns the awaited result when the waiting task is cancelled in the
  pass of the event loop in which the awaited work finishes (CPython issue 86296, fixed in 3.12): a trigger woken
  by a change of its job at that moment went on waiting, its job left running.
- ``task.cancel()`` then ``await task`` under ``contextlib.suppress(asyncio.CancelledError)``: a cancellation of the
  waiting task that arrives meanwhile is suppressed with the helper's.

:func:`within`, :func:`set_within` and :func:`stop` wait through :func:`asyncio.wait`, which never returns in place of
a cancellation of its caller and never raises what the awaited task raised. The project's lint bans
``asyncio.wait_for`` in the provider.

The other way round, :func:`through_cancellations` keeps ``on_kill``'s work going through the cancellations that
Airflow's triggerer repeats while it runs, until a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``await awaitable`` for at most ``seconds``, as ``asyncio.wait_for`` does but keeping every cancellation.

    :param awaitable: a coroutine or future; run as a task of its own.
    :param seconds: the longest wait (seconds); None waits as long as it takes.
    :returns: what ``awaitable`` returned.
    :raises asyncio.TimeoutError: it had not finished after ``seconds`` (it is cancelled, and waited for).
    :raises asyncio.CancelledError: the caller was cancelled (``awaitable`` is cancelled too); with its message.
    :raises Exception: what ``awaitable`` raised.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        await asyncio.wait((task,), timeout=seconds)
    except BaseException:
        task.cancel()  # the caller goes; so does its work (not waited for: the caller may be cancelled again)
        task.add_done_callback(_retrieve)
        raise
    if not task.done():
        await stop(task)
        if task.cancelled():
            raise asyncio.TimeoutError()
    return task.result()


async def set_within(event: asyncio.Event, seconds: float | None) -> bool:
    """Wait until ``event`` is set, at most ``seconds``.

    :param event: the event waited for.
    :param seconds: the longest wait (seconds); None waits as long as it takes.
    :returns: whether it is set.
    :raises asyncio.CancelledError: the caller was cancelled; with its message.
    """
    try:
        await within(event.wait(), seconds)
    except asyncio.TimeoutError:
        pass
    return event.is_set()


async def stop(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it has ended, however it ends (what it raised is dropped).

    :param task: a helper task of the caller's.
    :raises asyncio.CancelledError: the caller was cancelled while it waited (``task`` may still be ending).
    """
    task.cancel()
    task.add_done_callback(_retrieve)
    await asyncio.wait((task,))


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark what an ended helper raised as seen (asyncio logs an exception nobody retrieved)."""
    if not task.cancelled():
        task.exception()


async def through_cancellations(work: Awaitable[T], until: float) -> T:
    """``await work`` (run as a task of its own, cancelled at ``until`` whatever happens), going on through
    cancellations of the caller that arrive before ``until``; one that arrives later cancels the work and propagates.

    What it is for: Airflow's triggerer (3.3) cancels a trigger's task once when its task instance is marked failed
    or success or cleared, and then again at every pass of its loop (about once a second) for as long as the trigger
    has not finished -- ``on_kill`` included, whose first ``await`` after that second would end it (Airflow swallows
    that cancellation). ``on_kill`` runs its work through this until its own deadline, so the deletion and the record
    of the try's end are not cut short. On Python 3.11 and older, Airflow's ``asyncio.wait_for`` around ``on_kill``
    gives up waiting at the second cancellation that comes while it waits: the work then finishes on the triggerer's
    loop by itself (kept referenced here), by ``until`` at the latest.

    :param work: a coroutine or future.
    :param until: ``time.monotonic()`` after which a cancellation is obeyed, and at which the work is stopped
        (seconds).
    :returns: what ``work`` returned.
    :raises asyncio.TimeoutError: the work had not finished at ``until``.
    :raises asyncio.CancelledError: the caller was cancelled after ``until`` (``work`` is cancelled too).
    :raises Exception: what ``work`` raised.
    """
    task = asyncio.ensure_future(within(work, max(0.0, until - time.monotonic())))
    _kept.add(task)  # the loop holds tasks weakly: one whose caller stopped waiting must not be collected
    task.add_done_callback(_kept.discard)
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done() or time.monotonic() >= until:
                task.cancel()
                task.add_done_callback(_retrieve)
                raise
            current = asyncio.current_task()
            if current is not None and hasattr(current, "uncancel"):  # Python 3.11+: this one is taken care of
                current.uncancel()


#: The works of :func:`through_cancellations` under way.
_kept: set[asyncio.Future[Any]] = set()

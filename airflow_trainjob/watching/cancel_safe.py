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

The triggerer also cancels a killed trigger's task again at each sync with its supervisor (about every second: the
supervisor sends the trigger's id to cancel until the trigger has ended), ``on_kill`` included, which it awaits
inside that task. :func:`despite_cancellation` lets a bounded piece of work (``on_kill``'s deletion of the job) reach
its end through them, and raises the first of them afterwards.
"""

from __future__ import annotations

import asyncio
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


async def despite_cancellation(awaitable: Awaitable[T], seconds: float) -> T:
    """``await awaitable`` to its end, for at most ``seconds``, even while the caller is cancelled again and again.

    The cancellations are kept, not lost: the first one is raised once the work has ended. The work runs as a task of
    its own, held here until it ends (the caller's waiter may give up on the caller first: Python 3.11's
    ``asyncio.wait_for`` returns after a second cancellation, leaving its awaited task to run on).

    :param awaitable: a coroutine or future, bounded by itself; run as a task of its own.
    :param seconds: the longest wait (seconds); then the work is cancelled (not waited for).
    :returns: what ``awaitable`` returned, when the caller was not cancelled meanwhile.
    :raises asyncio.CancelledError: the caller was cancelled meanwhile (the first cancellation, with its message),
        once the work has ended; what it returned or raised is dropped.
    :raises asyncio.TimeoutError: it had not finished after ``seconds``.
    :raises Exception: what ``awaitable`` raised.
    """
    task = asyncio.ensure_future(awaitable)
    _held.add(task)
    task.add_done_callback(_held.discard)
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    cancelled: asyncio.CancelledError | None = None
    while not task.done() and (left := until - loop.time()) > 0:
        try:
            await asyncio.wait((task,), timeout=left)
        except asyncio.CancelledError as e:  # kept, and raised at the end
            cancelled = cancelled or e
    if not task.done():
        task.cancel()
        task.add_done_callback(_retrieve)
        raise cancelled or asyncio.TimeoutError()
    if cancelled is not None:
        _retrieve(task)
        raise cancelled
    return task.result()


#: The tasks :func:`despite_cancellation` runs, held until they end (the event loop keeps only weak references).
_held: set[asyncio.Future[Any]] = set()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Mark what an ended helper raised as seen (asyncio logs an exception nobody retrieved)."""
    if not task.cancelled():
        task.exception()

"""How often the triggerer reads the lead replicas' logs of the jobs it waits for: one budget per triggerer process.

A waiting :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger` copies its lead replica's new lines into
the task log by *looks*: one LIST of the job's index-0 pods (where the lead is) and one ``pods/log`` GET of what is
new (more when the log falls behind, or the container restarted). No look holds a connection open: a follow stream
per job would hold one connection through the API server to each kubelet for the whole wait, 1,000 of them for
1,000 jobs. Every look goes through the process's :class:`LogReadBudget`:

* a look waits for its place in a rate of :data:`LOG_REQUESTS_PER_SECOND` requests a second, first come first
  served (:meth:`~LogReadBudget.reserve`, :data:`REQUESTS_PER_LOOK` requests' worth), then makes its requests
  back to back; requests beyond that (a log catching up, a restart, the cursor's record on the job) are charged to
  the rate, so later looks wait for them. With N jobs following their logs, each job is looked at every
  ``max(LOG_LOOK_SECONDS, N * REQUESTS_PER_LOOK / LOG_REQUESTS_PER_SECOND)`` seconds (every 60 s up to 150 jobs;
  every 400 s at 1,000), so the API server's load from log reads stays at about five requests a second per
  triggerer however many jobs wait;
* at most :data:`LOG_REQUESTS_AT_ONCE` requests in flight at the same time (the connections log reads hold, besides
  the stream's).

The read that must not wait (the rest of the lead's log, before the trigger stops its pod at the job's end) skips the
queue, not the concurrency, and is charged to the rate. Light on purpose (asyncio only): the trigger's module imports
it on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Iterator

#: Seconds between two looks at one job's lead log, at least (while fewer jobs follow theirs than the rate allows).
LOG_LOOK_SECONDS = 60.0
#: Requests a second the triggerer process makes for log reads, at most (the LISTs and GETs of all its looks).
LOG_REQUESTS_PER_SECOND = 5.0
#: Log-read requests in flight at the same time in the triggerer process, at most.
LOG_REQUESTS_AT_ONCE = 4
#: Requests of a look that finds the lead running and its log keeping up: one LIST, one GET.
REQUESTS_PER_LOOK = 2


class LogReadBudget:
    """The log-read budget of one event loop (one triggerer process): a rate, a concurrency and the look interval.

    :param rate: requests per second, at most; None: :data:`LOG_REQUESTS_PER_SECOND`.
    :param at_once: requests in flight at the same time, at most; None: :data:`LOG_REQUESTS_AT_ONCE`.
    :param look_seconds: seconds between two looks at one job, at least; None: :data:`LOG_LOOK_SECONDS`.
    """

    def __init__(
        self, rate: float | None = None, at_once: int | None = None, look_seconds: float | None = None
    ) -> None:
        self.rate = LOG_REQUESTS_PER_SECOND if rate is None else rate
        self.look_seconds = LOG_LOOK_SECONDS if look_seconds is None else look_seconds
        self.readers = 0  # triggers following a log now
        self.in_flight = 0  # requests under way now (the most: see peak)
        self.peak = 0
        self.requests = 0  # requests made, in all
        self._slots = asyncio.Semaphore(LOG_REQUESTS_AT_ONCE if at_once is None else at_once)
        self._next = 0.0  # monotonic time of the next free slot of the rate

    def look_interval(self) -> float:
        """Seconds from one look at a job's lead log to its next: the readers share the rate."""
        return max(self.look_seconds, self.readers * REQUESTS_PER_LOOK / self.rate)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A trigger follows its lead log while the context lasts (it counts in :meth:`look_interval`)."""
        self.readers += 1
        try:
            yield
        finally:
            self.readers -= 1

    async def reserve(self, requests: int = REQUESTS_PER_LOOK) -> None:
        """Wait for the place of ``requests`` requests in the rate, first come first served.

        :param requests: how many requests the place is for (count).
        """
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + requests / self.rate
        if slot > now:
            await asyncio.sleep(slot - now)

    def charge(self, requests: int) -> None:
        """Requests made without a place reserved for them: the next places wait that much longer.

        :param requests: how many (count; 0 or less: none).
        """
        if requests > 0:
            self._next = max(self._next, time.monotonic()) + requests / self.rate

    @contextlib.asynccontextmanager
    async def request(self) -> AsyncIterator[None]:
        """Hold one request in flight: wait for a free connection (see :meth:`reserve` and :meth:`charge` for the
        rate)."""
        async with self._slots:
            self.in_flight += 1
            self.requests += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                yield
            finally:
                self.in_flight -= 1


_budgets: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LogReadBudget] = weakref.WeakKeyDictionary()


def budget() -> LogReadBudget:
    """The log-read budget of the running event loop (the triggerer runs all its triggers on one).

    :raises RuntimeError: no event loop is running.
    """
    loop = asyncio.get_running_loop()
    found = _budgets.get(loop)
    if found is None:
        found = _budgets[loop] = LogReadBudget()
    return found

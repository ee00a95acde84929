"""A work queue with the semantics of client-go's rate-limited work queue, for hashable keys.

- a key queued several times before a worker takes it is processed once (deduplication);
- a key is never processed by two workers at once: queued while being processed, it is processed
  again after :meth:`WorkQueue.done`;
- :meth:`WorkQueue.add_after` queues a key later (seconds), :meth:`WorkQueue.add_rate_limited` later by a
  per-key exponential backoff that :meth:`WorkQueue.forget` resets.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Hashable

__all__ = ["WorkQueue"]


class WorkQueue:
    """Thread-safe deduplicating work queue with delayed and rate-limited adds.

    :param base_delay: first backoff of :meth:`add_rate_limited`, seconds; doubles per failure.
    :param max_delay: cap of that backoff, seconds.
    """

    def __init__(self, base_delay: float = 0.5, max_delay: float = 30.0) -> None:
        self._cond = threading.Condition()
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._delayed: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self._failures: dict[Hashable, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._shutdown = False

    def add(self, key: Hashable) -> None:
        """Queue ``key`` now (no-op when it is already queued)."""
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: Hashable) -> None:
        if self._shutdown or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: Hashable, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds (at once when ``delay <= 0``)."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown:
                return
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: Hashable) -> float:
        """Queue ``key`` after its backoff (``base_delay * 2**failures``, capped); returns that delay."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = min(self._max_delay, self._base_delay * (2**failures))
        self.add_after(key, delay)
        return delay

    def forget(self, key: Hashable) -> None:
        """Reset the backoff of ``key`` (call after it was processed successfully)."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> Hashable | None:
        """Take the next key, waiting up to ``timeout`` seconds; ``None`` on timeout or shutdown.

        The caller must call :meth:`done` with the key when finished.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_due_locked()
                if self._shutdown:
                    return None
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                wait = None if deadline is None else deadline - time.monotonic()
                if self._delayed:
                    until_due = self._delayed[0][0] - time.monotonic()
                    wait = until_due if wait is None else min(wait, until_due)
                if wait is not None and wait <= 0:
                    if deadline is not None and time.monotonic() >= deadline:
                        return None
                    continue
                self._cond.wait(wait)

    def _promote_due_locked(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            _, _, key = heapq.heappop(self._delayed)
            self._add_locked(key)

    def done(self, key: Hashable) -> None:
        """Mark ``key`` processed; if it was queued meanwhile, it becomes available again."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        """Wake every waiting :meth:`get` with ``None`` and refuse new keys."""
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

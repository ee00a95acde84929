"""What every controller of the local cluster runs the same way (the v1 training controller, the JobSet controller,
the TrainJob controller): list-watch loops (:class:`~airflow_trainjob_local.informer.Informer`) feed a work queue
(:class:`~.workqueue.WorkQueue`), worker threads take keys from it and reconcile them; how a failed reconcile is
retried and logged is decided here once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from airflow_trainjob_local.controller.workqueue import WorkQueue
from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.kube import ApiException, is_conflict, is_namespace_terminating

__all__ = ["REQUEUE_SLACK", "ControllerLoop", "RetryLater"]

log = logging.getLogger(__name__)

#: Extra seconds added to a requested requeue, so a deadline is surely past when the object is looked at again
#: (times are compared with whole-second precision).
REQUEUE_SLACK = 1.0


class RetryLater(Exception):
    """A reconcile that cannot go on yet (e.g. a TrainJob's runtime does not exist): the key is retried with its
    exponential backoff, and the message logged at INFO (not as an error)."""


class ControllerLoop:
    """Watch loops and worker threads around one work queue. A subclass appends its informers to :attr:`watchers`
    (their handlers add keys to :attr:`queue`) and implements :meth:`process`.

    :param workers: reconcile threads.
    :param thread_prefix: the workers' thread names, ``<prefix>-<i>`` (they name the controller in its log).
    """

    def __init__(self, *, workers: int, thread_prefix: str) -> None:
        self.queue = WorkQueue()
        self.watchers: list[Informer] = []
        self._workers = [
            threading.Thread(target=self._work, name=f"{thread_prefix}-{i}", daemon=True) for i in range(workers)
        ]

    def process(self, key: Any) -> float | None:
        """Reconcile what ``key`` names.

        :param key: a key a handler queued.
        :returns: after how many seconds the object wants another look (a deadline, a TTL), or None.
        :raises RetryLater: it cannot go on yet.
        :raises ApiException: the API refused a request (retried with backoff).
        """
        raise NotImplementedError

    def start(self) -> None:
        """Start the watch loops and the workers (returns at once)."""
        for thread in [*self.watchers, *self._workers]:
            thread.start()

    def wait_synced(self, timeout: float) -> bool:
        """Wait until every watch loop has listed once; False on timeout (seconds)."""
        return all(w.synced.wait(timeout) for w in self.watchers)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching, let running reconciles finish (up to ``timeout`` seconds), stop the workers."""
        for watcher in self.watchers:
            watcher.stop()
        self.queue.shutdown()
        for thread in self._workers:
            thread.join(timeout)

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                again = self.process(key)
                self.queue.forget(key)
                if again is not None:
                    self.queue.add_after(key, max(0.0, again) + REQUEUE_SLACK)
            except RetryLater as exc:
                delay = self.queue.add_rate_limited(key)
                log.info("%s: %s; retrying in %.1fs", key, exc, delay)
            except ApiException as exc:
                if is_namespace_terminating(exc):
                    # The namespace (and so the object) is going away; its DELETED event will follow.
                    log.debug("%s: namespace is being deleted; dropping", key)
                    self.queue.forget(key)
                    continue
                delay = self.queue.add_rate_limited(key)
                if is_conflict(exc):
                    log.info("%s: the object changed meanwhile (409); retrying in %.1fs", key, delay)
                else:
                    log.warning("%s: API error HTTP %s %s; retrying in %.1fs", key, exc.status, exc.reason, delay)
            except Exception:
                delay = self.queue.add_rate_limited(key)
                log.exception("%s: reconcile failed; retrying in %.1fs", key, delay)
            finally:
                self.queue.done(key)

"""The failed runs' log tails a trigger reads while it waits: a pod its controller deletes with the job's failure
takes its log with it (a ``TrainJob``'s node Job deletes its pod restarting in place when its ``backoffLimit`` is
reached; a v1 job's ``cleanPodPolicy: All``), before the resumed task's verdict could read it. So each time the
stream's pod watch keeps a failed pod of the job (:class:`~airflow_trainjob.watching.failed_pods_watch.FailedPodsWatch`
tells :attr:`FailedTailsReader.news`), the runs first seen failing have their tail read then (what to read:
:func:`~airflow_trainjob.domain.failed_tails.tails_to_read`); the event carries them (``tails``) and the verdict quotes
them as they are.

Bounded and off the judging's way: one read per failed run's source, the first
:data:`~airflow_trainjob.domain.failed_tails.TAILS_QUOTED` in all; each read at once (the pod may go any moment),
within the triggerer's log-read concurrency and charged to its rate
(:class:`~airflow_trainjob.triggers.log_pacing.LogReadBudget`); at the job's end the reads under way get
:data:`FINISH_GRACE_SECONDS`, no more. No line is kept unmasked: the job's secrets go to Airflow's masker first (the
trigger's ``_mask_secrets``), and each tail is redacted with it. Light to import (the trigger's module imports it).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from airflow_trainjob.domain.failed_tails import TAILS_QUOTED, settled_tails, tails_to_read
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.triggers import kubernetes_side, log_pacing
from airflow_trainjob.watching import cancel_safe

if TYPE_CHECKING:
    from airflow_trainjob.hooks.training_job import AsyncTrainingJobHook

#: Seconds the reads under way (or due: a failure the pod watch kept just now) get when the job has ended, at most,
#: before the trigger fires its event without them.
FINISH_GRACE_SECONDS = 2.0

log = logging.getLogger(__name__)

#: What the reader is given to read with: the stream's hook (None: no connection now) and the job's failed runs the
#: pod watch keeps, oldest first.
Source = Callable[[], "tuple[AsyncTrainingJobHook | None, Sequence[ContainerEnd]]"]


class FailedTailsReader:
    """Reads the failed runs' tails of one trigger's job, in a task of its own (:meth:`start`, :meth:`finish`).

    :param namespace: the job's namespace.
    :param tail_lines: lines read of each (the trigger's ``log_tail_lines``; count).
    :param mask: hands the job's secrets to Airflow's masker, once (the trigger's ``_mask_secrets``): True when
        done, False when the job is gone (nothing is read then); raises what its read raises.
    :param redact: masks a text with what the masker knows (Airflow's ``redact``); the default imports it.
    """

    def __init__(
        self,
        namespace: str,
        tail_lines: int,
        mask: Callable[[AsyncTrainingJobHook], Awaitable[bool]],
        redact: Callable[[str], Any] | None = None,
    ) -> None:
        self.namespace = namespace
        self.tail_lines = tail_lines
        self._mask = mask
        self._redact = redact
        #: Source (:attr:`~airflow_trainjob.domain.failures.ContainerEnd.source`) -> its tail, masked, in the order
        #: read (the first failures first).
        self.tails: dict[str, str] = {}
        #: Set when the pod watch keeps a failed pod of the job (:meth:`FailedPodsWatch.follow`'s ``news``).
        self.news = asyncio.Event()
        self._tried: set[str] = set()  # sources read, or refused (a source is read once)
        self._blank: Counter[str] = Counter()  # source -> its reads that came back blank
        self._finishing = False
        self._task: asyncio.Task[None] | None = None

    def start(self, source: Source, name: str) -> None:
        """Read in a task of its own from now on, from what ``source`` gives each time :attr:`news` is set.

        :param source: the hook and the failed runs kept now (see :data:`Source`).
        :param name: the task's name (the job's ref).
        """
        if self._task is None:
            self._task = asyncio.create_task(self._read_while_waiting(source), name=name)

    async def finish(self, grace: float = FINISH_GRACE_SECONDS) -> dict[str, str]:
        """The job ended: read what is due within ``grace`` seconds, then stop; the tails read.

        :param grace: seconds, at most (0: stop at once).
        """
        task, self._task = self._task, None
        if task is not None:
            self._finishing = True
            self.news.set()
            try:
                await cancel_safe.within(task, grace)  # (cancelled, and waited for, after ``grace``)
            except asyncio.TimeoutError:
                pass
            except Exception as e:  # best effort: the verdict reads what it can
                log.debug("Reading the failed runs' tails ended: %s", e)
        return dict(self.tails)

    async def stop(self) -> None:
        """Stop reading (the trigger stops)."""
        task, self._task = self._task, None
        if task is not None:
            await cancel_safe.stop(task)

    async def _read_while_waiting(self, source: Source) -> None:
        while len(self._tried) < TAILS_QUOTED:
            self.news.clear()
            hook, ends = source()
            due = tails_to_read(ends, self._tried)
            if due and hook is not None:
                await self._read(hook, due)
            if self._finishing:
                return
            await self.news.wait()

    async def _read(self, hook: AsyncTrainingJobHook, due: Sequence[ContainerEnd]) -> None:
        """Read each of ``due`` now, charged to the log-read budget's rate; a refusal (the pod gone) counts as read;
        a failure without an answer, or a blank log, is tried again at the next
        news (:func:`~airflow_trainjob.domain.failed_tails.settled_tails`)."""
        try:
            if not await self._mask(hook):
                self._tried.update(end.source for end in due)  # the job is gone: no line read unmasked
                return
        except (*kubernetes_side.RAISED_ERRORS, *kubernetes_side.TRANSIENT_ERRORS):
            return
        budget = log_pacing.budget()
        made = budget.requests
        try:
            for end in due:
                try:
                    async with budget.request():
                        text = await hook.read_pod_log_async(
                            end.pod, self.namespace, end.container, tail_lines=self.tail_lines, previous=end.restarted
                        )
                except kubernetes_side.RAISED_ERRORS as e:
                    self._tried.add(end.source)
                    log.debug("Could not read the log of %s (pod %s): %s", end.source, end.pod, e)
                    continue
                except kubernetes_side.TRANSIENT_ERRORS:
                    continue
                for source, tail in settled_tails({end.source: text}, self._blank).items():
                    self._tried.add(source)
                    self.tails[source] = self._masked(tail)
        finally:
            budget.charge(budget.requests - made)  # read at once, not in line: the next looks wait for it

    def _masked(self, text: str) -> str:
        redact = self._redact
        if redact is None:
            from airflow.sdk.log import redact as airflow_redact

            redact = self._redact = airflow_redact
        masked = redact(text)
        return masked if isinstance(masked, str) else ""

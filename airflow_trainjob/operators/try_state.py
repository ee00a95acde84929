"""Where one try of a :class:`~airflow_trainjob.operators.run.TrainingJobRun` is, and the moves it may make: the one
place that checks them (pure: no I/O).

A try goes through these states in this order, skipping some (:data:`TRANSITIONS`)::

    NEW -> TAKEN_UP -> WAITING -> ENDED -> CLEANED_UP
     |        |                     ^
     |        +---------------------+   an earlier try's success returned, without a wait
     +------------------------------+   the trigger's event says the job is gone, or no job is left to take up

and from any state, when Airflow stops the task (``on_kill``), to STOPPED_BY_AIRFLOW, which it never leaves: the
steps still due run in it (the stop records the try's end, unless a way out did first, and cleans up; the wait then
ends as stopped; a success seen meanwhile is recorded over the stop), and a job taken up after the stop (the
process runs on for a few seconds) is still cleaned up once.

:class:`TryProgress` keeps the state with what belongs to it: the job held from its take-up until its cleanup (the
cleanup runs once: it lets the job go), and the outcome the try's end recorded (once, but a success over a stop).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from airflow_trainjob.domain.records import Outcome


class TryState(Enum):
    """Where a try is."""

    #: Nothing taken up yet.
    NEW = "new"
    #: It holds its job: created, attached to, reconnected to, or an earlier try's job whose success it returns.
    TAKEN_UP = "taken up"
    #: The synchronous wait or the deferred resume follows the job to its verdict.
    WAITING = "waiting"
    #: Its end is recorded (or there is no record to write); the cleanup is next.
    ENDED = "ended"
    #: The cleanup began: the job is let go.
    CLEANED_UP = "cleaned up"
    #: Airflow stopped the task (``on_kill``); the try stays stopped whatever comes after.
    STOPPED_BY_AIRFLOW = "stopped by Airflow"


#: The states each state may move to. TAKEN_UP -> TAKEN_UP: a synchronous try that reconnected to its failed job
#: creates its successor. From STOPPED_BY_AIRFLOW every move is allowed and stays there.
TRANSITIONS: dict[TryState, frozenset[TryState]] = {
    TryState.NEW: frozenset({TryState.TAKEN_UP, TryState.ENDED, TryState.STOPPED_BY_AIRFLOW}),
    TryState.TAKEN_UP: frozenset({TryState.TAKEN_UP, TryState.WAITING, TryState.ENDED, TryState.STOPPED_BY_AIRFLOW}),
    TryState.WAITING: frozenset({TryState.ENDED, TryState.STOPPED_BY_AIRFLOW}),
    TryState.ENDED: frozenset({TryState.CLEANED_UP, TryState.STOPPED_BY_AIRFLOW}),
    TryState.CLEANED_UP: frozenset({TryState.STOPPED_BY_AIRFLOW}),
    TryState.STOPPED_BY_AIRFLOW: frozenset(TryState),
}


class TryStateError(RuntimeError):
    """A move its state does not allow: the entry points were called out of their order."""


class TryProgress:
    """The state of one try, the job it holds and the end it recorded. Starts :attr:`TryState.NEW`."""

    def __init__(self) -> None:
        self._state = TryState.NEW
        self._job: dict[str, Any] | None = None
        self._recorded: Outcome | None = None
        self._success_recorded = False

    @property
    def state(self) -> TryState:
        """Where the try is now."""
        return self._state

    @property
    def job(self) -> dict[str, Any] | None:
        """The job held: from its take-up until the cleanup lets it go; None before and after."""
        return self._job

    def held(self) -> dict[str, Any]:
        """The job held.

        :raises TryStateError: none is (the try has not taken one up yet, or let it go).
        """
        if self._job is None:
            raise TryStateError("no job taken up yet: create_or_attach() or reconnect() comes first")
        return self._job

    @property
    def stopped_by_airflow(self) -> bool:
        """Airflow stopped the task: a deletion of the job seen since is this task's own."""
        return self._state is TryState.STOPPED_BY_AIRFLOW

    @property
    def end_recorded(self) -> bool:
        """The try's end is recorded (nothing it sees after that is written)."""
        return self._recorded is not None

    @property
    def success_recorded(self) -> bool:
        """The try's success is in its record (what a try that Airflow runs after it returns)."""
        return self._success_recorded

    def _move(self, to: TryState) -> None:
        if to not in TRANSITIONS[self._state]:
            raise TryStateError(f"a try that is {self._state.value} cannot become {to.value}")
        if self._state is not TryState.STOPPED_BY_AIRFLOW:
            self._state = to

    def take_up(self, job: dict[str, Any]) -> None:
        """The try holds ``job`` now (replacing one taken up before it waits).

        :param job: the job, an API JSON dict.
        :raises TryStateError: the try waits, ended or cleaned up already.
        """
        self._move(TryState.TAKEN_UP)
        self._job = job

    def hold(self, job: dict[str, Any]) -> None:
        """The job held, as read again (e.g. as patched); nothing when the cleanup let it go meanwhile.

        :param job: the same job, an API JSON dict.
        """
        if self._job is not None:
            self._job = job

    def start_waiting(self) -> None:
        """The wait (or the deferred resume) follows the job held to its verdict.

        :raises TryStateError: no job was taken up, or the try waited already.
        """
        self._move(TryState.WAITING)

    def end(self, outcome: Outcome) -> bool:
        """The try ends with ``outcome``: whether to record it. Once, by the first way out that gets here; but a
        success seen after the stop was recorded is recorded over it (a retry of the same series returns it).

        :param outcome: how the try ended (:func:`~airflow_trainjob.domain.records.outcome_of`).
        :raises TryStateError: the first end of a try that cleaned up already.
        """
        if self._recorded is None:
            self._move(TryState.ENDED)
        elif not (outcome == "succeeded" and self._recorded == "stopped"):
            return False
        self._recorded = outcome
        return True

    def success_written(self, written: bool) -> None:
        """Whether the record of the try's success was written (the cleanup keeps a succeeded job when not).

        :param written: the store took the record.
        """
        self._success_recorded = written

    def let_go(self) -> dict[str, Any] | None:
        """The job to clean up, once: the cleanup lets it go (``on_kill`` and the wait's way out may both get here).

        :returns: the job held, or None: none was taken up, or it was let go already.
        :raises TryStateError: the try holds a job but has not ended.
        """
        job = self._job
        if job is not None:
            self._move(TryState.CLEANED_UP)
            self._job = None
        return job

    def stop(self) -> None:
        """Airflow stopped the task (``on_kill``), whatever the state."""
        self._move(TryState.STOPPED_BY_AIRFLOW)

"""The lead replica's log as a deferred task's log gets it: what to read next, and which of the lines read are new.

Pure (no I/O): the trigger (asynchronously, while the task waits, and before it stops the lead's pod) and the
resumed task (synchronously, at the end) both drive one :class:`LeadLogCopy` — they look at the lead pod, read what
it asks (:class:`LogRead`: one short ``pods/log`` GET with ``timestamps=true``, ``sinceTime`` and ``limitBytes``,
never a follow stream), and write what it returns into the task log. The synchronous wait follows the log on one
stream instead (:mod:`~airflow_trainjob.watching.lead_log_follower`).

Where the copy stands is a :class:`LogCursor` (carried in the trigger's event, and kept on the job while the trigger
waits so that a restarted triggerer goes on from there): the container run being read (pod uid, container,
``restartCount``), the timestamp of the last line copied and how many lines carried exactly that timestamp. The API's
``sinceTime`` counts whole seconds, so a read from the cursor gets that second's lines again; they are skipped by
their nanosecond timestamps, and no line is copied twice.

Runs: when the container restarted in place once since the last look, the rest of the run that ended is read with
``previous=true``, then the new run from its start; after several restarts between two looks the runs in between
are lost (the kubelet keeps one finished run) and a note says so. When the pod was replaced (a new uid: the training
operator recreated it), the lines its predecessor wrote after the last look are gone with it; a note says so too.

Size: the task log takes at most :data:`LEAD_LOG_MAX_BYTES` of the lead's log text (its lines, without the
timestamps); past that the copy stops with a note, and at the end the last ``tail_lines`` lines follow after a note
that says which lines were left out.
"""

from __future__ import annotations

import calendar
import json
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from airflow_trainjob.constants import LABEL_PREFIX
from airflow_trainjob.domain.own_keys import read_own_key
from airflow_trainjob.domain.pods import Pod, phase_of, pod_name

#: Bytes of the lead replica's log text (its lines, without timestamps) a deferred task's log takes, 8 MiB; past it,
#: the copy stops and only the log's last ``log_tail_lines`` lines are added at the end.
LEAD_LOG_MAX_BYTES = 8 * 1024 * 1024
#: ``limitBytes`` of one read while the task waits (the lines of one read are logged at once, on the triggerer's
#: event loop: this bounds that work to a few milliseconds).
LIVE_READ_BYTES = 64 * 1024
#: Reads of one look while the task waits: a log that grows faster than ``LIVE_READ_BYTES`` times this per look
#: falls behind until the end, which reads the rest.
LIVE_READS_PER_LOOK = 4
#: ``limitBytes`` of one read of the rest, once the job has ended.
FINAL_READ_BYTES = 1024 * 1024
#: HTTP statuses of a log read that mean the log is not there: 400 (the container has not started; no run before its
#: last restart) and 404 (the pod is gone). :meth:`LeadLogCopy.missing` takes them; anything else is an error.
LOG_NOT_THERE = frozenset({400, 404})
#: A read cut by ``limitBytes`` before the end of its first line (more than the limit within one second) is asked
#: again with a limit twice as large, up to this many times the first.
LIMIT_GROWTH_MAX = 16

#: The job's annotation where a waiting trigger keeps its cursor (:func:`cursor_annotation`), so that the trigger run
#: again after a triggerer restart goes on from there instead of copying the log again from its start.
ANNOTATION_LEAD_LOG_CURSOR = f"{LABEL_PREFIX}/lead-log-cursor"

#: Secrets of a job's manifest a trigger has the triggerer mask, at most (see :func:`secret_spans`).
SECRET_SPANS_MAX = 32
#: What :func:`secret_spans` asks Airflow's ``redact`` to put in place of each secret (a character no manifest holds).
SECRET_MARK = "\x00"

_TIMESTAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


def timestamp_ns(stamp: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time as the kubelet writes it before each line with
    ``timestamps=true`` (``2026-12-02T10:00:00.123456789Z``, or with an offset); None when it is not one.

    :param stamp: the time, as text.
    """
    match = _TIMESTAMP.match(stamp)
    if not match:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    seconds = calendar.timegm((int(year), int(month), int(day), int(hour), int(minute), int(second)))
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return seconds * 1_000_000_000 + int((fraction or "0").ljust(9, "0"))


def since_time(stamp: str | None) -> str | None:
    """The ``sinceTime`` (RFC 3339 in UTC, whole seconds: what the API keeps of it) that reads from ``stamp`` on.

    :param stamp: a line's timestamp (see :func:`timestamp_ns`), or None (from the start: no ``sinceTime``).
    """
    ns = timestamp_ns(stamp) if stamp else None
    return None if ns is None else _utc_seconds(ns // 1_000_000_000)


def _utc_seconds(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass(frozen=True)
class LogRun:
    """One run of the lead replica's container: the log a ``pods/log`` read returns.

    :param pod: the pod's ``metadata.name``.
    :param uid: the pod's ``metadata.uid`` (a pod recreated under the same name is another run).
    :param container: the container's name.
    :param restarts: its ``restartCount`` during the run (the kubelet's ``previous`` run has one less).
    :param label: the replica, as the task log prefixes its lines (``Master-0``).
    """

    pod: str
    uid: str
    container: str
    restarts: int
    label: str


@dataclass(frozen=True)
class LogCursor:
    """How far the task log's copy of the lead replica's log has come.

    :param run: the run being copied; None: nothing copied yet.
    :param since: the timestamp of the last line copied of ``run`` (as the API wrote it); None: none yet.
    :param at_since: lines copied that carry exactly ``since`` (count).
    :param lines: lines copied in all (count, every run).
    :param size: bytes of log text copied in all (the lines and their newlines; :data:`LEAD_LOG_MAX_BYTES` bounds it).
    :param cut: the size bound was reached: lines after ``since`` are left out, but for the log's last lines at the end.
    :param complete: the log was read to its end and the pod is being stopped: nothing is left to read.
    """

    run: LogRun | None = None
    since: str | None = None
    at_since: int = 0
    lines: int = 0
    size: int = 0
    cut: bool = False
    complete: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The cursor as JSON-safe data, about 130 characters: it rides in the trigger's event, whose budget it shares
        with the failed pods' exits. The run is kept by its pod's uid and ``restartCount``: the pod's name, the
        container and the label come back from the pod itself (see :meth:`LeadLogCopy.look`)."""
        data: dict[str, Any] = {}
        if self.run is not None:
            data.update(uid=self.run.uid, restarts=self.run.restarts)
        if self.since is not None:
            data.update(since=self.since, at=self.at_since)
        data.update(lines=self.lines, bytes=self.size)
        if self.cut:
            data["cut"] = True
        if self.complete:
            data["complete"] = True
        return data

    @classmethod
    def from_dict(cls, data: Any) -> LogCursor | None:
        """The cursor :meth:`to_dict` wrote; None when ``data`` is not one (another version's, or damaged).

        :param data: what :meth:`to_dict` returned, read back (from an event or an annotation).
        """
        if not isinstance(data, Mapping):
            return None
        try:
            run = None
            if data.get("uid"):  # the pod's name, container and label: from the pod (LeadLogCopy.look)
                run = LogRun("", str(data["uid"]), "", int(data["restarts"]), "")
            since = data.get("since")
            if since is not None and timestamp_ns(str(since)) is None:
                return None
            return cls(
                run=run,
                since=None if since is None else str(since),
                at_since=int(data.get("at", 0)),
                lines=int(data.get("lines", 0)),
                size=int(data.get("bytes", 0)),
                cut=bool(data.get("cut", False)),
                complete=bool(data.get("complete", False)),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class LogRead:
    """One ``pods/log`` GET to make (``timestamps=true`` always: the cursor needs each line's time).

    :param pod: the pod's ``metadata.name``.
    :param container: the container (``container``).
    :param previous: the run before the container's last restart (``previous``).
    :param since_time: RFC 3339, whole seconds (``sinceTime``); None: from the run's start.
    :param limit_bytes: at most this many bytes of answer (``limitBytes``); None: no limit.
    :param tail_lines: only the last lines (``tailLines``, count); None: all.
    """

    pod: str
    container: str
    previous: bool = False
    since_time: str | None = None
    limit_bytes: int | None = None
    tail_lines: int | None = None


class LogOut(NamedTuple):
    """A line for the task log: a line of the lead's log (``[Master-0] ...``) or a note about the copy."""

    level: int
    text: str


@dataclass(frozen=True)
class _Step:
    run: LogRun
    previous: bool = False  # the run before the container's last restart
    ended: bool = False  # the run has ended: its last line counts without a newline
    tail: bool = False  # only its last lines (after the size bound cut the copy)


def _runs(runs: range) -> str:
    """``run 3`` or ``runs 1-4`` (``""`` for none)."""
    if not runs:
        return ""
    return f"run {runs[0]}" if len(runs) == 1 else f"runs {runs[0]}-{runs[-1]}"


def _info(text: str) -> LogOut:
    return LogOut(logging.INFO, text)


def _warning(text: str) -> LogOut:
    return LogOut(logging.WARNING, text)


def _previous_run(run: LogRun) -> LogRun:
    """The run before ``run``'s container's last restart (the one the kubelet keeps, ``previous=true``)."""
    return replace(run, restarts=run.restarts - 1)


def _lost_before_first_read(run: LogRun) -> list[LogOut]:
    """The note on the runs lost when the container restarted more than once before its log was first read."""
    if run.restarts <= 1:
        return []
    lost = _runs(range(0, run.restarts - 1))
    return [
        _warning(
            f"The lead replica's container {run.container} restarted {run.restarts} times before its log "
            f"was first read: the kubelet keeps only the last finished run, so {lost} "
            f"{'is' if run.restarts == 2 else 'are'} lost"
        )
    ]


def _lost_since_last_read(before: LogRun, run: LogRun) -> list[LogOut]:
    """The note on the runs lost when the container restarted more than once since ``before`` was last read."""
    if run.restarts <= before.restarts + 1:
        return []
    lost = _runs(range(before.restarts + 1, run.restarts - 1))
    return [
        _warning(
            f"The lead replica's container {run.container} restarted {run.restarts - before.restarts} "
            f"times since the last read: the kubelet keeps only the last finished run, so the rest of run "
            f"{before.restarts}{f' and {lost}' if lost else ''} {'are' if lost else 'is'} lost"
        )
    ]


class LeadReplica(Protocol):
    """What the copy reads of the job's family (:class:`~airflow_trainjob.domain.family.JobFamily` has it): which pod
    leads, which of its containers speaks, which replica a pod is, and the kind (how its pods are listed)."""

    @property
    def kind(self) -> str:
        """The job's kind, e.g. ``PyTorchJob``."""
        ...

    def lead_pod(self, pods: Iterable[Pod]) -> Pod | None:
        """The lead replica's pod 0, or None.

        :param pods: the job's pods, API JSON dicts.
        """
        ...

    def log_container(self, pod: Pod) -> str:
        """The container whose log speaks for the pod.

        :param pod: the pod, an API JSON dict.
        """
        ...

    def replica_of(self, pod: Pod) -> tuple[str, int]:
        """``(replica type, index)`` of the pod.

        :param pod: the pod, an API JSON dict.
        """
        ...


def current_run(pod: Mapping[str, Any], kind: LeadReplica) -> tuple[LogRun, bool] | None:
    """The lead pod's container run whose log a read returns now, and whether it has ended; None while the container
    has not started (the pod pending, the container waiting for its first run).

    :param pod: the lead pod, an API JSON dict.
    :param kind: the job's family (:class:`LeadReplica`: its log container, its replicas).
    """
    container = kind.log_container(pod)  # an init container while the pod is held at it (a failed data fetch)
    pod_status = pod.get("status") or {}
    statuses = [*(pod_status.get("initContainerStatuses") or []), *(pod_status.get("containerStatuses") or [])]
    status = next((s for s in statuses if s.get("name") == container), None)
    if status is None:
        return None
    state, last = status.get("state") or {}, status.get("lastState") or {}
    if state.get("running") is None and state.get("terminated") is None and last.get("terminated") is None:
        return None  # waiting for its first run (ContainerCreating, an image pull)
    replica_type, index = kind.replica_of(pod)
    run = LogRun(
        pod_name(pod),
        (pod.get("metadata") or {}).get("uid", ""),
        container,
        int(status.get("restartCount") or 0),
        f"{replica_type}-{index}",
    )
    ended = state.get("terminated") is not None or phase_of(pod) in ("Succeeded", "Failed")
    return run, ended


class LeadLogCopy:
    """What to read of the lead replica's log, and which lines read are new; keeps the :attr:`cursor`.

    A driver calls :meth:`look` with the job's pods, then, while :meth:`next_read` returns a read, makes it and hands
    the answer to :meth:`take` (or, when the API answered that the log is not there, to :meth:`missing`); it writes
    each :class:`LogOut` returned, in order, into the task log.

    :param kind: the job's family (:class:`LeadReplica`, e.g. its :class:`~airflow_trainjob.domain.family.JobFamily`).
    :param cursor: where an earlier copy stopped (the trigger's event, the job's annotation); None: at the start.
    :param final: the job has ended: read the rest, up to the size bound, then the log's last ``tail_lines`` lines
        if the bound cut it. Else (the task waits): at most :data:`LIVE_READS_PER_LOOK` reads of
        :data:`LIVE_READ_BYTES` per look, and a line not yet ended by a newline waits for the next look.
    :param tail_lines: lines of the log's end added after a cut (count; 0: none).
    :param max_bytes: the size bound (bytes); None: :data:`LEAD_LOG_MAX_BYTES`.
    :param read_bytes: ``limitBytes`` of each read; None: :data:`FINAL_READ_BYTES` when ``final``, else
        :data:`LIVE_READ_BYTES`.
    """

    def __init__(
        self,
        kind: LeadReplica,
        cursor: LogCursor | None = None,
        *,
        final: bool = False,
        tail_lines: int = 0,
        max_bytes: int | None = None,
        read_bytes: int | None = None,
    ) -> None:
        self.kind = kind
        self.cursor = cursor or LogCursor()
        self.final = final
        self.tail_lines = tail_lines
        self.max_bytes = LEAD_LOG_MAX_BYTES if max_bytes is None else max_bytes
        self._read_bytes = read_bytes or (FINAL_READ_BYTES if final else LIVE_READ_BYTES)
        self._limit = self._read_bytes
        self._plan: deque[_Step] = deque()
        self._reads = 0  # reads of this look

    # --- what to read ------------------------------------------------------------------------------------

    def look(self, pods: Iterable[Mapping[str, Any]]) -> list[LogOut]:
        """Plan the reads of one look at the job's pods (the lead among them); returns notes for the task log.

        :param pods: the job's pods (at least its replicas of index 0), API JSON dicts.
        """
        self._plan.clear()
        self._reads = 0
        self._limit = self._read_bytes
        if self.cursor.complete:
            return []
        pod = self.kind.lead_pod(list(pods))
        seen = current_run(pod, self.kind) if pod is not None else None
        if seen is None:
            return self._lead_not_running()
        run, ended = seen
        self._name_read_back_run(run)
        if self.cursor.cut:
            if self.final and self.tail_lines:
                self._plan.append(_Step(run, ended=ended, tail=True))
            return []
        return self._plan_runs(self._run_before(run), run, ended)

    def _lead_not_running(self) -> list[LogOut]:
        """No run of the lead to read: a note at the end when runs were copied (the pod went with the rest)."""
        if self.final and self.cursor.run is not None:
            return [_warning(f"The lead replica's pod is gone: its log {self._after()}could not be read")]
        return []

    def _name_read_back_run(self, run: LogRun) -> None:
        """A cursor read back (the event, the job's annotation) knows its run by the pod's uid: the rest is the pod's."""
        before = self.cursor.run
        if before is not None and before.uid == run.uid and not before.pod:
            self.cursor = replace(
                self.cursor, run=replace(before, pod=run.pod, container=run.container, label=run.label)
            )

    def _run_before(self, run: LogRun) -> LogRun | None:
        """The run the cursor is in; one read back, of a pod replaced since, is named by its uid only."""
        before = self.cursor.run
        if before is not None and not before.pod:
            return replace(before, pod=f"(uid {before.uid})", container=run.container)
        return before

    def _plan_runs(self, before: LogRun | None, run: LogRun, ended: bool) -> list[LogOut]:
        """Plan the reads from ``before`` (the cursor's run) to ``run`` (the lead's now); notes on runs lost between.

        A container restarted since ``before`` (or before the first look) has its previous run read first: the
        kubelet keeps that one. A pod replaced, or another container, starts at ``run``.
        """
        notes: list[LogOut] = []
        if before is None and run.restarts:
            notes += _lost_before_first_read(run)
            self._plan.append(_Step(_previous_run(run), previous=True, ended=True))
        elif before is not None and before.container == run.container:
            if before.uid != run.uid:
                notes.append(
                    _warning(
                        f"The lead replica's pod {run.pod} was replaced (uid {before.uid} -> {run.uid}): the lines "
                        f"its former pod wrote {self._after()}since the last read are lost with it; the new pod's "
                        "log follows"
                    )
                )
            elif run.restarts > before.restarts:
                notes += _lost_since_last_read(before, run)
                self._plan.append(_Step(_previous_run(run), previous=True, ended=True))
        self._plan.append(_Step(run, ended=ended))
        return notes

    def next_read(self) -> LogRead | None:
        """The next read to make for this look, or None when the look is done."""
        if not self._plan:
            return None
        if not self.final and self._reads >= LIVE_READS_PER_LOOK:
            self._plan.clear()  # the rest at the next look (or the end)
            return None
        step = self._plan[0]
        cursor = self.cursor
        if step.tail:
            return LogRead(step.run.pod, step.run.container, step.previous, tail_lines=self.tail_lines)
        since = cursor.since if cursor.run == step.run else None
        return LogRead(step.run.pod, step.run.container, step.previous, since_time(since), limit_bytes=self._limit)

    # --- what was read -----------------------------------------------------------------------------------

    def take(self, read: LogRead, data: bytes) -> list[LogOut]:
        """Take the answer to ``read`` (the one :meth:`next_read` returned): the new lines, and notes.

        :param read: the read made.
        :param data: the answer's body, as bytes.
        """
        self._reads += 1
        step = self._plan[0]
        out: list[LogOut] = []
        if self.cursor.run != step.run and not step.tail:
            out += self._enter(step)
        pieces = data.split(b"\n")
        rest = pieces.pop()  # after the last newline: a line not ended yet, or one limitBytes cut
        limited = read.limit_bytes is not None and len(data) >= read.limit_bytes
        if rest and step.ended and not limited:
            pieces.append(rest)  # the run's last line, which no newline will end
        if step.tail:
            out += self._take_tail(step, pieces)
            self._plan.popleft()
            return out
        taken = self._take_lines(step, pieces)
        out += taken
        if self.cursor.cut:
            out.append(self._cut_note())
            self._plan.clear()
            if self.final and self.tail_lines:
                self._plan.append(_Step(step.run, step.previous, step.ended, tail=True))
            return out
        if not limited:
            self._plan.popleft()  # read to the end of the run (as it is now)
            self._limit = self._read_bytes
        elif not taken:
            out += self._stuck(step, data)  # no new line within the limit: ask for more, or skip that second
        else:
            self._limit = self._read_bytes
        return out

    def missing(self, read: LogRead, why: str) -> list[LogOut]:
        """The API answered ``read`` that the log is not there (the pod deleted, the run before a restart gone, the
        container not started): skip that run. While the task waits, the next look tries again; at the end, a note.

        :param read: the read made.
        :param why: the answer, in one line.
        """
        if not self._plan:
            return []
        self._plan.popleft()
        if read.previous:  # the next step, the current run, goes on
            return [
                _warning(f"The lead replica's run before its last restart cannot be read ({why}): its rest is lost")
            ]
        self._plan.clear()
        if not self.final:
            return []
        return [_warning(f"The lead replica's log cannot be read ({why}): its lines {self._after()}are not copied")]

    def _enter(self, step: _Step) -> list[LogOut]:
        """Start copying ``step``'s run (from its start)."""
        before = self.cursor.run
        self.cursor = replace(self.cursor, run=step.run, since=None, at_since=0)
        if before is not None and before.uid == step.run.uid and step.run.restarts > before.restarts:
            return [_info(f"The lead replica's container {step.run.container} restarted (restart {step.run.restarts})")]
        return []

    def _take_lines(self, step: _Step, pieces: list[bytes]) -> list[LogOut]:
        cursor = self.cursor
        since_ns = timestamp_ns(cursor.since) if cursor.since else None
        at_since, repeats = cursor.at_since, 0
        since, lines, size = cursor.since, cursor.lines, cursor.size
        out: list[LogOut] = []
        for piece in pieces:
            stamp, _, body = piece.decode(errors="replace").partition(" ")
            ns = timestamp_ns(stamp)
            if ns is None:  # not a timestamped line (cannot happen with timestamps=true): kept, the cursor stays
                stamp, body, ns = "", piece.decode(errors="replace"), None
            if ns is not None and since_ns is not None:
                if ns < since_ns:
                    continue
                if ns == since_ns:
                    repeats += 1
                    if repeats <= at_since:
                        continue
            length = len(body.encode()) + 1
            if size + length > self.max_bytes:
                self.cursor = replace(cursor, since=since, at_since=at_since, lines=lines, size=size, cut=True)
                return out
            out.append(_info(f"[{step.run.label}] {body}"))
            lines, size = lines + 1, size + length
            if ns is not None:
                if ns == since_ns:
                    at_since += 1
                else:
                    since, since_ns, at_since, repeats = stamp, ns, 1, 1
        self.cursor = replace(cursor, since=since, at_since=at_since, lines=lines, size=size)
        return out

    def _take_tail(self, step: _Step, pieces: list[bytes]) -> list[LogOut]:
        """The log's last lines after a cut: those newer than the cursor, after a note naming the gap."""
        since_ns = timestamp_ns(self.cursor.since) if self.cursor.since else None
        newer = []
        for piece in pieces:
            stamp, _, body = piece.decode(errors="replace").partition(" ")
            ns = timestamp_ns(stamp)
            if since_ns is None or ns is None or ns > since_ns:
                newer.append((stamp, body))
        if not newer:
            return []
        gap = len(newer) == len(pieces)  # no line of the tail was copied already: lines in between may be missing
        out = []
        if gap:
            out.append(
                _warning(
                    f"[{step.run.label}] ... lines written after {self.cursor.since} and before {newer[0][0]} are left "
                    f"out (the task log takes {self.max_bytes} bytes of the lead replica's log); its last "
                    f"{len(newer)} lines:"
                )
            )
        out += [_info(f"[{step.run.label}] {body}") for _, body in newer]
        last = newer[-1][0]
        self.cursor = replace(self.cursor, since=last or self.cursor.since, lines=self.cursor.lines + len(newer))
        return out

    def _stuck(self, step: _Step, data: bytes) -> list[LogOut]:
        """A read cut before the end of its first new line: more than the limit within one second of log."""
        if self._limit < self._read_bytes * LIMIT_GROWTH_MAX:
            self._limit *= 2
            return []
        # Give up that second: go on from the next one (sinceTime counts whole seconds).
        stamp = data.split(b" ", 1)[0].decode(errors="replace")
        ns = timestamp_ns(stamp)
        self._plan.clear()
        self._limit = self._read_bytes
        if ns is None:
            return []
        next_second = _utc_seconds(ns // 1_000_000_000 + 1)
        self.cursor = replace(self.cursor, since=next_second, at_since=0)
        return [
            _warning(
                f"[{step.run.label}] ... the lines written in the second of {stamp} are left out: more than "
                f"{self._read_bytes * LIMIT_GROWTH_MAX} bytes in one second"
            )
        ]

    def _cut_note(self) -> LogOut:
        tail = f"; its last {self.tail_lines} lines are added when the task ends" if self.tail_lines else ""
        return _warning(
            f"The lead replica's log passed the {self.max_bytes} bytes a deferred task's log takes of it: the lines "
            f"after this one are left out{tail}"
        )

    def _after(self) -> str:
        return f"after {self.cursor.since} " if self.cursor.since else ""

    def mark_complete(self) -> None:
        """The log was read to its end and the pod is being stopped: nothing is left for the resumed task to read."""
        self.cursor = replace(self.cursor, complete=True)


def write_lines(log: Any, lines: Iterable[LogOut]) -> None:
    """Write what a :class:`LeadLogCopy` returned into the task log, each line at its level.

    :param log: the task's (or the trigger's) logger.
    :param lines: the copy's lines and notes.
    """
    for out in lines:
        log.log(out.level, "%s", out.text)


def quote_log(log: Any, label: str, pod: str, text: str, tail_lines: int) -> None:
    """Write the end of a replica's log into the task log, one line each, prefixed with the replica
    (``[Master-0] ...``), after a line saying whose log it is.

    :param log: the task's (or the trigger's) logger.
    :param label: the replica, e.g. ``Master-0``.
    :param pod: its pod's name.
    :param text: the log's last lines.
    :param tail_lines: how many lines were asked for (count).
    """
    log.info("Last %d lines of the lead replica's log (%s, pod %s):", tail_lines, label, pod)
    for line in text.splitlines():
        log.info("[%s] %s", label, line)


def cursor_annotation(cursor: LogCursor, try_number: int | None) -> str:
    """The value of :data:`ANNOTATION_LEAD_LOG_CURSOR` that records ``cursor`` for the task's try ``try_number``.

    :param cursor: where the copy stands.
    :param try_number: the task try whose log the copy goes to (a retry's log starts afresh).
    """
    return json.dumps({"try": try_number, **cursor.to_dict()}, separators=(",", ":"))


def cursor_on_job(job: Mapping[str, Any], try_number: int | None) -> LogCursor | None:
    """The cursor recorded on ``job`` for try ``try_number`` (see :func:`cursor_annotation`), or None. One recorded
    under the legacy prefix counts (a trigger of an earlier release, before the triggerer was upgraded).

    :param job: the job, an API JSON dict.
    :param try_number: the task try whose cursor is wanted.
    """
    value = read_own_key((job.get("metadata") or {}).get("annotations"), ANNOTATION_LEAD_LOG_CURSOR)
    try:
        data = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("try") != try_number:
        return None
    return LogCursor.from_dict(data)


def secret_spans(manifest: Mapping[str, Any], redact: Callable[[str], str]) -> list[list[Any]]:
    """Where the task's secrets masker finds secrets in the job it sends (a Variable or a Connection's password
    rendered into a container's ``env`` or ``args``): ``[pointer, start, end]`` for each, the pointer an RFC 6901 JSON
    pointer to a string of the manifest, ``start:end`` the secret's characters in it. The places, never the values:
    they ride in the trigger's kwargs, and the trigger reads the values from the job (:func:`secrets_at`), so that the
    triggerer masks in the lead replica's lines what the task's own log masks. At most :data:`SECRET_SPANS_MAX`.

    :param manifest: the job as sent, an API JSON dict.
    :param redact: Airflow's ``redact`` of the task's process, replacing each secret with :data:`SECRET_MARK`.
    """
    spans: list[list[Any]] = []
    for pointer, text in _strings(manifest, ""):
        if SECRET_MARK in text:
            continue
        redacted = redact(text)
        if redacted == text or not isinstance(redacted, str):
            continue
        pieces = redacted.split(SECRET_MARK)
        pattern = "(.+?)".join(re.escape(piece) for piece in pieces)
        found = re.fullmatch(pattern, text, re.DOTALL)
        if found is None:
            continue
        spans += [[pointer, *found.span(i)] for i in range(1, len(pieces))]
        if len(spans) >= SECRET_SPANS_MAX:
            return spans[:SECRET_SPANS_MAX]
    return spans


def secrets_at(job: Mapping[str, Any], spans: Iterable[Any]) -> list[str]:
    """The secrets :func:`secret_spans` located, read from the job (what is not there, or not a string, is skipped).

    :param job: the job, an API JSON dict (its spec as sent).
    :param spans: ``[pointer, start, end]`` lists.
    """
    found = []
    for span in spans:
        try:
            pointer, start, end = span
            value: Any = job
            for part in str(pointer).split("/")[1:]:
                key = part.replace("~1", "/").replace("~0", "~")
                value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if isinstance(value, str) and 0 <= start < end <= len(value):
            found.append(value[start:end])
    return found


def _strings(value: Any, pointer: str) -> Iterator[tuple[str, str]]:
    """``(JSON pointer, text)`` of every string in ``value``."""
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")

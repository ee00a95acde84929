"""Where a :class:`~airflow_trainjob.operators.training_job.TrainingJobOperator` task records each try's job: Airflow's
``task_state_store`` (:class:`JobRecorder`), and the job's manifest as text, with Airflow's masker applied.

What a record holds, and what it keeps of the job, its pods and its events, is
:mod:`airflow_trainjob.domain.records`'s; this module writes it, redacted by Airflow's masker (:func:`redact`).

The store (Airflow 3.3+) is per task instance and kept across its tries; the api-server reads it from the metadata
database, so the UI can show a try's job after the job itself is gone (``on_finish``, TTL). Under
:data:`~airflow_trainjob.domain.records.RECORD_KEY` it holds the try's records: written when a try creates or
attaches to its job (:meth:`JobRecorder.started`) and again when the try ends, by any road
(:meth:`JobRecorder.ended`), with the job, its pods and its events as they were then, trimmed. While the
synchronous wait runs, the record also keeps the job and its pods as last seen (:meth:`JobRecorder.seen`,
``last_seen``): a try whose end cannot be written still says what it saw last. That happens when the task instance
is cleared while it runs: the store is kept per task instance (its rows are keyed by the DAG run, task and map
index, the same for every try), but the worker reaches it through the execution API by its task instance's id, which
the clear replaces (Airflow keeps the old one only in ``task_instance_history``): the killed try's write is refused
with 404. (A deferred task killed in the triggerer parks its end in XCom instead:
:func:`~airflow_trainjob.domain.records.parked_end`.)

A retry of the same series of tries returns an earlier try's success instead of training again
(:mod:`airflow_trainjob.domain.earlier_success`, :meth:`JobRecorder.reused`).

Retention: :data:`NEVER_EXPIRE` ties the record to the DAG run it describes. Its rows go with the run (the
store's foreign key to ``dag_run`` cascades; ``airflow db clean`` deletes them with the run's task instances),
so a run's tab shows its job for as long as the run itself is in the UI. The store's default
(``[state_store] default_retention_days``, 30) would empty the tab of every run older than a month while the run,
its logs and its task instances are still there. Clearing a task does not touch the store: the next try appends
its record to the same list. Only ``[state_store] clear_on_success`` (off by default) deletes it, when the task
succeeds.

The manifest is recorded as YAML text with the secrets Airflow's masker knows of replaced (the same
``redact`` the task runner applies to rendered template fields); :func:`rendered_manifest` is the same text
kept within ``[core] max_templated_field_length`` for the task's rendered template view.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

import yaml

from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.progress import merged, unpacked, with_report
from airflow_trainjob.domain.records import (
    MAX_TRIES,
    RECORD_KEY,
    FinalState,
    JobRecord,
    LastSeen,
    Outcome,
    TrySeries,
    chosen_pods,
    final_state,
    now_iso,
    read_records,
    redacted,
    spec_digest,
    trim_job,
)
from airflow_trainjob.families import family_of, family_or_none
from airflow_trainjob.hooks.api_errors import one_line

#: Seconds :meth:`JobRecorder.ended` waits for the store when asked to wait at most that long (``on_kill``).
KILL_WRITE_SECONDS = 5.0
#: Writes of ``last_seen`` for changed replica counts alone that may follow one another at once (a change of phase is
#: always written at once); then one more every :data:`SEEN_WRITE_SECONDS`: a job of hundreds of replicas changes its
#: counts as each pod starts, a small one a few times.
SEEN_BURST = 5
SEEN_WRITE_SECONDS = 6.0

#: The records' retention (see the module's docstring): as long as the DAG run. Airflow's own marker, compared by
#: identity by the store (None before Airflow 3.3, which has no store: nothing is recorded).
NEVER_EXPIRE: timedelta | None
try:  # where it is defined; ``airflow.sdk`` re-exports it
    from airflow.sdk.execution_time.context import NEVER_EXPIRE
except ImportError:  # pragma: no cover
    NEVER_EXPIRE = None


# ---- the manifest as text ---------------------------------------------------------------------------------------


def redact(value: str, name: str | None = None) -> str:
    """``value`` with the secrets Airflow's masker knows of replaced: the ``redact`` the task runner applies to
    rendered template fields (``airflow.sdk._shared.secrets_masker`` on Airflow 3). The
    :data:`~airflow_trainjob.domain.records.Redact` of every record this provider writes.

    :param value: the text.
    :param name: what the text is (a field's name: Airflow's masker hides the whole value of a sensitive-looking
        one); None: only the known secrets are replaced.
    """
    from airflow.providers.common.compat.sdk import redact as airflow_redact

    masked = airflow_redact(value, name)
    return masked if isinstance(masked, str) else value


def redact_error(error: BaseException) -> BaseException:
    """``error`` with its text arguments passed through :func:`redact`, in place, and returned. A try's error quotes
    what the job's containers printed (a failed replica's last lines), which may hold a secret the task rendered into
    the job; Airflow masks it in the task log, but the exception itself also reaches places that do not (an
    OpenLineage ``errorMessage`` facet, an ``on_failure_callback``).

    :param error: the exception the try ends with.
    """
    error.args = tuple(redact(a) if isinstance(a, str) else a for a in error.args)
    return error


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings (an embedded script reads as the script); no line folding, so a secret
    is never split over two lines where the masker would miss it; no anchors and aliases (``*id001``) for parts
    that are the same object in memory: each written out where it is."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # PyYAML falls back to a quoted style by itself for text a block cannot hold (e.g. trailing spaces).
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _represent_str)


def to_yaml(value: Any) -> str:
    """YAML text: keys in their order, block style, multi-line strings as literal blocks.

    :param value: API JSON (dicts, lists, strings, numbers).
    """
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=float("inf"))


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """The whole manifest as YAML (:func:`to_yaml`) with the known secrets redacted, as the try's record keeps it.

    :param manifest: the job object as sent (a JSON dict).
    """
    return redact(to_yaml(manifest), "manifest")


def _left_out(count: int, multiline: bool) -> str:
    where = "\n" if multiline else " "
    return f"{where}[... {count:,} characters left out here; the Training job tab shows the manifest in full]"


def _shortened(value: Any, keep: int) -> Any:
    """``value`` with every string longer than ``keep`` characters (and the marker) cut to ``keep`` and marked.
    Secrets are redacted before cutting: a secret cut in two is no longer one the masker can find."""
    if isinstance(value, str):
        text = redact(value)
        kept = text[:keep]
        if "\n" in kept:  # a script: cut after a whole line
            kept = kept.rsplit("\n", 1)[0]
        marker = _left_out(len(text) - len(kept), "\n" in kept)
        return kept + marker if len(text) > len(kept) + len(marker) else value
    if isinstance(value, Mapping):
        return {k: _shortened(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_shortened(v, keep) for v in value]
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def max_rendered_length() -> int:
    """``[core] max_templated_field_length``: the characters Airflow keeps of a rendered template field (beyond
    them it stores a truncated string with a "Truncated" prefix)."""
    from airflow.providers.common.compat.sdk import conf

    return conf.getint("core", "max_templated_field_length", fallback=4096)


def rendered_manifest(manifest: Mapping[str, Any], limit: int | None = None) -> str:
    """The manifest as YAML for the rendered template view, whole when it fits in ``limit`` characters; else with
    its longest strings (an embedded script, a long command) shortened, each marked with how many characters were
    left out, so that the object's whole structure still shows. Redacted as :func:`manifest_text`.

    :param manifest: the job object as sent (a JSON dict).
    :param limit: characters (default :func:`max_rendered_length`).
    """
    limit = max_rendered_length() if limit is None else limit
    text = manifest_text(manifest)
    if len(text) <= limit:
        return text
    # The longest cut-off length that fits (a binary search: each try is one dump of a small object).
    low, high, best = 0, _longest_string(manifest), None
    while low <= high:
        keep = (low + high) // 2
        candidate = manifest_text(_shortened(manifest, keep))
        if len(candidate) <= limit:
            best, low = candidate, keep + 1
        else:
            high = keep - 1
    # Even bare strings do not fit (a structure of thousands of keys): Airflow truncates what is left.
    return best if best is not None else manifest_text(_shortened(manifest, 0))


# ---- the writer ---------------------------------------------------------------------------------------------


def _shed(entries: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The entries within ``limit`` characters of JSON: leaves out, oldest try first, the events, then the pods,
    then the progress points of a try that ended, then the last sight, then the manifests, noting each in the
    entry's ``omitted``; then drops the oldest tries (never the latest)."""
    if limit <= 0 or len(json.dumps(entries)) <= limit:
        return entries
    for field in ("events", "pods", "progress", "last_seen", "manifest_yaml"):
        for entry in reversed(entries):
            holder = entry if field in ("last_seen", "manifest_yaml") else entry.get("final")
            if holder and holder.get(field):
                holder[field] = None if field in ("last_seen", "manifest_yaml") else []
                entry.setdefault("omitted", []).append(field)
                if len(json.dumps(entries)) <= limit:
                    return entries
    while len(entries) > 1 and len(json.dumps(entries)) > limit:
        entries.pop()
    return entries


def _max_value_bytes() -> int:
    from airflow.providers.common.compat.sdk import conf

    return conf.getint("state_store", "max_value_storage_bytes", fallback=65535)


class JobRecorder:
    """Writes one try's :class:`JobRecord` into the task instance's ``task_state_store``. Best effort: a record
    that cannot be written is a warning in the task log, never the try's failure.

    :param store: ``context["task_state_store"]`` (``get(key)``, ``set(key, value, retention=...)``), or None
        (Airflow before 3.3, or a context without one): nothing is recorded.
    :param identity: the task instance and try.
    :param kubernetes_conn_id: the connection the try uses.
    :param log: the task's logger.
    :param series: the series of tries this try belongs to (:meth:`TrySeries.from_context`), noted in its record.
    """

    def __init__(
        self,
        store: Any,
        identity: TaskInstanceIdentity,
        kubernetes_conn_id: str | None,
        log: Any,
        series: TrySeries | None = None,
    ) -> None:
        self.store = store
        self.identity = identity
        self.kubernetes_conn_id = kubernetes_conn_id
        self.log = log
        self._seen_written: tuple[str, str] | None = None  # the (phase, counts and progress) last written as last_seen
        self._seen_allowance = float(SEEN_BURST)  # writes of counts alone that may go now (refilled over time)
        self._seen_counted_at = time.monotonic()  # when the allowance was last refilled
        self._seen_pending = False  # a sight that differs from it waits for the allowance
        self._ended = False  # ended() ran: no more sights
        self.series = series or TrySeries()
        #: The training's own progress over the try, oldest first (:mod:`airflow_trainjob.domain.progress`).
        self.progress: list[dict[str, Any]] = []

    @property
    def enabled(self) -> bool:
        """A store to write to."""
        return self.store is not None

    def records(self) -> list[JobRecord]:
        """The records in the store now, latest try first."""
        return read_records(self.store.get(RECORD_KEY)) if self.enabled else []

    def started(self, job: Mapping[str, Any], manifest: Mapping[str, Any] | None, *, attached: bool) -> None:
        """This try created or attached to ``job``: record it, with its manifest (an attached try keeps the one its
        creator recorded, the object as really sent).

        :param job: the job as the API returned it (its uid known).
        :param manifest: the object this try built (None: not built).
        :param attached: the job was created by an earlier try.
        """
        meta = job["metadata"]

        def change(records: list[JobRecord]) -> list[JobRecord]:
            sent = next((r.manifest_yaml for r in records if attached and r.uid == meta.get("uid")), None)
            record = JobRecord(
                try_number=self.identity.try_number,
                kubernetes_conn_id=self.kubernetes_conn_id,
                kind=job["kind"],
                namespace=meta["namespace"],
                name=meta["name"],
                uid=meta.get("uid"),
                created_at=now_iso(),
                attached=attached,
                manifest_yaml=sent or (manifest_text(manifest) if manifest else None),
                series=self.series,
                spec_sha256=spec_digest(manifest) if manifest else None,
            )
            return [record, *(r for r in records if r.try_number != record.try_number)]

        self._update(change, f"that try {self.identity.try_number} follows {job['kind']} {meta['name']}")

    def seen(self, job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]] = ()) -> None:
        """The running try sees ``job``: record it as the try's ``last_seen`` (:class:`LastSeen`) when its phase or
        replica counts differ from the sight written last: at once for a change of phase; for counts alone, at once
        :data:`SEEN_BURST` times, then once every :data:`SEEN_WRITE_SECONDS` (:meth:`seen_due_in` says when to look
        again). Never over the try's end.

        :param job: the job as the wait sees it (API JSON).
        :param pods: its pods as last seen (API JSON).
        """
        if not self.enabled or self._ended:
            return
        self.note_progress(job)
        status, family = job.get("status"), family_of(job["kind"])
        # The phase, then its reason, counts and the training's progress (its last point: the metrics too).
        sight_key = (family.phase(status), f"{family.summary(status)} {self.progress[-1:]}")
        if sight_key == self._seen_written:
            self._seen_pending = False
            return
        allowance = self._refilled_allowance()
        new_phase = self._seen_written is None or sight_key[0] != self._seen_written[0]
        if not new_phase and allowance < 1:
            self._seen_pending = True
            return
        self._seen_allowance = max(0.0, allowance - 1)
        self._seen_written, self._seen_pending = sight_key, False
        phase = sight_key[0]
        sight = LastSeen(
            seen_at=now_iso(),
            job=trim_job(job, redact=redact),
            pods=chosen_pods(pods, family, redact=redact),
            progress=[redacted(p, redact) for p in self.progress],
        )

        def change(records: list[JobRecord]) -> list[JobRecord]:
            mine = next((r for r in records if r.try_number == self.identity.try_number), None)
            if mine is not None and mine.final is None:
                mine.last_seen = sight
            return records

        self._update(change, f"what try {self.identity.try_number} saw of its job ({phase})")

    def note_progress(self, job: Mapping[str, Any]) -> None:
        """Keep the training's progress as ``job`` reports it (its family's
        :meth:`~airflow_trainjob.domain.family.JobFamily.trainer_progress`) when it changed: a point of
        :attr:`progress`, written with the next sight or the try's end. No API call: ``job`` as already read.

        :param job: the job as read (API JSON).
        """
        family = family_or_none(job.get("kind"))
        if family is not None:
            self.progress = with_report(self.progress, family, job.get("status"), now_iso())

    def took_over(self, points: Any) -> None:
        """Keep the progress points the trigger of a deferred try kept (its event's ``progress``) as this try's.

        :param points: the event's ``progress`` (:func:`~airflow_trainjob.domain.progress.packed`, or a list of
            points), or None (an event without them).
        """
        if points is not None:
            self.progress = merged([unpacked(points), self.progress])

    def seen_due_in(self) -> float | None:
        """Seconds until a sight :meth:`seen` held back may be written (0: now); None when none waits."""
        if not self._seen_pending:
            return None
        return max(0.0, (1 - self._refilled_allowance()) * SEEN_WRITE_SECONDS)

    def _refilled_allowance(self) -> float:
        now = time.monotonic()
        earned = (now - self._seen_counted_at) / SEEN_WRITE_SECONDS
        self._seen_allowance = min(float(SEEN_BURST), self._seen_allowance + earned)
        self._seen_counted_at = now
        return self._seen_allowance

    def ended(
        self,
        outcome: Outcome,
        job: Mapping[str, Any] | None,
        pods: Iterable[Mapping[str, Any]] = (),
        events: Iterable[Mapping[str, Any]] = (),
        *,
        message: str | None = None,
        summary: Mapping[str, Any] | None = None,
        wait_seconds: float | None = None,
    ) -> bool:
        """This try ended: record how, with its job as it was then. True when written (False: no store, or the
        store refused it or did not answer in time; the task log says which).

        :param outcome: see :class:`FinalState`.
        :param job: the job as last read (API JSON), or None when it was gone.
        :param pods: its pods as last read (API JSON).
        :param events: the events about the job and its pods (API JSON).
        :param message: the try's error.
        :param summary: after a success, the summary the try returns (its XCom ``return_value``).
        :param wait_seconds: write from another thread and wait at most this long (``on_kill`` runs in a signal
            handler, which may have interrupted the task's own call to the store); None: write here.
        """
        self._ended, self._seen_pending = True, False
        if job:
            self.note_progress(job)
        family = family_or_none((job or {}).get("kind"))
        final = final_state(
            outcome,
            job,
            pods,
            events,
            message=message,
            summary=summary,
            redact=redact,
            family=family,
            progress=self.progress,
        )

        def change(records: list[JobRecord]) -> list[JobRecord]:
            mine = next((r for r in records if r.try_number == self.identity.try_number), None)
            if mine is None:  # its start was not recorded (the store refused it, or an older provider ran it)
                if not job:
                    return records
                mine = self._unrecorded_start(job)
            mine.final, mine.last_seen = final, None
            return [mine, *(r for r in records if r.try_number != mine.try_number)]

        what = f"how try {self.identity.try_number} ended ({outcome})"
        if wait_seconds is None:
            return self._update(change, what)
        return self._update_within(change, what, wait_seconds)

    def _unrecorded_start(self, job: Mapping[str, Any]) -> JobRecord:
        """The record of this try's start, made at its end from ``job`` (API JSON) when the start was not recorded."""
        meta = job["metadata"]
        return JobRecord(
            try_number=self.identity.try_number,
            kubernetes_conn_id=self.kubernetes_conn_id,
            kind=job["kind"],
            namespace=meta["namespace"],
            name=meta["name"],
            uid=meta.get("uid"),
            created_at=str(meta.get("creationTimestamp") or now_iso()),
            attached=not self.identity.created_by_this_try(job),
            series=self.series,
        )

    def _update_within(
        self, change: Callable[[list[JobRecord]], list[JobRecord]], what: str, wait_seconds: float
    ) -> bool:
        """:meth:`_update` from another thread, waiting at most ``wait_seconds``; True when written in that time."""
        written: list[bool] = []
        writer = threading.Thread(
            target=lambda: written.append(self._update(change, what)), daemon=True, name="record the try"
        )
        writer.start()
        writer.join(wait_seconds)
        if writer.is_alive():
            self.log.warning("Could not record %s within %.0f s: the store did not answer", what, wait_seconds)
        return bool(written and written[0])

    def reused(
        self,
        source: JobRecord,
        succeeded_try: int,
        summary: Mapping[str, Any],
        job: Mapping[str, Any] | None,
    ) -> bool:
        """This try returned the success of an earlier try's job instead of training again: record it as a try that
        succeeded with that job, ``reused_from_try`` naming the try whose job it was (none when it is this try's own
        job: Airflow ran this try's ``execute`` again).

        :param source: the earlier try's record (its job, manifest and, when it recorded its end, the job's last
            state, pods and events).
        :param succeeded_try: the try whose job succeeded (``source``'s, or the one ``source`` reused in turn).
        :param summary: the summary this try returns (its XCom ``return_value``).
        :param job: the job as read now, when it still exists (API JSON); None: as ``source`` recorded it.
        :returns: True when written.
        """
        earlier = source.final
        own = succeeded_try == self.identity.try_number  # Airflow ran this try's execute again: its own job
        final = FinalState(
            ended_at=now_iso(),
            outcome="succeeded",
            job=trim_job(job, redact=redact) if job else earlier.job if earlier else None,
            pods=earlier.pods if earlier else [],
            events=earlier.events if earlier else [],
            summary=redacted(dict(summary), redact),
            progress=earlier.progress if earlier else [],
        )
        record = source.model_copy(
            update={
                "try_number": self.identity.try_number,
                "kubernetes_conn_id": self.kubernetes_conn_id,
                "created_at": source.created_at if own else now_iso(),
                "attached": source.attached if own else True,
                "final": final,
                "series": self.series,
                "reused_from_try": None if own else succeeded_try,
            },
            deep=True,
        )

        def change(records: list[JobRecord]) -> list[JobRecord]:
            return [record, *(r for r in records if r.try_number != record.try_number)]

        return self._update(change, f"that try {self.identity.try_number} returned the success of try {succeeded_try}")

    def _update(self, change: Callable[[list[JobRecord]], list[JobRecord]], what: str) -> bool:
        """Apply ``change`` to the records and write them; True when written."""
        if not self.enabled:
            return False
        try:
            records = sorted(change(self.records()), key=lambda r: r.try_number, reverse=True)[:MAX_TRIES]
            entries = _shed([r.model_dump(mode="json") for r in records], _max_value_bytes())
            self.store.set(RECORD_KEY, entries, retention=NEVER_EXPIRE)
        except Exception as e:  # a record that cannot be written must never fail the try
            self.log.warning("Could not record %s in task_state_store: %s", what, one_line(e))
            return False
        return True

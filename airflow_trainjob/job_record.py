"""What a :class:`~airflow_trainjob.operators.training_job.TrainingJobOperator` task records of each try's job, in
Airflow's ``task_state_store``, and the job's manifest as text.

The store (Airflow 3.3+) is per task instance and kept across its tries; the api-server reads it from the metadata
database, so the UI can show a try's job after the job itself is gone (``on_finish``, TTL). Under
:data:`RECORD_KEY` it holds a JSON list of :class:`JobRecord`, latest try first, at most :data:`MAX_TRIES`:
written when a try creates or attaches to its job (:meth:`JobRecorder.started`) and again when the try ends, by
any road (:meth:`JobRecorder.ended`), with the job, its pods and its events as they were then, trimmed
(:func:`trim_job`, :func:`trim_pod`, :func:`trim_event`). While the synchronous wait runs, the record also keeps the
job and its pods as last seen (:meth:`JobRecorder.seen`, ``last_seen``): a try whose end cannot be written still
says what it saw last. That happens when the task instance is cleared while it runs: the store is kept per task
instance (its rows are keyed by the DAG run, task and map index, the same for every try), but the worker reaches it
through the execution API by its task instance's id, which the clear replaces (Airflow keeps the old one only in
``task_instance_history``): the killed try's write is refused with 404.

A deferred task killed by the user (marked failed or success, or cleared) has no worker: Airflow runs its trigger's
``on_kill`` in the triggerer, which cannot reach ``task_state_store``. The trigger leaves the try's end as it saw it
in the task instance's XCom under :data:`PARKED_KEY` (:func:`parked_end`), which the UI reads beside the record
(:func:`read_parked`). XComs are kept until the task instance's next try starts, which clears them.

A record also says which series of tries it belongs to (:class:`TrySeries`: the tries between two clears) and, for
a success, the summary the try returned: what a retry of the same series returns instead of training again
(:mod:`airflow_trainjob.earlier_success`, :meth:`JobRecorder.reused`).

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

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.domain import conditions
from airflow_trainjob.domain.failures import container_ends
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.pods import lead_pod, pod_name, sidecar_markers
from airflow_trainjob.exceptions import JobDeletedError, TrainingJobStoppedError, TrainingJobTimeoutError
from airflow_trainjob.hooks.api_errors import one_line

#: ``task_state_store`` key of the records; renaming it loses the records of runs made before.
RECORD_KEY = "airflow_trainjob_tries"
#: Tries kept, latest first.
MAX_TRIES = 20
#: Pods kept per try (the lead replica's first, then the failed ones, then the rest by name).
MAX_PODS = 64
#: Events kept per try, the newest, oldest first.
MAX_EVENTS = 50
#: Characters kept of a try's error message.
MAX_MESSAGE = 4000
#: Seconds :meth:`JobRecorder.ended` waits for the store when asked to wait at most that long (``on_kill``).
KILL_WRITE_SECONDS = 5.0
#: XCom key of a try's end that its trigger recorded (:func:`parked_end`); renaming it loses the ends parked before.
PARKED_KEY = "airflow_trainjob_try_end"
#: Writes of ``last_seen`` for changed replica counts alone that may follow one another at once (a change of phase is
#: always written at once); then one more every :data:`SEEN_WRITE_SECONDS`: a job of hundreds of replicas changes its
#: counts as each pod starts, a small one a few times.
SEEN_BURST = 5
SEEN_WRITE_SECONDS = 6.0

Outcome = Literal["succeeded", "failed", "timed_out", "stopped", "deleted"]

#: kubectl's copy of the whole object it applied: the manifest again (embedded scripts, env values).
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

#: The records' retention (see the module's docstring): as long as the DAG run. Airflow's own marker, compared by
#: identity by the store (None before Airflow 3.3, which has no store: nothing is recorded).
NEVER_EXPIRE: timedelta | None
try:  # where it is defined; ``airflow.sdk`` re-exports it
    from airflow.sdk.execution_time.context import NEVER_EXPIRE
except ImportError:  # pragma: no cover
    NEVER_EXPIRE = None


class _Record(BaseModel):
    # Tolerant of what a newer provider wrote: unknown keys are kept (and written back), never an error.
    model_config = ConfigDict(extra="allow")


class TrySeries(_Record):
    """Which series of tries of a task instance a try belongs to: the tries between two clears. A retry keeps both
    numbers; a clear changes at least one of them.

    :param clear_number: the DAG run's ``clear_number`` (Airflow adds 1 each time tasks of the run are cleared and
        the run is reset: the UI's Clear, ``clearTaskInstances`` with ``reset_dag_runs``, the default); None when the
        context has no DAG run.
    :param max_tries: the task instance's ``max_tries`` (Airflow sets it to ``try_number + retries`` at every clear,
        including one that leaves the run alone); None when the context's task instance has none.
    """

    clear_number: int | None = None
    max_tries: int | None = None

    @classmethod
    def from_context(cls, context: Mapping[str, Any]) -> TrySeries:
        """The series of the try an Airflow task context describes.

        :param context: the task context (``dag_run.clear_number``, ``ti.max_tries``).
        """
        return cls(
            clear_number=_int_or_none(getattr(context.get("dag_run"), "clear_number", None)),
            max_tries=_int_or_none(getattr(context.get("ti"), "max_tries", None)),
        )

    def same_as(self, other: TrySeries) -> bool:
        """Both numbers equal: the two tries are of one series (no clear between them).

        :param other: another try's series."""
        return (self.clear_number, self.max_tries) == (other.clear_number, other.max_tries)

    def describe(self) -> str:
        """``clear_number 0, max_tries 2``: the numbers as Airflow names them."""
        return f"clear_number {self.clear_number}, max_tries {self.max_tries}"


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class FinalState(_Record):
    """How a try ended, and its job as it was then.

    :param ended_at: ISO-8601 UTC time the try ended.
    :param outcome: ``succeeded``, ``failed`` (the job failed, or the try did with an error), ``timed_out``
        (``timeout``, ``startup_timeout``, ``queue_timeout``), ``stopped`` (Airflow stopped the task) or ``deleted``
        (the job was deleted outside the task before it finished).
    :param message: the try's error, redacted, at most :data:`MAX_MESSAGE` characters; None after a success.
    :param job: the job (:func:`trim_job`), or None when it was gone before the try could look.
    :param pods: its pods (:func:`trim_pod`), at most :data:`MAX_PODS`.
    :param events: the events of the job and its pods (:func:`trim_event`), at most :data:`MAX_EVENTS`, newest
        last.
    :param recorded_by: ``trigger`` when the deferred task's trigger recorded it (:func:`parked_end`); None: the
        task did.
    :param summary: after a success, the summary the try returned (its XCom ``return_value``), redacted; None
        otherwise.
    """

    ended_at: str
    outcome: Outcome
    message: str | None = None
    job: dict[str, Any] | None = None
    pods: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    recorded_by: str | None = None
    summary: dict[str, Any] | None = None


class LastSeen(_Record):
    """The job as a running try last saw it (the synchronous wait writes it as the job changes).

    :param seen_at: ISO-8601 UTC time of that sight.
    :param job: the job (:func:`trim_job`).
    :param pods: its pods (:func:`trim_pod`), at most :data:`MAX_PODS`.
    """

    seen_at: str
    job: dict[str, Any]
    pods: list[dict[str, Any]] = []


class JobRecord(_Record):
    """One try's job.

    :param try_number: the try (1 for the first).
    :param kubernetes_conn_id: the connection the try used (where to read the job now).
    :param kind: the job's ``kind``.
    :param namespace: its ``metadata.namespace``.
    :param name: its ``metadata.name``.
    :param uid: its ``metadata.uid`` (None until known).
    :param created_at: ISO-8601 UTC time this try created (or attached to) the job.
    :param attached: True when this try followed a job an earlier try created.
    :param manifest_yaml: the object as sent, as YAML, secrets redacted (:func:`manifest_text`).
    :param final: how the try ended; None while it runs (or when it ended without a word: a killed worker, or a
        clear that replaced the task instance's id before the try could write).
    :param last_seen: the job as the try last saw it while it ran (:class:`LastSeen`); None once ``final`` is set.
    :param omitted: what was left out of this record to keep the list within ``[state_store]
        max_value_storage_bytes`` (``events``, ``pods``, ``last_seen``, ``manifest_yaml``).
    :param series: the series of tries the try belongs to (:class:`TrySeries`); None in a record written by an
        earlier version of this provider, which did not note it.
    :param spec_sha256: :func:`spec_digest` of the job this try built (None: not built).
    :param reused_from_try: the try whose job's success this try returned instead of training again (None: it
        created or followed a job).
    """

    try_number: int
    kubernetes_conn_id: str | None = None
    kind: str
    namespace: str
    name: str
    uid: str | None = None
    created_at: str
    attached: bool = False
    manifest_yaml: str | None = None
    final: FinalState | None = None
    last_seen: LastSeen | None = None
    omitted: list[str] = []
    series: TrySeries | None = None
    spec_sha256: str | None = None
    reused_from_try: int | None = None


def read_records(value: Any) -> list[JobRecord]:
    """The records in a ``task_state_store`` value, latest try first; entries that are not records are skipped.

    :param value: what ``task_state_store.get(RECORD_KEY)`` returned (a list of dicts), or None.
    """
    if not isinstance(value, list):
        return []
    records = []
    for entry in value:
        try:
            records.append(JobRecord.model_validate(entry))
        except ValidationError:
            continue
    return sorted(records, key=lambda r: r.try_number, reverse=True)


# ---- trimming: what a record keeps of the API's objects (pure) ------------------------------------------------


def _pick(source: Any, keys: Iterable[str]) -> dict[str, Any]:
    source = source if isinstance(source, Mapping) else {}
    return {k: source[k] for k in keys if k in source and source[k] is not None}


def trim_job(job: Mapping[str, Any]) -> dict[str, Any]:
    """What a record keeps of a job: ``kind``, ``metadata`` (name, namespace, uid, labels, annotations but kubectl's
    last-applied copy, creationTimestamp) and ``status``; never its spec (pod templates: scripts, env values).

    :param job: the job as the API returns it (a JSON dict).
    """
    meta = _pick(job.get("metadata"), ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp"))
    if "annotations" in meta:
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != _LAST_APPLIED}
    return _redacted({"kind": job.get("kind"), "metadata": meta, "status": job.get("status") or {}})


_CONTAINER_STATUS_KEYS = ("name", "ready", "started", "restartCount", "state", "lastState", "image")


def trim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """What a record keeps of a pod: ``metadata`` (name, labels, creationTimestamp, uid), ``spec.nodeName``, the
    names of its sidecars (``spec.initContainers[]`` ``name`` and ``restartPolicy: Always``: their stop is no
    failure) and ``status`` (phase, reason, message, startTime, containerStatuses, initContainerStatuses).

    :param pod: the pod as the API returns it (a JSON dict).
    """
    status = _pick(pod.get("status"), ("phase", "reason", "message", "startTime"))
    for key in ("containerStatuses", "initContainerStatuses"):
        found = (pod.get("status") or {}).get(key)
        if isinstance(found, list):
            status[key] = [_pick(c, _CONTAINER_STATUS_KEYS) for c in found]
    spec = _pick(pod.get("spec"), ("nodeName",))
    sidecars = sidecar_markers(pod)
    if sidecars:
        spec["initContainers"] = sidecars
    return _redacted(
        {
            "metadata": _pick(pod.get("metadata"), ("name", "labels", "creationTimestamp", "uid")),
            "spec": spec,
            "status": status,
        }
    )


def trim_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """What a record keeps of a core/v1 event: type, reason, message, lastTimestamp, eventTime, count and
    ``involvedObject`` (kind, name).

    :param event: the event as the API returns it (a JSON dict).
    """
    trimmed = _pick(event, ("type", "reason", "message", "lastTimestamp", "eventTime", "count"))
    trimmed["involvedObject"] = _pick(event.get("involvedObject"), ("kind", "name"))
    return _redacted(trimmed)


def event_time(event: Mapping[str, Any]) -> str:
    """When an event last happened (RFC 3339): ``lastTimestamp``, else ``eventTime``, else its creation.

    :param event: a core/v1 event (a JSON dict)."""
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def newest_events(events: Iterable[Mapping[str, Any]], limit: int = MAX_EVENTS) -> list[dict[str, Any]]:
    """The newest events, trimmed (:func:`trim_event`), oldest first.

    :param events: core/v1 events (JSON dicts), any order.
    :param limit: how many to keep (count).
    """
    ordered = sorted(events, key=event_time)
    return [trim_event(e) for e in ordered[-limit:]] if limit > 0 else []


def chosen_pods(pods: Iterable[Mapping[str, Any]], kind: str, limit: int = MAX_PODS) -> list[dict[str, Any]]:
    """At most ``limit`` pods, trimmed: the lead replica's, then those with a failed container, then the rest by
    name (a job of hundreds of workers keeps the pods that tell its story); sorted by name.

    :param pods: the job's pods (JSON dicts).
    :param kind: the job's kind (which replica leads it).
    :param limit: how many to keep (count).
    """
    pods = list(pods)
    job_kind = JOB_KINDS.get(kind)
    lead = lead_pod(pods, job_kind) if job_kind else None
    failed = {e.pod for e in container_ends(pods, job_kind) if e.failed} if job_kind else set()
    ranked = sorted(pods, key=lambda p: (p is not lead, pod_name(p) not in failed, pod_name(p)))
    return sorted((trim_pod(p) for p in ranked[:limit]), key=lambda p: p["metadata"].get("name", ""))


def outcome_of(error: BaseException | None, *, stopped: bool = False) -> Outcome:
    """The outcome of a try (see :class:`FinalState`).

    :param error: the exception the try ended with; None: it succeeded.
    :param stopped: Airflow stopped the task (its ``on_kill`` ran), whatever the error that followed.
    """
    if stopped or isinstance(error, TrainingJobStoppedError):
        return "stopped"
    if error is None:
        return "succeeded"
    if isinstance(error, TrainingJobTimeoutError):
        return "timed_out"
    if isinstance(error, JobDeletedError):
        return "deleted"
    return "failed"


def now_iso() -> str:
    """The current time, ISO-8601 UTC with a ``Z``, to the second."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def final_state(
    outcome: Outcome,
    job: Mapping[str, Any] | None,
    pods: Iterable[Mapping[str, Any]] = (),
    events: Iterable[Mapping[str, Any]] = (),
    *,
    message: str | None = None,
    recorded_by: str | None = None,
    summary: Mapping[str, Any] | None = None,
) -> FinalState:
    """How a try ended, now, with its job as it is: trimmed and redacted (see :class:`FinalState`).

    :param outcome: see :class:`FinalState`.
    :param job: the job as last read (API JSON), or None when it was gone.
    :param pods: its pods as last read (API JSON).
    :param events: the events about the job and its pods (API JSON).
    :param message: the try's error.
    :param recorded_by: ``trigger`` when the trigger records it; None: the task.
    :param summary: after a success, the summary the try returns (its XCom ``return_value``).
    """
    kind = job.get("kind", "") if job else ""
    return FinalState(
        ended_at=now_iso(),
        outcome=outcome,
        message=_redact(message[:MAX_MESSAGE]) if message else None,
        job=trim_job(job) if job else None,
        pods=chosen_pods(pods, kind),
        events=newest_events(events),
        recorded_by=recorded_by,
        summary=_redacted(dict(summary)) if summary is not None else None,
    )


# ---- a try's end recorded outside the store -----------------------------------------------------------------------


def parked_end(try_number: int, final: FinalState) -> dict[str, Any]:
    """The XCom value under :data:`PARKED_KEY` of a try's end that could not be written to ``task_state_store`` (a
    deferred task killed in the triggerer): ``{"try_number", "final"}`` (JSON).

    :param try_number: the try.
    :param final: how it ended (:func:`final_state`).
    """
    return {"try_number": try_number, "final": final.model_dump(mode="json")}


def read_parked(value: Any) -> tuple[int, FinalState] | None:
    """The try and its end in an XCom value of :func:`parked_end`; None for anything else.

    :param value: the XCom value under :data:`PARKED_KEY` (deserialized), or None.
    """
    if not isinstance(value, Mapping) or not isinstance(value.get("try_number"), int):
        return None
    try:
        return value["try_number"], FinalState.model_validate(value.get("final"))
    except ValidationError:
        return None


def with_parked(records: list[JobRecord], parked: tuple[int, FinalState] | None) -> list[JobRecord]:
    """``records`` with a parked end (:func:`read_parked`) as the ``final`` of its try, when that try recorded none
    itself (what the task wrote wins).

    :param records: the records, latest try first (:func:`read_records`).
    :param parked: the try and its end, or None.
    """
    if parked is None:
        return records
    try_number, final = parked
    return [
        r.model_copy(update={"final": final, "last_seen": None})
        if r.try_number == try_number and r.final is None
        else r
        for r in records
    ]


def spec_digest(manifest: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the job's ``kind`` and ``spec``: what it trains, not which try sent it (the try's labels and
    annotations are in ``metadata``). Two tries that built the same job have the same digest.

    :param manifest: the job object as built (a JSON dict).
    """
    canonical = json.dumps({"kind": manifest.get("kind"), "spec": manifest.get("spec")}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


# ---- the manifest as text ---------------------------------------------------------------------------------------


def _redact(value: str, name: str | None = None) -> str:
    """``value`` with the secrets Airflow's masker knows of replaced: the ``redact`` the task runner applies to
    rendered template fields (``airflow.sdk._shared.secrets_masker`` on Airflow 3)."""
    from airflow.providers.common.compat.sdk import redact

    redacted = redact(value, name)
    return redacted if isinstance(redacted, str) else value


def _redacted(value: Any) -> Any:
    """Every string in ``value`` (dicts and lists of API JSON) with the known secrets replaced."""
    if isinstance(value, str):
        return _redact(value)
    if isinstance(value, Mapping):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return value


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
    return _redact(to_yaml(manifest), "manifest")


def _left_out(count: int, multiline: bool) -> str:
    where = "\n" if multiline else " "
    return f"{where}[... {count:,} characters left out here; the Training job tab shows the manifest in full]"


def _shortened(value: Any, keep: int) -> Any:
    """``value`` with every string longer than ``keep`` characters (and the marker) cut to ``keep`` and marked.
    Secrets are redacted before cutting: a secret cut in two is no longer one the masker can find."""
    if isinstance(value, str):
        text = _redact(value)
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
    then the last sight, then the manifests, noting each in the entry's ``omitted``; then drops the oldest tries
    (never the latest)."""
    if limit <= 0 or len(json.dumps(entries)) <= limit:
        return entries
    for field in ("events", "pods", "last_seen", "manifest_yaml"):
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
        self._seen_written: tuple[str, str] | None = None  # the (phase, replica counts) last written as last_seen
        self._seen_allowance = float(SEEN_BURST)  # writes of counts alone that may go now (refilled over time)
        self._seen_counted_at = time.monotonic()  # when the allowance was last refilled
        self._seen_pending = False  # a sight that differs from it waits for the allowance
        self._ended = False  # ended() ran: no more sights
        self.series = series or TrySeries()

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
        status = job.get("status")
        sight_key = (conditions.phase(status), conditions.replica_counts(status))
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
        sight = LastSeen(seen_at=now_iso(), job=trim_job(job), pods=chosen_pods(pods, str(job.get("kind") or "")))

        def change(records: list[JobRecord]) -> list[JobRecord]:
            mine = next((r for r in records if r.try_number == self.identity.try_number), None)
            if mine is not None and mine.final is None:
                mine.last_seen = sight
            return records

        self._update(change, f"what try {self.identity.try_number} saw of its job ({phase})")

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
        final = final_state(outcome, job, pods, events, message=message, summary=summary)

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
            job=trim_job(job) if job else earlier.job if earlier else None,
            pods=earlier.pods if earlier else [],
            events=earlier.events if earlier else [],
            summary=_redacted(dict(summary)),
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

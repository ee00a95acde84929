"""What a :class:`~airflow_trainjob.operators.training_job.TrainingJobOperator` task records of each try's job: the
record's models, and what it keeps of the API's objects (pure: no Airflow, no client, no I/O; the redaction of
secrets is a parameter, Airflow's masker on the Airflow side).

The task keeps the records in Airflow's ``task_state_store`` (written by
:class:`~airflow_trainjob.operators.recorder.JobRecorder`, which says where and for how long). Under
:data:`RECORD_KEY` the store holds a JSON list of :class:`JobRecord`, latest try first, at most :data:`MAX_TRIES`:
one per try, with how it ended (:class:`FinalState`: the job, its pods and its events as they were then, trimmed by
:func:`trim_job`, :func:`trim_pod`, :func:`trim_event`) or, while it runs, how it last saw its job
(:class:`LastSeen`).

A deferred task killed by the user (marked failed or success, or cleared) has no worker: Airflow runs its trigger's
``on_kill`` in the triggerer, which cannot reach ``task_state_store``. The trigger leaves the try's end as it saw it
in the task instance's XCom under :data:`PARKED_KEY` (:func:`parked_end`), which the UI reads beside the record
(:func:`read_parked`, :func:`with_parked`). XComs are kept until the task instance's next try starts, which clears
them.

A record also says which series of tries it belongs to (:class:`TrySeries`: the tries between two clears) and, for
a success, the summary the try returned: what a retry of the same series returns instead of training again
(:mod:`airflow_trainjob.domain.earlier_success`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from airflow_trainjob.constants import JOB_COMPLETION_INDEX, RUNTIME_PATCH_MANAGER
from airflow_trainjob.domain.failures import EndsOfContainers
from airflow_trainjob.domain.parent_run import without_parent_run_env
from airflow_trainjob.domain.pods import Pod, pod_name, sidecar_markers
from airflow_trainjob.exceptions import JobDeletedError, TrainingJobStoppedError, TrainingJobTimeoutError

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
#: XCom key of a try's end that its trigger recorded (:func:`parked_end`); renaming it loses the ends parked before.
PARKED_KEY = "airflow_trainjob_try_end"

Outcome = Literal["succeeded", "failed", "timed_out", "stopped", "deleted"]

#: A string with the secrets a masker knows of replaced (the task's and the trigger's records pass Airflow's:
#: :func:`~airflow_trainjob.operators.recorder.redact`); None: strings are kept as they are.
Redact = Callable[[str], str]

#: kubectl's copy of the whole object it applied: the manifest again (embedded scripts, env values).
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


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
    :param progress: the training's own progress over the try, oldest first: the points of
        :mod:`airflow_trainjob.domain.progress` (at most :data:`~airflow_trainjob.domain.progress.MAX_POINTS`; empty
        for a job whose controller reports none).
    """

    ended_at: str
    outcome: Outcome
    message: str | None = None
    job: dict[str, Any] | None = None
    pods: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    recorded_by: str | None = None
    summary: dict[str, Any] | None = None
    progress: list[dict[str, Any]] = []


class LastSeen(_Record):
    """The job as a running try last saw it (the synchronous wait writes it as the job changes).

    :param seen_at: ISO-8601 UTC time of that sight.
    :param job: the job (:func:`trim_job`).
    :param pods: its pods (:func:`trim_pod`), at most :data:`MAX_PODS`.
    :param progress: the training's own progress so far, oldest first (see :attr:`FinalState.progress`).
    """

    seen_at: str
    job: dict[str, Any]
    pods: list[dict[str, Any]] = []
    progress: list[dict[str, Any]] = []


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
    :param manifest_yaml: the object as sent, as YAML, secrets redacted
        (:func:`~airflow_trainjob.operators.recorder.manifest_text`).
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


def redacted(value: Any, redact: Redact | None) -> Any:
    """Every string in ``value`` (dicts and lists of API JSON) with ``redact`` applied; ``value`` itself when
    ``redact`` is None.

    :param value: API JSON (dicts, lists, strings, numbers).
    :param redact: replaces the known secrets in one string (:data:`Redact`), or None.
    """
    if redact is None:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redacted(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v, redact) for v in value]
    return value


def trim_job(job: Mapping[str, Any], *, redact: Redact | None = None) -> dict[str, Any]:
    """What a record keeps of a job: ``kind``, ``metadata`` (name, namespace, uid, labels, annotations but kubectl's
    last-applied copy, creationTimestamp) and ``status``; never its spec (pod templates: scripts, env values).

    :param job: the job as the API returns it (a JSON dict).
    :param redact: applied to every string kept (:data:`Redact`); None: kept as they are.
    """
    meta = _pick(job.get("metadata"), ("name", "namespace", "uid", "labels", "annotations", "creationTimestamp"))
    if "annotations" in meta:
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != _LAST_APPLIED}
    return redacted({"kind": job.get("kind"), "metadata": meta, "status": job.get("status") or {}}, redact)


_CONTAINER_STATUS_KEYS = ("name", "ready", "started", "restartCount", "state", "lastState", "image")


def _index_annotation(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The Job controller's completion index annotation, when the pod has it: a TrainJob's replica is read from it
    (a label too only since Kubernetes 1.28)."""
    found = ((pod.get("metadata") or {}).get("annotations") or {}).get(JOB_COMPLETION_INDEX)
    return {"annotations": {JOB_COMPLETION_INDEX: found}} if found is not None else {}


def trim_pod(pod: Mapping[str, Any], *, redact: Redact | None = None) -> dict[str, Any]:
    """What a record keeps of a pod: ``metadata`` (name, labels, creationTimestamp, uid), ``spec.nodeName``, the
    names of its sidecars (``spec.initContainers[]`` ``name`` and ``restartPolicy: Always``: their stop is no
    failure) and ``status`` (phase, reason, message, startTime, containerStatuses, initContainerStatuses).

    :param pod: the pod as the API returns it (a JSON dict).
    :param redact: applied to every string kept (:data:`Redact`); None: kept as they are.
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
    return redacted(
        {
            "metadata": {
                **_pick(pod.get("metadata"), ("name", "labels", "creationTimestamp", "uid")),
                **_index_annotation(pod),
            },
            "spec": spec,
            "status": status,
        },
        redact,
    )


def trim_event(event: Mapping[str, Any], *, redact: Redact | None = None) -> dict[str, Any]:
    """What a record keeps of a core/v1 event: type, reason, message, lastTimestamp, eventTime, count and
    ``involvedObject`` (kind, name).

    :param event: the event as the API returns it (a JSON dict).
    :param redact: applied to every string kept (:data:`Redact`); None: kept as they are.
    """
    trimmed = _pick(event, ("type", "reason", "message", "lastTimestamp", "eventTime", "count"))
    trimmed["involvedObject"] = _pick(event.get("involvedObject"), ("kind", "name"))
    return redacted(trimmed, redact)


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


def newest_events(
    events: Iterable[Mapping[str, Any]], limit: int = MAX_EVENTS, *, redact: Redact | None = None
) -> list[dict[str, Any]]:
    """The newest events, trimmed (:func:`trim_event`), oldest first.

    :param events: core/v1 events (JSON dicts), any order.
    :param limit: how many to keep (count).
    :param redact: applied to every string kept (:data:`Redact`); None: kept as they are.
    """
    ordered = sorted(events, key=event_time)
    return [trim_event(e, redact=redact) for e in ordered[-limit:]] if limit > 0 else []


class PodsReader(EndsOfContainers, Protocol):
    """What :func:`chosen_pods` reads of the job's family (:class:`~airflow_trainjob.domain.family.JobFamily` has
    it): which pod leads, and how the containers ended."""

    def lead_pod(self, pods: Iterable[Pod]) -> Pod | None:
        """The lead replica's pod 0, or None.

        :param pods: the job's pods, API JSON dicts.
        """
        ...


def chosen_pods(
    pods: Iterable[Mapping[str, Any]],
    family: PodsReader | None,
    limit: int = MAX_PODS,
    *,
    redact: Redact | None = None,
) -> list[dict[str, Any]]:
    """At most ``limit`` pods, trimmed: the lead replica's, then those with a failed container, then the rest by
    name (a job of hundreds of workers keeps the pods that tell its story); sorted by name.

    :param pods: the job's pods (JSON dicts).
    :param family: the job's API family (which replica leads it, which containers failed); None: unknown, by name.
    :param limit: how many to keep (count).
    :param redact: applied to every string kept (:data:`Redact`); None: kept as they are.
    """
    pods = list(pods)
    lead = family.lead_pod(pods) if family is not None else None
    failed = {e.pod for e in family.container_ends(pods) if e.failed} if family is not None else set()
    ranked = sorted(pods, key=lambda p: (p is not lead, pod_name(p) not in failed, pod_name(p)))
    return sorted((trim_pod(p, redact=redact) for p in ranked[:limit]), key=lambda p: p["metadata"].get("name", ""))


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
    redact: Redact | None = None,
    family: PodsReader | None = None,
    progress: Iterable[Mapping[str, Any]] = (),
) -> FinalState:
    """How a try ended, now, with its job as it is: trimmed and redacted (see :class:`FinalState`).

    :param outcome: see :class:`FinalState`.
    :param job: the job as last read (API JSON), or None when it was gone.
    :param pods: its pods as last read (API JSON).
    :param events: the events about the job and its pods (API JSON).
    :param message: the try's error.
    :param recorded_by: ``trigger`` when the trigger records it; None: the task.
    :param summary: after a success, the summary the try returns (its XCom ``return_value``).
    :param redact: applied to every string kept: the message, the job, pods and events, the summary
        (:data:`Redact`); None: kept as they are.
    :param family: the job's API family (which pods to keep: :func:`chosen_pods`); None: unknown.
    :param progress: the training's progress points over the try (:mod:`airflow_trainjob.domain.progress`), oldest
        first, redacted as the rest.
    """
    return FinalState(
        ended_at=now_iso(),
        outcome=outcome,
        message=redacted(message[:MAX_MESSAGE], redact) if message else None,
        job=trim_job(job, redact=redact) if job else None,
        pods=chosen_pods(pods, family, redact=redact),
        events=newest_events(events, redact=redact),
        recorded_by=recorded_by,
        summary=redacted(dict(summary), redact) if summary is not None else None,
        progress=[redacted(dict(p), redact) for p in progress],
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


def _without_provider_patch(spec: Any) -> Any:
    """A TrainJob's ``spec`` without the provider's own ``runtimePatches`` entry (manager
    :data:`~airflow_trainjob.constants.RUNTIME_PATCH_MANAGER`): it carries the try's labels and a pod token drawn for
    each TrainJob, not what the job trains."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("runtimePatches"), list):
        return spec
    patches = [
        p for p in spec["runtimePatches"] if not (isinstance(p, Mapping) and p.get("manager") == RUNTIME_PATCH_MANAGER)
    ]
    return {**spec, "runtimePatches": patches}


def spec_digest(manifest: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the job's ``kind`` and ``spec``: what it trains, not which try sent it (the try's labels and
    annotations are in ``metadata``, the OpenLineage parent run its containers are given in their ``env``: see
    :func:`~airflow_trainjob.domain.parent_run.without_parent_run_env`, a TrainJob's pod labels in the provider's
    runtime patch). Two tries that built the same job have the
    same digest.

    :param manifest: the job object as built (a JSON dict).
    """
    spec = _without_provider_patch(without_parent_run_env(manifest.get("spec")))
    canonical = json.dumps({"kind": manifest.get("kind"), "spec": spec}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()

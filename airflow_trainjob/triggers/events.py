"""The trigger's event, the one shape :class:`~airflow_trainjob.triggers.training_job.TrainingJobTrigger` fires and the
task resumed from it (the operator's, the sensor's) reads: its outcomes, and what it keeps of the job and its pods
within its budget (Airflow stores the event with the task instance and prints it in the task log).

Light, as the trigger's module must be (the triggerer imports it on its event loop): pure functions over the API's
JSON dicts, no client.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME
from airflow_trainjob.domain.pods import pod_name, sidecar_markers
from airflow_trainjob.domain.progress import packed, thinned
from airflow_trainjob.families import family_or_none

# Event outcomes.
FINISHED, DELETED, TIMED_OUT, ERROR = "finished", "deleted", "timeout", "error"

#: Characters of JSON an event may take: Airflow stores it with the task instance and prints it in the task log
#: (kept under 2 KB in each form: JSON, the stored ``next_kwargs``, the repr the log prints; the log record around
#: it adds about 430 bytes of Airflow's own: the task instance's ids and the trigger's name).
EVENT_BUDGET = 2000
#: Characters kept of a condition's message, or of the event's message, when the event would exceed its budget.
SHORT_MESSAGE = 200


def event_payload(
    outcome: str,
    message: str,
    job: Mapping[str, Any] | None = None,
    pods: Sequence[dict[str, Any]] = (),
    *,
    lead_log: dict[str, Any] | None = None,
    tails: Mapping[str, str] | None = None,
    progress: Sequence[Mapping[str, Any]] = (),
    **extra: Any,
) -> dict[str, Any]:
    """The event's payload (a JSON dict), within :data:`EVENT_BUDGET` characters of JSON whatever the job's pod
    templates hold.

    :param outcome: :data:`FINISHED`, :data:`DELETED`, :data:`TIMED_OUT` or :data:`ERROR` (``outcome``).
    :param message: what the task says of it (``message``).
    :param job: the last object read -- for a job deleted after it finished, its final object -- or None. The event
        keeps (``job``) what the resumed task needs when the job is gone by then: apiVersion, kind, metadata
        name/namespace/uid (and the Kueue queue label), each replica type's ``replicas``, ``restartPolicy`` and
        container names, ``runPolicy.suspend``, and the status' conditions, replica statuses, start and completion
        times; never a pod template. The resumed task reads the job itself for the rest.
    :param pods: for a ``Failed`` job, the pods its exit codes are read from (API JSON dicts). The event keeps
        (``pods``) each pod's name, replica labels, container names, phase and the containers' terminated states --
        failed pods first, as many as the budget holds -- so that the verdict does not depend on the pods still
        existing at resume; else empty.
    :param lead_log: where the trigger's copy of the lead's log stands (``lead_log``: a
        :meth:`~airflow_trainjob.domain.lead_log.LogCursor.to_dict`, ``"complete": true`` when the trigger read it to its
        end before stopping the lead's pod), or None.
    :param tails: failed runs' log tails the trigger read when its pod watch first saw them fail, masked:
        :attr:`~airflow_trainjob.domain.failures.ContainerEnd.source` -> its last lines, the first failure first. The
        event keeps them (``tails``, absent when there are none) after the pods, as many as the budget holds, each
        shortened to its last lines when it does not fit whole (:func:`fit_tail`); the resumed task quotes them
        (``known_tails``) as the pods may be gone.
    :param progress: the training's own progress over the wait, oldest first (the points of
        :mod:`airflow_trainjob.domain.progress`). The event keeps them (``progress``, absent when there are none) in
        what the budget leaves after the tails, thinned to fit (:func:`fit_progress`); the resumed task records them.

    Further keyword arguments are further keys of the payload: ``which`` for a timeout (``timeout``,
    ``startup_timeout`` or ``queue_timeout``).
    """
    payload: dict[str, Any] = {
        "outcome": outcome,
        "message": message,
        "job": _job_summary(job) if job else None,
        "pods": [],
        **({"lead_log": lead_log} if lead_log is not None else {}),
        **extra,
    }
    family = family_or_none((job or {}).get("kind"))
    keys = frozenset(family.pod_keys) if family is not None else frozenset()
    payload = _within_budget(payload, [_pod_summary(p, keys) for p in _failed_first(pods, job)])
    return fit_progress(_with_tails(payload, tails or {}), progress)


def fit_progress(payload: dict[str, Any], points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``payload`` with as many of ``points`` as fit in :data:`EVENT_BUDGET` (``progress``,
    :func:`~airflow_trainjob.domain.progress.packed`): all when they fit, else thinned
    (:func:`~airflow_trainjob.domain.progress.thinned`: the first and the latest kept), else the latest alone;
    unchanged when not even that fits, or there are none.

    :param payload: the event's payload so far (a JSON dict).
    :param points: progress points, oldest first.
    """
    for count in range(len(points), 0, -1):
        kept = packed(thinned(points, count) if count >= 2 else list(points[-1:]))
        if _size({**payload, "progress": kept}) <= EVENT_BUDGET:
            return {**payload, "progress": kept}
    return payload


def _job_summary(job: Mapping[str, Any]) -> dict[str, Any]:
    """What the resumed task needs of the job when the job itself is gone by then (else it reads the job): its
    identity, the Kueue queue it waits in, each replica type's ``replicas``, ``restartPolicy`` and container names
    (the exit codes' meaning, the container to quote), ``runPolicy.suspend`` and the status' conditions, replica
    statuses and times. Never a pod template (environment values, embedded scripts, secrets)."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    family = family_or_none(job.get("kind"))
    summary_spec: dict[str, Any] = family.spec_summary(spec) if family is not None else {}
    if family is None and (spec.get("runPolicy") or {}).get("suspend") is True:  # queued: the timeout's message says so
        summary_spec["runPolicy"] = {"suspend": True}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k == LABEL_KUEUE_QUEUE_NAME}
    return {
        "apiVersion": job.get("apiVersion"),
        "kind": job.get("kind"),
        "metadata": {
            **{k: meta[k] for k in ("name", "namespace", "uid") if k in meta},
            **({"labels": labels} if labels else {}),
        },
        "spec": summary_spec,
        "status": _status_summary(job.get("status")),
    }


def _status_summary(status: Any) -> dict[str, Any]:
    """The status' conditions, replica counts (not the controller's label selectors) and times, as a copy: the
    payload may be shortened (see :func:`_within_budget`), the stream's cached job must not be."""
    kept = {k: status[k] for k in _STATUS_KEPT if k in status} if isinstance(status, Mapping) else {}
    if isinstance(kept.get("replicaStatuses"), Mapping):
        kept["replicaStatuses"] = {
            rtype: {k: v for k, v in (counts or {}).items() if isinstance(v, int)}
            for rtype, counts in kept["replicaStatuses"].items()
        }
    return copy.deepcopy(kept)


#: What the event keeps of the job's status.
_STATUS_KEPT = ("conditions", "replicaStatuses", "startTime", "completionTime")


def _terminated(state: Any) -> dict[str, Any]:
    terminated = (state or {}).get("terminated") if isinstance(state, Mapping) else None
    if not isinstance(terminated, Mapping):
        return {}
    return {
        "terminated": {k: terminated[k] for k in ("exitCode", "reason", "message", "finishedAt") if k in terminated}
    }


def _container_summaries(statuses: Any) -> list[dict[str, Any]]:
    """Each container status' name, restart count and terminated states (current and last)."""
    containers = []
    for c in statuses if isinstance(statuses, list) else []:
        ends = {key: _terminated(c.get(key)) for key in ("state", "lastState")}
        containers.append(
            {
                "name": c.get("name"),
                **({"restartCount": c["restartCount"]} if c.get("restartCount") else {}),
                **{key: end for key, end in ends.items() if end},
            }
        )
    return containers


def _pod_summary(pod: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """What a verdict reads of a pod that is gone by the time the task resumes: its name, the labels and annotations
    of ``keys`` (its family's :attr:`~airflow_trainjob.domain.family.JobFamily.pod_keys`: its replica, which job
    object it is of), phase (and an eviction's reason), each container's terminated states — init containers' too —
    and which init containers are sidecars; never its spec otherwise (an embedded training script, env values)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    inits = _container_summaries(status.get("initContainerStatuses"))
    sidecars = sidecar_markers(pod)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k in keys}
    return {
        "metadata": {
            "name": meta.get("name"),
            "labels": {k: v for k, v in (meta.get("labels") or {}).items() if k in keys},
            **({"annotations": annotations} if annotations else {}),
        },
        **({"spec": {"initContainers": sidecars}} if sidecars else {}),
        "status": {
            **{k: status[k] for k in ("phase", "reason", "message") if k in status},
            **({"initContainerStatuses": inits} if inits else {}),
            "containerStatuses": _container_summaries(status.get("containerStatuses")),
        },
    }


def _failed_first(pods: Sequence[dict[str, Any]], job: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The pods, those whose container failed first (the earliest failure first: the root cause), then the rest."""
    family = family_or_none((job or {}).get("kind"))
    if family is None:
        return list(pods)
    first_failure: dict[str, str] = {}
    for end in family.container_ends(pods):
        if end.failed:
            first_failure.setdefault(end.pod, end.finished_at)
    return sorted(pods, key=lambda p: (pod_name(p) not in first_failure, first_failure.get(pod_name(p), "")))


def _size(payload: Any) -> int:
    return len(json.dumps(payload, default=str))


def _within_budget(payload: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    """The payload with as many of ``pods`` as fit in :data:`EVENT_BUDGET`; when the job and the first of them (the
    root cause: ``pods`` come failed first) do not fit (long condition messages, the lead log's cursor), the
    conditions lose ``lastUpdateTime`` and their messages, then the event's message, are shortened to
    :data:`SHORT_MESSAGE`."""
    first = _size(pods[0]) + 2 if pods else 0
    if _size(payload) + first > EVENT_BUDGET:
        job = payload.get("job") or {}
        for condition in (job.get("status") or {}).get("conditions") or []:
            condition.pop("lastUpdateTime", None)
            if len(condition.get("message") or "") > SHORT_MESSAGE:
                condition["message"] = condition["message"][:SHORT_MESSAGE] + "..."
        if _size(payload) + first > EVENT_BUDGET and len(payload["message"]) > SHORT_MESSAGE:
            payload["message"] = payload["message"][:SHORT_MESSAGE] + "..."
    for pod in pods:
        if _size(payload) + _size(pod) + 2 > EVENT_BUDGET:
            break
        payload["pods"].append(pod)
    return payload


#: Characters of JSON a tail that does not fit whole must have room for, at least, to be kept cut (its note and a
#: line or two).
MIN_TAIL_ROOM = 120
#: The first line of a tail cut to fit: how many of its lines were left out (a last line cut too starts with ``...``).
TAIL_CUT_NOTE = "[cut to fit the trigger's event ({budget} characters): {lines} earlier line(s) left out]"


def _with_tails(payload: dict[str, Any], tails: Mapping[str, str]) -> dict[str, Any]:
    """The payload with ``tails`` (``tails``) in what the budget leaves after the pods, in their order, each as
    :func:`fit_tail` fits it in what is left then."""
    kept: dict[str, str] = {}
    for source, text in tails.items():
        if not text.strip():
            continue
        fitted = fit_tail(text, EVENT_BUDGET - _size({**payload, "tails": {**kept, source: ""}}))
        if fitted is not None:
            kept[source] = fitted
    return {**payload, "tails": kept} if kept else payload


def fit_tail(text: str, room: int) -> str | None:
    """``text`` in ``room`` characters of JSON string content: whole when it fits, else :data:`TAIL_CUT_NOTE` and its
    last lines (the end of the last one, after ``...``, when even it is too long); None when it does not fit whole
    and ``room`` is under :data:`MIN_TAIL_ROOM`.

    :param text: a log tail (lines).
    :param room: characters its JSON encoding may take, quotes excluded (count).
    """
    if _content_size(text) <= room:
        return text
    if room < MIN_TAIL_ROOM:
        return None
    lines = text.rstrip("\n").split("\n")
    left = room - _content_size(TAIL_CUT_NOTE.format(lines=len(lines), budget=EVENT_BUDGET))
    kept: list[str] = []
    for line in reversed(lines):  # the last lines first: the error is at the end
        cost = _content_size(line) + 2  # and the "\n" before it
        if cost > left:
            if not kept:  # the last line alone is too long: its end
                kept.append(_end_within(line, left - 2))
            break
        kept.append(line)
        left -= cost
    if not kept or not kept[0]:
        return None
    note = TAIL_CUT_NOTE.format(lines=len(lines) - len(kept), budget=EVENT_BUDGET)
    return "\n".join([note, *reversed(kept)])


def _content_size(text: str) -> int:
    """Characters of ``text``'s JSON encoding, quotes excluded."""
    return _size(text) - 2


def _end_within(line: str, room: int) -> str:
    """The longest end of ``line`` whose JSON encoding after ``...`` fits in ``room`` characters, after ``...``;
    ``""`` when none does."""
    low, high = 0, len(line)  # characters kept: low fit, more than high do not
    while low < high:
        mid = (low + high + 1) // 2
        if _content_size("..." + line[len(line) - mid :]) <= room:
            low = mid
        else:
            high = mid - 1
    return "..." + line[len(line) - low :] if low else ""

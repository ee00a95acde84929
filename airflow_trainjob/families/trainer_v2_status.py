"""What a Kubeflow Trainer v2 ``TrainJob``'s status means (kubeflow/trainer v2.3.0): the status half of the
``TrainJob`` adapter (:mod:`airflow_trainjob.families.trainer_v2`).

A TrainJob's ``status`` holds ``metav1.Condition`` items of three types only
(:class:`~airflow_trainjob.constants.TrainJobConditionType`): ``Suspended`` (the trainer's: True with reason
``Suspended`` while ``spec.suspend`` is true, turned False with reason ``Resumed``), ``Complete`` and ``Failed``
(the JobSet's ``Completed``/``Failed`` copied with their reasons -- ``AllJobsCompleted``, ``FailedJobs``,
``ReachedMaxRestarts``, ``FailJobSetFailurePolicyAction`` -- or the trainer's own ``DeadlineExceeded`` and
``TrainingRuntimeNotSupported``); ``jobsStatus``, the JobSet's ``replicatedJobsStatus`` copied (per replicated job,
counts of child *Jobs*: ``active`` with a pod running or pending, ``ready`` with all their pods ready or succeeded,
``succeeded``, ``failed``, ``suspended``); and, with the trainer's ``TrainJobStatus`` feature gate, ``trainerStatus``
(progress percentage, estimated remaining seconds, metrics).

There is no ``Created`` and no ``Running`` condition, so the provider infers them (:func:`phase`), as the one word
the lifecycle core logs and the trigger decides on (its lead-log copy runs in ``Running``):

- ``Failed`` / ``Complete``: that condition is true (both: the later transition wins, else ``Failed``, as for v1);
- ``Suspended``: the ``Suspended`` condition is true (queued: Kueue, or ``spec.suspend``);
- ``Restarting``: a child Job failed and the TrainJob has not (the JobSet's failure policy restarts it);
- ``Running``: a child Job is ready (all its pods ready or succeeded) or has succeeded -- some step ran (an
  initializer done and the trainer pending is still ``Running``: the job started, so ``startup_timeout`` is over);
- ``Created``: a controller acted (:func:`controller_has_acted`) and none of the above -- the trainer copies
  ``jobsStatus`` once the JobSet controller has reconciled the JobSet, so its presence says the JobSet exists;
- :data:`~airflow_trainjob.domain.conditions.NOT_STARTED`: no status yet (no trainer running, or it has not
  reconciled the job; an unsuspended TrainJob gets no status before its JobSet has one).

Pure: no I/O, no client. Differences from what upstream itself writes: none (upstream writes no phase; the Kubeflow
SDK v2's own inference, ``kubeflow/trainer/backends/kubernetes/backend.py``, reads pods for ``Running`` and never says
``Suspended``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from airflow_trainjob.constants import (
    JOBS_STATUS_COUNTS,
    ConditionStatus,
    JobConditionType,
    TrainJobConditionType,
)
from airflow_trainjob.domain.conditions import NOT_STARTED

#: The inferred phases (words of the v1 vocabulary, where they mean the same).
RUNNING = JobConditionType.RUNNING.value
RESTARTING = JobConditionType.RESTARTING.value
CREATED = JobConditionType.CREATED.value

#: The counts a terminal job's summary keeps (what finished); the controller may leave others behind.
_FINISHED_COUNTS = ("succeeded", "failed")


def as_dict(status: Any) -> Mapping[str, Any]:
    """``status`` as a JSON mapping: a dict as it is, a ``kubeflow_trainer_api`` model dumped by its aliases, else {}.

    :param status: the TrainJob's ``status``: an API JSON dict, a ``TrainerV1alpha1TrainJobStatus``, or None.
    """
    if isinstance(status, BaseModel):
        return status.model_dump(mode="json", by_alias=True, exclude_none=True)
    return status if isinstance(status, Mapping) else {}


def _true_by_type(status: Any) -> dict[str, Mapping[str, Any]]:
    """The conditions whose ``status`` is ``"True"``, by type (a later duplicate of a type wins)."""
    found = as_dict(status).get("conditions")
    return {
        str(c.get("type")): c
        for c in (found if isinstance(found, list) else [])
        if isinstance(c, Mapping) and c.get("status") == ConditionStatus.TRUE
    }


def deciding_condition(status: Any) -> Mapping[str, Any] | None:
    """The true condition that decides the phase, with its ``reason`` and ``message``: ``Failed`` or ``Complete``
    (both true: the later ``lastTransitionTime`` wins, a tie ``Failed``), else ``Suspended``; None when none is true
    (the phase is then inferred from ``jobsStatus``).

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    true = _true_by_type(status)
    failed, complete = true.get(TrainJobConditionType.FAILED), true.get(TrainJobConditionType.COMPLETE)
    if failed and complete:
        later = str(complete.get("lastTransitionTime") or "") > str(failed.get("lastTransitionTime") or "")
        return complete if later else failed
    return failed or complete or true.get(TrainJobConditionType.SUSPENDED)


def jobs_status(status: Any) -> list[dict[str, Any]]:
    """``status.jobsStatus``: each replicated job's ``name`` and its counts of child Jobs (ints; a missing or bad
    count is 0), in the controller's order.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    found = as_dict(status).get("jobsStatus")
    return [
        {"name": str(j.get("name") or ""), **{k: _count(j.get(k)) for k in JOBS_STATUS_COUNTS}}
        for j in (found if isinstance(found, list) else [])
        if isinstance(j, Mapping)
    ]


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def controller_has_acted(status: Any) -> bool:
    """A controller wrote the TrainJob's status: any condition (true or not), ``jobsStatus`` (the JobSet exists and
    its controller reconciled it) or ``trainerStatus``.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    seen = as_dict(status)
    return bool(seen.get("conditions") or seen.get("jobsStatus") or seen.get("trainerStatus"))


def phase(status: Any) -> str:
    """One word for where the TrainJob is: ``Failed``, ``Complete``, ``Suspended``, ``Restarting``, ``Running``,
    ``Created`` or ``NotStarted`` (the module's docstring says how each is read).

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    condition = deciding_condition(status)
    if condition is not None:
        return str(condition.get("type"))
    jobs = jobs_status(status)
    if any(j["failed"] for j in jobs):
        return RESTARTING
    if any(j["ready"] or j["succeeded"] for j in jobs):
        return RUNNING
    return CREATED if controller_has_acted(status) else NOT_STARTED


def is_failed(status: Any) -> bool:
    """The TrainJob failed (``Failed`` decides the phase): it will not run again.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    return phase(status) == TrainJobConditionType.FAILED


def is_succeeded(status: Any) -> bool:
    """The TrainJob completed (``Complete`` decides the phase).

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    return phase(status) == TrainJobConditionType.COMPLETE


def is_terminal(status: Any) -> bool:
    """The TrainJob finished, completed or failed.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    return phase(status) in (TrainJobConditionType.COMPLETE, TrainJobConditionType.FAILED)


def has_condition(status: Any, condition_type: str) -> bool:
    """A condition of ``condition_type`` is ``"True"`` (``Suspended``, ``Complete``, ``Failed``: the API's own; the
    inferred phases are no conditions -- ``Running`` never holds here, :func:`phase` says it).

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    :param condition_type: a ``status.conditions[].type``.
    """
    return condition_type in _true_by_type(status)


def _said(counts: Mapping[str, int] | None, terminal: bool) -> str:
    """One replicated job's counts as the summary words them (:func:`jobs_count_parts`)."""
    shown = _FINISHED_COUNTS if terminal else JOBS_STATUS_COUNTS
    said = ", ".join(f"{counts[k]} {k}" for k in shown if counts[k]) if counts else ""
    if said:
        return said
    return "no job yet" if counts is None else ("none finished" if terminal else "waiting")


def jobs_count_parts(status: Any, desired: Mapping[str, int] | None = None) -> list[tuple[str, str]]:
    """:func:`jobs_counts` per replicated job, in the controller's order, then those only ``desired`` names:
    ``[("dataset-initializer", "1 succeeded"), ("node", "1 active, 1 ready")]``; once the TrainJob is terminal only
    what finished (``1 failed``, ``none finished``); ``no job yet`` for a replicated job the JobSet does not report.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    :param desired: replicated job -> nodes asked for (``{"node": spec.trainer.numNodes}``).
    """
    terminal = is_terminal(status)
    jobs = {j["name"]: j for j in jobs_status(status)}
    names = list(jobs) + [n for n in (desired or {}) if n not in jobs]
    return [(name, _said(jobs.get(name), terminal)) for name in names]


def jobs_counts(status: Any, desired: Mapping[str, int] | None = None) -> str:
    """Each replicated job's child Jobs, e.g. ``dataset-initializer: 1 succeeded; node (2 nodes): 1 active,
    1 ready``; once the TrainJob is terminal only what finished (``node: 1 failed``, or ``none finished``). A
    replicated job the JobSet does not report yet but ``desired`` names reads ``no job yet``.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    :param desired: replicated job -> nodes asked for (``{"node": spec.trainer.numNodes}``), shown beside it.
    """
    parts = []
    for name, said in jobs_count_parts(status, desired):
        nodes = f" ({desired[name]} node{'s' if desired[name] != 1 else ''})" if desired and name in desired else ""
        parts.append(f"{name}{nodes}: {said}")
    return "; ".join(parts)


def steps(status: Any, desired: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """The TrainJob's steps (its replicated jobs) as a page shows them: ``name``, ``nodes`` (asked for, from
    ``desired``; None for a step the spec does not size), the counts of its child Jobs (``active``, ``ready``,
    ``succeeded``, ``failed``, ``suspended``; once the TrainJob is terminal ``active`` and ``ready`` are None: the
    JobSet's last counts are no Jobs running now) and ``text`` (:func:`jobs_count_parts`).

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    :param desired: replicated job -> nodes asked for (``{"node": spec.trainer.numNodes}``).
    """
    terminal = is_terminal(status)
    jobs = {j["name"]: j for j in jobs_status(status)}
    found = []
    for name, said in jobs_count_parts(status, desired):
        counts: dict[str, Any] = {k: jobs[name][k] if name in jobs else 0 for k in JOBS_STATUS_COUNTS}
        if terminal:
            counts.update(active=None, ready=None)
        found.append({"name": name, "nodes": (desired or {}).get(name), **counts, "text": said})
    return found


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def trainer_progress(status: Any) -> dict[str, Any] | None:
    """``status.trainerStatus`` (the trainer's ``TrainJobStatus`` feature gate) as a page shows it:
    ``percentage`` (``progressPercentage``, 0-100), ``estimated_remaining_seconds``, ``metrics`` (``[{name,
    value}]``, the values as the runtime reported them: strings) and ``last_updated_time`` (RFC 3339); each None (or
    ``[]``) when not reported. None when the TrainJob reports no ``trainerStatus``. Read leniently: a field of the
    wrong type is not reported (a newer controller may write more).

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    trainer = as_dict(status).get("trainerStatus")
    if not isinstance(trainer, Mapping):
        return None
    metrics = trainer.get("metrics")
    return {
        "percentage": _whole(trainer.get("progressPercentage")),
        "estimated_remaining_seconds": _whole(trainer.get("estimatedRemainingSeconds")),
        "metrics": [
            {"name": str(m.get("name")), "value": None if m.get("value") is None else str(m.get("value"))}
            for m in (metrics if isinstance(metrics, list) else [])
            if isinstance(m, Mapping) and m.get("name")
        ],
        "last_updated_time": trainer.get("lastUpdatedTime")
        if isinstance(trainer.get("lastUpdatedTime"), str)
        else None,
    }


def progress(status: Any) -> str:
    """The trainer's own progress (``status.trainerStatus``, the ``TrainJobStatus`` feature gate), e.g. ``42% done,
    about 120 s left``; ``""`` when it reports none. Once the TrainJob is terminal, no time left: the trainer's last
    estimate is no longer one.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    """
    trainer = as_dict(status).get("trainerStatus")
    if not isinstance(trainer, Mapping):
        return ""
    said = []
    percent, left = trainer.get("progressPercentage"), trainer.get("estimatedRemainingSeconds")
    if isinstance(percent, int) and not isinstance(percent, bool):
        said.append(f"{percent}% done")
    if isinstance(left, int) and not isinstance(left, bool) and not is_terminal(status):
        said.append(f"about {left} s left")
    return ", ".join(said)


def summary(status: Any, desired: Mapping[str, int] | None = None) -> str:
    """A one-line summary: the phase, the deciding condition's reason and message, the child Jobs' counts and the
    trainer's progress, e.g. ``Failed (FailedJobs: jobset failed due to one or more job failures (first failed job:
    t-node-0)) — node (2 nodes): 1 failed`` or ``Running — node (2 nodes): 1 active, 1 ready; 42% done``.

    :param status: the TrainJob's ``status`` (API JSON dict, model, or None).
    :param desired: replicated job -> nodes asked for, shown beside it (:func:`jobs_counts`).
    """
    condition = deciding_condition(status)
    text = phase(status)
    if condition and (condition.get("reason") or condition.get("message")):
        text += f" ({': '.join(str(condition[k]) for k in ('reason', 'message') if condition.get(k))})"
    counts = "; ".join(p for p in (jobs_counts(status, desired), progress(status)) if p)
    return f"{text} — {counts}" if counts else text

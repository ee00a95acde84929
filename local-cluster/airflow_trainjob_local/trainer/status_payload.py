"""The body of a status update (``UpdateTrainJobStatusRequest``, ``{"trainerStatus": {...}}``), parsed and checked,
pure: what the status server (:mod:`.status_server`) accepts.

Types come from the ``kubeflow_trainer_api`` models (``TrainerV1alpha1TrainerStatus``, ``TrainerV1alpha1Metric``);
the limits are upstream's CRD markers and CEL rule (``pkg/apis/trainer/v1alpha1/trainjob_types.go``), which a real
apiserver enforces on the status write and the local one does not (:mod:`.schema` drops them), so they are checked
here: ``progressPercentage`` 0..100, ``estimatedRemainingSeconds`` >= 0 (int32), at most 256 metrics, each
``name`` and ``value`` 1..64 characters, ``lastUpdatedTime`` required. Unlike upstream (whose JSON decoder ignores
unknown fields and whose apiserver prunes them), an unknown field is refused, so a typo is not silently lost.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pydantic
from kubeflow_trainer_api.models import (  # type: ignore[import-untyped]
    TrainerV1alpha1Metric,
    TrainerV1alpha1TrainerStatus,
)

__all__ = ["PayloadError", "parse_update_request", "trainer_status_patch"]

FIELD_TRAINER_STATUS = "trainerStatus"
#: The JSON fields of TrainerStatus in upstream's struct order (the order the response encodes them in).
TRAINER_STATUS_FIELDS = ("progressPercentage", "estimatedRemainingSeconds", "metrics", "lastUpdatedTime")
METRIC_FIELDS = ("name", "value")
MAX_PROGRESS = 100
MAX_INT32 = 2**31 - 1
MAX_METRICS = 256
MAX_METRIC_LENGTH = 64
#: Where the fields are named in messages, as the apiserver names them.
PATH = "status.trainerStatus"


class PayloadError(ValueError):
    """The body is not a valid status update; ``problems`` name each field (``status.trainerStatus.<field>``)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_update_request(body: bytes) -> dict[str, Any]:
    """The update request in ``body``, checked, in the shape the server echoes back (upstream encodes the parsed
    request: fields in struct order, ``lastUpdatedTime`` as RFC 3339 UTC seconds); ``{}`` when it carries no
    ``trainerStatus`` (nothing to write).

    :param body: the request body (JSON).
    :raises PayloadError: not JSON, not an object, an unknown field, a wrong type, or a value out of bounds.
    """
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PayloadError([f"request body is not JSON: {exc}"]) from None
    if not isinstance(data, dict):
        raise PayloadError(['request body must be a JSON object: {"trainerStatus": {...}}'])
    problems = _unknown(data, (FIELD_TRAINER_STATUS,), "")
    raw = data.get(FIELD_TRAINER_STATUS)
    if raw is None:
        if problems:
            raise PayloadError(problems)
        return {}
    if not isinstance(raw, dict):
        raise PayloadError([*problems, f"{PATH}: Invalid value: must be an object"])
    problems += _unknown(raw, TRAINER_STATUS_FIELDS, PATH + ".")
    status = _typed(raw, problems)
    if status is None:
        raise PayloadError(problems)
    problems += _bound_problems(status, raw.get("lastUpdatedTime"))
    if problems:
        raise PayloadError(problems)
    return {FIELD_TRAINER_STATUS: _encoded(status)}


def trainer_status_patch(request: dict[str, Any]) -> dict[str, Any]:
    """The merge patch of the TrainJob's status subresource that replaces ``status.trainerStatus`` whole (a field
    the report leaves out is removed, as upstream's server-side apply by its one field manager removes it).

    :param request: a non-empty result of :func:`parse_update_request`.
    """
    reported = request[FIELD_TRAINER_STATUS]
    return {"status": {FIELD_TRAINER_STATUS: {field: reported.get(field) for field in TRAINER_STATUS_FIELDS}}}


def _unknown(obj: dict[str, Any], allowed: tuple[str, ...], prefix: str) -> list[str]:
    return [
        f'{prefix}{key}: Invalid value: unknown field "{key}" (known: {", ".join(allowed)})'
        for key in obj
        if key not in allowed
    ]


def _typed(raw: dict[str, Any], problems: list[str]) -> TrainerV1alpha1TrainerStatus | None:
    """``raw`` as the model, its metrics checked one by one (so a message names the metric's index); ``None``
    and ``problems`` extended when a field has the wrong type."""
    fields = {k: v for k, v in raw.items() if k in TRAINER_STATUS_FIELDS and k != "metrics"}
    raw_metrics = raw.get("metrics")
    metrics: list[TrainerV1alpha1Metric] | None = None
    found = len(problems)
    if isinstance(raw_metrics, list):
        metrics = []
        for i, item in enumerate(raw_metrics):
            prefix = f"{PATH}.metrics[{i}]"
            if not isinstance(item, dict):
                problems.append(f"{prefix}: Invalid value: {json.dumps(item)}: must be an object {{name, value}}")
                continue
            problems += _unknown(item, METRIC_FIELDS, prefix + ".")
            try:
                metrics.append(TrainerV1alpha1Metric.model_validate(item))
            except pydantic.ValidationError as exc:
                problems += _type_problems(exc, prefix)
    elif raw_metrics is not None:
        problems.append(f"{PATH}.metrics: Invalid value: {json.dumps(raw_metrics)}: must be a list of {{name, value}}")
    try:
        status = TrainerV1alpha1TrainerStatus.model_validate(fields)
    except pydantic.ValidationError as exc:
        problems += _type_problems(exc, PATH)
        return None
    if len(problems) > found:
        return None
    status.metrics = metrics
    return status


def _type_problems(exc: pydantic.ValidationError, prefix: str) -> list[str]:
    problems = []
    for error in exc.errors():
        # The model's field names are snake_case; name them as the JSON does.
        parts = [_json_name(part) if isinstance(part, str) else f"[{part}]" for part in error["loc"]]
        path = prefix + "".join(p if p.startswith("[") else "." + p for p in parts)
        problems.append(f"{path}: Invalid value: {json.dumps(error.get('input'), default=str)}: {error['msg']}")
    return problems


def _json_name(name: str) -> str:
    fields = {**TrainerV1alpha1TrainerStatus.model_fields, **TrainerV1alpha1Metric.model_fields}
    field = fields.get(name)
    return field.alias if field is not None and field.alias else name


def _bound_problems(status: TrainerV1alpha1TrainerStatus, raw_time: Any) -> list[str]:
    problems = []
    progress, remaining = status.progress_percentage, status.estimated_remaining_seconds
    if progress is not None and not 0 <= progress <= MAX_PROGRESS:
        problems.append(
            f"{PATH}.progressPercentage: Invalid value: {progress}: must be between 0 and {MAX_PROGRESS} (a percentage)"
        )
    if remaining is not None and not 0 <= remaining <= MAX_INT32:
        problems.append(
            f"{PATH}.estimatedRemainingSeconds: Invalid value: {remaining}: must be between 0 and {MAX_INT32}"
        )
    metrics = status.metrics or []
    if len(metrics) > MAX_METRICS:
        problems.append(f"{PATH}.metrics: Too many: {len(metrics)}: must have at most {MAX_METRICS} items")
    for i, metric in enumerate(metrics):
        for field in METRIC_FIELDS:
            value = getattr(metric, field)
            if not 1 <= len(value) <= MAX_METRIC_LENGTH:
                problems.append(
                    f"{PATH}.metrics[{i}].{field}: Invalid value: {json.dumps(value)}: "
                    f"must be 1 to {MAX_METRIC_LENGTH} characters"
                )
    when = status.last_updated_time
    if when is None:
        problems.append(
            f"{PATH}.lastUpdatedTime: Required value: lastUpdatedTime is required when trainerStatus is present"
        )
    elif when.tzinfo is None:
        problems.append(
            f"{PATH}.lastUpdatedTime: Invalid value: {json.dumps(raw_time)}: must be RFC 3339 with a time zone "
            f'(e.g. "2026-01-02T03:04:05Z")'
        )
    return problems


def _encoded(status: TrainerV1alpha1TrainerStatus) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if status.progress_percentage is not None:
        out["progressPercentage"] = status.progress_percentage
    if status.estimated_remaining_seconds is not None:
        out["estimatedRemainingSeconds"] = status.estimated_remaining_seconds
    if status.metrics:
        out["metrics"] = [{"name": m.name, "value": m.value} for m in status.metrics]
    assert status.last_updated_time is not None  # checked by _bound_problems
    # metav1.Time: RFC 3339 in UTC, whole seconds.
    out["lastUpdatedTime"] = status.last_updated_time.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out

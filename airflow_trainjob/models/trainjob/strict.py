"""One part of a TrainJob read strictly through the ``kubeflow_trainer_api`` models (kubeflow/trainer v2.3.0's API).

The generated models ignore unknown fields (pydantic's default) and read only the API's camelCase keys in
``from_dict``; a typo (``numNode``) would be dropped without a word, and a Kubernetes quantity (``"2Gi"``) does not
validate through ``model_validate``. :func:`read_part` walks the data along the models' fields instead:

- each key is a field's API name (``numNodes``) or its model attribute name (``num_nodes``, accepted and sent as
  ``numNodes``); any other key is refused, with the nearest field name when one is close;
- each leaf is validated by the model's own field (its type and its validators, e.g. an enum's values), and an
  integer given as a string of digits (what a Jinja template renders to) is read as its number;
- a quantity (``resources.limits``) is a string in Kubernetes' quantity form, or a number;
- ``null`` fields are dropped, as the API's ``omitempty`` does.

The data is sent as given (in API keys): the models check it, they do not rewrite it (their ``to_dict`` would turn
a quantity ``2`` into ``2.0``).
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from airflow_trainjob.models.documents import Wanted, one_document
from airflow_trainjob.models.job import to_plain

__all__ = ["api_form", "check_field", "load_text", "read_part"]

#: A Kubernetes quantity (``resource.Quantity``'s serialised form, as the CRDs' schemas pattern it).
_QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_DIGITS = re.compile(r"^[0-9]+$")
#: The models of a JSON ``oneOf`` (a quantity, an int-or-string): their value is the plain value, not a mapping.
_ONE_OF_FIELD = "actual_instance"
_QUANTITY_MODEL = "IoK8sApimachineryPkgApiResourceQuantity"


def load_text(value: Any, path: str, problems: list[str], wanted: Wanted | None = None) -> Any:
    """``value`` read from YAML/JSON text when it is a string (one document: :func:`~..documents.one_document`),
    else as it is.

    :param value: the part as given.
    :param path: its name in messages.
    :param problems: where a problem is added (then None is returned).
    :param wanted: what a text must hold (:data:`~..documents.TRAINJOB_TEXT` for a whole TrainJob); None: a part.
    """
    if not isinstance(value, str):
        return value
    return one_document(value, path, problems, wanted)


def api_form(value: Any) -> Any:
    """``value`` as plain JSON data: a ``kubeflow_trainer_api`` model as its ``to_dict()`` (API keys), a Kubernetes
    client object as its JSON form, a datetime as RFC 3339 text; plain data as it is.

    :param value: anything, nested in mappings and lists.
    """
    if isinstance(value, BaseModel) and hasattr(value, "to_dict"):
        return api_form(value.to_dict())
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Mapping):
        return {k: api_form(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [api_form(v) for v in value]
    return to_plain(value)


def read_part(
    model: type[BaseModel],
    value: Any,
    path: str,
    problems: list[str],
    *,
    only: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, Any] | None:
    """``value`` checked as ``model``: its API JSON form (camelCase keys, no nulls); a field with a problem is left
    out (the caller raises when ``problems`` grew), None when ``value`` is no mapping.

    :param model: a ``kubeflow_trainer_api.models`` class (``TrainerV1alpha1Trainer``...).
    :param value: a mapping (API or attribute keys), YAML/JSON text of one, or an instance of ``model``.
    :param path: the part's name, leading each problem (``trainer``, ``job.spec``).
    :param problems: where each problem is added, one line each naming its field (``trainer.numNodes: ...``).
    :param only: model class name -> the only fields allowed where it occurs (upstream's patch metadata takes
        ``labels`` and ``annotations`` alone).
    """
    return _walk(model, api_form(load_text(value, path, problems)), path, problems, only or {})


def check_field(model: type[BaseModel], key: str, value: Any, path: str, problems: list[str]) -> Any:
    """One field of ``model`` given on its own (the operator's ``suspend`` is ``spec.suspend``): its value as given,
    or None (unset, or after adding its problems).

    :param model: the model that has the field (``TrainerV1alpha1TrainJobSpec``).
    :param key: the field's API name (``activeDeadlineSeconds``).
    :param value: its value as given (None: unset).
    :param path: its name in messages (``active_deadline_seconds``).
    :param problems: where each problem is added.
    """
    return _field(model, _aliases(model)[key], value, path, problems, {})


def _walk(annotation: Any, value: Any, path: str, problems: list[str], only: Mapping[str, tuple[str, ...]]) -> Any:
    """``value`` checked against ``annotation`` (a model, a list or dict of them, or a leaf: see :func:`_leaf`)."""
    annotation = _without_none(annotation)
    if value is None:
        return None
    origin = typing.get_origin(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if _ONE_OF_FIELD in annotation.model_fields:
            return _one_of(annotation, value, path, problems)
        return _model(annotation, value, path, problems, only)
    if origin is list:
        if not isinstance(value, list):
            problems.append(f"{path}: must be a list, got {type(value).__name__}")
            return None
        (item,) = typing.get_args(annotation)
        return [_walk(item, v, f"{path}[{i}]", problems, only) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            problems.append(f"{path}: must be a mapping, got {type(value).__name__}")
            return None
        _, item = typing.get_args(annotation)
        return {k: _walk(item, v, f"{path}[{k!r}]", problems, only) for k, v in value.items()}
    return value  # a leaf outside a model: checked by its model's field (see _model)


def _model(
    model: type[BaseModel], value: Any, path: str, problems: list[str], only: Mapping[str, tuple[str, ...]]
) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        problems.append(f"{path}: must be a mapping of fields, got {type(value).__name__}")
        return None
    fields = {**{name: name for name in model.model_fields}, **_aliases(model)}
    allowed = only.get(model.__name__)
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = fields.get(key) if isinstance(key, str) else None
        alias = model.model_fields[name].alias or name if name else None
        if name is None or (allowed is not None and alias not in allowed):
            problems.append(_unknown(f"{path}.{key}", key, allowed or sorted(_aliases(model))))
            continue
        assert alias is not None
        checked = _field(model, name, item, f"{path}.{alias}", problems, only)
        if checked is not None:
            out[alias] = checked
    for name, field in model.model_fields.items():
        alias = field.alias or name
        given = any(fields.get(k) == name and v is not None for k, v in value.items())
        if field.is_required() and not given:
            problems.append(f"{path}.{alias}: required")
    return out


def _field(
    model: type[BaseModel], name: str, value: Any, path: str, problems: list[str], only: Mapping[str, tuple[str, ...]]
) -> Any:
    """One field's value: walked when it holds models, else validated by the model's own field."""
    annotation = model.model_fields[name].annotation
    if value is None:
        return None
    if _holds_model(annotation):
        return _walk(annotation, value, path, problems, only)
    if isinstance(value, str) and _DIGITS.match(value) and _is_int(annotation):
        value = int(value)  # what Jinja renders an integer to
    try:
        setattr(model.model_construct(), name, value)  # the models validate assignment: type and validators
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            where = "".join(f"[{p}]" if isinstance(p, int) else f"[{p!r}]" for p in error["loc"][1:])
            message = error["msg"].removeprefix("Value error, ")
            shown = error.get("input")
            got = "" if isinstance(shown, (dict, list)) else f" (got {shown!r})"
            problems.append(f"{path}{where}: {message}{got}")
        return None
    return value


def _one_of(model: type[BaseModel], value: Any, path: str, problems: list[str]) -> Any:
    """A ``oneOf`` value (a quantity, an int-or-string): the plain value, checked by the model's own reader."""
    quantity = model.__name__ == _QUANTITY_MODEL
    try:
        model.from_json(json.dumps(value))  # type: ignore[attr-defined]  # the generated oneOf reader
        valid = not (quantity and isinstance(value, str) and not _QUANTITY.match(value))
    except (ValueError, TypeError):
        valid = False
    if valid:
        return value
    if quantity:
        problems.append(f"{path}: must be a quantity (a string such as '500m', '4Gi', or a number), got {value!r}")
    else:
        kinds = " or ".join(sorted(model.model_fields["one_of_schemas"].default or ()))
        problems.append(f"{path}: must be {kinds or 'a value'}, got {type(value).__name__} {value!r}")
    return None


def _unknown(path: str, key: Any, allowed: Any) -> str:
    close = difflib.get_close_matches(str(key), list(allowed), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"{path}: unknown field; {hint}allowed fields: {', '.join(allowed) or 'none'}"


def _aliases(model: type[BaseModel]) -> dict[str, str]:
    """API name -> attribute name of each field of ``model``."""
    return {field.alias or name: name for name, field in model.model_fields.items()}


def _without_none(annotation: Any) -> Any:
    """``X`` of ``Optional[X]``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _holds_model(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_holds_model(a) for a in typing.get_args(annotation))


def _is_int(annotation: Any) -> bool:
    annotation = _without_none(annotation)
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation is int

"""Turns pydantic's validation errors into one ``InvalidJobSpecError`` that speaks in API paths."""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel, ValidationError

from airflow_trainjob.exceptions import InvalidJobSpecError


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``annotation`` (``Optional[M]``, ``list[M]``, ``dict[str, M]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _field_aliases(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """Walk ``loc`` (field aliases, list indexes, dict keys) down from ``model`` to the model there."""
    current: Any = model
    for part in loc:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        if not isinstance(part, str):
            continue  # a list index: stay on the item model
        match = next(
            (f for n, f in current.model_fields.items() if part in (n, f.alias)),
            None,
        )
        if match is None:
            continue  # a dict key (e.g. a replica type): stay on the value model
        current = _model_in(match.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def describe_errors(exc: ValidationError, model: type[BaseModel], prefix: str) -> list[str]:
    """One line per error: ``<prefix>.<path>: <what is wrong>; <what is allowed>``.

    :param exc: pydantic's error of validating ``model``.
    :param model: the model that was validated (read for the fields an unknown one could have been).
    :param prefix: the API path of the validated part, leading each line (``runPolicy``, ``job.spec``).
    """
    problems = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        path = ".".join([prefix, *(f"[{p}]" if isinstance(p, int) else str(p) for p in loc)])
        path = path.replace(".[", "[")
        if error["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            allowed = _field_aliases(parent) if parent else []
            problems.append(f"{path}: unknown field; allowed fields: {', '.join(allowed) or 'none'}")
            continue
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        shown = error.get("input")
        if error["type"] != "missing" and not isinstance(shown, (dict, list)):
            message = f"{message} (got {shown!r})"
        problems.append(f"{path}: {message}")
    return problems


def validate_as(model: type[BaseModel], data: Any, prefix: str) -> tuple[Any, list[str]]:
    """Validate ``data`` as ``model``; return ``(instance or None, problems)``.

    :param model: the pydantic model class.
    :param data: an instance of ``model`` (taken as it is) or a dict of its fields (API camelCase or field names).
    :param prefix: the API path of the validated part, leading each line (``runPolicy``, ``job.spec``).
    """
    if isinstance(data, model):
        return data, []
    if not isinstance(data, dict):
        return None, [f"{prefix}: must be a mapping of fields, got {type(data).__name__}"]
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, describe_errors(exc, model, prefix)


def raise_if(problems: list[str]) -> None:
    """Raise one ``InvalidJobSpecError`` listing ``problems``, if there are any.

    :param problems: one line per problem, each naming its field by API path.
    :raises InvalidJobSpecError: ``problems`` is not empty.
    """
    if problems:
        raise InvalidJobSpecError(problems)

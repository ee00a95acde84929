"""The parameter checks the operator and the sensor share: one wording per check.

Each function returns the problem with a parameter as rendered (``"<field>: <what is wrong>, got ..."``, naming
what is allowed) or None; the task collects them and refuses them all at once with :func:`refuse`, before any
API call. Checks of one task only (``on_finish``, ``target_conditions``, ...) stay in its module; names, namespaces
and labels are checked by :mod:`airflow_trainjob.domain.names`.
"""

from __future__ import annotations

from typing import Any

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.exceptions import InvalidJobSpecError


def kind_problem(kind: object, field: str = "kind") -> str | None:
    """``kind`` is not a key of :data:`JOB_KINDS` (``PyTorchJob``, ``TFJob``, ...; case matters).

    :param kind: the kind as given (``None``: missing).
    :param field: where it was given (``kind``, or ``job.kind`` in a whole job).
    """
    if isinstance(kind, str) and kind in JOB_KINDS:
        return None
    shown = "missing" if kind is None else f"{kind!r} is not a training job kind"
    return f"{field}: {shown}; allowed: {', '.join(JOB_KINDS)}"


def conn_id_problem(conn_id: object) -> str | None:
    """``kubernetes_conn_id`` is neither None nor a non-empty string (whether it names a connection is
    :meth:`TrainingJobHook.require_connection`'s to say).

    :param conn_id: the ``kubernetes_conn_id`` as given.
    """
    if conn_id is None or (isinstance(conn_id, str) and conn_id):
        return None
    return f"kubernetes_conn_id: must be the id of a kubernetes connection (a non-empty string), got {conn_id!r}"


def flag_problem(field: str, value: object) -> str | None:
    """``value`` of parameter ``field`` is not ``True`` or ``False`` (``"False"`` and ``1`` are refused).

    :param field: the parameter's name, leading the problem (``get_logs``).
    :param value: its value as given.
    """
    if isinstance(value, bool):
        return None
    return f"{field}: must be True or False, got {type(value).__name__} {value!r}"


def seconds_problem(field: str, value: object, *, optional: bool = True) -> str | None:
    """``value`` of parameter ``field`` is not a positive number of seconds (an int or float, not a bool, a string
    or a timedelta); None is allowed when ``optional`` (no limit).

    :param field: the parameter's name, leading the problem (``timeout``).
    :param value: its value as given (seconds).
    :param optional: None is allowed (no limit).
    """
    if value is None and optional:
        return None
    if not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0:
        return None
    return f"{field}: must be a positive number of seconds, got {value!r}"


def count_problem(field: str, value: object) -> str | None:
    """``value`` of parameter ``field`` is not a count: an int, 0 or more (not a bool).

    :param field: the parameter's name, leading the problem (``log_tail_lines``).
    :param value: its value as given.
    """
    if not isinstance(value, bool) and isinstance(value, int) and value >= 0:
        return None
    return f"{field}: must be a count (0 or more), got {value!r}"


def refuse(problems: list[str], hook: Any) -> None:
    """Raise the problems found, if any; else refuse a connection id that names no connection.

    :param problems: the problems found, one line each (the ``*_problem`` functions' answers that are not None).
    :param hook: the task's :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook` (reads the connection).
    :raises InvalidJobSpecError: one problem per field (not retried).
    """
    if problems:
        raise InvalidJobSpecError(problems)
    hook.require_connection()

"""The parameters of the operator and the sensor: one table of their checks, and the settings of a try.

:data:`PARAMS` holds one row per parameter check: the parameter, the function that words its problem
(``"<field>: <what is wrong>, got ..."``, naming what is allowed), and the tasks (:data:`OPERATOR`,
:data:`TRAINJOB`, :data:`SENSOR`) that take it; :data:`CROSS_RULES` the rules over several parameters. :func:`problems` reads both,
in the order the task reports them, and the task refuses them all at once with :func:`refuse`, before any API call.
Names, namespaces and labels are worded by :mod:`airflow_trainjob.domain.names`.

:class:`RunSettings` is the part of the operator's parameters that governs a try; its defaults (:data:`DEFAULTS`) are
the operator's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from airflow_trainjob.constants import (
    CONDITION_FAILED,
    JOB_KINDS,
    LABEL_KUEUE_QUEUE_NAME,
    MAX_NAME_LENGTH,
)
from airflow_trainjob.domain.names import job_name_problem, namespace_problem
from airflow_trainjob.domain.own_keys import own_keys_in
from airflow_trainjob.domain.ownership import RESERVED_ANNOTATIONS, RESERVED_LABELS
from airflow_trainjob.exceptions import InvalidJobSpecError

#: The tasks whose parameters the table checks (a row's ``faces``): ``TrainingJobOperator`` (``kubeflow.org/v1``
#: jobs), ``TrainJobOperator`` (Trainer v2's TrainJob), ``TrainingJobSensor``.
OPERATOR, TRAINJOB, SENSOR = "operator", "trainjob", "sensor"
#: The parts of a TrainJob given in parts (``spec`` fields, by parameter): not with a whole job.
TRAINJOB_PARTS = (
    "runtime",
    "trainer",
    "initializer",
    "runtime_patches",
    "suspend",
    "managed_by",
    "active_deadline_seconds",
)
#: What happens to the job object when the task ends (its pods follow ``runPolicy.cleanPodPolicy``).
ON_FINISH_OPTIONS = ("keep_job", "delete_job", "delete_succeeded_job")


def kind_problem(kind: object, field: str = "kind", allowed: tuple[str, ...] = tuple(JOB_KINDS)) -> str | None:
    """``kind`` is not one of ``allowed`` (``PyTorchJob``, ``TFJob``, ...; case matters).

    :param kind: the kind as given (``None``: missing).
    :param field: where it was given (``kind``, or ``job.kind`` in a whole job).
    :param allowed: the kinds allowed there: by default the ``kubeflow.org/v1`` kinds (:data:`JOB_KINDS`, what
        ``TrainingJobOperator`` builds); a sensor allows every family's.
    """
    if isinstance(kind, str) and kind in allowed:
        return None
    shown = "missing" if kind is None else f"{kind!r} is not a training job kind"
    return f"{field}: {shown}; allowed: {', '.join(allowed)}"


def conn_id_problem(field: str, conn_id: object) -> str | None:
    """``conn_id`` is neither None nor a non-empty string (whether it names a connection is
    :meth:`TrainingJobHook.require_connection`'s to say).

    :param field: the parameter's name, leading the problem (``kubernetes_conn_id``).
    :param conn_id: its value as given.
    """
    if conn_id is None or (isinstance(conn_id, str) and conn_id):
        return None
    return f"{field}: must be the id of a kubernetes connection (a non-empty string), got {conn_id!r}"


def flag_problem(field: str, value: object) -> str | None:
    """``value`` of parameter ``field`` is not ``True`` or ``False`` (``"False"`` and ``1`` are refused).

    :param field: the parameter's name, leading the problem (``get_logs``).
    :param value: its value as given.
    """
    if isinstance(value, bool):
        return None
    return f"{field}: must be True or False, got {type(value).__name__} {value!r}"


def optional_flag_problem(field: str, value: object) -> str | None:
    """``value`` of parameter ``field`` is not ``True``, ``False`` or ``None`` (None: a config decides).

    :param field: the parameter's name, leading the problem (``openlineage_inject_parent_job_info``).
    :param value: its value as given.
    """
    if value is None or isinstance(value, bool):
        return None
    return f"{field}: must be True, False or None (the config decides), got {type(value).__name__} {value!r}"


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


# ---- the checks of one task's parameters (field, value) -> problem: the rows' ``check`` ----------------------------


def _required_seconds(field: str, value: object) -> str | None:
    # Airflow refuses a sensor's negative values when the DAG is parsed; zero would poll without pause or time out
    # at once.
    return seconds_problem(field, value, optional=False)


def _job_name(field: str, name: object) -> str | None:
    issue = job_name_problem(name, MAX_NAME_LENGTH)
    return f"{field}: {issue}" if issue else None


def _namespace_name(field: str, namespace: object) -> str | None:
    """The sensor's namespace, as the operator's: unset or rendered empty -> the connection's."""
    issue = namespace_problem(namespace) if namespace not in (None, "") else None
    return f"{field}: {issue} (or None for the connection's namespace)" if issue else None


def _namespace_type(field: str, namespace: object) -> str | None:
    """The operator's namespace: a string is checked as ``metadata.namespace`` when the manifest is built."""
    if isinstance(namespace, (str, type(None))):
        return None
    return (
        f"{field}: must be a DNS-1123 label (a string), or None for the connection's "
        f"namespace; got {type(namespace).__name__}"
    )


def target_conditions_problem(field: str, targets: object, allowed: tuple[str, ...]) -> str | None:
    """``targets`` is not a non-empty tuple of condition types of ``allowed`` (the sensor keeps a list as a tuple,
    a string as it is).

    :param field: the parameter's name (``target_conditions``).
    :param targets: its value as kept by the sensor.
    :param allowed: the condition types the job's family lets a sensor wait for
        (:attr:`~airflow_trainjob.domain.family.JobFamily.target_conditions`).
    """
    if not isinstance(targets, tuple) or not targets:
        return f"{field}: must be a non-empty list of condition types ({', '.join(allowed)}), got {targets!r}"
    unknown = [t for t in targets if t not in allowed]
    if not unknown:
        return None
    why = "; Failed always fails the sensor" if CONDITION_FAILED in unknown else ""
    return f"{field}: {', '.join(map(repr, unknown))} not allowed; allowed: {', '.join(allowed)}{why}"


def _on_finish(field: str, on_finish: object) -> str | None:
    if isinstance(on_finish, str) and on_finish in ON_FINISH_OPTIONS:
        return None
    return f"{field}: {on_finish!r} is not one of {', '.join(ON_FINISH_OPTIONS)}"


def _reserved(field: str, given: object, reserved: tuple[str, ...]) -> str | None:
    taken = own_keys_in(given, reserved) if isinstance(given, Mapping) else []  # under either prefix
    return f"{field}: {', '.join(taken)} are set by this provider to identify the task instance" if taken else None


def _labels(field: str, labels: object) -> str | None:
    if labels is not None and not isinstance(labels, Mapping):
        return f"{field}: must be a mapping of strings to strings, got {type(labels).__name__}"
    return _reserved(field, labels, RESERVED_LABELS)


def _annotations(field: str, annotations: object) -> str | None:
    return _reserved(field, annotations, RESERVED_ANNOTATIONS)  # anything but a mapping: refused by build_manifest


def _job_template_file(field: str, path: object) -> str | None:
    if path is None or isinstance(path, str):
        return None
    return f"{field}: must be a path (a string), got {type(path).__name__}"


def _queue_name(field: str, queue: object) -> str | None:
    if queue is None or (isinstance(queue, str) and queue):
        return None
    return f"{field}: must be the name of a Kueue LocalQueue (a non-empty string), or None; got {queue!r}"


# ---- the rules over several parameters: values -> problems, the rules' ``check`` ------------------------------------


def _reattach_or_durable(values: Mapping[str, Any]) -> list[str]:
    if values.get("reattach_on_restart") is False and values.get("durable") is True:
        return [
            "reattach_on_restart: False conflicts with durable=True, which makes a retry reconnect to "
            "the running job it stored; allowed: reattach_on_restart=True, or durable=False with it"
        ]
    return []


def _whole_or_parts(values: Mapping[str, Any]) -> list[str]:
    """The job given in parts or whole, not both (``job``: the parameter as given, None when read from the file)."""
    found = []
    whole = [f for f in ("job", "job_template_file") if values.get(f) is not None]
    parts = [f for f in ("replica_specs", "run_policy", "kind_fields") if values.get(f) is not None]
    if len(whole) > 1:
        found.append("job, job_template_file: give one whole job, not both")
    if whole and parts:
        found.append(
            f"{', '.join(parts)}: not allowed with {whole[0]}, which holds the whole job (its "
            f"spec.<kind>ReplicaSpecs, spec.runPolicy and the kind's fields); give one or the other"
        )
    if not whole and values.get("replica_specs") is None:
        found.append("replica_specs: required (or a whole job in job or job_template_file)")
    if not whole and values.get("kind") is None:
        found.append("kind: required with replica_specs (a whole job carries its own)")
    return found


def _trainjob_whole_or_parts(values: Mapping[str, Any]) -> list[str]:
    """A TrainJob given in parts (``runtime`` and the rest) or whole, not both (``job`` as for :func:`_whole_or_parts`)."""
    found = []
    whole = [f for f in ("job", "job_template_file") if values.get(f) is not None]
    parts = [f for f in TRAINJOB_PARTS if values.get(f) is not None]
    if len(whole) > 1:
        found.append("job, job_template_file: give one whole TrainJob, not both")
    if whole and parts:
        found.append(
            f"{', '.join(parts)}: not allowed with {whole[0]}, which holds the whole TrainJob (its spec.runtimeRef, "
            "trainer, initializer, runtimePatches, suspend, managedBy, activeDeadlineSeconds); give one or the other"
        )
    if not whole and values.get("runtime") is None:
        found.append(
            "runtime: required: the name of the ClusterTrainingRuntime to run on, or a runtimeRef (or a whole "
            "TrainJob in job or job_template_file)"
        )
    return found


def _queue_named_once(values: Mapping[str, Any]) -> list[str]:
    labels, queue = values.get("labels"), values.get("queue_name")
    if not (isinstance(labels, Mapping) and queue and LABEL_KUEUE_QUEUE_NAME in labels):
        return []
    if labels[LABEL_KUEUE_QUEUE_NAME] == queue:
        return []
    return [
        f"labels: {LABEL_KUEUE_QUEUE_NAME}={labels[LABEL_KUEUE_QUEUE_NAME]!r} conflicts with "
        f"queue_name={queue!r}; set the queue in one of them"
    ]


# ---- the table --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One check of one parameter: a row of :data:`PARAMS`.

    :param name: the parameter: the task's keyword argument, and its attribute as rendered.
    :param check: ``(name, value) -> problem or None``; the problem leads with the name and says what is allowed.
    :param faces: the tasks that check it so (:data:`OPERATOR`, :data:`TRAINJOB`, :data:`SENSOR`).
    """

    name: str
    check: Callable[[str, Any], str | None]
    faces: frozenset[str]

    def problem(self, values: Mapping[str, Any]) -> str | None:
        """The parameter's problem, or None (also when ``values`` lacks it: ``durable`` before Airflow 3.3).

        :param values: parameter name -> value, as the task holds them after rendering.
        """
        return self.check(self.name, values[self.name]) if self.name in values else None


@dataclass(frozen=True)
class CrossRule:
    """A rule over several parameters: a row of :data:`CROSS_RULES`.

    :param reads: the parameters it reads.
    :param check: parameter name -> value, to its problems (each leads with the field it names).
    :param faces: the tasks that check it (:data:`OPERATOR`, :data:`TRAINJOB`, :data:`SENSOR`).
    :param after: the :data:`PARAMS` row (by name) after whose problem the rule's are reported.
    """

    reads: tuple[str, ...]
    check: Callable[[Mapping[str, Any]], list[str]]
    faces: frozenset[str]
    after: str


_OPERATOR, _SENSOR, _TRAINJOB = frozenset({OPERATOR}), frozenset({SENSOR}), frozenset({TRAINJOB})
#: The operators' rows: TrainJobOperator's run settings, labels and queue mean what TrainingJobOperator's do.
_OPERATORS = frozenset({OPERATOR, TRAINJOB})
_ALL = frozenset({OPERATOR, TRAINJOB, SENSOR})

#: Every parameter check, in the order a task reports its problems (rows of the other task skipped). A parameter
#: both tasks check alike is one row; ``namespace`` and ``timeout`` are checked differently, and ``log_tail_lines``
#: reported at another place, by each task: a row each.
PARAMS: tuple[Param, ...] = (
    # The sensor's kind and target_conditions are checked by the sensor, by the families it may watch (before and
    # after these two rows): the domain knows no family.
    Param("job_name", _job_name, _SENSOR),  # the operator's is checked with its manifest
    Param("namespace", _namespace_name, _SENSOR),
    Param("log_tail_lines", count_problem, _SENSOR),
    Param("namespace", _namespace_type, _OPERATORS),
    Param("kubernetes_conn_id", conn_id_problem, _ALL),
    Param("get_logs", flag_problem, _OPERATORS),
    Param("reattach_on_restart", flag_problem, _OPERATORS),
    Param("deferrable", flag_problem, _ALL),
    Param("durable", flag_problem, _OPERATORS),
    Param("openlineage_inject_parent_job_info", optional_flag_problem, _OPERATORS),
    Param("on_finish", _on_finish, _OPERATORS),
    Param("poll_interval", seconds_problem, _OPERATORS),
    Param("poke_interval", _required_seconds, _SENSOR),
    Param("timeout", seconds_problem, _OPERATORS),
    Param("timeout", _required_seconds, _SENSOR),
    Param("startup_timeout", seconds_problem, _OPERATORS),
    Param("queue_timeout", seconds_problem, _OPERATORS),
    Param("log_tail_lines", count_problem, _OPERATORS),
    Param("labels", _labels, _OPERATORS),
    Param("annotations", _annotations, _OPERATORS),
    Param("job_template_file", _job_template_file, _OPERATORS),
    Param("queue_name", _queue_name, _OPERATORS),
)

#: The rules over several parameters, each reported after the :data:`PARAMS` row it names.
CROSS_RULES: tuple[CrossRule, ...] = (
    CrossRule(("reattach_on_restart", "durable"), _reattach_or_durable, _OPERATORS, after="durable"),
    CrossRule(
        ("job", "job_template_file", "replica_specs", "run_policy", "kind_fields", "kind"),
        _whole_or_parts,
        _OPERATOR,
        after="annotations",
    ),
    CrossRule(("job", "job_template_file", *TRAINJOB_PARTS), _trainjob_whole_or_parts, _TRAINJOB, after="annotations"),
    CrossRule(("labels", "queue_name"), _queue_named_once, _OPERATORS, after="queue_name"),
)


def read_by(face: str) -> tuple[str, ...]:
    """The parameters ``face``'s checks read, each once.

    :param face: :data:`OPERATOR`, :data:`TRAINJOB` or :data:`SENSOR`.
    """
    names = [p.name for p in PARAMS if face in p.faces]
    names += [name for rule in CROSS_RULES if face in rule.faces for name in rule.reads]
    return tuple(dict.fromkeys(names))


def values_of(task: object, face: str) -> dict[str, Any]:
    """The values ``face``'s checks read, from the task's attributes (one it lacks is left out).

    :param task: the operator or the sensor, rendered.
    :param face: :data:`OPERATOR`, :data:`TRAINJOB` or :data:`SENSOR`.
    """
    return {name: getattr(task, name) for name in read_by(face) if hasattr(task, name)}


def problems(values: Mapping[str, Any], face: str) -> list[str]:
    """Every problem of ``face``'s parameters, one line each, in the order of :data:`PARAMS` (a rule's after its
    row); empty when they are valid.

    :param values: parameter name -> value, as rendered (:func:`values_of`).
    :param face: :data:`OPERATOR`, :data:`TRAINJOB` or :data:`SENSOR`.
    """
    found: list[str] = []
    for param in PARAMS:
        if face not in param.faces:
            continue
        problem = param.problem(values)
        if problem is not None:
            found.append(problem)
        for rule in CROSS_RULES:
            if rule.after == param.name and face in rule.faces:
                found += rule.check(values)
    return found


# ---- the try's settings -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSettings:
    """The operator's parameters that govern a try (checked by the operator before the run uses them); its
    defaults are the operator's (:data:`DEFAULTS`).

    :param kubernetes_conn_id: the connection the trigger resolves as the hook does.
    :param poll_interval: seconds between reads when watching the job keeps failing.
    :param timeout: seconds the whole job may take from this try's create or attach; None: no limit.
    :param startup_timeout: seconds from admission until ``Running``; None: no limit.
    :param queue_timeout: seconds the job may wait in its queue each time it enters it; None: no limit.
    :param get_logs: follow the lead replica's log (deferred: copied by the trigger while it waits, the rest at the
        end, up to :data:`~airflow_trainjob.domain.lead_log.LEAD_LOG_MAX_BYTES`).
    :param log_tail_lines: lines quoted from each failed replica's log, and from the lead's end when the deferred
        copy passed its size bound (count).
    :param on_finish: one of :data:`ON_FINISH_OPTIONS`.
    :param reattach_on_restart: follow a running job of an earlier try instead of replacing it.
    """

    kubernetes_conn_id: str | None = "kubernetes_default"
    poll_interval: float = 10.0
    timeout: float | None = None
    startup_timeout: float | None = 600.0
    queue_timeout: float | None = None
    get_logs: bool = True
    log_tail_lines: int = 50
    on_finish: str = "delete_succeeded_job"
    reattach_on_restart: bool = True

    @classmethod
    def of(cls, task: object) -> RunSettings:
        """The settings ``task`` holds, by their names (the operator's attributes as rendered).

        :param task: the operator (anything with an attribute per field).
        """
        return cls(**{f.name: getattr(task, f.name) for f in fields(cls)})

    def limit(self, which: str) -> float | None:
        """The seconds of deadline ``which``, or None (no limit, or no such deadline).

        :param which: ``timeout``, ``startup_timeout`` or ``queue_timeout``.
        """
        return getattr(self, which, None)


#: The operator's defaults for the settings of a try.
DEFAULTS = RunSettings()

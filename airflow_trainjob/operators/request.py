"""One try's request: the operator's input, as rendered, checked and parsed once into the job to send.

:func:`build_request` reads the operator's parameters as rendered and the try's identity, and returns a frozen
:class:`TrainingJobRequest`: the manifest (cleanup held), and the notes the task logs of what the provider did to
the input. It writes nothing back to the operator: ``kind`` stays what the DAG's author gave (None with a whole
job); the request's :attr:`~TrainingJobRequest.kind` is the job's. The operator builds one when it renders and sends
that one in the same try (see :meth:`~airflow_trainjob.operators.training_job.TrainingJobOperator._prepare`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_trainjob.constants import LABEL_KUEUE_QUEUE_NAME
from airflow_trainjob.domain.cleanup_hold import hold
from airflow_trainjob.domain.names import generate_job_name, max_job_name_length
from airflow_trainjob.domain.own_keys import own_keys_in
from airflow_trainjob.domain.ownership import RESERVED_ANNOTATIONS, RESERVED_LABELS, TaskInstanceIdentity
from airflow_trainjob.domain.params import OPERATOR, problems, refuse
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.models.job import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.models.whole_job import WholeJob, parse_whole_job


@dataclass(frozen=True)
class TrainingJobRequest:
    """What one try sends, and what it says of the input.

    :param identity: the try it was built for: the job's name (when generated) and ownership labels are its.
    :param manifest: the ``kubeflow.org/v1`` object to create, as an API JSON dict, with the cleanup held
        (``cleanPodPolicy`` None, no TTL: see :mod:`~airflow_trainjob.domain.cleanup_hold`).
    :param notes: what the provider normalised, dropped or overrode in the input, one line each (field path first),
        for the task log.
    """

    identity: TaskInstanceIdentity
    manifest: dict[str, Any]
    notes: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """The job's kind, one of :func:`~airflow_trainjob.families.known_kinds`: the ``kind`` parameter's, or the whole
        job's own."""
        return str(self.manifest["kind"])

    @property
    def name(self) -> str:
        """The job's ``metadata.name``."""
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """The job's ``metadata.namespace``."""
        return str(self.manifest["metadata"]["namespace"])


def build_request(
    rendered: Mapping[str, Any],
    identity: TaskInstanceIdentity,
    hook: TrainingJobHook,
    *,
    job_from_file: bool = False,
    namespace: str | None = None,
) -> TrainingJobRequest:
    """Check the operator's parameters (every problem of :data:`~airflow_trainjob.domain.params.PARAMS`, once),
    parse its job, and build the try's manifest.

    :param rendered: the operator's parameters as rendered, by name: those
        :func:`~airflow_trainjob.domain.params.read_by` lists for the operator, and ``job_name``. ``job`` is the whole
        job (a dict, YAML/JSON text), or None when given in parts.
    :param identity: the try: names the job (without ``job_name``) and labels it as this try's.
    :param hook: the task's hook: it refuses a connection id that names no connection, and gives the connection's
        namespace.
    :param job_from_file: ``rendered["job"]`` is the text of ``job_template_file``, not the ``job`` parameter.
    :param namespace: the job's ``metadata.namespace``; None: the ``namespace`` parameter, else the whole job's
        ``metadata.namespace``, else the connection's.
    :raises InvalidJobSpecError: bad input, naming each field (not retried).
    """
    source = "job_template_file" if job_from_file else "job"
    # ``job`` as checked: the parameter as given; a job read from job_template_file is that file's.
    refuse(problems({**rendered, "job": None if job_from_file else rendered["job"]}, OPERATOR), hook)
    whole = None if rendered["job"] is None else _parse_whole(rendered, source)
    if namespace is None:
        from_job = whole.namespace if whole is not None and rendered["namespace"] is None else None
        namespace = from_job or hook.resolve_namespace(rendered["namespace"])
    spec = whole.spec if whole is not None else _parse_parts(rendered)
    # Not a whole job's own metadata.name: copied YAML names every run's job alike (a second run would meet the
    # first one's job); the name rule gives each task instance its own, the same on every try.
    name = rendered["job_name"] or generate_job_name(
        identity.dag_id,
        identity.task_id,
        identity.run_id,
        identity.map_index,
        max_job_name_length(spec.highest_indexes()),
    )
    given_labels = {**(whole.labels if whole else {}), **(rendered["labels"] or {})}
    queue = rendered["queue_name"]
    labels = {**given_labels, **({LABEL_KUEUE_QUEUE_NAME: queue} if queue else {}), **identity.labels()}
    annotations = _annotations(rendered["annotations"], whole, identity)
    notes = [*spec.warnings]
    if whole is not None:
        notes += _whole_job_notes(whole, source, name, bool(rendered["job_name"]), namespace, given_labels)
    if queue:
        notes.append(f"metadata.labels: {LABEL_KUEUE_QUEUE_NAME}={queue} (queue_name)")
    # Sent with the cleanup held (cleanPodPolicy None, no TTL): see cleanup_hold. The user's policy is applied by the
    # task once the logs and the verdict have been read.
    manifest = build_manifest(spec=spec, name=name, namespace=namespace, labels=labels, annotations=annotations)
    return TrainingJobRequest(identity=identity, manifest=hold(manifest), notes=tuple(notes))


def _parse_parts(rendered: Mapping[str, Any]) -> TrainingJobSpec:
    """The spec given in parts (``kind``, ``replica_specs``, ``run_policy``, ``kind_fields``), validated."""
    return TrainingJobSpec.parse(
        rendered["kind"], rendered["replica_specs"], rendered["run_policy"], rendered["kind_fields"]
    )


def _parse_whole(rendered: Mapping[str, Any], source: str) -> WholeJob:
    """The whole job, validated; a ``kind`` parameter given too must be its kind. :raises InvalidJobSpecError:"""
    whole = parse_whole_job(rendered["job"], path=source)
    kind = rendered["kind"]
    if kind is not None and kind != whole.spec.kind.kind:
        raise InvalidJobSpecError(
            [
                f"kind: {kind!r} differs from the {source}'s kind {whole.spec.kind.kind!r}; leave kind unset with a whole job"
            ]
        )
    return whole


def _annotations(given: Any, whole: WholeJob | None, identity: TaskInstanceIdentity) -> Any:
    """The whole job's annotations, the parameter's over them, this try's identity over both. Anything but a
    mapping is passed on as it is: :func:`~airflow_trainjob.models.manifest.build_manifest` refuses it by name."""
    annotations = given
    if whole is not None and isinstance(annotations, (Mapping, type(None))):
        annotations = {**whole.annotations, **(annotations or {})} or None
    if isinstance(annotations, (Mapping, type(None))):
        annotations = {**(annotations or {}), **identity.annotations()}
    return annotations


def metadata_notes(
    given_name: str | None,
    given_namespace: str | None,
    *,
    name: str,
    named: bool,
    namespace: str,
    labels: Mapping[str, str],
) -> list[str]:
    """What the provider does to a whole job's name, namespace and labels (any family's), one note each.

    :param given_name: the whole job's own ``metadata.name``, or None.
    :param given_namespace: its own ``metadata.namespace``, or None.
    :param name: ``metadata.name`` as sent.
    :param named: ``name`` is the ``job_name`` parameter's (else it was generated).
    :param namespace: ``metadata.namespace`` as sent.
    :param labels: the labels given (the job's, the ``labels`` parameter's over them), before this try's.
    """
    notes = []
    if given_name != name:
        why = (
            "job_name"
            if named
            else "the generated name, one per task instance and the same on every try (set job_name to choose it)"
        )
        notes.append(f"metadata.name: {name!r} from {why}" + (f", not {given_name!r}" if given_name else ""))
    if given_namespace and given_namespace != namespace:
        notes.append(f"metadata.namespace: {namespace!r} from the namespace parameter, not {given_namespace!r}")
    elif given_namespace:
        notes.append(f"metadata.namespace: {namespace!r} from the job (the namespace parameter overrides it)")
    overridden = own_keys_in(labels, RESERVED_LABELS)
    if overridden:
        notes.append(f"metadata.labels: {', '.join(overridden)} replaced by this task instance's")
    notes.append(f"metadata.labels: {', '.join(RESERVED_LABELS)} added (this task instance's ownership)")
    return notes


def _whole_job_notes(
    whole: WholeJob, source: str, name: str, named: bool, namespace: str, labels: Mapping[str, str]
) -> list[str]:
    """What the provider does to a whole job it was given, field by field, for the task log.

    :param whole: the job as parsed.
    :param source: ``job`` or ``job_template_file``: where it was given (each note leads with it).
    :param name: the job's ``metadata.name`` as sent.
    :param named: ``name`` is the ``job_name`` parameter's (else it was generated).
    :param namespace: the job's ``metadata.namespace`` as sent.
    :param labels: the labels given (the job's, the ``labels`` parameter's over them), before this try's.
    """
    notes = metadata_notes(whole.name, whole.namespace, name=name, named=named, namespace=namespace, labels=labels)
    notes.append(f"metadata.annotations: {', '.join(RESERVED_ANNOTATIONS)} added (the same identity, unsanitised)")
    notes.append(
        "spec.runPolicy.cleanPodPolicy, ttlSecondsAfterFinished: held until the task has read the logs "
        "and the verdict, then applied as written"
    )
    if whole.ignored:
        notes.append(f"dropped: {', '.join(whole.ignored)} (written by the server, kubectl or this provider)")
    return [f"{source}: {n}" for n in notes]

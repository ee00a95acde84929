"""One try's request for a Kubeflow Trainer v2 ``TrainJob``: ``TrainJobOperator``'s input, as rendered, checked and
built once into the TrainJob to send, as :mod:`~airflow_trainjob.operators.request` builds a ``kubeflow.org/v1``
job's. The run reads the same :class:`~airflow_trainjob.operators.request.TrainingJobRequest`.

The TrainJob carries the task instance's identity as labels and annotations, as a v1 job does, and the pod token
(:data:`~airflow_trainjob.constants.LABEL_POD_TOKEN`) as an annotation. Its labels do not reach its pods (the
trainer copies none of them to the JobSet's pod templates), so the provider appends a runtime patch of its own
(manager :data:`~airflow_trainjob.constants.RUNTIME_PATCH_MANAGER`) that labels the pods of the replicated job
``node`` with the identity and the token. Only ``node``: upstream's webhook refuses a patch naming a replicated job
the runtime lacks (``pkg/runtime/framework/plugins/jobset/jobset.go``: "must not have replicated job that doesn't
exist in the runtime job template"), the runtime is not read before the create, and ``node`` is the trainer step of
every Trainer runtime (also the MPI runtimes' nodes; their ``launcher`` pod and the initializer steps' pods are not
labelled). Nothing is held for cleanup: a TrainJob has no ``cleanPodPolicy`` or TTL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_trainjob.constants import (
    LABEL_KUEUE_QUEUE_NAME,
    LABEL_POD_TOKEN,
    RUNTIME_PATCH_MANAGER,
    TRAINER_API_VERSION,
    TRAINJOB_KIND,
    TrainJobStep,
)
from airflow_trainjob.domain.names import generate_job_name, job_name_problem, namespace_problem
from airflow_trainjob.domain.ownership import RESERVED_ANNOTATIONS, TaskInstanceIdentity
from airflow_trainjob.domain.params import TRAINJOB, TRAINJOB_PARTS, problems, refuse
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.models.errors import raise_if
from airflow_trainjob.models.trainjob import (
    TrainJobSpec,
    WholeTrainJob,
    max_generated_name_length,
    max_name_length,
    parse_spec_parts,
    parse_whole_trainjob,
)
from airflow_trainjob.models.trainjob.rules import map_problems
from airflow_trainjob.operators.request import TrainingJobRequest, metadata_notes

__all__ = ["PATCHED_STEPS", "build_trainjob_request", "provider_patch"]

#: The replicated jobs the provider's runtime patch labels (see the module's docstring).
PATCHED_STEPS = (TrainJobStep.NODE.value,)


def build_trainjob_request(
    rendered: Mapping[str, Any],
    identity: TaskInstanceIdentity,
    hook: TrainingJobHook,
    *,
    job_from_file: bool = False,
    namespace: str | None = None,
    pod_token: str,
) -> TrainingJobRequest:
    """Check ``TrainJobOperator``'s parameters (the :data:`~airflow_trainjob.domain.params.TRAINJOB` rows, once),
    parse its TrainJob, and build the try's manifest.

    :param rendered: the operator's parameters as rendered, by name: those
        :func:`~airflow_trainjob.domain.params.read_by` lists for :data:`~airflow_trainjob.domain.params.TRAINJOB`,
        and ``job_name``. ``job`` is the whole TrainJob (a mapping, YAML/JSON text), or None when given in parts.
    :param identity: the try: names the TrainJob (without ``job_name``) and labels it and its pods as this try's.
    :param hook: the task's hook: it refuses a connection id that names no connection, and gives the connection's
        namespace.
    :param job_from_file: ``rendered["job"]`` is the text of ``job_template_file``, not the ``job`` parameter.
    :param namespace: the TrainJob's ``metadata.namespace``; None: the ``namespace`` parameter, else the whole job's
        ``metadata.namespace``, else the connection's.
    :param pod_token: this TrainJob's token (:data:`~airflow_trainjob.constants.LABEL_POD_TOKEN`): an annotation of
        the TrainJob, a label of its pods.
    :raises InvalidJobSpecError: bad input, naming each field (not retried).
    """
    source = "job_template_file" if job_from_file else "job"
    refuse(problems({**rendered, "job": None if job_from_file else rendered["job"]}, TRAINJOB), hook)
    whole = None if rendered["job"] is None else parse_whole_trainjob(rendered["job"], path=source)
    if namespace is None:
        from_job = whole.namespace if whole is not None and rendered["namespace"] is None else None
        namespace = from_job or hook.resolve_namespace(rendered["namespace"])
    spec = whole.spec if whole is not None else parse_spec_parts(*(rendered[p] for p in TRAINJOB_PARTS))
    name, notes = _name(rendered["job_name"], spec, identity)
    given_labels = {**(whole.labels if whole else {}), **(rendered["labels"] or {})}
    queue = rendered["queue_name"]
    labels = {**given_labels, **({LABEL_KUEUE_QUEUE_NAME: queue} if queue else {}), **identity.labels()}
    annotations = _annotations(rendered["annotations"], whole, identity, pod_token)
    if whole is not None:
        notes = _whole_job_notes(whole, source, name, bool(rendered["job_name"]), namespace, given_labels) + notes
    if queue:
        notes.append(f"metadata.labels: {LABEL_KUEUE_QUEUE_NAME}={queue} (queue_name)")
    notes.append(
        f"spec.runtimePatches: {RUNTIME_PATCH_MANAGER} appended: the task instance's labels and {LABEL_POD_TOKEN} on "
        f"the pods of the replicated job {', '.join(PATCHED_STEPS)}"
    )
    manifest = _manifest(spec, name, namespace, labels, annotations, provider_patch(identity, pod_token))
    return TrainingJobRequest(identity=identity, manifest=manifest, notes=tuple(notes))


def provider_patch(identity: TaskInstanceIdentity, pod_token: str) -> dict[str, Any]:
    """The provider's runtime patch: the task instance's labels and the pod token on the pods of
    :data:`PATCHED_STEPS` (``runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[].template.spec.
    template.metadata.labels``).

    :param identity: the try whose labels the pods carry.
    :param pod_token: the TrainJob's token.
    """
    pod_labels = {**identity.labels(), LABEL_POD_TOKEN: pod_token}
    jobs = [
        {"name": step, "template": {"spec": {"template": {"metadata": {"labels": pod_labels}}}}}
        for step in PATCHED_STEPS
    ]
    return {"manager": RUNTIME_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}}}


def _name(job_name: str | None, spec: TrainJobSpec, identity: TaskInstanceIdentity) -> tuple[str, list[str]]:
    """The TrainJob's name (``job_name``, else generated within the bound every upstream runtime allows: see
    :mod:`~airflow_trainjob.models.trainjob.names`) and a note when ``job_name`` is too long for some runtimes."""
    if not job_name:
        bound = max_generated_name_length(spec.num_nodes)
        return generate_job_name(identity.dag_id, identity.task_id, identity.run_id, identity.map_index, bound), []
    any_runtime = max_generated_name_length(spec.num_nodes)
    if isinstance(job_name, str) and any_runtime < len(job_name) <= max_name_length(
        spec.num_nodes, spec.initializer_steps
    ):
        return job_name, [
            f"metadata.name: {job_name!r} is {len(job_name)} characters: a runtime with a dataset-initializer step "
            f"takes at most {any_runtime} (its pods' names would pass 63)"
        ]
    return job_name, []


def _manifest(
    spec: TrainJobSpec,
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Any,
    patch: dict[str, Any],
) -> dict[str, Any]:
    """The TrainJob object; the name, namespace, labels and annotations checked. :raises InvalidJobSpecError:"""
    found = []
    name_issue = job_name_problem(name, max_name_length(spec.num_nodes, spec.initializer_steps))
    if name_issue:
        found.append(f"metadata.name: {name_issue}")
    namespace_issue = namespace_problem(namespace)
    if namespace_issue:
        found.append(f"metadata.namespace: {namespace_issue}")
    found += map_problems("metadata.labels", labels, labels=True)
    found += map_problems("metadata.annotations", annotations, labels=False)
    raise_if(found)
    job_spec = {**spec.spec, "runtimePatches": [*(spec.spec.get("runtimePatches") or []), patch]}
    metadata = {"name": name, "namespace": namespace, "labels": dict(labels), "annotations": dict(annotations)}
    return {"apiVersion": TRAINER_API_VERSION, "kind": TRAINJOB_KIND, "metadata": metadata, "spec": job_spec}


def _annotations(given: Any, whole: WholeTrainJob | None, identity: TaskInstanceIdentity, pod_token: str) -> Any:
    """The whole job's annotations, the parameter's over them, this try's identity and the pod token over both.
    Anything but a mapping is passed on as it is, and refused by name."""
    if not isinstance(given, (Mapping, type(None))):
        return given
    return {
        **(whole.annotations if whole else {}),
        **(given or {}),
        **identity.annotations(),
        LABEL_POD_TOKEN: pod_token,
    }


def _whole_job_notes(
    whole: WholeTrainJob, source: str, name: str, named: bool, namespace: str, labels: Mapping[str, str]
) -> list[str]:
    """What the provider does to a whole TrainJob it was given, field by field, for the task log (as for a v1 job).

    :param whole: the TrainJob as parsed.
    :param source: ``job`` or ``job_template_file`` (each note leads with it).
    :param name: ``metadata.name`` as sent.
    :param named: ``name`` is the ``job_name`` parameter's (else generated).
    :param namespace: ``metadata.namespace`` as sent.
    :param labels: the labels given (the job's, the ``labels`` parameter's over them), before this try's.
    """
    notes = metadata_notes(whole.name, whole.namespace, name=name, named=named, namespace=namespace, labels=labels)
    notes.append(
        f"metadata.annotations: {', '.join(RESERVED_ANNOTATIONS)} added (the same identity, unsanitised), and "
        f"{LABEL_POD_TOKEN} (what ties the pods to this TrainJob)"
    )
    if whole.ignored:
        notes.append(f"dropped: {', '.join(whole.ignored)} (written by the server, kubectl or this provider)")
    return [f"{source}: {n}" for n in notes]

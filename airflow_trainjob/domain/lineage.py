"""What a training task tells OpenLineage (pure): the job it ran, the run's identity and end, the datasets it names.

Built only from what the operator already holds -- the manifest it sent (or the job it adopted), the job as last read,
the failure's verdict -- never from an extra API call. The operator's edge
(:mod:`airflow_trainjob.operators.lineage`) turns these plain, JSON-safe dicts into OpenLineage facets and datasets.

Never copied: a container's ``env`` (values or names), ``command``/``args``, a secret's name, an initializer's
``env`` or ``secretRef``; a storage URI loses its user info, query and fragment (a presigned URL's signature).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from airflow_trainjob.constants import TRAINER_GROUP
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.family import JobFamily
from airflow_trainjob.domain.timestamps import epoch

#: The run policy fields a ``kubeflow.org/v1`` job facet keeps (scalars; ``schedulingPolicy`` and the rest are not
#: what the run was, and may be large).
V1_RUN_POLICY_FIELDS = ("backoffLimit", "activeDeadlineSeconds", "suspend", "managedBy")
#: The TrainJob ``spec`` fields its job facet keeps as its run policy.
TRAINJOB_RUN_FIELDS = ("activeDeadlineSeconds", "suspend", "managedBy")
#: Characters of a condition's message kept (a controller's message may quote a whole container log line).
CONDITION_MESSAGE_CHARS = 500
#: Schemes whose dataset namespace is ``<scheme>://<authority>`` and name the path (OpenLineage's naming for object
#: stores and file systems; ``gcs`` is spelled ``gs``). Any other scheme: namespace ``<scheme>``, name
#: ``<authority><path>`` (``hf://org/repo`` -> ``hf``, ``org/repo``), as the openlineage provider names an Airflow
#: ``File`` of a scheme it does not know.
AUTHORITY_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gs",
    "gcs": "gs",
    "hdfs": "hdfs",
    "abfss": "abfss",
    "abfs": "abfs",
    "wasbs": "wasbs",
    "wasb": "wasb",
}
#: Schemes whose URI's user part is the storage container, which OpenLineage keeps in the namespace
#: (``abfss://<container>@<account>.dfs.core.windows.net``), not credentials.
CONTAINER_IN_USER_SCHEMES = frozenset({"abfss", "abfs", "wasbs", "wasb"})


@dataclass(frozen=True)
class DatasetName:
    """A dataset as OpenLineage names it.

    :param namespace: where it lives (``s3://bucket``, ``hf``, ``pvc://<namespace>/<claim>``).
    :param name: what it is within that namespace (an object key, ``org/repo``, a path).
    :param role: what the job uses it as: ``dataset`` or ``model`` (a TrainJob initializer's); ``""``: not said.
    """

    namespace: str
    name: str
    role: str = ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def is_trainjob(job: Mapping[str, Any]) -> bool:
    """Whether ``job`` is a Trainer v2 TrainJob (``apiVersion`` of ``trainer.kubeflow.org``), not a v1 kind.

    :param job: the job or its manifest, an API JSON dict.
    """
    return str(job.get("apiVersion") or "").startswith(f"{TRAINER_GROUP}/")


def dataset_of_uri(uri: str, job_namespace: str = "", role: str = "") -> DatasetName | None:
    """The dataset a storage URI names (:data:`AUTHORITY_SCHEMES` says how); ``file:///<path>``: namespace ``file``,
    name the path (as the openlineage provider names a ``file://`` Asset); ``pvc://<claim>/<path>``: namespace
    ``pvc://<job namespace>/<claim>`` (a claim is namespaced), name the path. None: not a ``scheme://...`` URI.

    :param uri: a ``storageUri`` (``s3://bucket/key``, ``hf://org/repo``), or an Airflow ``File``'s URL.
    :param job_namespace: the job's ``metadata.namespace`` (a ``pvc://`` claim's).
    :param role: :attr:`DatasetName.role`.
    """
    try:
        parts = urlsplit(uri.strip())
    except ValueError:
        return None
    scheme, path = parts.scheme.lower(), parts.path
    # The host as written (``hf://Meta-Llama/...`` names an organisation, whose case matters), without user info
    # (credentials), except where the scheme puts the container there (``abfss://<container>@<account>...``).
    authority = parts.netloc.rpartition("@")[2]
    if scheme in CONTAINER_IN_USER_SCHEMES and parts.username:
        authority = f"{parts.username}@{authority}"
    if not scheme or not (authority or path.strip("/")):
        return None
    if scheme == "file":  # a local path: as the openlineage provider names a file:// Asset
        return DatasetName("file", path or "/", role)
    if scheme == "pvc":
        return DatasetName(f"pvc://{job_namespace}/{authority}", path.lstrip("/") or "/", role)
    if scheme in AUTHORITY_SCHEMES:
        return DatasetName(f"{AUTHORITY_SCHEMES[scheme]}://{authority}", path.lstrip("/") or "/", role)
    return DatasetName(scheme, f"{authority}{path}".rstrip("/"), role)


def initializer_datasets(job: Mapping[str, Any]) -> list[DatasetName]:
    """A TrainJob's ``spec.initializer`` ``dataset`` and ``model`` ``storageUri``\\ s, as datasets (its inputs); []
    for a v1 kind, or a TrainJob without them.

    :param job: the TrainJob or its manifest, an API JSON dict.
    """
    if not is_trainjob(job):
        return []
    namespace = str(_mapping(job.get("metadata")).get("namespace") or "")
    initializer = _mapping(_mapping(job.get("spec")).get("initializer"))
    found = []
    for role in ("dataset", "model"):
        uri = _mapping(initializer.get(role)).get("storageUri")
        named = dataset_of_uri(uri, namespace, role) if isinstance(uri, str) and uri else None
        if named is not None:
            found.append(named)
    return found


def _images(pod_template: Mapping[str, Any]) -> list[str]:
    """The images of a pod template's init containers and containers, each once, in order."""
    spec = _mapping(_mapping(pod_template).get("spec"))
    images: list[str] = []
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        image = _mapping(container).get("image")
        if isinstance(image, str) and image and image not in images:
            images.append(image)
    return images


def _v1_job_fields(job: Mapping[str, Any], family: JobFamily) -> dict[str, Any]:
    """The v1 part of :func:`describe_job`: replicas and images per replica type, the run policy as the user set it
    (the provider holds ``cleanPodPolicy`` and ``ttlSecondsAfterFinished`` while the task runs)."""
    spec = _mapping(job.get("spec"))
    images: dict[str, list[str]] = {}
    for key, specs in spec.items():
        if str(key).endswith("ReplicaSpecs"):
            for replica_type, replica in _mapping(specs).items():
                images[str(replica_type)] = _images(_mapping(_mapping(replica).get("template")))
    run_policy = _mapping(spec.get("runPolicy"))
    kept = {k: run_policy[k] for k in V1_RUN_POLICY_FIELDS if run_policy.get(k) is not None}
    user = family.user_run_policy(job)
    kept["cleanPodPolicy"] = user.clean_pod_policy
    if user.ttl_seconds_after_finished is not None:
        kept["ttlSecondsAfterFinished"] = user.ttl_seconds_after_finished
    return {"replicas": family.desired_replicas(job), "images": images, "runPolicy": kept}


def _trainjob_fields(job: Mapping[str, Any], family: JobFamily) -> dict[str, Any]:
    """The TrainJob part of :func:`describe_job`: the runtime, nodes, processes per node, the trainer's image (the
    runtime's own images are not known without reading it), its run settings, which initializers it sets."""
    spec = _mapping(job.get("spec"))
    ref = _mapping(spec.get("runtimeRef"))
    trainer = _mapping(spec.get("trainer"))
    image = trainer.get("image")
    fields: dict[str, Any] = {
        "runtime": {k: ref[k] for k in ("name", "kind", "apiGroup") if ref.get(k) is not None},
        "replicas": family.desired_replicas(job),
        "images": {"node": [image]} if isinstance(image, str) and image else {},
        "runPolicy": {k: spec[k] for k in TRAINJOB_RUN_FIELDS if spec.get(k) is not None},
        "initializers": [k for k in ("dataset", "model") if _mapping(spec.get("initializer")).get(k)],
    }
    if trainer.get("numProcPerNode") is not None:
        fields["processesPerNode"] = trainer["numProcPerNode"]
    return fields


def describe_job(job: Mapping[str, Any], family: JobFamily) -> dict[str, Any]:
    """The job facet's fields: ``apiVersion``, ``kind``, ``namespace``; ``replicas`` (replica type -> count; a
    TrainJob's ``{"node": numNodes}`` when it sets it), ``images`` (replica type -> images), ``runPolicy``; a
    TrainJob's ``runtime`` (``runtimeRef``), ``initializers`` and ``processesPerNode``.

    :param job: the manifest sent, or the job as read (an API JSON dict; a job read back from an event may have no
        ``spec``: then only its identity).
    :param family: the job's API family (replicas, the user's run policy).
    """
    metadata = _mapping(job.get("metadata"))
    head = {
        "apiVersion": str(job.get("apiVersion") or ""),
        "kind": str(job.get("kind") or ""),
        "namespace": str(metadata.get("namespace") or ""),
    }
    if not isinstance(job.get("spec"), Mapping):
        return head
    return {**head, **(_trainjob_fields(job, family) if is_trainjob(job) else _v1_job_fields(job, family))}


def _condition(condition: Mapping[str, Any]) -> dict[str, Any]:
    message = str(condition.get("message") or "")
    kept = {k: condition[k] for k in ("type", "status", "reason", "lastTransitionTime") if condition.get(k)}
    if message:
        kept["message"] = message[:CONDITION_MESSAGE_CHARS]
    return kept


def describe_run(job: Mapping[str, Any], family: JobFamily) -> dict[str, Any]:
    """The run facet's fields: ``name``, ``namespace``, ``uid``, ``phase``, ``conditions`` (``type``, ``status``,
    ``reason``, ``message`` cut to :data:`CONDITION_MESSAGE_CHARS`, ``lastTransitionTime``), ``startTime``,
    ``completionTime`` and ``durationSeconds`` once known (:meth:`JobFamily.run_times`).

    :param job: the job as last read (an API JSON dict), or the manifest before it exists (no uid, no status).
    :param family: the job's API family.
    """
    metadata, status = _mapping(job.get("metadata")), _mapping(job.get("status"))
    fields: dict[str, Any] = {
        "name": str(metadata.get("name") or ""),
        "namespace": str(metadata.get("namespace") or ""),
    }
    if metadata.get("uid"):
        fields["uid"] = str(metadata["uid"])
    if not status:
        return fields
    start, end = family.run_times(job)
    started, ended = epoch(start), epoch(end)
    fields["phase"] = family.phase(status)
    fields["conditions"] = [_condition(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    fields.update({k: v for k, v in (("startTime", start), ("completionTime", end)) if v})
    if started is not None and ended is not None:
        fields["durationSeconds"] = round(ended - started, 3)
    return fields


def describe_failure(ends: Iterable[ContainerEnd], permanent: bool) -> dict[str, Any]:
    """The failure facet's fields: ``permanent`` (retrying cannot help), and ``failedReplicas``: per failed replica
    (and init container), in the order they first failed, its first failed run -- ``replica`` (``Worker-1``), ``pod``,
    ``container``, ``exitCode`` (None: it never ran), ``reason`` (the kubelet's), ``exitClass`` (``Permanent``,
    ``Retryable``, ``OOMKilled``, ``Evicted``, ``Unknown``) -- and ``failedRuns``, how many of its runs failed (a
    restarted container fails again, or is stopped: ``143``); never a run's message or log.

    :param ends: the container runs the verdict judged the job by, oldest first
        (:attr:`~airflow_trainjob.domain.verdict.Verdict.ends`).
    :param permanent: the verdict's :attr:`~airflow_trainjob.domain.verdict.Verdict.permanent`.
    """
    replicas: dict[tuple[str, str], dict[str, Any]] = {}
    for end in ends:
        if not end.failed:
            continue
        key = (end.replica, end.container if end.init else "")
        if key in replicas:
            replicas[key]["failedRuns"] += 1
            continue
        replicas[key] = {
            "replica": end.replica,
            "pod": end.pod,
            "container": end.container,
            "exitCode": end.exit_code,
            "reason": end.reason,
            "exitClass": end.exit_class.value,
            "failedRuns": 1,
        }
    return {"permanent": permanent, "failedReplicas": list(replicas.values())}

"""How a training job is addressed on the Kubernetes API: the one place that builds its requests' coordinates.

A job of kind ``PyTorchJob`` named ``train`` in namespace ``ml`` is the custom object
``kubeflow.org/v1``, plural ``pytorchjobs``, in ``ml``; its pods are the pods labelled
``training.kubeflow.org/job-name=train`` (the training operator's ``JobNameLabel``): what the job's family says
(:func:`airflow_trainjob.families.family_of`, its ``resource`` and ``pod_selector``); a watch of that one job
selects ``metadata.name=train``; the events about it select ``involvedObject.name=train``; and a delete
that must never hit a same-named successor carries a ``preconditions.uid``. The sync hook, the async hook, the
trigger, the shared stream and the synchronous job watch build their requests from here, for either client
(``kubernetes`` and ``kubernetes_asyncio`` both accept the plain dicts made here as request bodies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from airflow_trainjob.families import JobResource, family_of

__all__ = [
    "JobAddress",
    "delete_options",
    "involved_object_selector",
    "job_pod_selector",
    "name_field_selector",
    "plural",
    "resource",
]


def plural(kind: str) -> str:
    """The resource name of ``kind`` in URLs (``PyTorchJob`` -> ``pytorchjobs``).

    :param kind: a job kind of one of the families (``PyTorchJob``).
    :raises KeyError: no family holds ``kind``.
    """
    return family_of(kind).resource.plural


def resource(kind: str) -> str:
    """``pytorchjobs.kubeflow.org``: the resource as ``kubectl`` and RBAC name it.

    :param kind: a job kind of one of the families (``PyTorchJob``).
    :raises KeyError: no family holds ``kind``.
    """
    return family_of(kind).resource.name


def job_pod_selector(name: str, replica_index: int | None = None, *, kind: str) -> str:
    """The label selector of the pods the job's controller creates for job ``name``, as its family says
    (``training.kubeflow.org/job-name=<name>``; a TrainJob's ``jobset.sigs.k8s.io/jobset-name=<name>``), of one
    replica index if given (index 0 holds the lead replica).

    :param name: the job's ``metadata.name``.
    :param replica_index: only the pods of this replica index (0, 1, ...); None: all.
    :param kind: the job's kind, whose family says how its pods are labelled.
    :raises KeyError: no family holds ``kind``.
    """
    return family_of(kind).pod_selector(name, replica_index)


def name_field_selector(name: str) -> str:
    """The field selector of the one object named ``name`` (``metadata.name=<name>``), for a watch of one job.

    :param name: the object's ``metadata.name``.
    """
    return f"metadata.name={name}"


def involved_object_selector(name: str) -> str:
    """The field selector of the events about objects named ``name`` (``involvedObject.name=<name>``).

    :param name: the ``metadata.name`` of the object the events are about.
    """
    return f"involvedObject.name={name}"


def delete_options(uid: str | None = None, propagation: str | None = None) -> dict[str, Any]:
    """The body of a delete (``DeleteOptions``), as a dict either client sends as it is.

    :param uid: delete only the object with this uid (``preconditions.uid``: a same-named successor answers 409,
        never gets deleted); None: whatever object has the name.
    :param propagation: ``propagationPolicy`` (``Background``, ``Foreground``, ``Orphan``); None: the server's default.
    """
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if propagation:
        options["propagationPolicy"] = propagation
    if uid:
        options["preconditions"] = {"uid": uid}
    return options


@dataclass(frozen=True)
class JobAddress:
    """Where one training job (or, without ``name``, the jobs of one kind in a namespace) lives.

    :param kind: a job kind of one of the families (``PyTorchJob``).
    :param namespace: the namespace.
    :param name: the job's ``metadata.name``; None: every job of the kind in the namespace.
    """

    kind: str
    namespace: str
    name: str | None = None

    @property
    def where(self) -> JobResource:
        """The kind's group, version and plural, as its family says (:func:`~airflow_trainjob.families.family_of`).

        :raises KeyError: no family holds the kind.
        """
        return family_of(self.kind).resource

    @property
    def plural(self) -> str:
        return self.where.plural

    @property
    def resource(self) -> str:
        """``pytorchjobs.kubeflow.org``."""
        return self.where.name

    @property
    def api_version(self) -> str:
        """``kubeflow.org/v1``: the ``apiVersion`` of the job's objects."""
        return self.where.api_version

    def collection(self) -> tuple[str, str, str, str]:
        """``(group, version, namespace, plural)``: the leading positional arguments of the ``CustomObjectsApi``
        ``*_namespaced_custom_object`` calls of either client (``get``, ``patch`` and ``delete`` add the name)."""
        where = self.where
        return where.group, where.version, self.namespace, where.plural

    def object(self) -> tuple[str, str, str, str, str]:
        """``(group, version, namespace, plural, name)``: the job's own object.

        :raises ValueError: the address names no job.
        """
        if not self.name:
            raise ValueError(f"{self} names no job")
        return (*self.collection(), self.name)

    @property
    def pod_selector(self) -> str:
        """:func:`job_pod_selector` of the job."""
        if not self.name:
            raise ValueError(f"{self} names no job")
        return job_pod_selector(self.name, kind=self.kind)

    @property
    def ref(self) -> str:
        """``PyTorchJob ml/train``, or ``pytorchjobs.kubeflow.org in namespace ml`` without a name."""
        return (
            f"{self.kind} {self.namespace}/{self.name}"
            if self.name
            else f"{self.resource} in namespace {self.namespace}"
        )

    def __str__(self) -> str:
        return self.ref

"""The requests of the training job hooks, each built once for both clients.

A :class:`ClientRequest` says everything about one API operation except how it is sent: which API class of the
client and which of its methods, the arguments and options (a merge patch's content type, a delete's
preconditions, a field selector), the form its answer comes in, what a 404 answer means, and the post-processing
that turns the answer into what the hook returns (the pods with their list's ``resourceVersion``, the events about
some objects sorted oldest first, a log's text). :class:`~airflow_trainjob.hooks.training_job.TrainingJobHook`
sends one with ``kubernetes`` (``_send``), :class:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook` with
``kubernetes_asyncio`` (``_send_async``): both clients have the same API classes, methods and arguments, so the
request is the same and only the sending differs. The timeout, the retries and the translation of an error answer
are the sender's (:mod:`airflow_trainjob.hooks.retries`, :func:`airflow_trainjob.hooks.api_errors.exception_for`, for the
:class:`~airflow_trainjob.hooks.api_errors.ApiCall` the request carries).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, Literal, TypeVar

from airflow_trainjob.domain.family import Prerequisite
from airflow_trainjob.hooks.addressing import (
    JobAddress,
    delete_options,
    involved_object_selector,
    job_pod_selector,
)
from airflow_trainjob.hooks.api_errors import API_EXCEPTIONS, ApiCall

R = TypeVar("R")

#: How a client's answer comes: ``json``, already JSON (a custom object's answer is a dict); ``model``, the client's
#: model objects (``V1PodList``), converted to the API's JSON dicts (camelCase) by the client that made the call;
#: ``bytes``, the answer's body undecoded (``_preload_content=False``: the sender reads and releases it).
AnswerForm = Literal["json", "model", "bytes"]
#: ``ClientRequest.api`` of a request sent by the ``ApiClient``'s own ``call_api`` (a path neither client's API
#: classes build).
CALL_API = "ApiClient"
MERGE_PATCH = "application/merge-patch+json"


def _same(answer: Any) -> Any:
    return answer


@dataclass(frozen=True)
class ClientRequest(Generic[R]):
    """One API operation, ready to be sent by either client.

    :param operation: the sync hook's method that makes it (``get_job``), named in the retry log line (the async
        hook's is ``<operation>_async``).
    :param call: what it asks, for the words of an error (:func:`~airflow_trainjob.hooks.api_errors.exception_for`).
    :param api: the client's API class (``CustomObjectsApi``, ``CoreV1Api``), or :data:`CALL_API`.
    :param method: the method of that class (``get_namespaced_custom_object``, ``call_api``).
    :param args: its positional arguments.
    :param options: its keyword arguments, without the timeout (the sender's) and ``_preload_content`` (``form``'s).
    :param form: the form of the answer (:data:`AnswerForm`).
    :param answer: what the hook returns, from the answer in its ``form`` (JSON, or the body's bytes).
    :param if_gone: what a 404 answer stands for (a deletion: the object was gone already); None: an error.
    """

    operation: str
    call: ApiCall
    api: str
    method: str
    args: tuple[Any, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    form: AnswerForm = "json"
    answer: Callable[[Any], R] = _same
    if_gone: Callable[[], R] | None = None

    def client_options(self, timeout: Any) -> dict[str, Any]:
        """The keyword arguments of the client's method: ``options``, the timeout, and for a ``bytes`` answer
        ``_preload_content=False``.

        :param timeout: the ``_request_timeout`` (``(connect, read)`` seconds).
        """
        raw = {"_preload_content": False} if self.form == "bytes" else {}
        return {**self.options, **raw, "_request_timeout": timeout}

    def settle(self, error: BaseException) -> R:
        """What a failed attempt stands for: a 404 of a request with ``if_gone`` is its answer.

        :param error: what the attempt raised.
        :raises BaseException: ``error`` itself, when it is not such a 404.
        """
        if self.if_gone is not None and isinstance(error, API_EXCEPTIONS) and error.status == 404:
            return self.if_gone()
        raise error


# --- the jobs ---------------------------------------------------------------------------------------


def _job_request(
    operation: str, verb: str, purpose: str, address: JobAddress, method: str, *args: Any, **kwargs: Any
) -> ClientRequest[Any]:
    """A ``CustomObjectsApi`` request about the job at ``address``: its own object when the address has a name (an
    empty one is refused, :meth:`JobAddress.object`), else the collection of its kind."""
    where = address.collection() if address.name is None else address.object()
    call = ApiCall.for_job(verb, address.kind, address.namespace, address.name, purpose)
    return ClientRequest(operation, call, "CustomObjectsApi", method, (*where, *args), **kwargs)


def create_job(manifest: dict[str, Any]) -> ClientRequest[dict[str, Any]]:
    """``POST`` of the job into its kind's collection; the answer is the created object
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.create_job`).

    :param manifest: the request's body: the whole job (its ``kind`` and ``metadata.namespace`` address it).
    :raises KeyError: the manifest has no ``kind`` or ``metadata.namespace``.
    """
    meta = manifest["metadata"]
    address = JobAddress(manifest["kind"], meta["namespace"])
    call = ApiCall.for_job(
        "create", str(manifest["kind"]), meta["namespace"], meta.get("name"), "create a training job"
    )
    collection = address.collection()
    return ClientRequest(
        "create_job", call, "CustomObjectsApi", "create_namespaced_custom_object", (*collection, manifest)
    )


def get_job(kind: str, name: str, namespace: str) -> ClientRequest[dict[str, Any]]:
    """``GET`` of the job's object; the answer is the object as the API has it
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.get_job`).

    :param kind: the kind, which gives the URL's plural.
    :param name: the object's name in the URL.
    :param namespace: the URL's namespace.
    :raises KeyError: no family holds ``kind``.
    :raises ValueError: ``name`` is empty.
    """
    address = JobAddress(kind, namespace, name)
    return _job_request("get_job", "get", "read a training job", address, "get_namespaced_custom_object")


def get_prerequisite(needed: Prerequisite) -> ClientRequest[dict[str, Any]]:
    """``GET`` of an object a job names (a TrainJob's runtime): cluster-scoped, or in its namespace
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.get_prerequisite`).

    :param needed: the object: its resource, name and namespace (None: cluster-scoped).
    """
    where = needed.resource
    call = ApiCall(
        "get",
        where.plural,
        where.group,
        where.version,
        needed.namespace,
        needed.name,
        needed.kind,
        purpose=f"check that the job's {needed.kind} exists",
    )
    if needed.namespace is None:
        args: tuple[Any, ...] = (where.group, where.version, where.plural, needed.name)
        return ClientRequest("get_prerequisite", call, "CustomObjectsApi", "get_cluster_custom_object", args)
    args = (where.group, where.version, needed.namespace, where.plural, needed.name)
    return ClientRequest("get_prerequisite", call, "CustomObjectsApi", "get_namespaced_custom_object", args)


def patch_job(kind: str, name: str, namespace: str, patch: dict[str, Any]) -> ClientRequest[dict[str, Any]]:
    """``PATCH`` of the job's object with a JSON merge patch, said as such (``application/merge-patch+json``:
    ``kubernetes_asyncio`` would otherwise send a dict as a JSON patch); the answer is the patched object
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.patch_job`).

    :param kind: the kind, which gives the URL's plural.
    :param name: the object's name in the URL.
    :param namespace: the URL's namespace.
    :param patch: the request's body.
    """
    address = JobAddress(kind, namespace, name)
    return _job_request(
        "patch_job",
        "patch",
        "patch a training job",
        address,
        "patch_namespaced_custom_object",
        patch,
        options={"_content_type": MERGE_PATCH},
    )


def _deleted(answer: Any) -> bool:
    return True


def _already_gone() -> bool:
    return False


def delete_job(
    kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
) -> ClientRequest[bool]:
    """``DELETE`` of the job's object: True if this request deleted it, False on 404 (it was gone already, which
    counts as done) (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.delete_job`).

    :param kind: the kind, which gives the URL's plural.
    :param name: the object's name in the URL.
    :param namespace: the URL's namespace.
    :param uid: the body's ``preconditions.uid``; None: none.
    :param propagation: the body's ``propagationPolicy``.
    """
    address = JobAddress(kind, namespace, name)
    return _job_request(
        "delete_job",
        "delete",
        "delete a training job",
        address,
        "delete_namespaced_custom_object",
        options={"body": delete_options(uid, propagation)},
        answer=_deleted,
        if_gone=_already_gone,
    )


def list_jobs(kind: str, namespace: str, limit: int | None, continue_token: str | None) -> ClientRequest[bytes]:
    """``GET`` of one page of a kind's collection; the answer is its undecoded body (JSON)
    (:meth:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook.list_jobs_text_async`).

    :param kind: the kind, which gives the URL's plural.
    :param namespace: the URL's namespace.
    :param limit: ``limit``; None: left out.
    :param continue_token: ``continue``; None: left out.
    """
    return _job_request(
        "list_jobs",
        "list",
        "list training jobs",
        JobAddress(kind, namespace),
        "list_namespaced_custom_object",
        options={"limit": limit, "_continue": continue_token},
        form="bytes",
    )


# --- the pods, their logs and the events --------------------------------------------------------------


def _core_list(
    operation: str,
    resource: str,
    purpose: str,
    namespace: str,
    options: dict[str, Any],
    answer: Callable[[dict[str, Any]], R],
) -> ClientRequest[R]:
    """A ``CoreV1Api`` ``list_namespaced_<resource>`` request, whose answer (a list of the client's models) is read
    as JSON."""
    method = {"pods": "list_namespaced_pod", "events": "list_namespaced_event"}[resource]
    call = ApiCall("list", resource, namespace=namespace, purpose=purpose)
    return ClientRequest(operation, call, "CoreV1Api", method, (namespace,), options, form="model", answer=answer)


def _pods_and_version(answer: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    return answer.get("items") or [], (answer.get("metadata") or {}).get("resourceVersion")


def list_job_pods(
    name: str, namespace: str, replica_index: int | None = None, *, kind: str
) -> ClientRequest[tuple[list[dict[str, Any]], str | None]]:
    """``GET`` of the pods of job ``name`` (``labelSelector``: :func:`job_pod_selector`); the answer is the pods as
    the API's JSON dicts (camelCase) with the list's ``metadata.resourceVersion``, where a watch of them starts
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.list_job_pods_and_version`).

    :param name: the job's name, in the selector.
    :param namespace: the URL's namespace.
    :param replica_index: the replica index in the selector (the async hook's ``replica_index``); None: left out.
    :param kind: the job's kind, whose family labels its pods.
    :raises KeyError: no family holds ``kind``.
    """
    selector = {"label_selector": job_pod_selector(name, replica_index, kind=kind)}
    return _core_list("list_job_pods", "pods", "list a training job's pods", namespace, selector, _pods_and_version)


def list_pods_page(
    namespace: str, label_selector: str, limit: int | None, continue_token: str | None
) -> ClientRequest[bytes]:
    """``GET`` of one page of the pods that match ``label_selector`` (every job's pods of a family: the trigger's
    shared pod watch); the answer is its undecoded body (JSON)
    (:meth:`~airflow_trainjob.hooks.training_job.AsyncTrainingJobHook.list_pods_text_async`).

    :param namespace: the URL's namespace.
    :param label_selector: ``labelSelector``.
    :param limit: ``limit``; None: left out.
    :param continue_token: ``continue``; None: left out.
    """
    options = {"label_selector": label_selector, "limit": limit, "_continue": continue_token}
    return ClientRequest(
        "list_pods_page",
        ApiCall("list", "pods", namespace=namespace, purpose="watch the training jobs' pods for their failures"),
        "CoreV1Api",
        "list_namespaced_pod",
        (namespace,),
        {k: v for k, v in options.items() if v is not None},
        form="bytes",
    )


def delete_pod(name: str, namespace: str, uid: str | None = None) -> ClientRequest[bool]:
    """``DELETE`` of a pod: True if this request deleted it, False on 404 (gone already, which counts as done)
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.delete_pod`).

    :param name: the pod's name in the URL.
    :param namespace: the URL's namespace.
    :param uid: the body's ``preconditions.uid``; None: none.
    """
    return ClientRequest(
        "delete_pod",
        ApiCall("delete", "pods", namespace=namespace, name=name, purpose="delete a pod"),
        "CoreV1Api",
        "delete_namespaced_pod",
        (name, namespace),
        {"body": delete_options(uid)},
        answer=_deleted,
        if_gone=_already_gone,
    )


def _log_call(name: str, namespace: str) -> ApiCall:
    return ApiCall("get", "pods/log", namespace=namespace, name=name, purpose="read a pod's log")


def _text(answer: bytes) -> str:
    return answer.decode(errors="replace")


def read_pod_log(
    name: str, namespace: str, container: str | None, tail_lines: int | None, since_seconds: int | None, previous: bool
) -> ClientRequest[str]:
    """``GET`` of a container's log; the answer is its text
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.read_pod_log`). Read as bytes and decoded here
    (undecodable bytes replaced): the clients' own decoding of this plain-text answer parses it as JSON first, which
    turns a log that is one JSON value (``{"loss": 0.5}``) into Python's ``repr`` of it.

    :param name: the pod's name in the URL.
    :param namespace: the URL's namespace.
    :param container: ``container``; None: left out.
    :param tail_lines: ``tailLines``; None or 0: left out.
    :param since_seconds: ``sinceSeconds``; None or 0: left out.
    :param previous: ``previous``.
    """
    chosen = dict(container=container, tail_lines=tail_lines, since_seconds=since_seconds)
    return ClientRequest(
        "read_pod_log",
        _log_call(name, namespace),
        "CoreV1Api",
        "read_namespaced_pod_log",
        (name, namespace),
        {"previous": previous, **{k: v for k, v in chosen.items() if v}},
        form="bytes",
        answer=_text,
    )


def read_timestamped_log(
    name: str,
    namespace: str,
    container: str,
    previous: bool,
    since_time: str | None,
    limit_bytes: int | None,
    tail_lines: int | None,
) -> ClientRequest[bytes]:
    """``GET`` of part of a container's log with ``timestamps=true``; the answer is its bytes
    (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.read_timestamped_log`). Neither client's
    ``read_namespaced_pod_log`` takes ``sinceTime``, the one position in a log that does not depend on the node's
    clock agreeing with this one (``sinceSeconds`` does), so the request is ``call_api``'s, built here.

    :param name: the pod's name in the URL.
    :param namespace: the URL's namespace.
    :param container: ``container``.
    :param previous: ``previous=true`` when True.
    :param since_time: ``sinceTime``; None: left out.
    :param limit_bytes: ``limitBytes``; None: left out.
    :param tail_lines: ``tailLines``; None: left out.
    """
    query: list[tuple[str, Any]] = [("container", container), ("timestamps", "true")]
    if previous:
        query.append(("previous", "true"))
    for key, value in (("sinceTime", since_time), ("limitBytes", limit_bytes), ("tailLines", tail_lines)):
        if value is not None:
            query.append((key, value))
    args = (
        "/api/v1/namespaces/{namespace}/pods/{name}/log",
        "GET",
        {"namespace": namespace, "name": name},
        query,
        # As the clients send it: the log endpoint refuses text/plain, then answers text.
        {"Accept": "application/json"},
        None,  # body
        None,  # post_params
        None,  # files
        None,  # response_types_map
        ["BearerToken"],  # auth_settings
    )
    return ClientRequest(
        "read_timestamped_log",
        _log_call(name, namespace),
        CALL_API,
        "call_api",
        args,
        {"_return_http_data_only": True},
        form="bytes",
    )


def _events_about(events: Iterable[dict[str, Any]], involved_names: Iterable[str]) -> list[dict[str, Any]]:
    """The events (JSON dicts) about an object named in ``involved_names``, oldest first (by ``lastTimestamp``,
    else ``eventTime``, else ``metadata.creationTimestamp``)."""
    names = set(involved_names)
    chosen = [e for e in events if (e.get("involvedObject") or {}).get("name") in names]
    return sorted(
        chosen,
        key=lambda e: (
            e.get("lastTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get("creationTimestamp") or ""
        ),
    )


def _listed_events(names: frozenset[str], answer: dict[str, Any]) -> list[dict[str, Any]]:
    return _events_about(answer.get("items") or [], names)


def list_events(namespace: str, involved_names: Iterable[str]) -> ClientRequest[list[dict[str, Any]]]:
    """``GET`` of the events in ``namespace``; the answer is those about an object named in ``involved_names``, as
    JSON dicts, oldest first (:meth:`~airflow_trainjob.hooks.training_job.TrainingJobHook.list_events`). One name is
    selected by the server too (``fieldSelector``: :func:`involved_object_selector`), which only makes the answer
    smaller: the events are chosen by name here either way.

    :param namespace: the URL's namespace.
    :param involved_names: the ``involvedObject.name`` of the events to keep.
    """
    names = frozenset(involved_names)
    selector = {"field_selector": involved_object_selector(next(iter(names)))} if len(names) == 1 else {}
    return _core_list("list_events", "events", "list events", namespace, selector, partial(_listed_events, names))

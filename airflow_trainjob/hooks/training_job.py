"""``TrainingJobHook``: create, read, patch and delete ``kubeflow.org/v1`` jobs and read their pods.

Built on the cncf.kubernetes provider's ``KubernetesHook``: the same ``kubernetes_default``
connection, kubeconfig path or content, context and in-cluster options, nothing new. Every call
retries transient failures (see :mod:`airflow_trainjob.hooks.retries`); an error answer that is left is
described by :mod:`airflow_trainjob.hooks.api_errors` for the call that met it and raised as what it is, without the
response's headers or body: a refusal as this provider's exception (missing kind or namespace, invalid or
denied by admission, quota, RBAC, credentials), anything else the caller decides on (404 of an object, 409,
spent retries) as a :class:`~airflow_trainjob.hooks.api_errors.QuietApiException`.

``AsyncTrainingJobHook`` is the same hook for the triggerer: a subclass that builds the same requests
(:mod:`airflow_trainjob.hooks.addressing`), with the same timeouts, retries and error classification, sent with
``kubernetes_asyncio`` on a client configured by the cncf.kubernetes ``AsyncKubernetesHook``. Nothing it does blocks
the triggerer's event loop for long: the connection is read with Airflow's asynchronous lookup, the kubeconfig is
loaded in a worker thread, and a watch reads its events on the client it was given (see :class:`AsyncTrainingJobHook`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook
from airflow.providers.common.compat.sdk import AirflowNotFoundException
from kubernetes.client import ApiClient, rest
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio.client import rest as async_rest
from urllib3.util.retry import Retry

from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.hooks.addressing import (
    JobAddress,
    delete_options,
    involved_object_selector,
    job_pod_selector,
    name_field_selector,
)
from airflow_trainjob.hooks.api_errors import ApiCall, exception_for
from airflow_trainjob.hooks.retries import API_EXCEPTIONS, retry_transient

#: Where Kubernetes mounts the namespace of the pod a process runs in.
IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "default"
#: ``(connect, read)`` seconds of every API call, of either hook (both clients take this tuple): a connection that
#: stalls (a half-dead peer, a hung proxy) ends as a read timeout, which is retried, instead of hanging the task.
#: Followed log streams get the connect part only.
REQUEST_TIMEOUT = (10.0, 60.0)
#: Seconds a watch's client waits beyond the ``timeoutSeconds`` it asked the server for before it gives up.
WATCH_GRACE_SECONDS = 30.0


def watch_timeout(seconds: float) -> tuple[float, float]:
    """``(connect, read)`` seconds of a watch that asks the server to end it after ``seconds``.

    :param seconds: the watch's ``timeoutSeconds``; the read timeout adds :data:`WATCH_GRACE_SECONDS`.
    """
    return REQUEST_TIMEOUT[0], seconds + WATCH_GRACE_SECONDS


#: urllib3's own retries, under the hook's: refused connections only. By default urllib3 also retries 429/503
#: answers that carry Retry-After (three times, sleeping as long as the server says, with no cap), which would
#: multiply every call's attempts by four and bypass RETRY_AFTER_CAP. The hook's retries decide alone.
TRANSPORT_RETRIES = Retry(
    total=None,
    connect=3,
    read=0,
    status=0,
    redirect=3,
    other=0,
    respect_retry_after_header=False,
    raise_on_status=False,
)


P = ParamSpec("P")
R = TypeVar("R")
H = TypeVar("H", bound="TrainingJobHook")


def _api_call(
    verb: str, purpose: str, resource: str | None = None, *, names_object: bool = True
) -> Callable[[Callable[Concatenate[H, P], R]], Callable[Concatenate[H, P], R]]:
    """Retry transient failures of the decorated call (a method of either hook, plain or ``async``); raise what is
    left as :func:`api_errors.exception_for` says, ``from None`` (a chained ``ApiException`` would print its
    headers and body in the task log).

    :param verb: the Kubernetes verb of the call (``create``, ``get``, ``list``, ``patch``, ``delete``).
    :param purpose: why the provider makes it (said when RBAC forbids it), e.g. ``create a training job``.
    :param resource: the core resource (``pods``, ``pods/log``, ``events``); None: the job kind of the call's
        ``kind`` argument (or its ``manifest``).
    :param names_object: the call's ``name`` argument names the object of the request (not, e.g., a job whose
        pods are listed).
    """

    def decorate(func: Callable[Concatenate[H, P], R]) -> Callable[Concatenate[H, P], R]:
        retried = retry_transient(func)
        signature = inspect.signature(func)

        def failure(self: H, error: Exception, args: Any, kwargs: Any) -> Exception:
            arguments = signature.bind_partial(self, *args, **kwargs).arguments
            return exception_for(
                error, _request(verb, purpose, resource, names_object, arguments), conn_id=self.conn_id
            )

        if inspect.iscoroutinefunction(func):  # an AsyncTrainingJobHook call: the same, awaited

            @functools.wraps(func)
            async def call_async(self: H, *args: P.args, **kwargs: P.kwargs) -> Any:
                try:
                    return await retried(self, *args, **kwargs)  # type: ignore[misc]
                except API_EXCEPTIONS as e:
                    raise failure(self, e, args, kwargs) from None

            return cast(Callable[Concatenate[H, P], R], call_async)

        @functools.wraps(func)
        def call(self: H, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return retried(self, *args, **kwargs)
            except API_EXCEPTIONS as e:
                raise failure(self, e, args, kwargs) from None

        return call

    return decorate


def _request(
    verb: str, purpose: str, resource: str | None, names_object: bool, arguments: Mapping[str, Any]
) -> ApiCall:
    """What a hook call asked the API, from its arguments."""
    manifest = arguments.get("manifest")
    if isinstance(manifest, Mapping):
        meta = manifest.get("metadata") or {}
        return ApiCall.for_job(verb, str(manifest.get("kind")), meta.get("namespace"), meta.get("name"), purpose)
    name = arguments.get("name") if names_object else None
    if resource is None:
        return ApiCall.for_job(verb, str(arguments.get("kind")), arguments.get("namespace"), name, purpose)
    return ApiCall(verb, resource, namespace=arguments.get("namespace"), name=name, purpose=purpose)


class TrainingJobHook(KubernetesHook):
    """Talks to the training operator's custom resources and the pods they own.

    :param kubernetes_conn_id: the cncf.kubernetes connection (default ``kubernetes_default``).
    Other keyword arguments are ``KubernetesHook``'s (``cluster_context``, ``config_file``, ``in_cluster``, ...).
    """

    def get_conn(self) -> ApiClient:
        """The cncf.kubernetes hook's client, with :data:`TRANSPORT_RETRIES` as its transport's retries."""
        api_client = super().get_conn()
        api_client.configuration.retries = TRANSPORT_RETRIES
        api_client.rest_client = rest.RESTClientObject(api_client.configuration)
        return api_client

    def require_connection(self) -> None:
        """Refuse a connection id that names no connection, before any API call: a typo fails the same way on
        every try, so it is bad input, not a reason to retry. ``kubernetes_default`` may be undefined (the
        cncf.kubernetes hook then uses the in-cluster or default kubeconfig). Reads the connection once.

        :raises InvalidJobSpecError: naming ``kubernetes_conn_id``.
        """
        if self.conn_id is None or getattr(self, "_connection_found", False):
            return
        try:
            self.get_connection(self.conn_id)
        except AirflowNotFoundException:
            raise InvalidJobSpecError(
                [
                    f"kubernetes_conn_id: no connection {self.conn_id!r} is defined; allowed: the id of an existing "
                    f"kubernetes connection (Admin > Connections, a secrets backend, or an AIRFLOW_CONN_* variable), "
                    f"or {self.default_conn_name!r} undefined for in-cluster / default kubeconfig"
                ]
            ) from None
        self._connection_found = True

    def resolve_namespace(self, namespace: str | None = None) -> str:
        """The namespace to use: ``namespace`` if given, else the connection's ``namespace`` extra,
        else the namespace of the pod this runs in (in-cluster), else ``default``.

        :param namespace: the namespace the task names; None or empty: not named.
        """
        if namespace:
            return namespace
        from_connection = self.get_namespace()
        if from_connection:
            return from_connection
        if self.is_in_cluster and IN_CLUSTER_NAMESPACE_FILE.exists():
            return IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or DEFAULT_NAMESPACE
        return DEFAULT_NAMESPACE

    @staticmethod
    def address(kind: str, namespace: str, name: str | None = None) -> JobAddress:
        """Where the job (or, without ``name``, the jobs of ``kind`` in ``namespace``) lives on the API.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param namespace: the namespace.
        :param name: the job's ``metadata.name``; None: every job of the kind in the namespace.
        """
        return JobAddress(kind, namespace, name)

    @_api_call("create", "create a training job")
    def create_job(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the job ``manifest`` describes; returns the created object.

        :param manifest: the whole job as an API JSON dict (``apiVersion``, ``kind``, ``metadata`` with ``name``
            and ``namespace``, ``spec``).
        :raises KindNotServedError: the cluster does not serve the kind (no CRD); not retried.
        :raises NamespaceNotFoundError: the manifest's namespace does not exist; not retried.
        :raises JobRejectedError: invalid (422, naming the fields) or denied by an admission webhook; not retried.
        :raises QuotaExceededError: a ResourceQuota has no room for it; retryable.
        :raises KubernetesAccessError: 401, or RBAC forbids the create (naming verb, resource and namespace).
        :raises QuietApiException: 409 when a job of that name exists, and other answers (spent retries, ...).
        """
        address = self.address(manifest["kind"], manifest["metadata"]["namespace"])
        return self.custom_object_client.create_namespaced_custom_object(
            *address.collection(), manifest, _request_timeout=REQUEST_TIMEOUT
        )

    @_api_call("get", "read a training job")
    def get_job(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """The job as the API has it.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :raises QuietApiException: 404 when the job does not exist (yet), and other answers the caller decides on.
        :raises KindNotServedError: the cluster does not serve the kind at all; not retried.
        :raises KubernetesAccessError: 401, or RBAC forbids reading it.
        """
        return self.custom_object_client.get_namespaced_custom_object(
            *self.address(kind, namespace, name).object(), _request_timeout=REQUEST_TIMEOUT
        )

    @_api_call("patch", "patch a training job")
    def patch_job(self, kind: str, name: str, namespace: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Apply a JSON merge patch to the job; returns the patched object.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param patch: the JSON merge patch (``application/merge-patch+json``): a dict, ``None`` values delete keys.
        """
        return self.custom_object_client.patch_namespaced_custom_object(
            *self.address(kind, namespace, name).object(), patch, _request_timeout=REQUEST_TIMEOUT
        )

    @_api_call("delete", "delete a training job")
    def delete_job(
        self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        """Delete the job (its pods follow by garbage collection). 404 counts as done.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param uid: delete only the object with this uid (a precondition: never a same-named successor).
        :param propagation: ``Background`` or ``Foreground``.
        :returns: True if this call deleted it, False if it was already gone.
        """
        with _Deletion() as deletion:
            self.custom_object_client.delete_namespaced_custom_object(
                *self.address(kind, namespace, name).object(),
                body=delete_options(uid, propagation),
                _request_timeout=REQUEST_TIMEOUT,
            )
        return deletion.deleted

    @_api_call("list", "list a training job's pods", "pods", names_object=False)
    def list_job_pods(self, name: str, namespace: str) -> list[dict[str, Any]]:
        """The pods the training operator created for job ``name`` (by its job-name label), as the
        API's JSON dicts (camelCase), so they can be inspected and passed around like job objects.

        :param name: the job's ``metadata.name`` (the pods' ``training.kubeflow.org/job-name`` label).
        :param namespace: the job's ``metadata.namespace``.
        """
        return self._listed_pods(name, namespace)[0]

    @_api_call("list", "list a training job's pods", "pods", names_object=False)
    def list_job_pods_and_version(self, name: str, namespace: str) -> tuple[list[dict[str, Any]], str | None]:
        """:meth:`list_job_pods`, with the list's ``metadata.resourceVersion``: where a watch of them starts.

        :param name: the job's ``metadata.name`` (the pods' ``training.kubeflow.org/job-name`` label).
        :param namespace: the job's ``metadata.namespace``.
        """
        return self._listed_pods(name, namespace)

    def _listed_pods(self, name: str, namespace: str) -> tuple[list[dict[str, Any]], str | None]:
        # One LIST of the job's pods, for both calls above (each retries it as an _api_call).
        listed = self.core_v1_client.list_namespaced_pod(
            namespace, label_selector=job_pod_selector(name), _request_timeout=REQUEST_TIMEOUT
        )
        pods = [self.api_client.sanitize_for_serialization(p) for p in listed.items]
        return pods, listed.metadata.resource_version

    @_api_call("delete", "delete a pod", "pods")
    def delete_pod(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Delete a pod; 404 counts as done.

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param uid: delete only the pod with this uid (``preconditions.uid``: a successor of the same name answers
            409); None: whatever pod has the name.
        :returns: True if this call deleted it.
        """
        with _Deletion() as deletion:
            self.core_v1_client.delete_namespaced_pod(
                name, namespace, body=delete_options(uid), _request_timeout=REQUEST_TIMEOUT
            )
        return deletion.deleted

    @_api_call("get", "read a pod's log", "pods/log")
    def read_pod_log(
        self,
        name: str,
        namespace: str,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
    ) -> str:
        """A container's log as text.

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param container: the container's name; None: the pod's only container (the API refuses a pod with
            several).
        :param tail_lines: the last lines only (``tailLines``, count); None: the whole log.
        :param since_seconds: only lines of the last seconds (``sinceSeconds``); None: from the start.
        :param previous: the container's previous run (``previous``: before its last restart).
        """
        kwargs = _log_options(container, tail_lines, since_seconds)
        # Raw bytes, decoded here: the client's own decoding of this plain-text answer is unreliable.
        response = self.core_v1_client.read_namespaced_pod_log(
            name, namespace, previous=previous, _preload_content=False, _request_timeout=REQUEST_TIMEOUT, **kwargs
        )
        try:
            return response.data.decode(errors="replace")
        finally:
            response.release_conn()

    @_api_call("get", "read a pod's log", "pods/log")
    def read_timestamped_log(
        self,
        name: str,
        namespace: str,
        container: str,
        *,
        previous: bool = False,
        since_time: str | None = None,
        limit_bytes: int | None = None,
        tail_lines: int | None = None,
    ) -> bytes:
        """Part of a container's log, each line led by its time (``timestamps=true``), as the answer's bytes: what
        :class:`~airflow_trainjob.domain.lead_log.LeadLogCopy` asks for (its :class:`~airflow_trainjob.domain.lead_log.LogRead`).

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param container: the container's name.
        :param previous: the container's run before its last restart (``previous``).
        :param since_time: only lines from this time on (``sinceTime``: RFC 3339; the API keeps whole seconds).
        :param limit_bytes: at most this many bytes (``limitBytes``); the answer may end within a line.
        :param tail_lines: only the last lines (``tailLines``, count).
        """
        response = self.api_client.call_api(
            *_log_request(name, namespace, container, previous, since_time, limit_bytes, tail_lines),
            _preload_content=False,
            _return_http_data_only=True,
            _request_timeout=REQUEST_TIMEOUT,
        )
        try:
            return cast(bytes, response.data)
        finally:
            response.release_conn()

    def open_pod_log_stream(self, name: str, namespace: str, container: str | None = None) -> Any:
        """Follow a container's log: the open HTTP response, to read with ``.stream()`` and end
        with ``.close()``. Not retried: the caller decides how to resume a follow stream.

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param container: the container's name; None: the pod's only container.
        """
        kwargs = {"container": container} if container else {}
        return self.core_v1_client.read_namespaced_pod_log(
            name, namespace, follow=True, _preload_content=False, _request_timeout=(REQUEST_TIMEOUT[0], None), **kwargs
        )

    @_api_call("list", "list events", "events", names_object=False)
    def list_events(self, namespace: str, involved_names: set[str]) -> list[dict[str, Any]]:
        """Events in ``namespace`` about any object named in ``involved_names``, as JSON dicts, oldest first.

        :param namespace: the namespace of the events.
        :param involved_names: ``metadata.name`` of each object the events are about (``involvedObject.name``).
        """
        events = [
            self.api_client.sanitize_for_serialization(e)
            for e in self.core_v1_client.list_namespaced_event(namespace, _request_timeout=REQUEST_TIMEOUT).items
        ]
        return _events_about(events, involved_names)


class _Deletion:
    """``with _Deletion() as deletion: <a delete call>``, then ``deletion.deleted``: False when the API answered
    404 -- the object was already gone, which counts as done. Any other error goes on. Serves both clients (a
    plain ``with`` holds an ``await`` too)."""

    deleted = True

    def __enter__(self) -> _Deletion:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, API_EXCEPTIONS) and exc.status == 404:
            self.deleted = False
            return True
        return False


def _log_request(
    name: str,
    namespace: str,
    container: str,
    previous: bool,
    since_time: str | None,
    limit_bytes: int | None,
    tail_lines: int | None,
) -> tuple[Any, ...]:
    """``call_api``'s leading arguments for a timestamped read of a container's log (either client). Neither
    client's ``read_namespaced_pod_log`` takes ``sinceTime``, the one position in a log that does not depend on
    the node's clock agreeing with this one (``sinceSeconds`` does), so the request is built here."""
    query: list[tuple[str, Any]] = [("container", container), ("timestamps", "true")]
    if previous:
        query.append(("previous", "true"))
    if since_time is not None:
        query.append(("sinceTime", since_time))
    if limit_bytes is not None:
        query.append(("limitBytes", limit_bytes))
    if tail_lines is not None:
        query.append(("tailLines", tail_lines))
    return (
        "/api/v1/namespaces/{namespace}/pods/{name}/log",
        "GET",
        {"namespace": namespace, "name": name},
        query,
        {
            "Accept": "application/json"
        },  # as the clients send it: the log endpoint refuses text/plain, then answers text
        None,  # body
        None,  # post_params
        None,  # files
        None,  # response_types_map
        ["BearerToken"],  # auth_settings
    )


def _log_options(container: str | None, tail_lines: int | None, since_seconds: int | None) -> dict[str, Any]:
    """The keyword arguments of a log read that are set (either client's ``read_namespaced_pod_log``)."""
    return {k: v for k, v in dict(container=container, tail_lines=tail_lines, since_seconds=since_seconds).items() if v}


def _events_about(events: Iterable[dict[str, Any]], involved_names: Iterable[str]) -> list[dict[str, Any]]:
    """The events (JSON dicts) about an object named in ``involved_names``, oldest first."""
    names = set(involved_names)
    chosen = [e for e in events if (e.get("involvedObject") or {}).get("name") in names]
    return sorted(
        chosen,
        key=lambda e: (
            e.get("lastTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get("creationTimestamp") or ""
        ),
    )


class AsyncTrainingJobHook(TrainingJobHook):
    """:class:`TrainingJobHook` for the triggerer: the same requests, timeouts, retries and error classification,
    sent with ``kubernetes_asyncio``.

    The same connection arguments as the sync hook (``kubernetes_conn_id``, ``cluster_context``, ``config_file``,
    ``in_cluster``). The client is opened by :meth:`connect`, configured by the cncf.kubernetes
    ``AsyncKubernetesHook`` (which re-reads exec-plugin credentials on each connect); the ``*_async`` calls and
    :meth:`watch_jobs` use the client of the :meth:`connect` they run within — one client for every trigger of a
    shared stream — or, outside any, one of their own for the call. The sync methods inherited from
    :class:`TrainingJobHook` block: never call them on the event loop.

    What would block the triggerer's event loop is kept off it: the connection is read with Airflow's asynchronous
    lookup (in the triggerer, a request to its supervisor); the kubeconfig is read, parsed and its certificates
    written to files in a worker thread (:func:`_load_configuration`: ``kubernetes_asyncio`` does that synchronously);
    a watch reads its events on the connected client instead of building one of its own (:func:`_watch_event`).

    Error answers: the one-shot calls (get, pods, log, events, deletes) retry transient failures and raise what is
    left as the sync hook does (:func:`~airflow_trainjob.hooks.api_errors.exception_for`, ``from None``: a refusal as this
    provider's exception, else a :class:`~airflow_trainjob.hooks.api_errors.QuietApiException` with the ``status``);
    :meth:`list_jobs_async` and :meth:`watch_jobs` are not retried and raise the client's own ``ApiException`` and
    connection errors: a list-then-watch loop decides on 410 and outages itself.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._async_api: async_client.ApiClient | None = None

    @cached_property
    def _auth(self) -> AsyncKubernetesHook:
        """The cncf.kubernetes async hook of the same connection: it loads the configuration for :meth:`connect`."""
        return AsyncKubernetesHook(
            conn_id=self.conn_id,
            kubernetes_conn_id=self.conn_id,  # None stays None: no connection, as for this hook
            cluster_context=self.cluster_context,
            config_file=self.config_file,
            config_dict=self.config_dict,
            in_cluster=self.in_cluster,
        )

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[async_client.ApiClient]:
        """Open a client on the connection for the calls made within (closed at the end).

        :raises Exception: what loading the connection or kubeconfig raises (an unknown connection, a bad kubeconfig).
        """
        auth = self._auth
        await auth.get_conn_extras()  # the connection: Airflow's asynchronous lookup, on this loop
        await asyncio.to_thread(_load_configuration, auth)
        # Loaded: get_conn() only builds the client (its TLS context from the cluster's CA file, a millisecond or
        # two) -- except with an exec plugin, whose short-lived credentials the cncf hook loads again at every connect.
        async with auth.get_conn() as api:
            outer, self._async_api = self._async_api, api
            try:
                yield api
            finally:
                self._async_api = outer

    @property
    def connected(self) -> bool:
        """A :meth:`connect` is open: calls use its client."""
        return self._async_api is not None

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[async_client.ApiClient]:
        if self._async_api is not None:
            yield self._async_api
        else:
            async with self.connect() as api:
                yield api

    def _to_dict(self, api: async_client.ApiClient, obj: Any) -> Any:
        return api.sanitize_for_serialization(obj)

    # --- the jobs -----------------------------------------------------------------------------------

    @_api_call("get", "read a training job")
    async def get_job_async(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """The job as the API has it (:meth:`TrainingJobHook.get_job`, awaited).

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :raises QuietApiException: 404 when the job does not exist (yet), and other answers the caller decides on.
        :raises KindNotServedError: the cluster does not serve the kind.
        :raises KubernetesAccessError: 401/403.
        """
        async with self._client() as api:
            return await async_client.CustomObjectsApi(api).get_namespaced_custom_object(
                *self.address(kind, namespace, name).object(), _request_timeout=REQUEST_TIMEOUT
            )

    @_api_call("delete", "delete a training job")
    async def delete_job_async(
        self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        """Delete the job (:meth:`TrainingJobHook.delete_job`, awaited); 404 counts as done.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param uid: delete only the object with this uid (a same-named successor answers 409).
        :param propagation: ``propagationPolicy``: ``Background`` or ``Foreground``.
        :returns: True if this call deleted it, False if it was already gone.
        """
        async with self._client() as api:
            with _Deletion() as deletion:
                await async_client.CustomObjectsApi(api).delete_namespaced_custom_object(
                    *self.address(kind, namespace, name).object(),
                    body=delete_options(uid, propagation),
                    _request_timeout=REQUEST_TIMEOUT,
                )
        return deletion.deleted

    async def list_jobs_async(
        self, kind: str, namespace: str, *, limit: int | None = None, continue_token: str | None = None
    ) -> dict[str, Any]:
        """One page of the jobs of ``kind`` in ``namespace``: the list object (``items``, ``metadata.continue``,
        ``metadata.resourceVersion``). Not retried.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param namespace: the namespace.
        :param limit: items per page (count); None: all.
        :param continue_token: the previous page's ``metadata.continue``.
        :raises ApiException: ``kubernetes_asyncio``'s, as the server answered; connection errors as they came.
        """
        return cast(
            dict[str, Any],
            json.loads(await self.list_jobs_text_async(kind, namespace, limit=limit, continue_token=continue_token)),
        )

    async def list_jobs_text_async(
        self, kind: str, namespace: str, *, limit: int | None = None, continue_token: str | None = None
    ) -> str:
        """:meth:`list_jobs_async`'s page as the answer's JSON text, undecoded: a reader that keeps jobs as text
        (:class:`~airflow_trainjob.watching.job_cache.JobCache`) decodes it one item at a time. Not retried.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param namespace: the namespace.
        :param limit: items per page (count); None: all.
        :param continue_token: the previous page's ``metadata.continue``.
        :raises ApiException: ``kubernetes_asyncio``'s, as the server answered; connection errors as they came.
        """
        async with self._client() as api:
            response = await async_client.CustomObjectsApi(api).list_namespaced_custom_object(
                *self.address(kind, namespace).collection(),
                limit=limit,
                _continue=continue_token,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
            try:
                answer = async_rest.RESTResponse(response, await response.read())
            finally:
                response.release()
            if not 200 <= answer.status <= 299:  # (what the client checks itself when it decodes the answer)
                raise async_client.ApiException(http_resp=answer)
            return answer.data.decode("utf8")

    async def watch_jobs(
        self, kind: str, namespace: str, resource_version: str | None, *, timeout_seconds: int, name: str | None = None
    ) -> AsyncGenerator[dict[str, Any] | str, None]:
        """The watch events (``{"type", "object", "raw_object"}``, bookmarks included) of the jobs of ``kind`` in
        ``namespace`` (of job ``name`` only, if given) from ``resource_version``, until the server ends the watch
        after ``timeout_seconds``; a line that is not JSON (the connection dropped mid-event) comes as its text. Not
        retried; the watch is closed however the iteration ends.

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param namespace: the namespace.
        :param resource_version: the ``resourceVersion`` to watch from (a list's ``metadata.resourceVersion``);
            None: the server's current state, starting with a synthetic ``ADDED`` per job.
        :param timeout_seconds: the watch's ``timeoutSeconds``: the server ends it after that many seconds.
        :param name: the job's ``metadata.name`` (``fieldSelector=metadata.name=<name>``); None: every job.
        :raises ApiException: ``kubernetes_asyncio``'s (410 Gone: the version was compacted away); connection
            errors as they came.
        """
        address = self.address(kind, namespace, name)
        selector = {"field_selector": name_field_selector(name)} if name else {}
        async with self._client() as api:
            # The watch request itself, read line by line as kubernetes_asyncio's ``Watch`` reads it: a ``Watch``
            # builds an ApiClient of its own to deserialize events, whose default TLS context loads the system's CA
            # bundle on the loop (50 ms and more) at every watch; custom objects need no deserializing.
            response = await async_client.CustomObjectsApi(api).list_namespaced_custom_object(
                *address.collection(),
                watch=True,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=watch_timeout(timeout_seconds),
                **selector,
            )
            try:
                while line := await response.content.readline():
                    yield _watch_event(line)
            finally:
                response.release()

    # --- the pods and events of a job ---------------------------------------------------------------

    @_api_call("list", "list a training job's pods", "pods", names_object=False)
    async def list_job_pods_async(
        self, name: str, namespace: str, replica_index: int | None = None
    ) -> list[dict[str, Any]]:
        """The pods of job ``name`` as JSON dicts (:meth:`TrainingJobHook.list_job_pods`, awaited).

        :param name: the job's ``metadata.name`` (the pods' ``training.kubeflow.org/job-name`` label).
        :param namespace: the job's ``metadata.namespace``.
        :param replica_index: only the pods of this replica index (0: the lead replica and the other index-0 pods,
            one per replica type, whatever the job's size); None: all.
        """
        async with self._client() as api:
            pods = await async_client.CoreV1Api(api).list_namespaced_pod(
                namespace, label_selector=job_pod_selector(name, replica_index), _request_timeout=REQUEST_TIMEOUT
            )
            return [self._to_dict(api, p) for p in pods.items]

    @_api_call("delete", "delete a pod", "pods")
    async def delete_pod_async(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Delete a pod; 404 counts as done (:meth:`TrainingJobHook.delete_pod`, awaited).

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param uid: delete only the pod with this uid (a successor of the same name answers 409).
        :returns: True if this call deleted it.
        """
        async with self._client() as api:
            with _Deletion() as deletion:
                await async_client.CoreV1Api(api).delete_namespaced_pod(
                    name, namespace, body=delete_options(uid), _request_timeout=REQUEST_TIMEOUT
                )
        return deletion.deleted

    @_api_call("get", "read a pod's log", "pods/log")
    async def read_pod_log_async(
        self,
        name: str,
        namespace: str,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
    ) -> str:
        """A container's log as text (:meth:`TrainingJobHook.read_pod_log`, awaited).

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param container: the container's name; None: the pod's only container (the API refuses a pod with
            several).
        :param tail_lines: the last lines only (``tailLines``, count); None: the whole log.
        :param since_seconds: only lines of the last seconds (``sinceSeconds``); None: from the start.
        :param previous: the container's previous run (``previous``: before its last restart).
        """
        async with self._client() as api:
            return await async_client.CoreV1Api(api).read_namespaced_pod_log(
                name,
                namespace,
                previous=previous,
                _request_timeout=REQUEST_TIMEOUT,
                **_log_options(container, tail_lines, since_seconds),
            )

    @_api_call("get", "read a pod's log", "pods/log")
    async def read_timestamped_log_async(
        self,
        name: str,
        namespace: str,
        container: str,
        *,
        previous: bool = False,
        since_time: str | None = None,
        limit_bytes: int | None = None,
        tail_lines: int | None = None,
    ) -> bytes:
        """Part of a container's log, each line led by its time (:meth:`TrainingJobHook.read_timestamped_log`,
        awaited).

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param container: the container's name.
        :param previous: the container's run before its last restart (``previous``).
        :param since_time: only lines from this time on (``sinceTime``: RFC 3339; the API keeps whole seconds).
        :param limit_bytes: at most this many bytes (``limitBytes``); the answer may end within a line.
        :param tail_lines: only the last lines (``tailLines``, count).
        """
        async with self._client() as api:
            response = await api.call_api(
                *_log_request(name, namespace, container, previous, since_time, limit_bytes, tail_lines),
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=REQUEST_TIMEOUT,
            )
            try:
                answer = async_rest.RESTResponse(response, await response.read())
            finally:
                response.release()
            if not 200 <= answer.status <= 299:  # (what the client checks itself when it reads the answer)
                raise async_client.ApiException(http_resp=answer)
            return answer.data

    @_api_call("patch", "patch a training job")
    async def patch_job_async(self, kind: str, name: str, namespace: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Apply a JSON merge patch to the job (:meth:`TrainingJobHook.patch_job`, awaited).

        :param kind: a key of ``JOB_KINDS`` (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param patch: the JSON merge patch: a dict, ``None`` values delete keys; a ``metadata.uid`` makes it apply
            only to that object (a same-named successor answers 409).
        """
        async with self._client() as api:
            return cast(
                dict[str, Any],
                await async_client.CustomObjectsApi(api).patch_namespaced_custom_object(
                    *self.address(kind, namespace, name).object(),
                    patch,
                    _content_type="application/merge-patch+json",
                    _request_timeout=REQUEST_TIMEOUT,
                ),
            )

    @_api_call("list", "list events", "events", names_object=False)
    async def list_events_async(self, namespace: str, involved_names: Iterable[str]) -> list[dict[str, Any]]:
        """Events in ``namespace`` about any object named in ``involved_names``, as JSON dicts, oldest first
        (:meth:`TrainingJobHook.list_events`, awaited; one name is selected by the server).

        :param namespace: the namespace of the events.
        :param involved_names: ``metadata.name`` of each object the events are about (``involvedObject.name``).
        """
        names = set(involved_names)
        selector = {"field_selector": involved_object_selector(next(iter(names)))} if len(names) == 1 else {}
        async with self._client() as api:
            events = await async_client.CoreV1Api(api).list_namespaced_event(
                namespace, _request_timeout=REQUEST_TIMEOUT, **selector
            )
            return _events_about([self._to_dict(api, e) for e in events.items], names)


def _load_configuration(auth: AsyncKubernetesHook) -> None:
    """Load ``auth.client_configuration`` (kubeconfig file or content, context, in-cluster credentials, exec plugins)
    in the calling worker thread, in an event loop of its own: ``kubernetes_asyncio`` reads and parses the kubeconfig
    and writes its certificates to temporary files synchronously, tens to hundreds of milliseconds that must not
    stall the triggerer's loop. The cncf.kubernetes hook's ``get_conn()`` does the loading (it builds a client here
    and closes it at once) and keeps static credentials loaded for its next ``get_conn()``, on the loop; its
    connection extras must have been read already (``await auth.get_conn_extras()``, on the triggerer's loop: the
    lookup talks to the triggerer's supervisor from there).

    :param auth: the cncf.kubernetes async hook of the connection.
    """

    async def load() -> None:
        async with auth.get_conn():
            pass

    asyncio.run(load())


def _watch_event(line: bytes) -> dict[str, Any] | str:
    """One line of a watch answer as kubernetes_asyncio's ``Watch`` gives it: ``{"type", "object", "raw_object"}``
    (``object`` is the JSON dict: custom objects have no model); the line as text when it is not JSON (cut short).

    :param line: one line of the answer (one JSON object).
    :raises ApiException: ``kubernetes_asyncio``'s, with the ``status`` of an ``ERROR`` event (410 Gone: the
        resourceVersion was compacted away) or of an error answer (403, 404, ...).
    :raises ValueError: a JSON object that is neither (as ``Watch`` raises a plain exception for it).
    """
    text = line.decode("utf8")
    try:
        event = json.loads(text)
    except ValueError:
        return text
    if not isinstance(event, dict):
        return text
    if "type" not in event or "object" not in event:
        if "code" not in event:
            raise ValueError(f"a watch answer that is neither an event nor a Status (keys {sorted(event)})")
        # An error answer (a Status, not an event): the watch request was refused.
        raise async_client.ApiException(status=event["code"], reason=f"{event.get('reason')}: {event.get('message')}")
    event["raw_object"] = event["object"]
    if event["type"] == "ERROR":
        status = event["object"]
        raise async_client.ApiException(
            status=status.get("code", 0), reason=f"{status.get('reason')}: {status.get('message')}"
        )
    return event

"""``TrainingJobHook``: create, read, patch and delete ``kubeflow.org/v1`` jobs and read their pods.

Built on the cncf.kubernetes provider's ``KubernetesHook``: the same ``kubernetes_default``
connection, kubeconfig path or content, context and in-cluster options, nothing new. Each operation is built once,
for either client, in :mod:`airflow_trainjob.hooks.requests`; the named methods send it (``_send``). Every call
retries transient failures (see :mod:`airflow_trainjob.hooks.retries`); an error answer that is left is
described by :mod:`airflow_trainjob.hooks.api_errors` for the call that met it and raised as what it is, without the
response's headers or body: a refusal as this provider's exception (missing kind or namespace, invalid or
denied by admission, quota, RBAC, credentials), anything else the caller decides on (404 of an object, 409,
spent retries) as a :class:`~airflow_trainjob.hooks.api_errors.QuietApiException`.

``AsyncTrainingJobHook`` is the same hook for the triggerer: a subclass that sends the same requests
(``_send_async``), with the same timeouts, retries and error classification, sent with
``kubernetes_asyncio`` on a client configured by the cncf.kubernetes ``AsyncKubernetesHook``. Nothing it does blocks
the triggerer's event loop for long: the connection is read with Airflow's asynchronous lookup, the kubeconfig is
loaded in a worker thread, and a watch reads its events on the client it was given (see :class:`AsyncTrainingJobHook`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, cast

from airflow.providers.cncf.kubernetes.hooks.kubernetes import AsyncKubernetesHook, KubernetesHook
from airflow.providers.common.compat.sdk import AirflowNotFoundException
from kubernetes.client import ApiClient, rest
from kubernetes_asyncio import client as async_client
from kubernetes_asyncio.client import rest as async_rest
from urllib3.util.retry import Retry

from airflow_trainjob.domain.family import Prerequisite
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.hooks import requests
from airflow_trainjob.hooks.addressing import JobAddress, name_field_selector
from airflow_trainjob.hooks.api_errors import exception_for
from airflow_trainjob.hooks.requests import CALL_API, ClientRequest
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


R = TypeVar("R")
T = TypeVar("T")


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

        :param kind: a job kind of one of the families (``PyTorchJob``).
        :param namespace: the namespace.
        :param name: the job's ``metadata.name``; None: every job of the kind in the namespace.
        """
        return JobAddress(kind, namespace, name)

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
        return self._send(requests.create_job(manifest))

    def get_job(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """The job as the API has it.

        :param kind: a job kind of one of the families (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :raises QuietApiException: 404 when the job does not exist (yet), and other answers the caller decides on.
        :raises KindNotServedError: the cluster does not serve the kind at all; not retried.
        :raises KubernetesAccessError: 401, or RBAC forbids reading it.
        """
        return self._send(requests.get_job(kind, name, namespace))

    def get_prerequisite(self, needed: Prerequisite) -> dict[str, Any]:
        """An object a job names that must exist before it is created (a TrainJob's runtime), as the API has it.

        :param needed: the object (:class:`~airflow_trainjob.domain.family.Prerequisite`).
        :raises QuietApiException: 404 when it does not exist, and other answers the caller decides on.
        :raises KindNotServedError: the cluster does not serve its kind at all.
        :raises KubernetesAccessError: 401, or RBAC forbids reading it.
        """
        return self._send(requests.get_prerequisite(needed))

    def patch_job(self, kind: str, name: str, namespace: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Apply a JSON merge patch to the job; returns the patched object.

        :param kind: a job kind of one of the families (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param patch: the JSON merge patch (``application/merge-patch+json``): a dict, ``None`` values delete keys; a
            ``metadata.uid`` makes it apply only to that object (a same-named successor answers 409).
        """
        return self._send(requests.patch_job(kind, name, namespace, patch))

    def delete_job(
        self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        """Delete the job (its pods follow by garbage collection). 404 counts as done.

        :param kind: a job kind of one of the families (``PyTorchJob``).
        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param uid: delete only the object with this uid (a precondition: never a same-named successor).
        :param propagation: ``Background`` or ``Foreground``.
        :returns: True if this call deleted it, False if it was already gone.
        """
        return self._send(requests.delete_job(kind, name, namespace, uid, propagation))

    def list_job_pods(self, name: str, namespace: str, *, kind: str) -> list[dict[str, Any]]:
        """The pods the job's controller created for job ``name`` (by the label its family says: the training
        operator's job-name label, a TrainJob's JobSet name), as the API's JSON dicts (camelCase), so they can be
        inspected and passed around like job objects. A same-named predecessor's pods match too: the callers keep
        the job's own (:meth:`~airflow_trainjob.domain.family.JobFamily.owns_pod`).

        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param kind: the job's kind, whose family says how its pods are labelled.
        """
        return self._send(requests.list_job_pods(name, namespace, kind=kind))[0]

    def list_job_pods_and_version(
        self, name: str, namespace: str, *, kind: str
    ) -> tuple[list[dict[str, Any]], str | None]:
        """:meth:`list_job_pods`, with the list's ``metadata.resourceVersion``: where a watch of them starts.

        :param name: the job's ``metadata.name``.
        :param namespace: the job's ``metadata.namespace``.
        :param kind: the job's kind, whose family says how its pods are labelled.
        """
        listing = requests.list_job_pods(name, namespace, kind=kind)
        return self._send(replace(listing, operation="list_job_pods_and_version"))

    def delete_pod(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Delete a pod; 404 counts as done.

        :param name: the pod's ``metadata.name``.
        :param namespace: the pod's namespace.
        :param uid: delete only the pod with this uid (``preconditions.uid``: a successor of the same name answers
            409); None: whatever pod has the name.
        :returns: True if this call deleted it.
        """
        return self._send(requests.delete_pod(name, namespace, uid))

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
        return self._send(requests.read_pod_log(name, namespace, container, tail_lines, since_seconds, previous))

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
        request = requests.read_timestamped_log(
            name, namespace, container, previous, since_time, limit_bytes, tail_lines
        )
        return self._send(request)

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

    def list_events(self, namespace: str, involved_names: set[str]) -> list[dict[str, Any]]:
        """Events in ``namespace`` about any object named in ``involved_names``, as JSON dicts, oldest first.

        :param namespace: the namespace of the events.
        :param involved_names: ``metadata.name`` of each object the events are about (``involvedObject.name``).
        """
        return self._send(requests.list_events(namespace, involved_names))

    # --- sending a request ----------------------------------------------------------------------------

    def _send(self, request: ClientRequest[R]) -> R:
        """Send ``request`` with this hook's client (:func:`_retried`, :meth:`_answer`); an error answer that is left
        is raised as :func:`~airflow_trainjob.hooks.api_errors.exception_for` says, ``from None`` (a chained
        ``ApiException`` would print its headers and body in the task log)."""

        def attempt() -> R:
            try:
                answer = self._answer(request)
            except API_EXCEPTIONS as error:
                return request.settle(error)
            return request.answer(answer)

        try:
            return _retried(attempt, f"TrainingJobHook.{request.operation}")()
        except API_EXCEPTIONS as error:
            raise exception_for(error, request.call, conn_id=self.conn_id) from None

    def _answer(self, request: ClientRequest[Any]) -> Any:
        """One attempt of ``request`` on the cncf.kubernetes hook's client: its answer in the request's form."""
        client = getattr(self, _SYNC_CLIENTS[request.api])
        answer = getattr(client, request.method)(*request.args, **request.client_options(REQUEST_TIMEOUT))
        if request.form == "model":
            return self.api_client.sanitize_for_serialization(answer)
        if request.form == "bytes":
            try:
                return answer.data
            finally:
                answer.release_conn()
        return answer


#: The sync hook's client of each :attr:`ClientRequest.api` (cached properties of the cncf.kubernetes hook).
_SYNC_CLIENTS = {"CustomObjectsApi": "custom_object_client", "CoreV1Api": "core_v1_client", CALL_API: "api_client"}


def _retried(attempt: Callable[[], T], name: str) -> Callable[[], T]:
    """``attempt`` (a function or a coroutine function) retried through transient failures
    (:func:`~airflow_trainjob.hooks.retries.retry_transient`), named in the retry log line by ``name``: the hook
    method that makes it (``TrainingJobHook.get_job``)."""
    attempt.__qualname__ = name
    return retry_transient(attempt)


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

    # --- sending a request ----------------------------------------------------------------------------

    async def _send_async(self, request: ClientRequest[R]) -> R:
        """:meth:`TrainingJobHook._send`, awaited: ``request`` sent with the client of the :meth:`connect` it runs
        within, or one of its own for each attempt."""

        async def attempt() -> R:
            async with self._client() as api:
                try:
                    answer = await _answer_async(api, request)
                except API_EXCEPTIONS as error:
                    return request.settle(error)
                return request.answer(answer)

        try:
            return await _retried(attempt, f"AsyncTrainingJobHook.{request.operation}_async")()
        except API_EXCEPTIONS as error:
            raise exception_for(error, request.call, conn_id=self.conn_id) from None

    # --- the jobs -----------------------------------------------------------------------------------

    async def get_job_async(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """:meth:`TrainingJobHook.get_job`, awaited: the job as the API has it.

        :param kind: the job's kind.
        :param name: its name.
        :param namespace: its namespace.
        :raises QuietApiException: 404 when the job does not exist (yet), and other answers the caller decides on.
        :raises KindNotServedError: the cluster does not serve the kind.
        :raises KubernetesAccessError: 401/403.
        """
        return await self._send_async(requests.get_job(kind, name, namespace))

    async def delete_job_async(
        self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        """:meth:`TrainingJobHook.delete_job`, awaited: True if this call deleted the job, False if it was gone.

        :param kind: the job's kind.
        :param name: its name.
        :param namespace: its namespace.
        :param uid: its uid, a precondition; None: none.
        :param propagation: ``propagationPolicy``.
        """
        return await self._send_async(requests.delete_job(kind, name, namespace, uid, propagation))

    async def list_jobs_async(
        self, kind: str, namespace: str, *, limit: int | None = None, continue_token: str | None = None
    ) -> dict[str, Any]:
        """One page of the jobs of ``kind`` in ``namespace``: the list object (``items``, ``metadata.continue``,
        ``metadata.resourceVersion``). Not retried.

        :param kind: a job kind of one of the families (``PyTorchJob``).
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
        """:meth:`list_jobs_async`'s page as the answer's JSON text, undecoded: a reader that keeps only part of each
        job (:class:`~airflow_trainjob.watching.job_cache.JobCache`) decodes it one item at a time. Not retried.

        :param kind: a job kind of one of the families (``PyTorchJob``).
        :param namespace: the namespace.
        :param limit: items per page (count); None: all.
        :param continue_token: the previous page's ``metadata.continue``.
        :raises ApiException: ``kubernetes_asyncio``'s, as the server answered; connection errors as they came.
        """
        async with self._client() as api:
            body = await _answer_async(api, requests.list_jobs(kind, namespace, limit, continue_token))
        return body.decode("utf8")

    async def watch_jobs(
        self, kind: str, namespace: str, resource_version: str | None, *, timeout_seconds: int, name: str | None = None
    ) -> AsyncGenerator[dict[str, Any] | str, None]:
        """The watch events (``{"type", "object", "raw_object"}``, bookmarks included) of the jobs of ``kind`` in
        ``namespace`` (of job ``name`` only, if given) from ``resource_version``, until the server ends the watch
        after ``timeout_seconds``; a line that is not JSON (the connection dropped mid-event) comes as its text. Not
        retried; the watch is closed however the iteration ends.

        :param kind: a job kind of one of the families (``PyTorchJob``).
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

    async def list_pods_text_async(
        self, namespace: str, label_selector: str, *, limit: int | None = None, continue_token: str | None = None
    ) -> str:
        """One page of the pods of ``namespace`` that match ``label_selector``, as the answer's JSON text (``items``,
        ``metadata.continue``, ``metadata.resourceVersion``), undecoded. Not retried.

        :param namespace: the namespace.
        :param label_selector: the pods' label selector (a family's ``any_job_pod_selector``).
        :param limit: items per page (count); None: all.
        :param continue_token: the previous page's ``metadata.continue``.
        :raises ApiException: ``kubernetes_asyncio``'s, as the server answered; connection errors as they came.
        """
        async with self._client() as api:
            body = await _answer_async(api, requests.list_pods_page(namespace, label_selector, limit, continue_token))
        return body.decode("utf8")

    async def watch_pods(
        self, namespace: str, label_selector: str, resource_version: str | None, *, timeout_seconds: int
    ) -> AsyncGenerator[dict[str, Any] | str, None]:
        """The watch events (``{"type", "object", "raw_object"}``, bookmarks included) of the pods of ``namespace``
        that match ``label_selector``, from ``resource_version``, as :meth:`watch_jobs` gives a kind's jobs'. Not
        retried; the watch is closed however the iteration ends.

        :param namespace: the namespace.
        :param label_selector: the pods' label selector.
        :param resource_version: the ``resourceVersion`` to watch from (a list's); None: the server's current state.
        :param timeout_seconds: the watch's ``timeoutSeconds``: the server ends it after that many seconds.
        :raises ApiException: ``kubernetes_asyncio``'s (410 Gone: the version was compacted away); connection
            errors as they came.
        """
        async with self._client() as api:
            # Read line by line, undecoded by the client, as watch_jobs reads (no Watch, no model per pod).
            response = await async_client.CoreV1Api(api).list_namespaced_pod(
                namespace,
                label_selector=label_selector,
                watch=True,
                resource_version=resource_version,
                timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=True,
                _preload_content=False,
                _request_timeout=watch_timeout(timeout_seconds),
            )
            try:
                while line := await response.content.readline():
                    yield _watch_event(line)
            finally:
                response.release()

    async def list_job_pods_async(
        self, name: str, namespace: str, replica_index: int | None = None, *, kind: str
    ) -> list[dict[str, Any]]:
        """:meth:`TrainingJobHook.list_job_pods`, awaited, of one replica index if given.

        :param name: the job's name.
        :param namespace: its namespace.
        :param replica_index: only the pods of this replica index (0: the lead replica and the other index-0 pods,
            one per replica type, whatever the job's size); None: all.
        :param kind: the job's kind, whose family says how its pods are labelled.
        """
        return (await self._send_async(requests.list_job_pods(name, namespace, replica_index, kind=kind)))[0]

    async def delete_pod_async(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """:meth:`TrainingJobHook.delete_pod`, awaited: True if this call deleted the pod, False if it was gone.

        :param name: the pod's name.
        :param namespace: its namespace.
        :param uid: its uid, a precondition; None: none.
        """
        return await self._send_async(requests.delete_pod(name, namespace, uid))

    async def read_pod_log_async(
        self,
        name: str,
        namespace: str,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
        previous: bool = False,
    ) -> str:
        """:meth:`TrainingJobHook.read_pod_log`, awaited: a container's log as text.

        :param name: the pod's name.
        :param namespace: its namespace.
        :param container: the container; None: the pod's only one.
        :param tail_lines: ``tailLines``; None: the whole log.
        :param since_seconds: ``sinceSeconds``; None: from the start.
        :param previous: the run before the last restart.
        """
        request = requests.read_pod_log(name, namespace, container, tail_lines, since_seconds, previous)
        return await self._send_async(request)

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
        """:meth:`TrainingJobHook.read_timestamped_log`, awaited: part of a container's log, each line led by its
        time, as bytes.

        :param name: the pod's name.
        :param namespace: its namespace.
        :param container: the container.
        :param previous: the run before the last restart.
        :param since_time: ``sinceTime`` (RFC 3339); None: from the start.
        :param limit_bytes: ``limitBytes``; None: no limit.
        :param tail_lines: ``tailLines``; None: the whole log.
        """
        request = requests.read_timestamped_log(
            name, namespace, container, previous, since_time, limit_bytes, tail_lines
        )
        return await self._send_async(request)

    async def patch_job_async(self, kind: str, name: str, namespace: str, patch: dict[str, Any]) -> dict[str, Any]:
        """:meth:`TrainingJobHook.patch_job`, awaited: the patched job.

        :param kind: the job's kind.
        :param name: its name.
        :param namespace: its namespace.
        :param patch: the JSON merge patch (a ``metadata.uid`` in it is a precondition).
        """
        return await self._send_async(requests.patch_job(kind, name, namespace, patch))

    async def list_events_async(self, namespace: str, involved_names: Iterable[str]) -> list[dict[str, Any]]:
        """:meth:`TrainingJobHook.list_events`, awaited: the events about the named objects, oldest first.

        :param namespace: the namespace of the events.
        :param involved_names: the ``involvedObject.name`` of each.
        """
        return await self._send_async(requests.list_events(namespace, involved_names))


async def _answer_async(api: async_client.ApiClient, request: ClientRequest[Any]) -> Any:
    """One attempt of ``request`` on ``api``: its answer in the request's form (:meth:`TrainingJobHook._answer`).

    :param api: the ``kubernetes_asyncio`` client.
    :param request: the request.
    """
    client = api if request.api == CALL_API else getattr(async_client, request.api)(api)
    answer = await getattr(client, request.method)(*request.args, **request.client_options(REQUEST_TIMEOUT))
    if request.form == "model":
        return api.sanitize_for_serialization(answer)
    if request.form == "bytes":
        return await _body(answer)
    return answer


async def _body(response: Any) -> bytes:
    """The body of an undecoded answer (``_preload_content=False``), read and released; an error answer raised as
    the client raises it when it reads the answer itself.

    :param response: the client's aiohttp response.
    :raises ApiException: ``kubernetes_asyncio``'s, for a status outside 2xx.
    """
    try:
        answer = async_rest.RESTResponse(response, await response.read())
    finally:
        response.release()
    if not 200 <= answer.status <= 299:
        raise async_client.ApiException(http_resp=answer)
    return answer.data


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

"""``TrainingJobHook``: create, read, patch and delete ``kubeflow.org/v1`` jobs and read their pods.

Built on the cncf.kubernetes provider's ``KubernetesHook``: the same ``kubernetes_default``
connection, kubeconfig path or content, context and in-cluster options, nothing new. Every call
retries transient failures (see :mod:`airflow_trainjob.hooks.retries`); an error answer that is left is
described by :mod:`airflow_trainjob.api_errors` for the call that met it and raised as what it is, without the
response's headers or body: a refusal as this provider's exception (missing kind or namespace, invalid or
denied by admission, quota, RBAC, credentials), anything else the caller decides on (404 of an object, 409,
spent retries) as a :class:`~airflow_trainjob.api_errors.QuietApiException`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from airflow.providers.cncf.kubernetes.hooks.kubernetes import KubernetesHook
from airflow.providers.common.compat.sdk import AirflowNotFoundException
from kubernetes.client import ApiClient, V1DeleteOptions, rest
from kubernetes.client.exceptions import ApiException
from urllib3.util.retry import Retry

from airflow_trainjob.api_errors import ApiCall, exception_for
from airflow_trainjob.constants import GROUP, JOB_KINDS, LABEL_JOB_NAME, VERSION
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.hooks.retries import retry_transient

#: Where Kubernetes mounts the namespace of the pod a process runs in.
IN_CLUSTER_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE = "default"
#: ``(connect, read)`` seconds of every API call: a connection that stalls (a half-dead peer, a hung proxy) ends
#: as a read timeout, which is retried, instead of hanging the task. Followed log streams get the connect part only.
REQUEST_TIMEOUT = (10.0, 60.0)
#: urllib3's own retries, under the hook's: refused connections only. By default urllib3 also retries 429/503
#: answers that carry Retry-After (three times, sleeping as long as the server says, with no cap), which would
#: multiply every call's attempts by four and bypass RETRY_AFTER_CAP. The hook's retries decide alone.
TRANSPORT_RETRIES = Retry(total=None, connect=3, read=0, status=0, redirect=3, other=0,
                          respect_retry_after_header=False, raise_on_status=False)


P = ParamSpec("P")
R = TypeVar("R")


def _api_call(
    verb: str, purpose: str, resource: str | None = None, *, names_object: bool = True
) -> Callable[[Callable[Concatenate[TrainingJobHook, P], R]], Callable[Concatenate[TrainingJobHook, P], R]]:
    """Retry transient failures of the decorated call; raise what is left as :func:`api_errors.exception_for`
    says, ``from None`` (a chained ``ApiException`` would print its headers and body in the task log).

    :param verb: the Kubernetes verb of the call (``create``, ``get``, ``list``, ``patch``, ``delete``).
    :param purpose: why the provider makes it (said when RBAC forbids it), e.g. ``create a training job``.
    :param resource: the core resource (``pods``, ``pods/log``, ``events``); None: the job kind of the call's
        ``kind`` argument (or its ``manifest``).
    :param names_object: the call's ``name`` argument names the object of the request (not, e.g., a job whose
        pods are listed).
    """

    def decorate(func: Callable[Concatenate[TrainingJobHook, P], R]) -> Callable[Concatenate[TrainingJobHook, P], R]:
        retried = retry_transient(func)
        signature = inspect.signature(func)

        @functools.wraps(func)
        def call(self: TrainingJobHook, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return retried(self, *args, **kwargs)
            except ApiException as e:
                arguments = signature.bind_partial(self, *args, **kwargs).arguments
                request = _request(verb, purpose, resource, names_object, arguments)
                raise exception_for(e, request, conn_id=self.conn_id) from None

        return call

    return decorate


def _request(verb: str, purpose: str, resource: str | None, names_object: bool, arguments: Mapping[str, Any]) -> ApiCall:
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
            raise InvalidJobSpecError([
                f"kubernetes_conn_id: no connection {self.conn_id!r} is defined; allowed: the id of an existing "
                f"kubernetes connection (Admin > Connections, a secrets backend, or an AIRFLOW_CONN_* variable), "
                f"or {self.default_conn_name!r} undefined for in-cluster / default kubeconfig"
            ]) from None
        self._connection_found = True

    def resolve_namespace(self, namespace: str | None = None) -> str:
        """The namespace to use: ``namespace`` if given, else the connection's ``namespace`` extra,
        else the namespace of the pod this runs in (in-cluster), else ``default``."""
        if namespace:
            return namespace
        from_connection = self.get_namespace()
        if from_connection:
            return from_connection
        if self.is_in_cluster and IN_CLUSTER_NAMESPACE_FILE.exists():
            return IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or DEFAULT_NAMESPACE
        return DEFAULT_NAMESPACE

    @staticmethod
    def _plural(kind: str) -> str:
        return JOB_KINDS[kind].plural

    @_api_call("create", "create a training job")
    def create_job(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Create the job ``manifest`` describes; returns the created object.

        :raises KindNotServedError: the cluster does not serve the kind (no CRD); not retried.
        :raises NamespaceNotFoundError: the manifest's namespace does not exist; not retried.
        :raises JobRejectedError: invalid (422, naming the fields) or denied by an admission webhook; not retried.
        :raises QuotaExceededError: a ResourceQuota has no room for it; retryable.
        :raises KubernetesAccessError: 401, or RBAC forbids the create (naming verb, resource and namespace).
        :raises QuietApiException: 409 when a job of that name exists, and other answers (spent retries, ...).
        """
        return self.custom_object_client.create_namespaced_custom_object(
            GROUP, VERSION, manifest["metadata"]["namespace"], self._plural(manifest["kind"]), manifest,
            _request_timeout=REQUEST_TIMEOUT,
        )

    @_api_call("get", "read a training job")
    def get_job(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        """The job as the API has it.

        :raises QuietApiException: 404 when the job does not exist (yet), and other answers the caller decides on.
        :raises KindNotServedError: the cluster does not serve the kind at all; not retried.
        :raises KubernetesAccessError: 401, or RBAC forbids reading it.
        """
        return self.custom_object_client.get_namespaced_custom_object(
            GROUP, VERSION, namespace, self._plural(kind), name, _request_timeout=REQUEST_TIMEOUT
        )

    @_api_call("patch", "patch a training job")
    def patch_job(self, kind: str, name: str, namespace: str, patch: dict[str, Any]) -> dict[str, Any]:
        """Apply a JSON merge patch to the job; returns the patched object."""
        return self.custom_object_client.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, self._plural(kind), name, patch, _request_timeout=REQUEST_TIMEOUT
        )

    @_api_call("delete", "delete a training job")
    def delete_job(
        self, kind: str, name: str, namespace: str, uid: str | None = None, propagation: str = "Background"
    ) -> bool:
        """Delete the job (its pods follow by garbage collection). 404 counts as done.

        :param uid: delete only the object with this uid (a precondition: never a same-named successor).
        :param propagation: ``Background`` or ``Foreground``.
        :returns: True if this call deleted it, False if it was already gone.
        """
        options = V1DeleteOptions(propagation_policy=propagation, preconditions={"uid": uid} if uid else None)
        try:
            self.custom_object_client.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, self._plural(kind), name, body=options,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True

    @_api_call("list", "list a training job's pods", "pods", names_object=False)
    def list_job_pods(self, name: str, namespace: str) -> list[dict[str, Any]]:
        """The pods the training operator created for job ``name`` (by its job-name label), as the
        API's JSON dicts (camelCase), so they can be inspected and passed around like job objects."""
        pods = self.core_v1_client.list_namespaced_pod(
            namespace, label_selector=f"{LABEL_JOB_NAME}={name}", _request_timeout=REQUEST_TIMEOUT
        ).items
        return [self.api_client.sanitize_for_serialization(p) for p in pods]

    @_api_call("delete", "delete a pod", "pods")
    def delete_pod(self, name: str, namespace: str, uid: str | None = None) -> bool:
        """Delete a pod; 404 counts as done. :returns: True if this call deleted it."""
        options = V1DeleteOptions(preconditions={"uid": uid} if uid else None)
        try:
            self.core_v1_client.delete_namespaced_pod(name, namespace, body=options, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return True

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
        """A container's log as text (``tail_lines``: count; ``since_seconds``: seconds back)."""
        kwargs = {k: v for k, v in dict(container=container, tail_lines=tail_lines, since_seconds=since_seconds).items() if v}
        # Raw bytes, decoded here: the client's own decoding of this plain-text answer is unreliable.
        response = self.core_v1_client.read_namespaced_pod_log(
            name, namespace, previous=previous, _preload_content=False, _request_timeout=REQUEST_TIMEOUT, **kwargs
        )
        try:
            return response.data.decode(errors="replace")
        finally:
            response.release_conn()

    def open_pod_log_stream(self, name: str, namespace: str, container: str | None = None):
        """Follow a container's log: the open HTTP response, to read with ``.stream()`` and end
        with ``.close()``. Not retried: the caller decides how to resume a follow stream."""
        kwargs = {"container": container} if container else {}
        return self.core_v1_client.read_namespaced_pod_log(
            name, namespace, follow=True, _preload_content=False, _request_timeout=(REQUEST_TIMEOUT[0], None), **kwargs
        )

    @_api_call("list", "list events", "events", names_object=False)
    def list_events(self, namespace: str, involved_names: set[str]) -> list[dict[str, Any]]:
        """Events in ``namespace`` about any object named in ``involved_names``, as JSON dicts, oldest first."""
        events = [self.api_client.sanitize_for_serialization(e) for e in self.core_v1_client.list_namespaced_event(
            namespace, _request_timeout=REQUEST_TIMEOUT).items]
        chosen = [e for e in events if (e.get("involvedObject") or {}).get("name") in involved_names]
        return sorted(chosen, key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp") or "")

"""Thin helpers over the official ``kubernetes`` client, shared by the controller and the kubelet: building an
API client, reading Status errors, decoding raw responses and the RFC 3339 timestamps the API uses.

Nothing here retries or caches; callers decide what an error means for them.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

__all__ = [
    "MERGE_PATCH",
    "ApiException",
    "api_client_from_kubeconfig",
    "format_time",
    "is_already_exists",
    "is_conflict",
    "is_gone",
    "is_namespace_terminating",
    "is_not_found",
    "is_retriable",
    "now",
    "parse_time",
    "raw_json",
]

#: Content type of a JSON merge patch. The client picks json-patch for dict bodies unless told otherwise.
MERGE_PATCH = "application/merge-patch+json"


def api_client_from_kubeconfig(path: str, context: str | None = None, pool_size: int = 32) -> client.ApiClient:
    """Return an :class:`~kubernetes.client.ApiClient` for the cluster a kubeconfig file describes.

    :param path: the kubeconfig file.
    :param context: a context name in it; its current context when ``None``.
    :param pool_size: HTTP connections kept open; every watch holds one, so the client default (5 per CPU)
        is too small on small machines.
    :raises kubernetes.config.ConfigException: the file is missing or invalid.
    """
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(path), context=context, client_configuration=configuration)
    configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration)


def is_not_found(exc: BaseException) -> bool:
    """True when ``exc`` is the API's 404 NotFound."""
    return isinstance(exc, ApiException) and exc.status == 404


def is_already_exists(exc: BaseException) -> bool:
    """True when ``exc`` is the API's 409 with reason AlreadyExists (a create of an existing name)."""
    return isinstance(exc, ApiException) and exc.status == 409 and _reason(exc) == "AlreadyExists"


def is_conflict(exc: BaseException) -> bool:
    """True when ``exc`` is the API's 409 Conflict (a write with a stale resourceVersion)."""
    return isinstance(exc, ApiException) and exc.status == 409 and _reason(exc) != "AlreadyExists"


def is_gone(exc: BaseException) -> bool:
    """True when ``exc`` is the API's 410 Gone (a watch from a compacted resourceVersion)."""
    return isinstance(exc, ApiException) and exc.status == 410


def is_namespace_terminating(exc: BaseException) -> bool:
    """True when ``exc`` is the 403 refusing new objects in a namespace that is being deleted."""
    return isinstance(exc, ApiException) and exc.status == 403 and "being terminated" in str(exc.body or "")


def is_retriable(exc: BaseException) -> bool:
    """True when ``exc`` is an API answer worth repeating the request for: a 5xx or a 429 (throttled). Any other
    status (4xx: credentials, RBAC, invalid) is a refusal for good."""
    return isinstance(exc, ApiException) and exc.status is not None and (exc.status >= 500 or exc.status == 429)


def _reason(exc: ApiException) -> str:
    try:
        return str(json.loads(exc.body or "{}").get("reason", ""))
    except (TypeError, ValueError):
        return ""


def raw_json(response: Any) -> Any:
    """Decode a response fetched with ``_preload_content=False`` into plain dicts and lists."""
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def now() -> dt.datetime:
    """The current time, UTC, truncated to whole seconds (the API's metav1.Time precision)."""
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def format_time(value: dt.datetime | float | None = None) -> str:
    """A time as the API writes ``metav1.Time``, e.g. ``2024-01-02T03:04:05Z`` (UTC, whole seconds).

    :param value: an aware datetime, or seconds since the epoch; ``None`` is now.
    """
    if value is None:
        value = now()
    elif not isinstance(value, dt.datetime):
        value = dt.datetime.fromtimestamp(int(value), dt.timezone.utc)  # truncated, never rounded up
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str | None) -> dt.datetime | None:
    """Parse an API timestamp (RFC 3339, ``Z`` or offset, optional fraction); ``None`` stays ``None``.

    :raises ValueError: ``value`` is not a timestamp.
    """
    if not value:
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


class ObjectIdentity:
    """``name``, ``namespace`` and ``uid`` of an API object a view holds as ``obj`` (its JSON), for the controllers'
    views of the objects they reconcile."""

    obj: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"]["namespace"])

    @property
    def uid(self) -> str:
        """``metadata.uid``; ``""`` for an object not yet created (a manifest)."""
        return str(self.obj["metadata"].get("uid") or "")

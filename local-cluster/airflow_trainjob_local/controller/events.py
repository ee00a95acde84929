"""Core v1 Events, written the way client-go's event recorder writes them for the training operator.

Every event's ``involvedObject`` is the job (the real operator records pod creations, exits, restarts,
failures and successes on the job, not on the pods), ``source.component`` is the kind's controller name
(``pytorchjob-controller``). Identical events within 10 minutes are aggregated into a count
(:class:`airflow_trainjob_local.events.EventWriter`). Recording never raises: a failed write is logged and
dropped.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from airflow_trainjob_local.events import EventWriter, event_body, log_refused
from airflow_trainjob_local.kube import ApiException

__all__ = ["EventRecorder"]


class EventRecorder:
    """Writes Events about jobs, synchronously (from the reconcile threads).

    :param api_client: client for the cluster.
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self._writer = EventWriter(client.CoreV1Api(api_client))

    def record(self, obj: dict[str, Any], component: str, type_: str, reason: str, message: str) -> None:
        """Record an event about ``obj`` (a job as read from the API).

        :param component: ``source.component``, the controller name.
        :param type_: ``Normal`` or ``Warning``.
        :param reason: a CamelCase reason, e.g. ``PyTorchJobFailed``.
        :param message: the human-readable message.
        """
        body = event_body(obj, type_, reason, message, component=component)
        try:
            self._writer.write(body)
        except ApiException as exc:
            log_refused(body, exc)

"""The UI's options, from Airflow's configuration (``[trainjob]``, or ``AIRFLOW__TRAINJOB__*`` variables).

``ui_connections``: where the Training jobs page looks -- a comma-separated list of ``conn_id`` or
``conn_id/namespace``; default ``kubernetes_default``. A connection without a namespace is read in its
``namespace`` extra, else ``default`` (the hook's own rule, :meth:`TrainingJobHook.resolve_namespace`). Only these
namespaces, and the ones the tasks' records name, are ever read: nothing in a request names a namespace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from airflow.providers.common.compat.sdk import conf

from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.links.training_job import url_template
from airflow_trainjob.ui.try_view import END_RECORD_WAIT_SECONDS

CONFIG_SECTION = "trainjob"
UI_CONNECTIONS_KEY = "ui_connections"
DEFAULT_CONNECTION = "kubernetes_default"

#: A namespace name (DNS-1123 label).
_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: An Airflow connection id (letters, digits, ``_``, ``-``, ``.``).
_CONN_ID = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclass(frozen=True)
class UiSource:
    """One place the jobs page reads.

    :param conn_id: the cncf.kubernetes connection id.
    :param namespace: the namespace; None: the connection's (``namespace`` extra, else ``default``).
    """

    conn_id: str
    namespace: str | None = None


def parse_ui_connections(value: str | None) -> list[UiSource]:
    """The sources of ``[trainjob] ui_connections``, in order, without repeats.

    :param value: the option's text: ``conn_id`` or ``conn_id/namespace`` items separated by commas; None or blank:
        :data:`DEFAULT_CONNECTION`.
    :raises ValueError: an item that is not ``conn_id`` or ``conn_id/namespace``, naming it and the option.
    """
    items = [item.strip() for item in (value or "").split(",") if item.strip()]
    sources: list[UiSource] = []
    for item in items or [DEFAULT_CONNECTION]:
        conn_id, _, namespace = item.partition("/")
        conn_id, namespace = conn_id.strip(), namespace.strip()
        if not _CONN_ID.match(conn_id) or ("/" in item and not _NAMESPACE.match(namespace)) or len(namespace) > 63:
            raise ValueError(
                f"[{CONFIG_SECTION}] {UI_CONNECTIONS_KEY}: {item!r} is not 'conn_id' or 'conn_id/namespace' "
                f"(a connection id, and a lowercase DNS-1123 namespace name); separate items with commas"
            )
        source = UiSource(conn_id, namespace or None)
        if source not in sources:
            sources.append(source)
    return sources


def ui_connections() -> list[UiSource]:
    """The configured sources (:func:`parse_ui_connections` of ``[trainjob] ui_connections``).

    :raises ValueError: the option is malformed.
    """
    return parse_ui_connections(conf.get(CONFIG_SECTION, UI_CONNECTIONS_KEY, fallback=DEFAULT_CONNECTION))


#: Seconds a killed deferred try's trigger may take beyond ``on_kill_timeout`` before its ``on_kill`` runs: the
#: triggerer notices the kill on its next pass over its triggers.
KILL_NOTICE_SECONDS = 15


def end_record_wait_seconds() -> float:
    """Seconds after Airflow ended a try during which the Training job tab polls for the try's record of its end: the
    deferred try's trigger writes it in ``on_kill``, which the triggerer gives ``[triggerer] on_kill_timeout``
    seconds, so as long as that and :data:`KILL_NOTICE_SECONDS`, and never less than
    :data:`~airflow_trainjob.ui.try_view.END_RECORD_WAIT_SECONDS`.

    Reads the api-server's configuration: a triggerer configured otherwise is not seen.
    """
    on_kill = conf.getint("triggerer", "on_kill_timeout", fallback=30)
    return float(max(END_RECORD_WAIT_SECONDS, on_kill + KILL_NOTICE_SECONDS))


def connection_namespace(conn_id: str) -> str:
    """The namespace of connection ``conn_id``: its ``namespace`` extra, else (in a cluster) the pod's, else
    ``default``. Reads the connection (blocking: call it off the event loop).

    :param conn_id: the cncf.kubernetes connection id.
    :raises AirflowNotFoundException: no such connection (``kubernetes_default`` may be undefined).
    """
    return TrainingJobHook(conn_id=conn_id).resolve_namespace()


def dashboard_template(conn_id: str | None) -> str | None:
    """The Kubeflow dashboard URL template for jobs of ``conn_id`` (its ``job_url_template`` extra, else
    ``[trainjob] job_url_template``), or None. Reads the connection (blocking: call it off the event loop).

    :param conn_id: the cncf.kubernetes connection id (None: the configuration's template only).
    """
    extras = TrainingJobHook(conn_id=conn_id).conn_extras if conn_id else {}
    return url_template(extras)

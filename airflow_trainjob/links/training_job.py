"""An operator extra link from a task to its training job: the Kubeflow dashboard when one is configured, else
the task instance's Training job tab in the Airflow UI.

The dashboard's URL comes from a template, set either in Airflow's config (``[trainjob] job_url_template``,
or ``AIRFLOW__TRAINJOB__JOB_URL_TEMPLATE``) or in the connection's extra ``job_url_template``
(the connection wins). Placeholders: ``{kind}``, ``{plural}``, ``{namespace}``, ``{name}``.
Without a template the link is :func:`task_instance_tab_url`, on ``[api] base_url``.

How the UI finds the link (Airflow 3): the api-server never runs this class. It deserializes the operator's links
as ``XComOperatorLink``, which reads the XCom named by :attr:`BaseOperatorLink.xcom_key`
(``_link_TrainingJobLink``) of the task instance; the task runner pushes that XCom when the task ends. The operator
pushes it too as soon as the job exists, so the link is there while a synchronous run waits.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import yaml
from airflow.providers.common.compat.sdk import BaseOperatorLink, conf

from airflow_trainjob.families import family_of

CONFIG_SECTION, CONFIG_KEY = "trainjob", "job_url_template"
#: The ``url_route`` of the provider's Training job tab on the task instance page (its UI plugin).
TAB_ROUTE = "training-job"


def task_instance_tab_url(dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
    """The Training job tab of a task instance in the Airflow UI (3.1+ routes):
    ``{base_url}/dags/{dag_id}/runs/{run_id}/tasks/{task_id}[/mapped/{map_index}]/plugin/training-job``, each id
    percent-encoded; relative (``/dags/...``) when ``[api] base_url`` is not set.

    :param dag_id: the task instance's DAG id.
    :param run_id: its DAG run's id.
    :param task_id: its task id.
    :param map_index: its map index; ``-1`` (unmapped) adds no ``/mapped/`` part.
    """
    base = (conf.get("api", "base_url", fallback="") or "").rstrip("/")
    path = f"/dags/{quote(dag_id, safe='')}/runs/{quote(run_id, safe='')}/tasks/{quote(task_id, safe='')}"
    if map_index is not None and int(map_index) >= 0:
        path += f"/mapped/{int(map_index)}"
    return f"{base}{path}/plugin/{TAB_ROUTE}"


def job_url(template: str | None, kind: str, namespace: str, name: str) -> str | None:
    """The link for one job, or None without a template.

    :param template: the URL template (``str.format`` placeholders ``{kind}``, ``{plural}``, ``{namespace}``,
        ``{name}``); None or empty: no link.
    :param kind: the job's ``kind``, a kind of one of the families (``PyTorchJob``).
    :param namespace: the job's ``metadata.namespace``.
    :param name: the job's ``metadata.name``.
    :raises ValueError: the template names a placeholder other than kind, plural, namespace, name.
    """
    if not template:
        return None
    try:
        return template.format(kind=kind, plural=family_of(kind).resource.plural, namespace=namespace, name=name)
    except (KeyError, IndexError) as e:
        raise ValueError(
            f"{CONFIG_KEY} {template!r} uses an unknown placeholder {e}; allowed: kind, plural, namespace, name"
        ) from e


def url_template(connection_extra: dict[str, Any]) -> str | None:
    """The connection's ``job_url_template`` extra, else Airflow config's, else None.

    :param connection_extra: the connection's extras (``KubernetesHook.conn_extras``).
    """
    return connection_extra.get(CONFIG_KEY) or conf.get(CONFIG_SECTION, CONFIG_KEY, fallback=None)


class TrainingJobLink(BaseOperatorLink):
    """``Training job`` link on TrainingJobOperator tasks: the job in the Kubeflow dashboard when a URL template is
    configured, else the task instance's Training job tab (:func:`task_instance_tab_url`); empty until the task has
    built its job's manifest. See the module's docstring for how the UI reads it.
    """

    name = "Training job"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        """The URL for ``operator``'s job.

        :param operator: the operator (its ``_manifest``, else its rendered ``manifest`` text; its hook's
            connection extras).
        :param ti_key: the task instance (``dag_id``, ``run_id``, ``task_id``, ``map_index``: a task runner's
            ``RuntimeTaskInstance`` or a ``TaskInstanceKey``); None: the try the operator runs.
        :raises ValueError: the URL template names an unknown placeholder.
        """
        manifest = getattr(operator, "_manifest", None) or getattr(operator, "manifest", None)
        if isinstance(manifest, str):  # the rendered field: YAML text
            manifest = yaml.safe_load(manifest)
        if not manifest:
            return ""
        meta = manifest["metadata"]
        template = url_template(operator.hook.conn_extras)
        if template:
            return job_url(template, manifest["kind"], meta["namespace"], meta["name"]) or ""
        who = ti_key if ti_key is not None and hasattr(ti_key, "run_id") else _running_try(operator)
        if who is None:
            return ""
        map_index = getattr(who, "map_index", -1)
        return task_instance_tab_url(who.dag_id, who.run_id, who.task_id, -1 if map_index is None else map_index)


def _running_try(operator: Any) -> Any:
    """The identity of the try the operator runs (its run's, else its kept request's), or None before one."""
    run = getattr(operator, "_run", None)
    return getattr(run, "identity", None) or getattr(getattr(operator, "_request", None), "identity", None)

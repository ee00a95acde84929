"""An operator extra link from a task to its training job (e.g. in the Kubeflow dashboard).

The URL comes from a template, set either in Airflow's config (``[trainjob] job_url_template``,
or ``AIRFLOW__TRAINJOB__JOB_URL_TEMPLATE``) or in the connection's extra ``job_url_template``
(the connection wins). Placeholders: ``{kind}``, ``{plural}``, ``{namespace}``, ``{name}``.
With no template the link is absent.
"""

from __future__ import annotations

from typing import Any

import yaml
from airflow.providers.common.compat.sdk import BaseOperatorLink, conf

from airflow_trainjob.constants import JOB_KINDS

CONFIG_SECTION, CONFIG_KEY = "trainjob", "job_url_template"


def job_url(template: str | None, kind: str, namespace: str, name: str) -> str | None:
    """The link for one job, or None without a template.

    :raises ValueError: the template names a placeholder other than kind, plural, namespace, name.
    """
    if not template:
        return None
    try:
        return template.format(kind=kind, plural=JOB_KINDS[kind].plural, namespace=namespace, name=name)
    except (KeyError, IndexError) as e:
        raise ValueError(
            f"{CONFIG_KEY} {template!r} uses an unknown placeholder {e}; allowed: kind, plural, namespace, name"
        ) from e


def url_template(connection_extra: dict[str, Any]) -> str | None:
    """The connection's ``job_url_template`` extra, else Airflow config's, else None."""
    return connection_extra.get(CONFIG_KEY) or conf.get(CONFIG_SECTION, CONFIG_KEY, fallback=None)


class TrainingJobLink(BaseOperatorLink):
    """``Training job`` link on TrainingJobOperator tasks.

    Airflow's task runner asks for the link when the task ends and stores it; it is built from the
    operator's manifest (its kind, namespace and name) and the URL template; empty when unset.
    """

    name = "Training job"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        manifest = getattr(operator, "manifest", None)  # YAML text (the operator's rendered template field)
        if isinstance(manifest, str):
            manifest = yaml.safe_load(manifest)
        if not manifest:
            return ""
        meta = manifest["metadata"]
        template = url_template(operator.hook.conn_extras)
        return job_url(template, manifest["kind"], meta["namespace"], meta["name"]) or ""

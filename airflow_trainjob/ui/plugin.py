"""The Airflow plugin of the provider's UI: the ``/trainjob`` app in the api-server, a "Training job" tab on every
task instance and a "Training jobs" page in the navigation (Airflow 3.1+ ``fastapi_apps`` and ``external_views``).

Registered through the provider info's ``plugins`` entry (:func:`airflow_trainjob.get_provider_info`). Every Airflow
process that loads plugins imports this module; the web app itself is built on the api-server's first request to it
(:class:`LazyApp`), so the others import no web code.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import AirflowPlugin

from airflow_trainjob.ui.urls import JOBS_VIEW, TASK_INSTANCE_VIEW, URL_PREFIX

__all__ = ["JOBS_VIEW", "TASK_INSTANCE_VIEW", "URL_PREFIX", "LazyApp", "TrainingJobsPlugin"]


class LazyApp:
    """The UI's FastAPI app (:func:`airflow_trainjob.ui.app.create_app`), built on its first request; an ASGI app,
    as the api-server mounts it."""

    def __init__(self) -> None:
        self._app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI call with the built app.

        :param scope: the ASGI connection scope.
        :param receive: the ASGI receive callable.
        :param send: the ASGI send callable.
        """
        if self._app is None:
            from airflow_trainjob.ui.app import create_app

            self._app = create_app()
        await self._app(scope, receive, send)


class TrainingJobsPlugin(AirflowPlugin):
    """The provider's UI: the ``/trainjob`` FastAPI app and its two external views."""

    name = "airflow_trainjob"
    fastapi_apps = [{"app": LazyApp(), "url_prefix": URL_PREFIX, "name": "Kubeflow training jobs"}]
    external_views = [TASK_INSTANCE_VIEW, JOBS_VIEW]

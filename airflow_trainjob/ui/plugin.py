"""The Airflow plugin of the provider's UI: the ``/trainjob`` app in the api-server, a "Training job" tab on every
task instance and a "Training jobs" page in the navigation (Airflow 3.1+ ``fastapi_apps`` and ``external_views``).

Registered through the provider info's ``plugins`` entry (:func:`airflow_trainjob.get_provider_info`). Every Airflow
process that loads plugins imports this module; the web app itself is built on the api-server's first request to it
(:class:`LazyApp`), so the others import no web code.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.common.compat.sdk import AirflowPlugin

#: Where the app is mounted (the api-server's path prefix of every route of :mod:`airflow_trainjob.ui.app`).
URL_PREFIX = "/trainjob"

#: The views' hrefs are relative (no leading slash): the UI resolves them against its ``<base href>``, so they work
#: when Airflow is served under a path (``[api] base_url``); a leading slash would skip that prefix.
_HREF_PREFIX = URL_PREFIX.lstrip("/")

#: The task instance tab: Airflow fills in the placeholders and shows the page in the tab ``.../plugin/training-job``.
#: (Airflow 3.3 leaves ``{MAP_INDEX}`` as it is for an unmapped task: the page reads that as -1.)
TASK_INSTANCE_VIEW = {
    "name": "Training job",
    "href": f"{_HREF_PREFIX}/ui/task-instance?dag_id={{DAG_ID}}&run_id={{RUN_ID}}&task_id={{TASK_ID}}&map_index={{MAP_INDEX}}",
    "destination": "task_instance",
    "url_route": "training-job",
}
#: The page of every training job, in the navigation (``/plugin/training-jobs``).
JOBS_VIEW = {
    "name": "Training jobs",
    "href": f"{_HREF_PREFIX}/ui/jobs",
    "destination": "nav",
    "url_route": "training-jobs",
}


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

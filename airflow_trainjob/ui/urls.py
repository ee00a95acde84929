"""Where the provider's UI lives in the api-server: the app's path prefix and the two views Airflow shows (a task
instance tab and a navigation page). Read by the plugin (:mod:`.plugin`), which registers them, and by the app
(:mod:`.app`), which serves under them.
"""

from __future__ import annotations

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

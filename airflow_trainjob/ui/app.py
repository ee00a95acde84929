"""The UI's FastAPI app, mounted by the plugin at ``/trainjob`` in Airflow's api-server: the routes of
:mod:`airflow_trainjob.ui.routes` (their list is there), the pages' static files, and ``no-store`` on every API answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles

from airflow_trainjob.ui.cache import UiCache
from airflow_trainjob.ui.routes import STATIC_DIR, router


def create_app(cache: UiCache | None = None) -> FastAPI:
    """The UI's app (see :mod:`airflow_trainjob.ui.routes` for its routes).

    :param cache: what the app reads the cluster through (a new :class:`UiCache`, one per app, if None).
    """
    app = FastAPI(title="Kubeflow training jobs", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.trainjob_cache = cache or UiCache()
    app.middleware("http")(_no_store)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    return app


async def _no_store(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Every API answer is marked ``Cache-Control: no-store`` (it is live, and per user)."""
    response = await call_next(request)
    if request.url.path.startswith(f"{request.scope.get('root_path', '')}/api"):
        response.headers["Cache-Control"] = "no-store"
    return response

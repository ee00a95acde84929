"""Fixtures of the end-to-end UI tests: a real Airflow deployment on the session's local cluster
(:mod:`tests.support.deployment`) and headless Chromium (:mod:`tests.support.browser`).

A test module starts its deployment once, with its own DAGs, through the module-scoped ``start_airflow`` factory::

    @pytest.fixture(scope="module")
    def airflow(start_airflow):
        return start_airflow(dags={"train.py": SOURCE}, dag_ids=["train"], deferrable=True)

Ports: the api-server listens on the test cluster's port base + :data:`AIRFLOW_PORT_OFFSET` (base+60), apart from
the private clusters' base+10..13 and base+40..43. Deployments are module-scoped and one at a time, so the files
here may share that port as long as they run in one pytest process (scripts/test.sh runs tests/ui as its first
shard, alone).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.deployment import AirflowDeployment, migrated_database
from tests.support.report import record

if TYPE_CHECKING:
    from kubernetes import client

    from airflow_trainjob_local.cluster import LocalCluster
    from tests.support.browser import Browser

#: The api-server's port: the test cluster's port base (its apiserver port) + this.
AIRFLOW_PORT_OFFSET = 60
#: Where tests save screenshots when set (e.g. to look at them, or to refresh docs/); else a temporary directory.
SCREENSHOTS_ENV = "AIRFLOW_TRAINJOB_TEST_SCREENSHOTS"


@pytest.fixture(scope="session")
def airflow_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated, empty Airflow database, made once per session and copied into each deployment."""
    return migrated_database(tmp_path_factory.mktemp("airflow-db"))


@pytest.fixture(scope="module")
def module_namespace(request: pytest.FixtureRequest, core_v1: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace for one test module's deployment (``t-<module>-<random>``), deleted afterwards."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from airflow_trainjob_local.testing.plugin import TEST_NAMESPACE_LABEL

    slug = re.sub(r"[^a-z0-9]+", "-", request.module.__name__.rsplit(".", 1)[-1].lower()).strip("-")[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={TEST_NAMESPACE_LABEL: "true"}))
    )
    yield name
    try:
        core_v1.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture(scope="module")
def start_airflow(
    local_cluster: LocalCluster,
    module_namespace: str,
    airflow_database: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., AirflowDeployment]]:
    """Factory: ``start_airflow(dags=..., dag_ids=..., deferrable=..., users=..., dag_access=..., env=...)`` starts
    an :class:`~tests.support.deployment.AirflowDeployment` whose ``kubernetes_default`` points at the session
    cluster and the module's namespace, and returns it; it is stopped at the end of the module. One at a time
    (they share the port): starting a second stops the first.
    """
    running: list[AirflowDeployment] = []

    def stop_all() -> None:
        for deployment in running:
            deployment.stop()
            # Wall times of bringing it up (database copied, four processes healthy, DAGs parsed) and down.
            record(
                "airflow_deployment",
                root=str(deployment.root),
                up_ms=round(deployment.timings.get("start_seconds", 0) * 1000),
                down_ms=round(deployment.timings["stop_seconds"] * 1000),
            )
        running.clear()

    def start(**kwargs: Any) -> AirflowDeployment:
        stop_all()
        kwargs.setdefault("connection", local_cluster.airflow_connection(module_namespace))
        deployment = AirflowDeployment(
            tmp_path_factory.mktemp("airflow"),
            port=local_cluster.ports.apiserver + AIRFLOW_PORT_OFFSET,
            database=airflow_database,
            **kwargs,
        )
        running.append(deployment)
        deployment.start()
        return deployment

    yield start
    stop_all()


@pytest.fixture(scope="module")
def new_browser() -> Iterator[Callable[..., Browser]]:
    """Factory: ``new_browser(width=1400, height=900)`` -> a headless Chromium session, closed at the end of the
    module."""
    from tests.support.browser import Browser

    browsers: list[Browser] = []

    def make(**kwargs: Any) -> Browser:
        browser = Browser(**kwargs)
        browsers.append(browser)
        return browser

    yield make
    for browser in browsers:
        browser.close()


@pytest.fixture
def screenshot_dir(tmp_path: Path) -> Path:
    """Where to save screenshots: ``$AIRFLOW_TRAINJOB_TEST_SCREENSHOTS`` when set, else the test's ``tmp_path``."""
    value = os.environ.get(SCREENSHOTS_ENV)
    return Path(value) if value else tmp_path

"""Fixtures of the provider's tests. The cluster fixtures (``local_cluster``, ``namespace``, ``core_v1``,
``custom_objects``, ...) come from the local cluster's pytest plugin, :mod:`airflow_trainjob_local.testing.plugin`;
nothing here starts a cluster unless a test requests a fixture that needs one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from typing import TYPE_CHECKING

import pytest

from tests.report import pytest_terminal_summary  # noqa: F401 - prints the recorded figures at the end

if TYPE_CHECKING:
    from airflow_trainjob_local.cluster import LocalCluster

# Airflow reads its home at import: give the tests one of their own, never the developer's ~/airflow.
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="airflow-trainjob-tests-")
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
atexit.register(shutil.rmtree, _AIRFLOW_HOME, ignore_errors=True)

#: Fixtures of the fault tests (fault_proxy, fault_case): see tests/fault_support.py.
pytest_plugins = ["tests.fault_support"]


@pytest.fixture
def kubernetes_default_conn(local_cluster: LocalCluster, namespace: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point Airflow's ``kubernetes_default`` connection at the cluster and the test's namespace (env var).

    :returns: the connection id, ``kubernetes_default``.
    """
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", local_cluster.airflow_connection(namespace))
    return "kubernetes_default"



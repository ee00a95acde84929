"""Fixtures of the provider's tests. The cluster fixtures (``local_cluster``, ``namespace``, ``core_v1``,
``custom_objects``, ...) come from the local cluster's pytest plugin, :mod:`airflow_trainjob_local.testing.plugin`;
nothing here starts a cluster unless a test requests a fixture that needs one.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.faults import fault_cases, shorten_backoff, start_proxy
from tests.support.jobs import TaskInstanceStandIn
from tests.support.report import pytest_terminal_summary  # noqa: F401 - prints the recorded figures at the end

if TYPE_CHECKING:
    from airflow_trainjob_local.cluster import LocalCluster
    from tests.support.fault_proxy import FaultProxy

# Airflow reads its home at import: give the tests one of their own, never the developer's ~/airflow.
_AIRFLOW_HOME = tempfile.mkdtemp(prefix="airflow-trainjob-tests-")
os.environ["AIRFLOW_HOME"] = _AIRFLOW_HOME
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
# Triggers run in the test process fire as soon as they decide: the hold against Airflow's race around the resume
# (a scheduler's, absent here) has tests of its own, and the real deployments (tests/support/deployment.py, which
# drops these variables) run with its default.
os.environ["AIRFLOW__TRAINJOB__MIN_DEFERRAL_SECONDS"] = "0"
atexit.register(shutil.rmtree, _AIRFLOW_HOME, ignore_errors=True)


@pytest.fixture
def kubernetes_default_conn(local_cluster: LocalCluster, namespace: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point Airflow's ``kubernetes_default`` connection at the cluster and the test's namespace (env var).

    :returns: the connection id, ``kubernetes_default``.
    """
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", local_cluster.airflow_connection(namespace))
    return "kubernetes_default"


@pytest.fixture
def ti() -> TaskInstanceStandIn:
    """A stand-in for the task instance Airflow's task runner hands ``execute`` (a fresh run_id, try 1)."""
    return TaskInstanceStandIn()


# ---- the fault tier ------------------------------------------------------------------------------------------

#: A test that requests one of these is in the fault tier (marker ``faults``: ``-m faults`` runs the tier alone).
FAULT_FIXTURES = frozenset({"fault_proxy", "fault_case"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the fault tier: every test that injects faults (through :data:`FAULT_FIXTURES`)."""
    for item in items:
        if FAULT_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.faults)


@pytest.fixture
def fast_backoff(monkeypatch) -> None:
    """The provider's retry and reconnect backoff at a hundredth of its length, for this test (see
    :func:`tests.support.faults.shorten_backoff`): for tests that assert what happens after the waits."""
    shorten_backoff(monkeypatch)


@pytest.fixture
def fault_proxy(local_cluster, namespace, monkeypatch, tmp_path, fast_backoff) -> Iterator[FaultProxy]:
    """A :class:`~tests.support.fault_proxy.FaultProxy` in front of the session cluster; ``kubernetes_default``
    points at it (test namespace). The provider's backoff is shortened (``fast_backoff``)."""
    proxy = start_proxy(local_cluster, tmp_path / "proxy")
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", proxy.airflow_connection(local_cluster.kubeconfig, namespace))
    yield proxy
    proxy.stop()


@pytest.fixture
def fault_case(request):
    """``with fault_case(kind, mode, where) as case: ...``: one report row, survived only if the block
    completes (every assertion in it passed); see :func:`tests.support.faults.fault_cases`."""
    return fault_cases(request.node.nodeid)

"""Fixtures shared by the security tests (least privilege, secrets, bad input)."""

from __future__ import annotations

import pytest

from tests.support.least_privilege import closed_port_connection


@pytest.fixture
def closed_port_conn(local_cluster, monkeypatch) -> str:
    """``kubernetes_default`` pointing at a port nothing listens on: any API call fails to connect."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", closed_port_connection(local_cluster, "bad-input"))
    return "kubernetes_default"

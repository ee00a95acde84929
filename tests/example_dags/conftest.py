"""Fixtures of the example DAG tests; the runner and its helpers are in :mod:`tests.support.examples`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.examples import ExampleRunner, migrated_database


@pytest.fixture(scope="session")
def airflow_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An Airflow database migrated once for the session; each example run gets a copy of its own."""
    return migrated_database(tmp_path_factory.mktemp("migrated-airflow-home"))


@pytest.fixture
def run_example(kubernetes_default_conn: str, tmp_path: Path, airflow_database: Path) -> ExampleRunner:
    """An :class:`ExampleRunner` with a migrated Airflow home of its own, pointed at the test's namespace."""
    return ExampleRunner(tmp_path, airflow_database)

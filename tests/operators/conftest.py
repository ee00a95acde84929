"""Helpers for running operators against the local cluster.

The Kubernetes side is real (the session's local cluster). What Airflow's task runner would hand
to ``execute`` is stood in for by :class:`TaskInstanceStandIn`: the identity fields the operator
reads and a record of its XCom pushes.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class TaskInstanceStandIn:
    dag_id: str = "retrain"
    task_id: str = "train"
    run_id: str = field(default_factory=lambda: f"manual__{uuid.uuid4().hex[:8]}")
    map_index: int = -1
    try_number: int = 1
    xcom: dict[str, Any] = field(default_factory=dict)
    stats_tags: dict[str, str] = field(default_factory=dict)  # read by ResumableJobMixin's metrics

    def xcom_push(self, key: str, value: Any) -> None:
        self.xcom[key] = value


def python_container(code: str, name: str = "pytorch") -> dict[str, Any]:
    """A container that runs ``code`` with the host's Python (the process kubelet ignores images)."""
    return {"name": name, "image": "python:3.11-slim", "command": [sys.executable, "-c", code]}


def pytorch_specs(master_code: str, worker_code: str | None = None, workers: int = 1, **spec_fields) -> dict:
    """Replica specs of a PyTorchJob: one Master running ``master_code``, ``workers`` Workers."""
    specs = {"Master": {"template": {"spec": {"containers": [python_container(master_code)]}}, **spec_fields}}
    if workers:
        specs["Worker"] = {
            "replicas": workers,
            "template": {"spec": {"containers": [python_container(worker_code or master_code)]}},
            **spec_fields,
        }
    return specs


class TaskStateStoreStandIn(dict):
    """Airflow 3.3's ``task_state_store`` as an operator sees it: ``get(key)`` and ``set(key, value)``,
    kept across tries of one task instance."""

    def set(self, key: str, value: Any) -> None:
        self[key] = value


@pytest.fixture
def ti() -> TaskInstanceStandIn:
    return TaskInstanceStandIn()

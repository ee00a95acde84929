"""Builders of small PyTorchJobs for the local controller's tests: a replica running ``python -c`` and a job of
a Master and optional Workers, as plain dicts in the API's spelling."""

from __future__ import annotations

import textwrap
from typing import Any

from airflow_trainjob_local import constants as c


def python_replica(script: str, replicas: int = 1, restart_policy: str = "Never") -> dict[str, Any]:
    """A ReplicaSpec whose ``pytorch`` container runs ``python -c <script>``."""
    return {
        "replicas": replicas,
        "restartPolicy": restart_policy,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "python:3.11",
                        "command": ["python", "-c", textwrap.dedent(script)],
                    }
                ]
            }
        },
    }


def pytorch_job(
    name: str, master: dict[str, Any], worker: dict[str, Any] | None = None, run_policy: dict[str, Any] | None = None
) -> dict[str, Any]:
    specs = {"Master": master}
    if worker:
        specs["Worker"] = worker
    spec: dict[str, Any] = {"pytorchReplicaSpecs": specs}
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": c.API_VERSION, "kind": "PyTorchJob", "metadata": {"name": name}, "spec": spec}

"""The main job: the example retraining DAG, run end to end with ``airflow dags test`` on the local cluster."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "example_dags"

pytest.importorskip("torch", reason="the example trains with torch (scripts/test.sh installs it)")
pytest.importorskip("sklearn", reason="the example's dataset ships with scikit-learn")


def airflow(*args: str, env: dict, timeout: float) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).with_name("airflow")), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)


def test_retrain_digits_end_to_end(kubernetes_default_conn, namespace, tmp_path):
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLES),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "TRAINJOB_EXAMPLE_METRICS_DIR": str(tmp_path / "metrics"),
        "TRAINJOB_EXAMPLE_EPOCHS": "5",
    }
    migrated = airflow("db", "migrate", env=env, timeout=300)
    assert migrated.returncode == 0, migrated.stderr[-3000:]

    run = airflow("dags", "test", "retrain_digits", "2026-11-29", env=env, timeout=600)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    assert "[Master-0] rank 0/2" in output  # the lead replica's log reached the task log
    assert re.search(r"PyTorchJob \S+/retrain-digits-train-\w+: Succeeded", output)
    metrics = json.loads((tmp_path / "metrics" / "metrics-2026-11-29.json").read_text())
    assert metrics["world_size"] == 2 and metrics["epochs"] == 5
    assert metrics["accuracy"] >= 0.8
    assert "final metrics: " in output

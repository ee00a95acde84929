"""Provider metadata: Airflow finds and lists this provider through its entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import airflow_trainjob


def test_provider_info():
    info = airflow_trainjob.get_provider_info()
    assert info["package-name"] == "airflow-trainjob"
    assert info["versions"] == [airflow_trainjob.__version__]
    assert info["name"] and info["description"]


def test_entry_point_resolves_to_get_provider_info():
    (point,) = [e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("airflow_trainjob")]
    assert point.load() is airflow_trainjob.get_provider_info


def test_airflow_providers_list_shows_the_provider(tmp_path):
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path)}
    airflow = Path(sys.executable).with_name("airflow")
    result = subprocess.run(
        [str(airflow), "providers", "list", "--output", "json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert '"package_name": "airflow-trainjob"' in result.stdout
    assert f'"version": "{airflow_trainjob.__version__}"' in result.stdout


def test_py_typed_is_shipped():
    assert (Path(airflow_trainjob.__file__).parent / "py.typed").exists()

"""Run an example DAG as a user does, either way a run can be made: with a logical date or without one.

With a date: ``airflow dags test <dag_id> <date>``, the command the README and ``scripts/demo.sh`` use.
Without: ``dag_test_driver.py``, which calls ``DAG.test(logical_date=None)`` — the run the REST API
creates for ``{"logical_date": null}`` (``airflow dags test`` without a date uses the current time, so
it cannot make one). Each test gets its own Airflow home (SQLite), namespace and metrics directory (the
``run_example`` fixture in ``tests/example_dags/conftest.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "example_dags"
#: Runs a DAG with no logical date (``DAG.test(logical_date=None)``), as a script.
DRIVER = Path(__file__).with_name("dag_test_driver.py")

#: The date given to ``airflow dags test`` in the runs that have one.
LOGICAL_DATE = "2026-11-29"

#: Parametrize a test over both kinds of run (``None``: no logical date).
BOTH_WAYS = pytest.mark.parametrize(
    "logical_date", [LOGICAL_DATE, None], ids=["with-logical-date", "without-logical-date"]
)


def airflow_command() -> str:
    """The ``airflow`` command of this interpreter's environment."""
    return str(Path(sys.executable).with_name("airflow"))


def migrated_database(home: Path) -> Path:
    """``airflow db migrate`` in a new Airflow home ``home``; the SQLite database it made (``airflow.db``).

    Once per session: each runner starts from a copy of it (the file only: the ``airflow.cfg`` written beside it
    names this home's paths).
    """
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
    migrated = subprocess.run(
        [airflow_command(), "db", "migrate"], env=env, capture_output=True, text=True, timeout=300
    )
    assert migrated.returncode == 0, migrated.stderr[-3000:]
    return home / "airflow.db"


class ExampleRunner:
    """``runner(dag_id, logical_date, *cli_args)`` runs the DAG in a subprocess and returns it (output
    in ``stdout`` + ``stderr``). ``metrics_dir`` is the example's ``TRAINJOB_EXAMPLE_METRICS_DIR``.

    :param tmp_path: the test's directory: its Airflow home (``airflow``) and metrics directory go there.
    :param database: a migrated Airflow database (:func:`migrated_database`), copied into the home; None:
        ``airflow db migrate`` in the home.
    """

    def __init__(self, tmp_path: Path, database: Path | None = None) -> None:
        self.metrics_dir = tmp_path / "metrics"
        home = tmp_path / "airflow"
        self.env = {
            **os.environ,  # includes AIRFLOW_CONN_KUBERNETES_DEFAULT for the test's namespace
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLES),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "TRAINJOB_EXAMPLE_METRICS_DIR": str(self.metrics_dir),
            "TRAINJOB_EXAMPLE_EPOCHS": "5",
        }
        if database is not None:
            home.mkdir(parents=True)
            shutil.copyfile(database, home / "airflow.db")
        else:
            migrated = self._run([airflow_command(), "db", "migrate"], timeout=300)
            assert migrated.returncode == 0, migrated.stderr[-3000:]

    @property
    def _airflow(self) -> str:
        return airflow_command()

    def _run(self, command: list[str], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout)

    def __call__(self, dag_id: str, logical_date: str | None, *cli_args: str) -> subprocess.CompletedProcess:
        if logical_date is None:
            assert not cli_args, "the driver takes no options"
            command = [sys.executable, str(DRIVER), dag_id]
        else:
            command = [self._airflow, "dags", "test", dag_id, logical_date, *cli_args]
        return self._run(command, timeout=600)


def output_of(run: subprocess.CompletedProcess) -> str:
    """The run's whole output; asserts first that it succeeded (showing the tail if not)."""
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-5000:]
    return output


def assert_logical_date(output: str, dag_id: str, logical_date: str | None) -> None:
    """The run really had the logical date the test asked for (``None``: none at all), as Airflow logs it."""
    expected = "None" if logical_date is None else f"{logical_date} 00:00:00+00:00"
    assert f"DagRun Finished: dag_id={dag_id}, logical_date={expected}, " in output

"""The try's record, the extra link and the progress lines as Airflow itself keeps and serves them: a real DAG run
(``DAG.test``: the task runner, its supervisor and ``task_state_store`` over the execution API, the trigger run in
line) against the local cluster, in an Airflow home of its own (SQLite), read back from Airflow's database with
the api-server's own code.

- during a synchronous run, the link and the record are in the database while the task still runs;
- afterwards, the api-server's extra-links route (``get_extra_links``, what the UI calls) returns the link;
- a cleared task keeps its record (``clear_task_instances`` does not touch ``task_state_store``), and its next
  try is added in front of it;
- deferred, the trigger's progress lines are in the task's output and the end is recorded by ``execute_complete``.

The run happens in a subprocess (``python -m tests.operators.test_recorded_in_airflow ...``, the ``__main__``
below): Airflow reads its home and database when imported, and the test process has its own.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

DAG_FILE = textwrap.dedent(
    """
    import datetime
    import sys

    from airflow.sdk import DAG

    from airflow_trainjob.operators.training_job import TrainingJobOperator

    def container(code):
        return {"name": "pytorch", "image": "python:3.11-slim", "command": [sys.executable, "-c", code]}

    # The Master outlives its Worker: the job succeeds with the Master, the Worker has succeeded by then.
    SPECS = {
        "Master": {"template": {"spec": {"containers": [container("import time; time.sleep(4); print('trained')")]}}},
        "Worker": {"replicas": 1, "template": {"spec": {"containers": [container("print('shard done')")]}}},
    }

    for mode in ("sync", "deferred"):
        with DAG(f"record_{mode}", schedule=None, start_date=datetime.datetime(2026, 1, 1), catchup=False):
            TrainingJobOperator(
                task_id="train",
                kind="PyTorchJob",
                replica_specs=SPECS,
                deferrable=mode == "deferred",
                poll_interval=0.5,
            )
    """
)
LOGICAL_DATE = "2026-11-29T00:00:00+00:00"
BASE_URL = "http://127.0.0.1:28499"  # only named in links: nothing listens there


# ---- the driver, run in the subprocess ----------------------------------------------------------------------------


def _read_back(dag_id: str) -> dict[str, Any]:
    """What Airflow's database holds for the DAG's one run: the task's ``task_state_store`` rows, its try number and
    state, and the extra links as the api-server's route computes them."""
    from airflow.api_fastapi.core_api.routes.public.extra_links import get_extra_links
    from airflow.models.dagbag import DBDagBag
    from airflow.models.dagrun import DagRun
    from airflow.models.task_state_store import TaskStateStoreModel
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id))
        ti = session.scalar(select(TaskInstance).where(TaskInstance.dag_id == dag_id, TaskInstance.task_id == "train"))
        rows = session.scalars(
            select(TaskStateStoreModel).where(
                TaskStateStoreModel.dag_id == dag_id, TaskStateStoreModel.run_id == run.run_id
            )
        ).all()
        links = get_extra_links(
            dag_id=dag_id, dag_run_id=run.run_id, task_id="train", session=session, dag_bag=DBDagBag()
        )
        return {
            "run_id": run.run_id,
            "run_state": str(run.state),
            "try_number": ti.try_number,
            "ti_state": str(ti.state),
            "store": {r.key: json.loads(r.value) for r in rows},
            "expires_at": {r.key: None if r.expires_at is None else r.expires_at.isoformat() for r in rows},
            "links": links.extra_links,
        }


def _clear_and_run_again(dag: Any) -> dict[str, Any]:
    """Clear the task as the UI's Clear does (``clear_task_instances``), read the store, then run its next try as
    the scheduler would (next try number; ``DAG.test``'s own way of running one task)."""
    from airflow.models.taskinstance import TaskInstance, clear_task_instances
    from airflow.sdk.definitions.dag import _run_task
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import select

    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag.dag_id)).all()
        clear_task_instances(list(tis), session)
    after_clear = _read_back(dag.dag_id)
    with create_session() as session:
        ti = session.scalar(select(TaskInstance).where(TaskInstance.dag_id == dag.dag_id))
        ti.try_number += 1
        ti.state = TaskInstanceState.SCHEDULED
        session.commit()
        session.refresh(ti)
        _run_task(ti=ti, task=dag.task_dict["train"], run_triggerer=True)
    return after_clear


def main(dag_id: str, out: str) -> None:
    from datetime import datetime

    from airflow.utils.cli import get_bagged_dag
    from airflow.utils.providers_configuration_loader import providers_configuration_loaded

    @providers_configuration_loaded  # as the CLI's commands are
    def run() -> dict[str, Any]:
        dag = get_bagged_dag(bundle_names=None, dag_id=dag_id)
        dag.test(logical_date=datetime.fromisoformat(LOGICAL_DATE))
        first = _read_back(dag_id)
        after_clear = _clear_and_run_again(dag)
        return {"first": first, "after_clear": after_clear, "second": _read_back(dag_id)}

    Path(out).write_text(json.dumps(run(), default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])


# ---- the tests ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.support.examples import migrated_database

    return migrated_database(tmp_path_factory.mktemp("record-airflow-home"))


class Watcher(threading.Thread):
    """Reads the run's SQLite database while the task runs: the first moment the link's XCom and the record are
    there, with the task's state at that moment."""

    def __init__(self, database: Path) -> None:
        super().__init__(daemon=True)
        self.database, self.stop = database, threading.Event()
        self.seen: dict[str, Any] = {}

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                with sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=1) as db:
                    state = db.execute("SELECT state FROM task_instance WHERE task_id = 'train'").fetchone()
                    link = db.execute("SELECT value FROM xcom WHERE key = '_link_TrainingJobLink'").fetchone()
                    record = db.execute(
                        "SELECT value FROM task_state_store WHERE key = 'airflow_trainjob_tries'"
                    ).fetchone()
                for name, row in (("link", link), ("record", record)):
                    if row and name not in self.seen and state:
                        self.seen[name] = {"task_state": state[0], "value": json.loads(row[0])}
            except sqlite3.Error:
                pass  # locked or not created yet: look again
            time.sleep(0.1)


def run_dag(mode: str, home: Path, migrated: Path, watch: bool = False) -> tuple[dict[str, Any], str, dict]:
    home.mkdir(parents=True)
    shutil.copyfile(migrated, home / "airflow.db")
    dags = home / "dags"
    dags.mkdir()
    (dags / "record_dags.py").write_text(DAG_FILE)
    env = {
        **os.environ,  # AIRFLOW_CONN_KUBERNETES_DEFAULT for the test's namespace
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__API__BASE_URL": BASE_URL,
    }
    out = home / "out.json"
    watcher = Watcher(home / "airflow.db")
    if watch:
        watcher.start()
    done = subprocess.run(
        [sys.executable, "-m", "tests.operators.test_recorded_in_airflow", f"record_{mode}", str(out)],
        env=env,
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=600,
    )
    watcher.stop.set()
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    return json.loads(out.read_text()), output, watcher.seen


def test_a_synchronous_run_records_its_tries_and_links_to_its_tab(kubernetes_default_conn, migrated, tmp_path):
    from airflow_trainjob.constants import ANNOTATION_RUN_ID, LABEL_DAG_ID
    from airflow_trainjob.domain.records import RECORD_KEY, read_records

    result, _, seen = run_dag("sync", tmp_path / "home", migrated, watch=True)
    first, after_clear, second = result["first"], result["after_clear"], result["second"]
    run_id = first["run_id"]
    tab = f"{BASE_URL}/dags/record_sync/runs/{run_id.replace(':', '%3A').replace('+', '%2B')}/tasks/train/plugin/training-job"

    # While the task ran: the link (pushed at creation) and the try's record, not yet ended.
    assert seen["link"] == {"task_state": "running", "value": tab}, seen
    assert seen["record"]["task_state"] == "running" and seen["record"]["value"][0]["final"] is None, seen

    # After it: the api-server's extra-links route gives the link; the record has how the try ended.
    assert first["ti_state"] == "success" and first["links"] == {"Training job": tab}
    (record,) = read_records(first["store"][RECORD_KEY])
    assert record.try_number == 1 and record.final is not None and record.final.outcome == "succeeded"
    assert record.final.job is not None and record.final.job["metadata"]["annotations"][ANNOTATION_RUN_ID] == run_id
    assert {p["metadata"]["name"].rsplit("-", 2)[-2] for p in record.final.pods} == {"master", "worker"}
    assert record.manifest_yaml and f"{LABEL_DAG_ID}: record_sync" in record.manifest_yaml
    assert first["expires_at"][RECORD_KEY] is None  # NEVER_EXPIRE: it goes with the DAG run

    # Cleared: the record is still there; the next try is added in front of it.
    assert after_clear["ti_state"] == "None" and read_records(after_clear["store"][RECORD_KEY]) == [record]
    assert second["try_number"] == 2 and second["ti_state"] == "success"
    latest, earlier = read_records(second["store"][RECORD_KEY])
    assert (latest.try_number, earlier.try_number) == (2, 1) and earlier == record
    assert latest.final is not None and latest.final.outcome == "succeeded" and latest.uid != record.uid
    assert second["links"] == {"Training job": tab}


def test_a_deferred_run_logs_progress_and_records_its_end(kubernetes_default_conn, migrated, tmp_path):
    from airflow_trainjob.domain.records import RECORD_KEY, read_records

    result, output, _ = run_dag("deferred", tmp_path / "home", migrated)
    first = result["first"]
    assert first["ti_state"] == "success" and first["links"]["Training job"].endswith("/plugin/training-job")
    (record,) = read_records(first["store"][RECORD_KEY])
    assert record.final is not None and record.final.outcome == "succeeded" and record.final.events
    # The trigger's progress lines, in the run's output as in the task log.
    assert ": Running (PyTorchJobRunning: " in output and "— Master 1/1 active, Worker " in output
    assert "Succeeded (PyTorchJobSucceeded: " in output and "— Master 1 succeeded, Worker 1 succeeded" in output

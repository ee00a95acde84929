"""A success survives Airflow running the task again, against the real apiserver, in both modes.

Try 1's job succeeds; its worker (the process running the task, or the resumed deferred task) records the success,
its cleanup deletes the job (``on_finish="delete_job"``) and the process is SIGKILLed right then, before it returns:
what Airflow sees of a worker lost after the cleanup, and what the scheduler's race after a deferred resume
(apache/airflow#72716) leaves behind — a succeeded job that is gone, and a task instance that runs again. Try 2 of
the same series returns try 1's summary without creating a job; try 3, after a clear (a new ``clear_number``),
trains again in a new job. A watch counts every job ever created for the task instance.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_trainjob.domain.records import RECORD_KEY, read_records
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.triggers.training_job import FINISHED
from tests.support.deferred import first_event
from tests.support.faults import JobCreations, count_orphans
from tests.support.jobs import TaskInstanceStandIn, jobs, pytorch_specs
from tests.support.report import record as report
from tests.support.run_try import FileTaskStateStore

ROOT = Path(__file__).resolve().parents[2]
CODE = "import time; print('trained', flush=True); time.sleep(1)"
MODES = ["synchronous", "deferred"]


@pytest.fixture
def creations(kube_api_client, namespace):
    watcher = JobCreations(kube_api_client, namespace).start()
    yield watcher
    watcher.stop()


def make(deferrable: bool) -> TrainingJobOperator:
    return TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(CODE, workers=0),
        poll_interval=0.5,
        on_finish="delete_job",
        deferrable=deferrable,
    )


def context(run_id: str, try_number: int, store: Path, clear_number: int = 0, max_tries: int = 3) -> dict[str, Any]:
    ti = TaskInstanceStandIn(run_id=run_id, try_number=try_number)
    ti.max_tries = max_tries  # type: ignore[attr-defined]
    return {
        "ti": ti,
        "dag_run": SimpleNamespace(clear_number=clear_number),
        "task_state_store": FileTaskStateStore(store),
    }


def run_process(args: dict[str, Any], log: Path, timeout: float = 180) -> int:
    """``tests.support.run_try`` in a process of its own, to its end: its return code (``-9``: SIGKILLed)."""
    with log.open("wb") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "tests.support.run_try", json.dumps(args)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    return proc.returncode


def first_try_dies_after_its_cleanup(mode: str, run_id: str, store: Path, tmp_path: Path) -> None:
    """Try 1 runs its job to success and is SIGKILLed right after its cleanup deleted it. Deferred: it defers
    here, the trigger runs here, and the resumed task (``execute_complete``) is the process that dies."""
    args: dict[str, Any] = {
        "mode": "task",
        "run_id": run_id,
        "try_number": 1,
        "store": str(store),
        "replica_specs": pytorch_specs(CODE, workers=0),
        "out": str(tmp_path / "try1.json"),
        "clear_number": 0,
        "max_tries": 3,
        "die_after_cleanup": True,
    }
    if mode == "deferred":
        with pytest.raises(TaskDeferred) as deferred:
            make(deferrable=True).execute(context(run_id, 1, store))
        event = first_event(deferred.value.trigger, timeout=120)
        assert event["outcome"] == FINISHED, event
        args.update(mode="resume", deferrable=True, event=event)
    rc = run_process(args, tmp_path / "try1.log")
    output = (tmp_path / "try1.log").read_text()
    assert rc == -signal.SIGKILL, f"try 1 was not killed after its cleanup (exit {rc}):\n{output[-3000:]}"
    assert "the cleanup deleted the job: killing this process" in output
    assert not (tmp_path / "try1.json").exists()  # it never returned


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.usefixtures("kubernetes_default_conn")
def test_the_retry_returns_the_success_and_a_clear_trains_again(
    mode, namespace, custom_objects, kube_api_client, creations, fault_case, tmp_path, capfd
):
    store, run_id = tmp_path / "task_state_store.json", f"manual__{uuid.uuid4().hex[:8]}"
    with fault_case("SIGKILL right after the cleanup deleted the succeeded job", mode, "after success") as case:
        case.measurer = lambda: dict(jobs=creations.jobs_of(run_id), orphans=count_orphans(kube_api_client, namespace))
        first_try_dies_after_its_cleanup(mode, run_id, store, tmp_path)
        case.observe(injected=1)
        assert jobs(custom_objects, namespace) == []  # deleted by try 1's cleanup
        (record,) = read_records(FileTaskStateStore(store).get(RECORD_KEY))
        assert record.final is not None and record.final.outcome == "succeeded" and record.final.summary

        # Try 2, as Airflow retries it: the same series (no clear since).
        capfd.readouterr()
        started = time.monotonic()
        summary = make(deferrable=mode == "deferred").execute(context(run_id, 2, store))  # no TaskDeferred
        retry_seconds = time.monotonic() - started
        task_log = capfd.readouterr().out
        report("retry_after_success", mode=mode, retry_ms=round(retry_seconds * 1000))
        assert summary == record.final.summary  # try 1's result, as it returned it
        assert summary["conditions"][-1]["type"] == "Succeeded" and summary["name"] == record.name
        assert f"Not training again: try 1's PyTorchJob {namespace}/{record.name} succeeded" in task_log
        assert "The job is gone: that try's cleanup deleted it (on_finish='delete_job')." in task_log
        assert "Created PyTorchJob" not in task_log
        case.measure()
        assert case.jobs == 1, f"{case.jobs} jobs for one task instance: the retry trained again"
        assert case.orphaned == 0
        assert retry_seconds < 10, f"the retry took {retry_seconds:.1f} s"

    # Try 3, after a clear (the UI's Clear: clear_number + 1, max_tries = try_number + retries): trains again.
    capfd.readouterr()
    cleared = context(run_id, 3, store, clear_number=1, max_tries=5)
    if mode == "deferred":
        operator = make(deferrable=True)
        with pytest.raises(TaskDeferred) as deferred:
            operator.execute(cleared)
        again = operator.execute_complete(cleared, first_event(deferred.value.trigger, timeout=120))
    else:
        again = make(deferrable=False).execute(cleared)
    task_log = capfd.readouterr().out
    assert (
        f"Try 1's PyTorchJob {namespace}/{record.name} succeeded, but the task was cleared since (clear_number 0, "
        "max_tries 3 then, clear_number 1, max_tries 5 now): this try trains again"
    ) in task_log
    assert f"Created PyTorchJob {namespace}/{record.name}" in task_log
    assert again["conditions"][-1]["type"] == "Succeeded" and again["startTime"] >= summary["startTime"]
    assert creations.jobs_of(run_id) == 2
    assert count_orphans(kube_api_client, namespace) == {"jobs": [], "pods": []}
    latest, reused, first = read_records(FileTaskStateStore(store).get(RECORD_KEY))
    assert (latest.try_number, latest.reused_from_try) == (3, None) and latest.uid != first.uid
    assert (reused.try_number, reused.reused_from_try, reused.uid) == (2, 1, first.uid)

"""A TrainJob's own progress (``status.trainerStatus``, Kubeflow Trainer's ``TrainJobStatus`` feature) while a
TrainJobOperator waits on it, against the local cluster, in both modes: the test writes ``trainerStatus`` through the
TrainJob's status subresource in two steps while the job runs, as a trainer with the feature would (the local trainer's
own status writes are merge patches: they keep it). Each step is one progress line in the task log (percentage,
estimate, metrics); the try's record keeps both points (the synchronous wait writes them, the deferred try's trigger
hands them over in its event, and meanwhile writes them to the task instance's XCom for the Training job tab); the XCom
summary's ``progress`` is the last one."""

from __future__ import annotations

import threading
import types
from datetime import datetime, timezone
from pathlib import Path

import pytest
from airflow.exceptions import TaskDeferred

from airflow_trainjob.constants import TRAINER_GROUP, TRAINER_VERSION
from airflow_trainjob.domain.progress import unpacked
from airflow_trainjob.domain.records import RECORD_KEY, read_records
from airflow_trainjob.domain.trigger_progress import TRIGGER_PROGRESS_KEY, read_progress_value
from airflow_trainjob.exceptions import TrainingJobStoppedError
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob.triggers import progress_writes
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, first_event, rebuild
from tests.support.jobs import TaskStateStoreStandIn

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: The two reports the test writes, in order: (percentage, seconds left, metrics).
STEPS = [(45, 60, {"loss": "0.2347", "accuracy": "0.9876"}), (90, 8, {"loss": "0.1021", "accuracy": "0.9950"})]
LINES = [
    "45% done, about 60 s left; loss 0.2347, accuracy 0.9876",
    "90% done, about 8 s left; loss 0.1021, accuracy 0.9950",
]


def training(release: Path) -> str:
    """Node code: run until the test creates ``release``, then succeed."""
    return f"import os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.2)\nprint('trained', flush=True)"


def trainer_status(percent: int, left: int, metrics: dict[str, str]) -> dict:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "progressPercentage": percent,
        "estimatedRemainingSeconds": left,
        "metrics": [{"name": k, "value": v} for k, v in metrics.items()],
        "lastUpdatedTime": now,
    }


#: Where the deferred try's trigger finds its task instance (the triggerer sets ``task_instance``).
TASK_INSTANCE = types.SimpleNamespace(dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1)


def try_in_thread(operator: TrainJobOperator, context: dict, mode: str) -> tuple[threading.Thread, dict]:
    """The task's try in a thread: ``execute``; or ``execute`` to its deferral, the trigger until it fires (its event
    kept as ``outcome["event"]``; its ``task_instance`` set as the triggerer sets it), and ``execute_complete``."""
    outcome: dict = {}

    def target() -> None:
        try:
            if mode == "sync":
                outcome["result"] = operator.execute(context)
                return
            with pytest.raises(TaskDeferred) as deferred:
                operator.execute(context)
            trigger = rebuild(deferred.value.trigger)
            trigger.task_instance = TASK_INSTANCE
            event = outcome["event"] = first_event(trigger, timeout=240)
            outcome["result"] = operator.execute_complete(context, event)
        except BaseException as e:
            outcome["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def running_trainjob(custom_objects, namespace: str) -> str | None:
    """The name of the namespace's TrainJob once a node Job of it is ready (the family's Running), else None."""
    items = custom_objects.list_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs")[
        "items"
    ]
    ready = items and any(j.get("ready") for j in (items[0].get("status") or {}).get("jobsStatus") or [])
    return items[0]["metadata"]["name"] if ready else None


@pytest.fixture
def xcoms(monkeypatch: pytest.MonkeyPatch) -> dict:
    """The task instance's XComs as the trigger writes and reads them (through the triggerer's supervisor in a
    deployment: tests/ui/test_deployment_deferred_progress.py), key -> value; every due write at once."""
    from airflow.sdk.execution_time.xcom import XCom

    values: dict = {}

    async def aset(key: str, value, **where) -> None:
        assert where == vars(TASK_INSTANCE), where
        values[key] = value

    async def aget_one(*, key: str, **where):
        return values.get(key)

    monkeypatch.setattr(XCom, "aset", aset)
    monkeypatch.setattr(XCom, "aget_one", aget_one)
    monkeypatch.setattr(progress_writes, "write_interval", lambda writers: 0.0)
    return values


def trigger_points(xcoms: dict) -> list[tuple]:
    found = read_progress_value(xcoms.get(TRIGGER_PROGRESS_KEY))
    return [(p["percentage"], p["metrics"]) for p in found[1]] if found is not None and found[0] == 1 else []


@pytest.mark.parametrize("mode", MODES)
def test_each_report_of_a_running_trainjob_is_one_progress_line_and_one_recorded_point(
    ti, namespace, custom_objects, capfd, tmp_path, mode, xcoms
):
    release = tmp_path / "release"
    operator = TrainJobOperator(
        task_id="train",
        runtime="torch-distributed",
        trainer={"numNodes": 1, "command": ["python", "-c", training(release)]},
        deferrable=mode == "deferred",
        poll_interval=0.5,
        get_logs=False,
    )
    store = TaskStateStoreStandIn()
    thread, outcome = try_in_thread(operator, {"ti": ti, "task_state_store": store}, mode)
    name = wait_for(lambda: running_trainjob(custom_objects, namespace), timeout=120, what="the TrainJob running")
    seen: list[str] = []

    def task_log() -> str:
        captured = capfd.readouterr()
        seen.append(captured.out + captured.err)
        return "".join(seen)

    try:
        for (percent, left, metrics), line in zip(STEPS, LINES, strict=True):
            custom_objects.patch_namespaced_custom_object_status(
                TRAINER_GROUP,
                TRAINER_VERSION,
                namespace,
                "trainjobs",
                name,
                {"status": {"trainerStatus": trainer_status(percent, left, metrics)}},
            )
            wait_for(task_log, lambda log, line=line: line in log, timeout=60, what=f"the line {line!r}")
        if mode == "deferred":  # while the job runs: the points so far, where the Training job tab reads them
            wait_for(
                lambda: trigger_points(xcoms),
                lambda found: found == [(s[0], s[2]) for s in STEPS],
                timeout=30,
                what="both points in the XCom while the trigger waits",
            )
    finally:
        release.touch()
    thread.join(180)
    assert "error" not in outcome, outcome.get("error")
    log = task_log()
    running_line = f"TrainJob {namespace}/{name}: Running — node (1 node): 1 active, 1 ready; "
    for line in LINES:  # each report once while it runs (the completion's line repeats the last: a new phase)
        count = log.count(running_line + line)
        assert count == 1, f"{line!r} logged {count} times:\n{log[-3000:]}"

    reported = [(p["percentage"], p["estimated_remaining_seconds"], p["metrics"]) for p in _points(store)]
    assert reported == STEPS, "the try's record keeps each report once"
    if mode == "deferred":
        event_points = [(p["percentage"], p["metrics"]) for p in unpacked(outcome["event"]["progress"])]
        assert event_points == [(s[0], s[2]) for s in STEPS], "the trigger hands its points over in its event"
    progress = outcome["result"]["progress"]
    assert (progress["percentage"], progress["estimated_remaining_seconds"], progress["metrics"]) == STEPS[1]
    assert progress["last_updated_time"] and outcome["result"]["trainerStatus"]["progressPercentage"] == 90


def _points(store: TaskStateStoreStandIn) -> list[dict]:
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.final is not None and record.final.outcome == "succeeded"
    return record.final.progress


def test_a_try_stopped_by_airflow_keeps_the_progress_it_saw(ti, namespace, custom_objects, capfd, tmp_path):
    """``on_kill`` (marked failed or success, cleared) records the try's end with its points: the tab shows them."""
    operator = TrainJobOperator(
        task_id="train",
        runtime="torch-distributed",
        trainer={"numNodes": 1, "command": ["python", "-c", training(tmp_path / "never")]},
        poll_interval=0.5,
        get_logs=False,
    )
    store = TaskStateStoreStandIn()
    thread, outcome = try_in_thread(operator, {"ti": ti, "task_state_store": store}, "sync")
    name = wait_for(lambda: running_trainjob(custom_objects, namespace), timeout=120, what="the TrainJob running")
    (percent, left, metrics), line = STEPS[0], LINES[0]
    body = {"status": {"trainerStatus": trainer_status(percent, left, metrics)}}
    custom_objects.patch_namespaced_custom_object_status(
        TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", name, body
    )
    seen: list[str] = []
    wait_for(lambda: seen.append(capfd.readouterr().out) or "".join(seen), lambda log: line in log, what=line)
    operator.on_kill()
    thread.join(60)
    assert isinstance(outcome.get("error"), TrainingJobStoppedError), outcome
    (record,) = read_records(store.get(RECORD_KEY))
    assert record.final is not None and record.final.outcome == "stopped"
    assert [(p["percentage"], p["metrics"]) for p in record.final.progress] == [(percent, metrics)]

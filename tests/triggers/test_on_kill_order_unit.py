"""``on_kill``'s order (no cluster): the try's end is recorded first, then the rest of the lead's log is copied, then
the job is deleted, then the end is recorded again for a next try; a slow copy is stopped in time for the deletion;
and the steps go on through the triggerer's repeated cancellations.

Airflow's triggerer (3.3, ``triggerer_job_runner.py``) cancels a killed trigger's task with
``"__airflow_user_action__"``, runs ``on_kill`` under ``asyncio.wait_for`` in that task's ``except CancelledError``,
and swallows a ``CancelledError`` of ``on_kill``; its supervisor sends the trigger's id to cancel at every state sync
(about every second) until the trigger has ended, and the runner cancels the task again each time.
:func:`tests.support.triggerer_model.kill_as_the_triggerer_does` does the same, faster.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import types
from collections.abc import AsyncIterator
from typing import Any

import pytest

from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.triggers import training_job as trigger_module
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from tests.support.report import record
from tests.support.triggerer_model import kill_as_the_triggerer_does

ON_KILL_SECONDS = 6.0
IDENTITY = TaskInstanceIdentity(dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1, try_number=1)
JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "train-job", "namespace": "ml", "uid": "u-1", "labels": IDENTITY.labels()},
    "spec": {"pytorchReplicaSpecs": {}},
    "status": {"conditions": [{"type": "Running", "status": "True"}]},
}


class Steps:
    """What ``on_kill`` did, in order, with the seconds since it started."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.done: list[tuple[str, float]] = []
        self.records_at_copy: int | None = None
        self.deleted = asyncio.Event()

    def note(self, step: str) -> None:
        self.done.append((step, time.monotonic() - self.started))

    def names(self) -> list[str]:
        return [name for name, _ in self.done]

    def at(self, step: str) -> float:
        return next(at for name, at in self.done if name == step)


class FakeHook:
    """The trigger's hook, on a job that runs until it is deleted."""

    def __init__(self, steps: Steps) -> None:
        self.steps = steps
        self.job: dict[str, Any] | None = JOB

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[None]:
        yield None

    async def list_job_pods_async(self, name: str, namespace: str, **_: Any) -> list[dict[str, Any]]:
        return []

    async def get_job_async(self, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
        return self.job

    async def delete_job_async(self, kind: str, name: str, namespace: str, uid: str | None = None) -> bool:
        self.steps.note("delete")
        self.job = None
        self.steps.deleted.set()
        return True

    async def list_events_async(self, namespace: str, names: Any) -> list[dict[str, Any]]:
        return []


@pytest.fixture
def killed(monkeypatch: pytest.MonkeyPatch) -> tuple[TrainingJobTrigger, Steps]:
    """A deferred try's trigger (``follow_lead_log``) whose task instance was cleared: a next try is coming, and it
    starts after the first look at its state. Its lead log copy never ends (e.g. a log read waiting for its place in a
    crowded triggerer's rate)."""
    from airflow.sdk.execution_time.xcom import XCom

    from airflow_trainjob.watching import job_stream

    steps = Steps()
    hook = FakeHook(steps)
    states = iter([None])  # cleared; then running (try 2 started)

    async def aset(key: str, value: Any, **where: Any) -> None:
        steps.note("record")

    async def task_state(self: TrainingJobTrigger, ti: Any) -> tuple[bool, str | None]:
        return True, next(states, "running")

    async def slow_copy(self: TrainingJobTrigger, hook: Any, job: Any, pods: Any) -> None:
        steps.records_at_copy = steps.names().count("record")
        steps.note("copy")
        await asyncio.sleep(3600)

    monkeypatch.setattr(XCom, "aset", aset)
    monkeypatch.setattr(job_stream, "stream_hook", lambda source: hook)
    monkeypatch.setattr(trigger_module, "_on_kill_seconds", lambda: ON_KILL_SECONDS)
    monkeypatch.setattr(TrainingJobTrigger, "_task_state", task_state)
    monkeypatch.setattr(TrainingJobTrigger, "_copy_rest_of_lead_log", slow_copy)
    monkeypatch.setattr(trigger_module, "NEXT_TRY_LOOK_SECONDS", 0.05)
    monkeypatch.setattr(trigger_module, "NEXT_TRY_WRITE_SECONDS", 1.0)  # (a 6 s on_kill leaves 3 s after the copy)
    trigger = TrainingJobTrigger(
        kind="PyTorchJob",
        name="train-job",
        namespace="ml",
        uid="u-1",
        owner_labels=IDENTITY.instance_labels(),
        try_number=1,
        follow_lead_log=True,
    )
    trigger.task_instance = types.SimpleNamespace(  # type: ignore[assignment]  # what the triggerer sets
        dag_id="retrain", task_id="train", run_id="manual__1", map_index=-1
    )
    return trigger, steps


def test_the_end_is_recorded_before_the_copy_and_the_deletion_comes_in_time_when_the_copy_is_slow(killed, capfd):
    trigger, steps = killed
    asyncio.run(trigger.on_kill())
    ended = time.monotonic() - steps.started
    assert steps.names() == ["record", "copy", "delete", "record"], steps.done  # again: try 2 cleared the first
    assert steps.records_at_copy == 1  # the tab has the try's end before the copy starts
    assert steps.at("record") < 0.5, steps.done  # at once: nothing before it waits
    deletion_by = ON_KILL_SECONDS - trigger_module.RECORD_END_MARGIN_SECONDS - trigger_module.DELETION_RESERVE_SECONDS
    assert steps.at("delete") <= deletion_by + 0.5, steps.done  # the copy was stopped, the reserve kept
    assert ended < ON_KILL_SECONDS, ended
    text = capfd.readouterr().out
    assert "Recorded how try 1 ended, for the Training job tab: PyTorchJob ml/train-job was Running" in text
    assert text.index("Recorded how try 1 ended") < text.index("Stopped copying the lead replica's log of PyTorchJob")
    assert text.index("Stopped copying") < text.index("Deleted PyTorchJob ml/train-job: the deferred task was killed")
    print(f"on_kill ({ON_KILL_SECONDS:.0f} s): " + ", ".join(f"{name} at {at:.2f} s" for name, at in steps.done))
    record(
        "on_kill_order",
        on_kill_seconds=ON_KILL_SECONDS,
        record_s=round(steps.at("record"), 2),
        copy_s=round(steps.at("delete") - steps.at("copy"), 2),
        delete_s=round(steps.at("delete"), 2),
        ended_s=round(ended, 2),
    )


def test_on_kill_records_copies_and_deletes_through_the_triggerers_repeated_cancellations(killed):
    """Before, the second cancellation (a second after the first) ended ``on_kill`` wherever it was: a copy, or a
    record that took longer, left the job running."""
    trigger, steps = killed

    async def main() -> None:
        ended = await kill_as_the_triggerer_does(trigger, timeout=ON_KILL_SECONDS, every=0.2)
        assert ended in {"cut", "returned"}, ended  # Airflow's cancellation ended the trigger: no timeout, no error
        await asyncio.wait_for(steps.deleted.wait(), ON_KILL_SECONDS)  # (on Python 3.11: after the trigger's end)
        for _ in range(20):
            if steps.names().count("record") == 2:
                break
            await asyncio.sleep(0.1)

    asyncio.run(main())
    assert steps.names() == ["record", "copy", "delete", "record"], steps.done

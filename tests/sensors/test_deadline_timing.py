"""The sensor's deadline (its ``timeout``) fires on time in every mode, against the local cluster: poke and
reschedule look again just after it rather than up to ``poke_interval`` later, and the deferred wait fires at it.
The job waits in its queue and nothing changes (no Kueue on the local cluster: nobody admits it).
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from airflow.providers.common.compat.sdk import AirflowSensorTimeout, TaskDeferred
from airflow.sdk.exceptions import AirflowRescheduleException

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.exceptions import TrainingJobTimeoutError
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import first_event
from tests.support.jobs import OK, pytorch_specs, true_types
from tests.support.report import record

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: The sensor's timeout (seconds), and its poke interval: far longer, as it usually is.
LIMIT, POKE_INTERVAL = 6.0, 30.0
#: Seconds the timeout may fire after its time: the poke's own read, and the task's reaction on a loaded machine.
LATE = 3.0
NAME = "queued-elsewhere"


@pytest.fixture
def queued_job(namespace, custom_objects) -> dict:
    """A job someone else created in a Kueue queue, suspended, that nobody admits."""
    spec = TrainingJobSpec.parse("PyTorchJob", pytorch_specs(OK, workers=0), run_policy={"suspend": True})
    manifest = build_manifest(spec=spec, name=NAME, namespace=namespace, labels={"kueue.x-k8s.io/queue-name": "a"})
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)
    read = lambda: custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", NAME)
    return wait_for(read, lambda job: "Suspended" in true_types(job), timeout=60, what="the job suspended")


def sensor(**kwargs) -> TrainingJobSensor:
    return TrainingJobSensor(
        task_id="watch", kind="PyTorchJob", job_name=NAME, timeout=LIMIT, poke_interval=POKE_INTERVAL, **kwargs
    )


class RescheduledTaskInstance:
    """What reschedule mode asks of Airflow's task instance: when the sensor was first run (None on the first)."""

    def __init__(self, first: datetime | None) -> None:
        self.first = first

    def get_first_reschedule_date(self, context) -> datetime | None:
        return self.first


def assert_on_time(mode: str, after: float) -> None:
    on_time = LIMIT <= after <= LIMIT + LATE
    record("deadline_timing", wait=f"sensor {mode}", deadline="timeout", on_time=on_time)
    print(f"sensor {mode}: timeout of {LIMIT:g} s fired {after:.2f} s after the sensor began")
    assert on_time, f"timeout of {LIMIT:g} s fired {after:.2f} s after the sensor began"


def test_poke_mode_times_out_at_its_timeout_not_at_the_next_poke(queued_job):
    started = time.time()
    with pytest.raises(AirflowSensorTimeout):
        sensor(mode="poke").execute({})
    assert_on_time("poke", time.time() - started)


def test_reschedule_mode_comes_back_at_its_timeout_not_at_the_next_poke(queued_job):
    watching = sensor(mode="reschedule")
    first = datetime.now(timezone.utc)
    with pytest.raises(AirflowRescheduleException) as rescheduled:
        watching.execute({"ti": RescheduledTaskInstance(None)})
    back_at = rescheduled.value.reschedule_date
    assert_on_time("reschedule (rescheduled for)", (back_at - first).total_seconds())
    # Airflow runs the sensor again at that date; that try times out.
    time.sleep(max(0.0, (back_at - datetime.now(timezone.utc)).total_seconds()))
    with pytest.raises(AirflowSensorTimeout):
        watching.execute({"ti": RescheduledTaskInstance(first), "task_reschedule_count": 1})
    assert_on_time("reschedule", (datetime.now(timezone.utc) - first).total_seconds())


def test_deferred_the_trigger_fires_at_the_sensors_timeout(queued_job):
    watching = sensor(deferrable=True)
    started = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        watching.execute({})
    event = first_event(deferred.value.trigger, timeout=60)
    assert_on_time("deferred", time.time() - started)
    assert event["outcome"] == "timeout" and event["which"] == "timeout"
    with pytest.raises(TrainingJobTimeoutError):
        watching.execute_complete({}, event)

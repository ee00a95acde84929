"""The trigger holds an event decided soon after its task deferred until ``[trainjob] min_deferral_seconds`` have
passed (Airflow's race around the resume, apache/airflow#72716), against the local cluster: when the event fires,
measured, and what the task log says."""

from __future__ import annotations

import time

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_trainjob.domain.deferral_hold import DEFAULT_MIN_DEFERRAL_SECONDS
from airflow_trainjob.domain.timestamps import epoch
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.triggers.training_job import FINISHED, _min_deferral_seconds
from tests.support.deferred import first_event, rebuild
from tests.support.jobs import OK, pytorch_specs
from tests.support.report import record

#: The hold these tests set: longer than the local cluster takes to run a one-line job.
HOLD = 12.0
#: Seconds an event may fire after the hold ends (a loaded machine's event loop).
LATE = 3.0


@pytest.mark.usefixtures("kubernetes_default_conn")
def test_a_job_that_ends_within_the_hold_fires_when_the_hold_ends_and_a_trigger_run_later_at_once(
    ti, monkeypatch, capfd
):
    monkeypatch.setenv("AIRFLOW__TRAINJOB__MIN_DEFERRAL_SECONDS", str(HOLD))
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(OK, workers=0), deferrable=True
    )
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    trigger = rebuild(deferred.value.trigger)
    deferred_at = trigger.args.started_at
    event = first_event(trigger)
    fired = time.time() - deferred_at
    assert event["outcome"] == FINISHED
    succeeded = next(c for c in event["job"]["status"]["conditions"] if c["type"] == "Succeeded")
    ended = epoch(succeeded["lastTransitionTime"]) - deferred_at  # the server's whole second
    assert ended + 1 < HOLD, f"the job took {ended:.1f} s: too long to show the hold"
    assert HOLD <= fired < HOLD + LATE, f"fired {fired:.2f} s after the deferral"
    assert "s after the task deferred ([trainjob] min_deferral_seconds" in capfd.readouterr().out  # the task log

    again = time.monotonic()  # the same trigger run again, as after a triggerer restart, past the hold: no hold
    assert first_event(rebuild(trigger))["outcome"] == FINISHED
    refired = time.monotonic() - again
    assert refired < LATE, f"a trigger run again fired after {refired:.2f} s"
    assert operator.execute_complete({"ti": ti}, event)["conditions"][-1]["type"] == "Succeeded"
    record(
        "deferral_hold",
        hold_s=HOLD,
        job_ended_s=round(ended, 1),
        fired_s=round(fired, 2),
        run_again_fired_s=round(refired, 2),
    )


@pytest.mark.parametrize(
    ("setting", "seconds"),
    [(None, DEFAULT_MIN_DEFERRAL_SECONDS), ("0", 0.0), ("2.5", 2.5), ("soon", DEFAULT_MIN_DEFERRAL_SECONDS)],
)
def test_the_setting_is_read_as_the_triggerer_has_it(monkeypatch, setting, seconds):
    monkeypatch.delenv("AIRFLOW__TRAINJOB__MIN_DEFERRAL_SECONDS", raising=False)
    if setting is not None:
        monkeypatch.setenv("AIRFLOW__TRAINJOB__MIN_DEFERRAL_SECONDS", setting)
    assert _min_deferral_seconds() == seconds

"""TrainingJobSensor against the local cluster: waits, succeeds, fails like the operator."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.jobs import EXIT_1, OK, SLEEP, create

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")


def sensor(name, **kwargs):
    return TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name=name, **kwargs)


def test_missing_job_keeps_waiting(namespace):
    assert sensor("not-there-yet").poke({}) is False


def test_succeeds_when_the_job_succeeded(namespace, custom_objects):
    create(custom_objects, namespace, "made-elsewhere", OK)
    watcher = sensor("made-elsewhere")
    wait_for(lambda: watcher.poke({}), what="sensor success")


def test_other_target_conditions(namespace, custom_objects):
    create(custom_objects, namespace, "long-one", SLEEP)
    watcher = sensor("long-one", target_conditions=("Running",))
    wait_for(lambda: watcher.poke({}), what="Running")
    assert sensor("long-one").poke({}) is False  # Running is not Succeeded


def test_fails_with_the_operators_message(namespace, custom_objects):
    create(custom_objects, namespace, "broken", EXIT_1)
    watcher = sensor("broken")

    def failed():
        try:
            watcher.poke({})
        except AirflowFailException as e:
            failed.message = str(e)
            return True
        return False

    wait_for(failed, what="sensor failure")
    assert f"PyTorchJob {namespace}/broken failed: PyTorchJobFailed" in failed.message
    assert "Master-0" in failed.message and "exit code 1" in failed.message


def _true_types(custom_objects, namespace, name) -> list[str]:
    job = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
    return [c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c["status"] == "True"]


@pytest.mark.parametrize("outcome", ["Succeeded", "Failed", "deleted running"])
def test_a_job_seen_and_then_gone_between_two_pokes(outcome, namespace, custom_objects, tmp_path):
    """Poke mode keeps what it saw: a job gone before the next poke gets the verdict the training operator
    announced in its events (Succeeded, Failed), or is reported deleted; it is not waited for until the timeout."""
    from airflow_trainjob.exceptions import JobDeletedError

    flag = tmp_path / "go"
    code = (
        f"import os, sys, time\nwhile not os.path.exists({str(flag)!r}): time.sleep(0.1)\n"
        f"sys.exit({1 if outcome == 'Failed' else 0})"
    )
    create(custom_objects, namespace, "short-lived", code)
    watcher = sensor("short-lived")
    wait_for(lambda: "Running" in _true_types(custom_objects, namespace, "short-lived"), what="job running")
    assert watcher.poke({}) is False  # seen running
    if outcome != "deleted running":
        flag.touch()
        wait_for(lambda: outcome in _true_types(custom_objects, namespace, "short-lived"), what=f"job {outcome}")
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", "short-lived")
    wait_for(
        lambda: custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs")["items"],
        done=lambda items: items == [],
        what="job gone",
    )
    if outcome == "Succeeded":
        assert watcher.poke({}) is True
    elif outcome == "Failed":
        with pytest.raises(AirflowFailException) as raised:
            watcher.poke({})
        assert "PyTorchJobFailed" in str(raised.value) and "exit code 1" in str(raised.value)
    else:
        with pytest.raises(JobDeletedError) as raised:
            watcher.poke({})
        assert "deleted before it finished (last seen Running" in str(raised.value)

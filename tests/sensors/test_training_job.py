"""TrainingJobSensor against the local cluster: waits, succeeds, fails like the operator."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.manifest import build_manifest
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from tests.operators.conftest import pytorch_specs
from tests.operators.test_training_job import EXIT_1, OK, SLEEP
from tests.waiting import wait_for

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")


def create(custom_objects, namespace, name, code, **spec):
    manifest = build_manifest(
        spec=TrainingJobSpec.parse("PyTorchJob", pytorch_specs(code, workers=0, **spec)), name=name, namespace=namespace
    )
    return custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)


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

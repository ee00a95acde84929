"""TriggerArgs: the one definition of TrainingJobTrigger's kwargs, which the trigger is made from and serializes back
to, and which the operator's try and the sensor build. No cluster."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields

import pytest

from airflow_trainjob.domain.params import RunSettings
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob.triggers.args import TriggerArgs
from airflow_trainjob.triggers.training_job import TrainingJobTrigger

#: The kwargs a stored trigger holds, in the order serialize() has always written them: renaming or dropping one
#: would break the triggers of deferred tasks stored by an earlier version.
STORED_NAMES = [
    "kind",
    "name",
    "namespace",
    "uid",
    "kubernetes_conn_id",
    "cluster_context",
    "config_file",
    "in_cluster",
    "target_conditions",
    "started_at",
    "timeout",
    "startup_timeout",
    "queue_timeout",
    "poll_interval",
    "wait_for_creation",
    "owner_labels",
    "try_number",
    "log_tail_lines",
    "follow_lead_log",
    "secret_spans",
    "failed_tails",
]


def test_the_fields_are_the_stored_kwargs_in_their_order():
    assert [f.name for f in fields(TriggerArgs)] == STORED_NAMES
    _, kwargs = TrainingJobTrigger(kind="PyTorchJob", name="a", namespace="ml").serialize()
    assert list(kwargs) == STORED_NAMES


def test_a_trigger_stored_by_an_earlier_version_is_made_again_with_the_defaults():
    """Before try_number, follow_lead_log and secret_spans existed (and with Airflow-JSON's lists and dicts)."""
    older = {
        "kind": "TFJob",
        "name": "train",
        "namespace": "ml",
        "uid": "u-1",
        "kubernetes_conn_id": "prod",
        "cluster_context": None,
        "config_file": None,
        "in_cluster": None,
        "target_conditions": ["Succeeded"],
        "started_at": 100.0,
        "timeout": 60,
        "startup_timeout": None,
        "queue_timeout": None,
        "poll_interval": 5.0,
        "wait_for_creation": False,
        "owner_labels": {"a": "b"},
        "log_tail_lines": 20,
    }
    trigger = TrainingJobTrigger(**older)
    _, kwargs = trigger.serialize()
    assert kwargs == {
        **older,
        "try_number": None,
        "follow_lead_log": None,
        "secret_spans": [],
        "failed_tails": False,  # its spans may be missing: no tail read for its event
    }
    assert trigger.args.started_at == 100.0 and trigger._deadlines.started_at == 100.0  # not reset by the restart
    assert TrainingJobTrigger(**kwargs).serialize() == trigger.serialize()


def test_an_unknown_kwarg_is_refused_as_before():
    with pytest.raises(TypeError, match="no_such_kwarg"):
        TrainingJobTrigger(kind="PyTorchJob", name="a", namespace="ml", no_such_kwarg=1)


def test_given_forms_are_kept_as_stored():
    args = TriggerArgs(
        kind="PyTorchJob",
        name="a",
        namespace="ml",
        target_conditions=("Running",),
        started_at=None,  # as an older caller gave it: now
        owner_labels=None,
        secret_spans=None,
    )
    assert args.target_conditions == ["Running"] and args.owner_labels == {} and args.secret_spans == []
    assert isinstance(args.started_at, float)
    assert json.loads(json.dumps(args.kwargs())) == args.kwargs()


def test_a_run_hands_its_settings_by_name_and_get_logs_as_follow_lead_log():
    settings = RunSettings(
        kubernetes_conn_id="prod",
        poll_interval=3.0,
        timeout=30,
        startup_timeout=40,
        queue_timeout=50,
        get_logs=False,
        log_tail_lines=7,
        on_finish="keep_job",
    )
    args = TriggerArgs.for_run(
        settings,
        kind="PyTorchJob",
        metadata={"name": "a", "namespace": "ml", "uid": "u-1"},
        owner_labels={"x": "y"},
        try_number=2,
        started_at=5.0,
        secret_spans=None,
    )
    assert args.kwargs() == {
        "kind": "PyTorchJob",
        "name": "a",
        "namespace": "ml",
        "uid": "u-1",
        "kubernetes_conn_id": "prod",
        "cluster_context": None,
        "config_file": None,
        "in_cluster": None,
        "target_conditions": [],  # the job's success, in its family's word
        "started_at": 5.0,
        "timeout": 30,
        "startup_timeout": 40,
        "queue_timeout": 50,
        "poll_interval": 3.0,
        "wait_for_creation": False,
        "owner_labels": {"x": "y"},
        "try_number": 2,
        "log_tail_lines": 7,
        "follow_lead_log": False,
        "secret_spans": [],
        "failed_tails": False,  # no spans found (None): no tail read
    }


def test_a_sensor_hands_its_job_and_its_poke_interval_and_timeout():
    sensor = TrainingJobSensor(
        task_id="watch", kind="TFJob", job_name="made-elsewhere", target_conditions=["Running"], poke_interval=7
    )
    args = TriggerArgs.for_sensor(sensor, namespace="ml", started_at=9.0)
    assert args.kwargs() == {
        "kind": "TFJob",
        "name": "made-elsewhere",
        "namespace": "ml",
        "uid": None,
        "kubernetes_conn_id": "kubernetes_default",
        "cluster_context": None,
        "config_file": None,
        "in_cluster": None,
        "target_conditions": ["Running"],
        "started_at": 9.0,
        "timeout": sensor.timeout,
        "startup_timeout": None,
        "queue_timeout": None,
        "poll_interval": 7.0,
        "wait_for_creation": True,
        "owner_labels": {},
        "try_number": None,
        "log_tail_lines": 0,  # the sensor's own log_tail_lines is for its failure message, not the trigger's
        "follow_lead_log": None,
        "secret_spans": [],
        "failed_tails": False,  # a sensor's wait owns no job: the resumed sensor reads the tails itself
    }
    sensor.timeout = 0  # no timeout
    assert TriggerArgs.for_sensor(sensor, namespace="ml", started_at=9.0).timeout is None


def test_the_args_module_is_light_to_import():
    """The triggerer imports it on its event loop (with the trigger's module): nothing of the Kubernetes side, and
    not the operator's parameter table (RunSettings is read by name, imported only for the type checker)."""
    code = (
        "import json, sys\n"
        "import airflow_trainjob.triggers.args\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('airflow', 'kubernetes')))))"
    )
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout)
    assert loaded == [
        "airflow_trainjob",
        "airflow_trainjob.triggers",  # the package's __init__ (and its heap module, for the triggerer's heap)
        "airflow_trainjob.triggers.args",
        "airflow_trainjob.triggers.heap",
    ]

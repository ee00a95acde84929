"""params.py: one table of the operator's and the sensor's parameter checks, read in each task's order; the try's
settings and their defaults. No cluster: the checks come before any API call."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from airflow_trainjob.constants import ANNOTATION_RUN_ID, LABEL_DAG_ID, LABEL_KUEUE_QUEUE_NAME
from airflow_trainjob.domain import params
from airflow_trainjob.domain.own_keys import legacy_key
from airflow_trainjob.domain.params import DEFAULTS, OPERATOR, SENSOR, RunSettings, problems, read_by, values_of
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from tests.support.jobs import TaskInstanceStandIn

#: A reserved key under the prefix of releases before 1.0: refused as well.
LEGACY_RUN_ID = legacy_key(ANNOTATION_RUN_ID)

SPECS = {"Master": {"template": {"spec": {"containers": [{"name": "pytorch", "image": "python:3.12"}]}}}}


class ConnectionKnown:
    """The hook's one call here: the connection exists."""

    def require_connection(self) -> None:
        pass


def refused(op: TrainingJobOperator) -> list[str]:
    """The problems the operator's request refuses (its one check: before any parsing or API call)."""
    op.__dict__["hook"] = ConnectionKnown()
    with pytest.raises(InvalidJobSpecError) as raised:
        op.build_job({"ti": TaskInstanceStandIn()}, "ml")
    return raised.value.problems


def operator_problems(**arguments) -> list[str]:
    return refused(TrainingJobOperator(task_id="train", **{"kind": "PyTorchJob", "replica_specs": SPECS, **arguments}))


def sensor_problems(**arguments) -> list[str]:
    sensor = TrainingJobSensor(task_id="watch", **{"kind": "PyTorchJob", "job_name": "train", **arguments})
    sensor.__dict__["hook"] = ConnectionKnown()
    with pytest.raises(InvalidJobSpecError) as raised:
        sensor._check()
    return raised.value.problems


# ---- through the tasks: every problem at once, worded and ordered as before the table --------------------------------


def test_the_operator_reports_every_problem_in_its_order():
    found = operator_problems(
        namespace=5,
        kubernetes_conn_id="",
        get_logs="yes",
        reattach_on_restart=False,
        durable=True,
        on_finish="sometimes",
        poll_interval=0,
        timeout="60",
        startup_timeout=-1,
        queue_timeout=0,
        log_tail_lines=-1,
        labels={LABEL_DAG_ID: "x", LABEL_KUEUE_QUEUE_NAME: "other"},
        annotations={ANNOTATION_RUN_ID: "r", LEGACY_RUN_ID: "r"},  # the prefix of releases before 1.0 too
        job={"kind": "PyTorchJob"},
        job_template_file=7,
        queue_name="ml",
    )
    assert found == [
        "namespace: must be a DNS-1123 label (a string), or None for the connection's namespace; got int",
        "kubernetes_conn_id: must be the id of a kubernetes connection (a non-empty string), got ''",
        "get_logs: must be True or False, got str 'yes'",
        "reattach_on_restart: False conflicts with durable=True, which makes a retry reconnect to the running job it "
        "stored; allowed: reattach_on_restart=True, or durable=False with it",
        "on_finish: 'sometimes' is not one of keep_job, delete_job, delete_succeeded_job",
        "poll_interval: must be a positive number of seconds, got 0",
        "timeout: must be a positive number of seconds, got '60'",
        "startup_timeout: must be a positive number of seconds, got -1",
        "queue_timeout: must be a positive number of seconds, got 0",
        "log_tail_lines: must be a count (0 or more), got -1",
        f"labels: {LABEL_DAG_ID} are set by this provider to identify the task instance",
        f"annotations: {LEGACY_RUN_ID}, {ANNOTATION_RUN_ID} are set by this provider to identify the task instance",
        "job, job_template_file: give one whole job, not both",
        "replica_specs: not allowed with job, which holds the whole job (its spec.<kind>ReplicaSpecs, spec.runPolicy "
        "and the kind's fields); give one or the other",
        "job_template_file: must be a path (a string), got int",
        f"labels: {LABEL_KUEUE_QUEUE_NAME}='other' conflicts with queue_name='ml'; set the queue in one of them",
    ]


def test_the_operator_words_the_rest_of_its_input_rules():
    assert operator_problems(replica_specs=None, kind=None, labels=["x"], queue_name="") == [
        "labels: must be a mapping of strings to strings, got list",
        "replica_specs: required (or a whole job in job or job_template_file)",
        "kind: required with replica_specs (a whole job carries its own)",
        "queue_name: must be the name of a Kueue LocalQueue (a non-empty string), or None; got ''",
    ]


def test_a_job_read_from_its_file_is_the_files_not_a_second_whole_job():
    op = TrainingJobOperator(task_id="train", job_template_file="job.yaml", run_policy={})
    op.job, op._job_from_file = "kind: PyTorchJob", True  # as render_template_fields leaves it
    assert refused(op) == [
        "run_policy: not allowed with job_template_file, which holds the whole job (its spec.<kind>ReplicaSpecs, "
        "spec.runPolicy and the kind's fields); give one or the other"
    ]


def test_the_sensor_reports_every_problem_in_its_order():
    found = sensor_problems(
        kind="SparkJob",
        job_name="Train_Model",
        namespace="ML",
        target_conditions=["Complete", "Failed"],
        log_tail_lines="5",
        kubernetes_conn_id=3,
        deferrable="yes",
        poke_interval=0,
        timeout=0,
    )
    assert found == [
        "kind: 'SparkJob' is not a training job kind; allowed: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, "
        "JAXJob, TrainJob",
        found[1],  # names.py's wording, checked in tests/test_names.py
        found[2],
        # (a kind no family holds: any family's condition types)
        "target_conditions: 'Failed' not allowed; allowed: Created, Pending, Running, Restarting, "
        "Succeeded, Scaling, Suspended, Complete; Failed always fails the sensor",
        "log_tail_lines: must be a count (0 or more), got '5'",
        "kubernetes_conn_id: must be the id of a kubernetes connection (a non-empty string), got 3",
        "deferrable: must be True or False, got str 'yes'",
        "poke_interval: must be a positive number of seconds, got 0.0",  # Airflow keeps it as a float
        "timeout: must be a positive number of seconds, got 0.0",
    ]
    assert found[1].startswith("job_name: ") and "DNS-1035 label" in found[1]
    assert found[2].startswith("namespace: ") and found[2].endswith("(or None for the connection's namespace)")


def test_the_sensor_words_a_target_conditions_string_as_not_a_list():
    assert sensor_problems(target_conditions="Succeeded", namespace="") == [
        "target_conditions: must be a non-empty list of condition types (Created, Pending, Running, Restarting, "
        "Succeeded, Scaling, Suspended), got 'Succeeded'"
    ]


# ---- the table itself ------------------------------------------------------------------------------------------------


def test_each_face_reads_only_its_own_parameters():
    # (The sensor checks kind and target_conditions itself, by the families: the table knows none.)
    assert set(read_by(SENSOR)) == {
        "job_name",
        "namespace",
        "log_tail_lines",
        "kubernetes_conn_id",
        "deferrable",
        "poke_interval",
        "timeout",
    }
    operator = set(read_by(OPERATOR))
    assert {"poke_interval", "target_conditions", "job_name"}.isdisjoint(operator)
    assert {"durable", "on_finish", "job", "job_template_file", "queue_name", "labels", "annotations"} <= operator
    # Every operator parameter the table reads is one the operator takes.
    taken = set(inspect.signature(TrainingJobOperator.__init__).parameters) | {"durable"}
    assert operator <= taken


def test_a_rule_is_reported_after_its_row_and_only_for_its_face():
    for rule in params.CROSS_RULES:
        assert any(p.name == rule.after and rule.faces <= p.faces for p in params.PARAMS), rule
    conflict = {"reattach_on_restart": False, "durable": True, "on_finish": "x"}
    assert [p.split(":")[0] for p in problems(conflict, OPERATOR)][:2] == ["reattach_on_restart", "on_finish"]
    assert problems(conflict, SENSOR) == []  # neither parameter is the sensor's


def test_a_parameter_the_task_lacks_is_not_checked():
    """``durable`` before Airflow 3.3: absent, so neither its flag check nor the rule with reattach_on_restart fires."""
    values = {"reattach_on_restart": False, "replica_specs": {}, "kind": "PyTorchJob"}
    assert problems(values, OPERATOR) == []
    assert problems({**values, "durable": "x"}, OPERATOR) == ["durable: must be True or False, got str 'x'"]


def test_the_tasks_values_are_their_attributes_by_name():
    sensor = TrainingJobSensor(task_id="watch", kind="TFJob", job_name="a", poke_interval=7)
    values = values_of(sensor, SENSOR)
    assert values["job_name"] == "a" and values["poke_interval"] == 7 and sensor.target_conditions == ("Succeeded",)
    assert set(values) == set(read_by(SENSOR))
    trainjob = TrainingJobSensor(task_id="watch", kind="TrainJob", job_name="a")
    assert trainjob.target_conditions == ("Complete",)  # the job's success, in its family's word


# ---- the try's settings ----------------------------------------------------------------------------------------------


def test_the_operators_defaults_are_the_settings_defaults():
    signature = inspect.signature(TrainingJobOperator.__init__).parameters
    for f in fields(RunSettings):
        assert signature[f.name].default == getattr(DEFAULTS, f.name), f.name
    assert inspect.signature(TrainingJobSensor.__init__).parameters["log_tail_lines"].default == DEFAULTS.log_tail_lines


def test_the_settings_of_an_operator_are_its_attributes():
    op = TrainingJobOperator(task_id="t", kind="PyTorchJob", replica_specs=SPECS, timeout=30, on_finish="keep_job")
    assert RunSettings.of(op) == RunSettings(timeout=30, on_finish="keep_job")
    assert RunSettings.of(op).limit("timeout") == 30 and RunSettings.of(op).limit("no_such_deadline") is None

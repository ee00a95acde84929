"""Bad input, everywhere: every operator and sensor parameter, as the task sees it after Jinja rendering.

Each case differs from a valid task by one thing and must be refused with exactly ONE problem that
names the field (parameter name or API path) and what is allowed, as an ``InvalidJobSpecError``
(an ``AirflowFailException``: not retried), before any API call. That is shown twice per case:

- against a connection to a closed port: any API call would end in a connection error instead;
- against the real apiserver, in a fresh namespace: nothing was created, no XCom pushed.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import GROUP, JOB_KINDS, LABEL_DAG_ID, LABEL_TRY_NUMBER, VERSION
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from tests.support.jobs import TaskInstanceStandIn, python_container, pytorch_specs
from tests.support.least_privilege import closed_port_connection
from tests.support.report import record

OK = "print('ok')"
ON_FINISH = "keep_job, delete_job, delete_succeeded_job"
KINDS = "PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob"
SECONDS = "positive number of seconds"
COUNT = "count (0 or more)"
BOOL = "True or False"
TARGETS = "Created, Pending, Running, Restarting, Succeeded, Scaling, Suspended"


def container(name: str = "pytorch") -> dict:
    return python_container(OK, name=name)


def spec(replicas: Any = 1, name: str = "pytorch", **more) -> dict:
    return {"replicas": replicas, "template": {"spec": {"containers": [container(name)]}}, **more}


# (id, operator kwargs (may hold Jinja), params for rendering, field named, allowed named)
OPERATOR_CASES = [
    # kind
    ("kind unknown", dict(kind="SparkJob"), {}, "kind", KINDS),
    ("kind lowercase", dict(kind="pytorchjob"), {}, "kind", KINDS),
    ("kind a list", dict(kind=["PyTorchJob"]), {}, "kind", KINDS),
    # replica_specs
    (
        "replica_specs malformed YAML",
        dict(replica_specs="{{ params.v }}"),
        {"v": "Master: {replicas: 1"},
        "replicaSpecs",
        "not valid YAML/JSON",
    ),
    (
        "replica_specs malformed JSON",
        dict(replica_specs="{{ params.v }}"),
        {"v": '{"Master": ['},
        "replicaSpecs",
        "not valid YAML/JSON",
    ),
    ("replica_specs rendered empty", dict(replica_specs="{{ params.v }}"), {"v": ""}, "replicaSpecs", "Master, Worker"),
    ("replica_specs empty mapping", dict(replica_specs={}), {}, "replicaSpecs", "Master, Worker"),
    (
        "replica_specs rendered as a list",
        dict(replica_specs="{{ params.v }}"),
        {"v": [spec()]},
        "replicaSpecs",
        "Master, Worker",
    ),
    ("replica spec a list", dict(replica_specs={"Master": [spec()]}), {}, "replicaSpecs.Master", "mapping of fields"),
    (
        "replica type unknown",
        dict(replica_specs={"Master": spec(), "Chief": spec()}),
        {},
        "replicaSpecs.Chief",
        "allowed: Master, Worker",
    ),
    (
        "replicas rendered as a word",
        dict(replica_specs={"Master": spec(), "Worker": spec("{{ params.v }}")}),
        {"v": "two"},
        "replicaSpecs.Worker.replicas",
        "valid integer",
    ),
    (
        "replicas a list",
        dict(replica_specs={"Master": spec(), "Worker": spec([2])}),
        {},
        "replicaSpecs.Worker.replicas",
        "valid integer",
    ),
    (
        "replicas 0 on the Master",
        dict(replica_specs={"Master": spec(0), "Worker": spec(2)}),
        {},
        "replicaSpecs.Master.replicas",
        "must be 1",
    ),
    (
        "replicas 0 on worker 0, the lead",
        dict(replica_specs={"Worker": spec(0)}),
        {},
        "replicaSpecs.Worker.replicas",
        "at least 1",
    ),
    (
        "JAXJob with 0 workers",
        dict(kind="JAXJob", replica_specs={"Worker": spec(0, "jax")}),
        {},
        "replicaSpecs.Worker.replicas",
        "at least 1",
    ),
    (
        "TFJob Chief replicas 0",
        dict(kind="TFJob", replica_specs={"Chief": spec(0, "tensorflow"), "Worker": spec(2, "tensorflow")}),
        {},
        "replicaSpecs.Chief.replicas",
        "must be 1",
    ),
    (
        "MPIJob launcher replicas 0",
        dict(kind="MPIJob", replica_specs={"Launcher": spec(0, "mpi")}),
        {},
        "replicaSpecs.Launcher.replicas",
        "must be 1",
    ),
    (
        "restartPolicy unknown",
        dict(replica_specs={"Master": spec(restartPolicy="Sometimes")}),
        {},
        "replicaSpecs.Master.restartPolicy",
        "'Always', 'OnFailure', 'Never' or 'ExitCode'",
    ),
    (
        "template rendered as a string",
        dict(replica_specs={"Master": {"template": "{{ params.v }}"}}),
        {"v": "pod.yaml"},
        "replicaSpecs.Master.template",
        "pod template",
    ),
    (
        "TFJob Chief and Master",
        dict(kind="TFJob", replica_specs={"Chief": spec(1, "tensorflow"), "Master": spec(1, "tensorflow")}),
        {},
        "replicaSpecs",
        "only one of Chief, Master",
    ),
    # run_policy
    (
        "run_policy malformed YAML",
        dict(run_policy="{{ params.v }}"),
        {"v": "cleanPodPolicy: [All"},
        "runPolicy",
        "not valid YAML/JSON",
    ),
    (
        "run_policy rendered as a list",
        dict(run_policy="{{ params.v }}"),
        {"v": ["All"]},
        "runPolicy",
        "mapping of fields",
    ),
    (
        "cleanPodPolicy unknown",
        dict(run_policy={"cleanPodPolicy": "{{ params.v }}"}),
        {"v": "Always"},
        "runPolicy.cleanPodPolicy",
        "'', 'All', 'Running' or 'None'",
    ),
    (
        "cleanPodPolicy lowercase",
        dict(run_policy="cleanPodPolicy: {{ params.v }}"),
        {"v": "all"},
        "runPolicy.cleanPodPolicy",
        "'', 'All', 'Running' or 'None'",
    ),
    (
        "backoffLimit rendered as a word",
        dict(run_policy={"backoffLimit": "{{ params.v }}"}),
        {"v": "three"},
        "runPolicy.backoffLimit",
        "valid integer",
    ),
    (
        "backoffLimit negative",
        dict(run_policy="backoffLimit: {{ params.v }}"),
        {"v": -1},
        "runPolicy.backoffLimit",
        "greater than or equal to 0",
    ),
    (
        "activeDeadlineSeconds 0",
        dict(run_policy={"activeDeadlineSeconds": 0}),
        {},
        "runPolicy.activeDeadlineSeconds",
        "greater than or equal to 1",
    ),
    (
        "ttlSecondsAfterFinished rendered empty",
        dict(run_policy={"ttlSecondsAfterFinished": "{{ params.v }}"}),
        {"v": ""},
        "runPolicy.ttlSecondsAfterFinished",
        "valid integer",
    ),
    (
        "runPolicy unknown field",
        dict(run_policy={"cleanupPolicy": "All"}),
        {},
        "runPolicy.cleanupPolicy",
        "cleanPodPolicy, ttlSecondsAfterFinished",
    ),
    (
        "suspend rendered as a word",
        dict(run_policy={"suspend": "{{ params.v }}"}),
        {"v": "maybe"},
        "runPolicy.suspend",
        "valid boolean",
    ),
    (
        "managedBy unknown",
        dict(run_policy={"managedBy": "kueue"}),
        {},
        "runPolicy.managedBy",
        "'kubeflow.org/training-operator' or 'kueue.x-k8s.io/multikueue'",
    ),
    # Kueue
    ("queue_name rendered empty", dict(queue_name="{{ params.v }}"), {"v": ""}, "queue_name", "non-empty string"),
    ("queue_name a list", dict(queue_name=["team-a"]), {}, "queue_name", "non-empty string"),
    ("queue_name not a label value", dict(queue_name="team a/b"), {}, "metadata.labels", "kueue.x-k8s.io/queue-name"),
    ("queue_timeout 0", dict(queue_timeout=0), {}, "queue_timeout", "positive number of seconds"),
    (
        "queue_timeout a string",
        dict(queue_timeout="{{ params.v }}"),
        {"v": "3600"},
        "queue_timeout",
        "positive number of seconds",
    ),
    # a whole job
    (
        "job with replica_specs too",
        dict(job={"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Master": spec()}}}),
        {},
        "replica_specs",
        "not allowed with job",
    ),
    (
        "job rendered as malformed YAML",
        dict(kind=None, replica_specs=None, job="{{ params.v }}"),
        {"v": "kind: [PyTorchJob"},
        "job",
        "not valid YAML/JSON",
    ),
    (
        "job of another API",
        dict(
            kind=None,
            replica_specs=None,
            job={
                "apiVersion": "kubeflow.org/v2",
                "kind": "PyTorchJob",
                "spec": {"pytorchReplicaSpecs": {"Master": spec()}},
            },
        ),
        {},
        "job.apiVersion",
        "'kubeflow.org/v1'",
    ),
    (
        "job with generateName",
        dict(
            kind=None,
            replica_specs=None,
            job={
                "kind": "PyTorchJob",
                "metadata": {"generateName": "x-"},
                "spec": {"pytorchReplicaSpecs": {"Master": spec()}},
            },
        ),
        {},
        "job.metadata.generateName",
        "metadata.name",
    ),
    (
        "job without spec",
        dict(kind=None, replica_specs=None, job={"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}),
        {},
        "job.spec",
        "required",
    ),
    ("neither replica_specs nor job", dict(replica_specs=None), {}, "replica_specs", "required"),
    # kind_fields
    (
        "kind_fields malformed YAML",
        dict(kind_fields="{{ params.v }}"),
        {"v": "nprocPerNode: [2"},
        "kindFields",
        "not valid YAML/JSON",
    ),
    ("kind_fields rendered as a list", dict(kind_fields="{{ params.v }}"), {"v": [1]}, "spec", "mapping of fields"),
    (
        "kind_fields unknown field",
        dict(kind_fields={"nprocsPerNode": 2}),
        {},
        "spec.nprocsPerNode",
        "elasticPolicy, nprocPerNode",
    ),
    (
        "nprocPerNode invalid",
        dict(kind_fields={"nprocPerNode": "{{ params.v }}"}),
        {"v": "many"},
        "spec",
        "'auto', 'cpu', 'gpu' or a positive integer",
    ),
    (
        "nprocPerNode in two places",
        dict(kind_fields={"nprocPerNode": "2", "elasticPolicy": {"nProcPerNode": 2}}),
        {},
        "spec",
        "not both",
    ),
    # job_name
    ("job_name invalid", dict(job_name="{{ params.v }}"), {"v": "Train_Model"}, "metadata.name", "DNS-1035 label"),
    (
        "job_name too long for its pods",
        dict(job_name="{{ params.v }}"),
        {"v": "a" * 60},
        "metadata.name",
        "at most 54 are allowed",
    ),
    ("job_name over 63", dict(job_name="a" * 64), {}, "metadata.name", "at most"),
    ("job_name not a string", dict(job_name=42), {}, "metadata.name", "non-empty string"),
    # namespace
    ("namespace invalid", dict(namespace="{{ params.v }}"), {"v": "ML_Team"}, "metadata.namespace", "DNS-1123 label"),
    (
        "namespace with a dot",
        dict(namespace="{{ params.v }}"),
        {"v": "team.ml"},
        "metadata.namespace",
        "DNS-1123 label",
    ),
    ("namespace too long", dict(namespace="n" * 64), {}, "metadata.namespace", "at most 63"),
    ("namespace a list", dict(namespace=["ml"]), {}, "namespace", "DNS-1123 label"),
    # labels, annotations
    (
        "labels rendered as a string",
        dict(labels="{{ params.v }}"),
        {"v": {"team": "ml"}},
        "labels",
        "mapping of strings to strings",
    ),
    (
        "label value invalid",
        dict(labels={"team": "{{ params.v }}"}),
        {"v": "ml team!"},
        "metadata.labels['team']",
        "at most 63 characters",
    ),
    ("label value not a string", dict(labels={"replicas": 3}), {}, "metadata.labels['replicas']", "must be a string"),
    (
        "label key invalid",
        dict(labels={"-team": "ml"}),
        {},
        "metadata.labels['-team']",
        "starting and ending with a letter or digit",
    ),
    (
        "label reserved for the task instance",
        dict(labels={LABEL_DAG_ID: "other"}),
        {},
        "labels",
        "set by this provider",
    ),
    ("annotations a list", dict(annotations=["owner=ml"]), {}, "metadata.annotations", "mapping of strings to strings"),
    (
        "annotation value a mapping",
        dict(annotations={"owner": {"team": "ml"}}),
        {},
        "metadata.annotations['owner']",
        "must be a string",
    ),
    # connection
    ("kubernetes_conn_id empty", dict(kubernetes_conn_id=""), {}, "kubernetes_conn_id", "non-empty string"),
    ("kubernetes_conn_id not a string", dict(kubernetes_conn_id=42), {}, "kubernetes_conn_id", "non-empty string"),
    (
        "kubernetes_conn_id names no connection",
        dict(kubernetes_conn_id="kubernetes_typo"),
        {},
        "kubernetes_conn_id",
        "existing kubernetes connection",
    ),
    # numbers
    ("poll_interval 0", dict(poll_interval=0), {}, "poll_interval", SECONDS),
    ("poll_interval negative", dict(poll_interval=-1), {}, "poll_interval", SECONDS),
    ("poll_interval a string", dict(poll_interval="10"), {}, "poll_interval", SECONDS),
    ("poll_interval a boolean", dict(poll_interval=True), {}, "poll_interval", SECONDS),
    ("timeout 0", dict(timeout=0), {}, "timeout", SECONDS),
    ("timeout negative", dict(timeout=-60), {}, "timeout", SECONDS),
    ("timeout a string", dict(timeout="3600"), {}, "timeout", SECONDS),
    ("timeout a timedelta", dict(timeout=datetime.timedelta(hours=1)), {}, "timeout", SECONDS),
    ("startup_timeout 0", dict(startup_timeout=0), {}, "startup_timeout", SECONDS),
    ("startup_timeout negative", dict(startup_timeout=-1), {}, "startup_timeout", SECONDS),
    ("startup_timeout a list", dict(startup_timeout=[600]), {}, "startup_timeout", SECONDS),
    ("log_tail_lines negative", dict(log_tail_lines=-1), {}, "log_tail_lines", COUNT),
    ("log_tail_lines a string", dict(log_tail_lines="50"), {}, "log_tail_lines", COUNT),
    ("log_tail_lines a fraction", dict(log_tail_lines=2.5), {}, "log_tail_lines", COUNT),
    ("log_tail_lines a boolean", dict(log_tail_lines=True), {}, "log_tail_lines", COUNT),
    # booleans
    ("get_logs a string", dict(get_logs="False"), {}, "get_logs", BOOL),
    ("get_logs a number", dict(get_logs=1), {}, "get_logs", BOOL),
    ("reattach_on_restart a string", dict(reattach_on_restart="no"), {}, "reattach_on_restart", BOOL),
    ("deferrable a string", dict(deferrable="True"), {}, "deferrable", BOOL),
    ("durable a string", dict(durable="yes"), {}, "durable", BOOL),
    # choices
    ("on_finish unknown", dict(on_finish="delete_everything"), {}, "on_finish", ON_FINISH),
    ("on_finish wrong case", dict(on_finish="Delete_Job"), {}, "on_finish", ON_FINISH),
    ("on_finish None", dict(on_finish=None), {}, "on_finish", ON_FINISH),
    # conflicts
    (
        "reattach_on_restart False with durable True",
        dict(reattach_on_restart=False),
        {},
        "reattach_on_restart",
        "durable=False",
    ),
    (
        "deferrable with an invalid spec",
        dict(deferrable=True, run_policy={"cleanPodPolicy": "Sometimes"}),
        {},
        "runPolicy.cleanPodPolicy",
        "'All'",
    ),
]

# (id, sensor kwargs, params, field, allowed)
SENSOR_CASES = [
    ("kind unknown", dict(kind="SparkJob"), {}, "kind", KINDS),
    ("kind a list", dict(kind=["PyTorchJob"]), {}, "kind", KINDS),
    ("job_name rendered empty", dict(job_name="{{ params.v }}"), {"v": ""}, "job_name", "non-empty string"),
    ("job_name invalid", dict(job_name="{{ params.v }}"), {"v": "Train_Model"}, "job_name", "DNS-1035 label"),
    ("job_name over 63", dict(job_name="a" * 64), {}, "job_name", "at most 63"),
    ("job_name not a string", dict(job_name=42), {}, "job_name", "non-empty string"),
    ("namespace invalid", dict(namespace="{{ params.v }}"), {"v": "ML_Team"}, "namespace", "DNS-1123 label"),
    ("namespace a list", dict(namespace=["ml"]), {}, "namespace", "DNS-1123 label"),
    ("target_conditions a string", dict(target_conditions="Succeeded"), {}, "target_conditions", TARGETS),
    ("target_conditions empty", dict(target_conditions=[]), {}, "target_conditions", TARGETS),
    (
        "target_conditions Failed",
        dict(target_conditions=["Failed"]),
        {},
        "target_conditions",
        "Failed always fails the sensor",
    ),
    ("target_conditions unknown", dict(target_conditions=["Complete"]), {}, "target_conditions", TARGETS),
    ("target_conditions wrong case", dict(target_conditions=["succeeded"]), {}, "target_conditions", TARGETS),
    ("target_conditions a number", dict(target_conditions=[1]), {}, "target_conditions", TARGETS),
    ("log_tail_lines negative", dict(log_tail_lines=-1), {}, "log_tail_lines", COUNT),
    ("log_tail_lines a string", dict(log_tail_lines="50"), {}, "log_tail_lines", COUNT),
    ("kubernetes_conn_id empty", dict(kubernetes_conn_id=""), {}, "kubernetes_conn_id", "non-empty string"),
    (
        "kubernetes_conn_id names no connection",
        dict(kubernetes_conn_id="kubernetes_typo"),
        {},
        "kubernetes_conn_id",
        "existing kubernetes connection",
    ),
    ("deferrable a string", dict(deferrable="yes"), {}, "deferrable", BOOL),
    ("poke_interval 0", dict(poke_interval=0), {}, "poke_interval", SECONDS),
    ("timeout 0", dict(timeout=0), {}, "timeout", SECONDS),
    (
        "deferrable with target Failed",
        dict(deferrable=True, target_conditions=["Failed"]),
        {},
        "target_conditions",
        "Failed",
    ),
    ("deferrable with an invalid namespace", dict(deferrable=True, namespace="ML"), {}, "namespace", "DNS-1123 label"),
]

#: Parameters Airflow itself refuses when the DAG is parsed (BaseSensorOperator), with the field named.
PARSE_TIME_CASES = [
    ("sensor timeout negative", dict(timeout=-1), "timeout", "non-negative number"),
    ("sensor timeout a string", dict(timeout="60"), "timeout", "non-negative number"),
    ("sensor poke_interval negative", dict(poke_interval=-5), "poke_interval", "non-negative number"),
    ("sensor mode unknown", dict(mode="sometimes"), "mode", "'poke', 'reschedule'"),
]


def operator_of(arguments: dict) -> TrainingJobOperator:
    kwargs = dict(kind="PyTorchJob", replica_specs=pytorch_specs(OK, workers=1), poll_interval=0.5)
    kwargs.update(arguments)
    return TrainingJobOperator(task_id="train", **kwargs)


def sensor_of(arguments: dict) -> TrainingJobSensor:
    kwargs = dict(kind="PyTorchJob", job_name="made-elsewhere")
    kwargs.update(arguments)
    return TrainingJobSensor(task_id="watch", **kwargs)


def run_rendered(task, params: dict) -> tuple[TaskInstanceStandIn, BaseException | None]:
    """Render the task's templates as the task runner does, then execute it; the exception it raised."""
    ti = TaskInstanceStandIn(task_id=task.task_id)
    context = {"ti": ti, "params": params, "ds": "2026-11-29"}
    try:
        task.render_template_fields(context)
        task.execute(context)
    except BaseException as e:
        return ti, e
    return ti, None


def one_clear_error(raised: BaseException | None, field: str, allowed: str) -> bool:
    """Exactly one problem, naming ``field`` first and saying what is allowed; not retried."""
    if not isinstance(raised, InvalidJobSpecError) or not isinstance(raised, AirflowFailException):
        return False
    problems = raised.problems
    return (
        len(problems) == 1
        and any(problems[0].startswith(f"{field}{sep}") for sep in (":", "["))
        and allowed in problems[0]
        and problems[0] in str(raised)
    )


def describe(raised: BaseException | None) -> str:
    if isinstance(raised, InvalidJobSpecError):
        return f"InvalidJobSpecError{raised.problems!r}"
    return repr(raised)


def nothing_in(namespace: str, custom_objects, core_v1) -> bool:
    jobs = [
        j
        for kind in JOB_KINDS.values()
        for j in custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural)["items"]
    ]
    return not jobs and not core_v1.list_namespaced_pod(namespace).items


def check_case(
    target: str,
    case: str,
    make,
    arguments: dict,
    params: dict,
    field: str,
    allowed: str,
    monkeypatch,
    local_cluster,
    namespace,
    custom_objects,
    core_v1,
    closed_port_env: str,
) -> None:
    # 1. A connection to a closed port: refused the same way, so no API call was made.
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", closed_port_env)
    ti_closed, raised_closed = run_rendered(make(arguments), params)
    # 2. The real apiserver, a fresh namespace: nothing created, no XCom.
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", local_cluster.airflow_connection(namespace))
    ti_real, raised_real = run_rendered(make(arguments), params)
    untouched = nothing_in(namespace, custom_objects, core_v1) and ti_real.xcom == {} and ti_closed.xcom == {}
    refused = one_clear_error(raised_closed, field, allowed) and one_clear_error(raised_real, field, allowed)
    record(f"bad_input/{target}", case=case, field=field, refused=refused, nothing_created=untouched)
    assert one_clear_error(raised_closed, field, allowed), describe(raised_closed)
    assert one_clear_error(raised_real, field, allowed), describe(raised_real)
    assert untouched


@pytest.fixture
def closed_port_env(closed_port_conn) -> str:
    import os

    return os.environ["AIRFLOW_CONN_KUBERNETES_DEFAULT"]


@pytest.mark.parametrize(
    ("case", "arguments", "params", "field", "allowed"), OPERATOR_CASES, ids=[c[0] for c in OPERATOR_CASES]
)
def test_operator_refuses(
    case,
    arguments,
    params,
    field,
    allowed,
    monkeypatch,
    local_cluster,
    namespace,
    custom_objects,
    core_v1,
    closed_port_env,
):
    check_case(
        "operator",
        case,
        operator_of,
        arguments,
        params,
        field,
        allowed,
        monkeypatch,
        local_cluster,
        namespace,
        custom_objects,
        core_v1,
        closed_port_env,
    )


@pytest.mark.parametrize(
    ("case", "arguments", "params", "field", "allowed"), SENSOR_CASES, ids=[c[0] for c in SENSOR_CASES]
)
def test_sensor_refuses(
    case,
    arguments,
    params,
    field,
    allowed,
    monkeypatch,
    local_cluster,
    namespace,
    custom_objects,
    core_v1,
    closed_port_env,
):
    check_case(
        "sensor",
        case,
        sensor_of,
        arguments,
        params,
        field,
        allowed,
        monkeypatch,
        local_cluster,
        namespace,
        custom_objects,
        core_v1,
        closed_port_env,
    )


@pytest.mark.parametrize(
    ("case", "arguments", "field", "allowed"), PARSE_TIME_CASES, ids=[c[0] for c in PARSE_TIME_CASES]
)
def test_airflow_refuses_at_parse_time(case, arguments, field, allowed):
    with pytest.raises(ValueError) as raised:
        sensor_of(arguments)
    message = str(raised.value)
    refused = field in message and allowed in message
    record("bad_input/sensor (Airflow, at DAG parse)", case=case, field=field, refused=refused)
    assert refused, message


def test_the_valid_baselines_render_and_pass_validation(closed_port_conn):
    """Guards the tables: without the one bad thing, the same tasks are accepted (the operator's
    manifest is built at render; the sensor's checks pass)."""
    operator = operator_of({})
    operator.render_template_fields({"ti": TaskInstanceStandIn(), "params": {}})
    assert operator.manifest is not None and yaml.safe_load(operator.manifest)["metadata"]["namespace"] == "bad-input"
    sensor_of({})._check()
    sensor_of({"namespace": ""})._check()  # rendered empty: the connection's namespace, as for the operator


def test_the_closed_port_would_show_an_api_call(closed_port_conn, fast_backoff):
    """Guards the method: a valid task against the closed port fails differently (a connection error
    after retries, their backoff shortened), so a case that reached the API could not pass as refused."""
    ti, raised = run_rendered(operator_of({"get_logs": False}), {})
    assert raised is not None and not isinstance(raised, InvalidJobSpecError)
    assert ti.xcom["job_namespace"] == "bad-input"  # it got past validation, to the create call


def test_the_manifest_is_built_once_per_try(closed_port_conn, monkeypatch):
    """render_template_fields builds the manifest the rendered view shows; execute sends that one."""
    import airflow_trainjob.operators.request as module  # where the manifest is built

    built = []
    real = module.build_manifest
    monkeypatch.setattr(module, "build_manifest", lambda **kw: built.append(1) or real(**kw))
    operator = operator_of({"get_logs": False})
    ti = TaskInstanceStandIn()
    operator.render_template_fields({"ti": ti, "params": {}})
    rendered = operator._manifest
    assert operator._prepare({"ti": ti}) is rendered and yaml.safe_load(operator.manifest) == rendered
    assert len(built) == 1
    # Another try (another identity) builds its own.
    other = TaskInstanceStandIn(run_id=ti.run_id, try_number=2)
    operator._prepared = False
    assert operator._prepare({"ti": other})["metadata"]["labels"][LABEL_TRY_NUMBER] == "2"
    assert len(built) == 2


def test_an_invalid_namespace_from_the_connection_is_refused_too(local_cluster, monkeypatch):
    """No namespace parameter: the connection's ``namespace`` extra is used, and checked the same way."""
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", closed_port_connection(local_cluster, "ML_Team"))
    for target, task in (("operator", operator_of({})), ("sensor", sensor_of({}))):
        ti, raised = run_rendered(task, {})
        field = {"operator": "metadata.namespace", "sensor": "namespace"}[target]
        refused = one_clear_error(raised, field, "DNS-1123 label") and ti.xcom == {}
        record(
            f"bad_input/{target}",
            case="namespace from the connection invalid",
            field=field,
            refused=refused,
            nothing_created=None,
        )  # shown by the closed port only: no namespace of that name to look in
        assert refused, describe(raised)


def test_zero_log_tail_lines_and_get_logs_false_when_deferred(kubernetes_default_conn, namespace, capfd):
    """0 is a valid count and means no tail: a deferred task still copies the lead replica's log, as a synchronous one
    streams it (``log_tail_lines`` counts the tails of failed replicas, and of a lead log cut at its size bound);
    ``get_logs=False`` copies none of it."""
    from airflow.providers.common.compat.sdk import TaskDeferred

    from tests.support.deferred import first_event

    code = "print('\\n'.join(f'line {i}' for i in range(5)))"
    for task_id, options, copied in (("train", {"log_tail_lines": 0}, True), ("train2", {"get_logs": False}, False)):
        operator = TrainingJobOperator(
            task_id=task_id, kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=0), deferrable=True, **options
        )
        ti = TaskInstanceStandIn(task_id=task_id)
        with pytest.raises(TaskDeferred) as deferred:
            operator.execute({"ti": ti})
        event = first_event(deferred.value.trigger)
        assert operator.execute_complete({"ti": ti}, event)["conditions"][-1]["type"] == "Succeeded"
        out = capfd.readouterr().out
        assert all((f"[Master-0] line {i}" in out) is copied for i in range(5)), (options, out)

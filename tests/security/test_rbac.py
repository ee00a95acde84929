"""Least privilege, for real: the shipped Role (``airflow_trainjob/rbac.yaml``) is exactly what the
provider needs, for the ``kubeflow.org/v1`` kinds and for Kubeflow Trainer v2's TrainJobs; its optional ClusterRole
reads ClusterTrainingRuntimes only. Everything here authenticates with a ServiceAccount token bound only to that Role
(and, where said, the ClusterRole), on the RBAC-enabled local apiserver, through an ordinary Airflow ``kubernetes``
connection."""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import (
    GROUP,
    JOB_KINDS,
    LABEL_JOB_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINJOB_PLURAL,
    VERSION,
)
from airflow_trainjob.domain.family import Prerequisite
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.exceptions import (
    JobDeletedError,
    JobNotOwnedError,
    KubernetesAccessError,
    RuntimeNotFoundError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.families import JobResource
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob.triggers.training_job import DELETED, ERROR, FINISHED, TrainingJobTrigger
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import first_event
from tests.support.jobs import EXIT_1, OK, SLEEP, python_container, pytorch_specs, run_in_thread
from tests.support.least_privilege import (
    SERVICE_ACCOUNT,
    apply_cluster_rbac,
    apply_rbac,
    connection_uri,
    kubeconfig_with_token,
    rbac_documents,
    remove_cluster_binding,
    role_rules,
    token_of,
    wait_until_allowed,
)
from tests.support.report import record

_JOB_VERBS = ("create", "get", "list", "watch", "delete", "patch")
#: Every (API group, resource, verb) the provider's calls make, and why (the audit of hooks/,
#: operators/, sensors/, triggers/, links/, watching/lead_log_follower.py, verdict.py). The Role must be exactly this.
NEEDED = {
    **{("kubeflow.org", kind.plural, "create"): "start the job" for kind in JOB_KINDS.values()},
    **{("kubeflow.org", kind.plural, "get"): "follow it, attach, ownership checks" for kind in JOB_KINDS.values()},
    **{("kubeflow.org", kind.plural, "list"): "the trigger's list before its watch" for kind in JOB_KINDS.values()},
    **{("kubeflow.org", kind.plural, "watch"): "the trigger's watch" for kind in JOB_KINDS.values()},
    **{("kubeflow.org", kind.plural, "delete"): "on_finish, timeouts, on_kill" for kind in JOB_KINDS.values()},
    **{("kubeflow.org", kind.plural, "patch"): "a kept job's held runPolicy given back" for kind in JOB_KINDS.values()},
    ("", "pods", "list"): "replica states, exit codes, the lead replica",
    ("", "pods", "watch"): "the synchronous wait's pod watch (restarts, the lead replica starting)",
    ("", "pods", "delete"): "cleanPodPolicy",
    ("", "pods/log", "get"): "the lead replica's log, failed replicas' tails",
    ("", "events", "list"): "recent events in failure and timeout messages",
    **{(TRAINER_GROUP, TRAINJOB_PLURAL, verb): f"TrainJobs: as {verb} on the v1 kinds" for verb in _JOB_VERBS},
    (TRAINER_GROUP, "trainingruntimes", "get"): "a TrainJob's TrainingRuntime read before its create",
}
#: The optional ClusterRole's grants: a ClusterTrainingRuntime (cluster-scoped) read before a TrainJob's create.
NEEDED_CLUSTER_WIDE = {(TRAINER_GROUP, "clustertrainingruntimes", "get"): "a TrainJob's ClusterTrainingRuntime"}


def granted(rules) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


# ---- the Role itself ---------------------------------------------------------------------------


def test_role_grants_exactly_what_the_provider_calls():
    role, binding, cluster_role, cluster_binding = rbac_documents()
    assert role["kind"] == "Role" and binding["kind"] == "RoleBinding"  # namespaced, nothing cluster-wide
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    rules = granted(role["rules"])
    assert not any("*" in part for triple in rules for part in triple)
    assert rules == set(NEEDED)
    # The optional cluster-wide part reads ClusterTrainingRuntimes, and nothing else.
    assert cluster_role["kind"] == "ClusterRole" and cluster_binding["kind"] == "ClusterRoleBinding"
    assert cluster_binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": cluster_role["metadata"]["name"],
    }
    assert granted(cluster_role["rules"]) == set(NEEDED_CLUSTER_WIDE)
    record("rbac_role", rules=len(role["rules"]), grants=len(rules), beyond_needed=len(rules - set(NEEDED)))


def test_readme_shows_the_shipped_file_verbatim():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    shipped = (Path(__file__).parents[2] / "airflow_trainjob" / "rbac.yaml").read_text()
    blocks = re.findall(r"<!-- rbac.yaml[^\n]*-->\n```yaml\n(.*?)```\n", readme, flags=re.S)
    assert blocks == [shipped]


# ---- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def sa_client(service_account_api_client):
    """The ServiceAccount the Role is bound to (no bindings yet), as an ApiClient with its token."""
    return service_account_api_client(SERVICE_ACCOUNT)


@pytest.fixture
def least_privilege_conn(local_cluster, namespace, sa_client, kube_api_client, tmp_path, monkeypatch) -> str:
    """``kubernetes_default`` authenticates with the ServiceAccount's token only (a kubeconfig with
    the token, the cluster CA and server); the shipped Role is bound to it in the test's namespace."""
    apply_rbac(kube_api_client, namespace)
    wait_until_allowed(sa_client, namespace)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig_with_token(local_cluster, token_of(sa_client), namespace)))
    path.chmod(0o600)
    monkeypatch.setenv(
        "AIRFLOW_CONN_KUBERNETES_DEFAULT", connection_uri({"kube_config_path": str(path), "namespace": namespace})
    )
    return "kubernetes_default"


@pytest.fixture
def other_namespace(core_v1):
    """A second namespace, where the ServiceAccount has no binding."""
    from kubernetes import client

    from airflow_trainjob_local.testing.plugin import TEST_NAMESPACE_LABEL

    name = f"t-other-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels={TEST_NAMESPACE_LABEL: "true"}))
    )
    yield name
    core_v1.delete_namespace(name)


def make(replica_specs, **kwargs) -> TrainingJobOperator:
    kwargs.setdefault("poll_interval", 0.5)
    return TrainingJobOperator(task_id="train", kind="PyTorchJob", replica_specs=replica_specs, **kwargs)


def jobs(custom_objects, namespace):
    return custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs")["items"]


def live_pods(core_v1, namespace, job_name):
    return [
        p
        for p in core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOB_NAME}={job_name}").items
        if p.metadata.deletion_timestamp is None
    ]


def running(custom_objects, namespace):
    items = jobs(custom_objects, namespace)
    return bool(items) and any(
        c["type"] == "Running" and c["status"] == "True" for c in (items[0].get("status") or {}).get("conditions") or []
    )


def foreign_job(name: str, code: str = SLEEP) -> dict:
    """A job of the same name that belongs to someone else (no task-instance labels)."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "labels": {"team": "other"}},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "All"},
            "pytorchReplicaSpecs": {"Master": {"template": {"spec": {"containers": [python_container(code)]}}}},
        },
    }


def create_foreign_job_once_the_name_is_free(custom_objects, namespace, name):
    """Create someone else's job named ``name`` as soon as the deleted one of that name is gone."""

    def created():
        try:
            return custom_objects.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "pytorchjobs", foreign_job(name)
            )
        except ApiException as e:
            if e.status == 409:
                return None
            raise

    return wait_for(created, what="the foreign same-named job created")


# ---- the lifecycle with only the Role ----------------------------------------------------------


@pytest.mark.usefixtures("least_privilege_conn")
def test_synchronous_success_create_wait_logs_cleanup(ti, namespace, custom_objects, core_v1, capfd):
    operator = make(
        pytorch_specs("import time; time.sleep(2)\n" + OK, OK, workers=1), run_policy={"cleanPodPolicy": "All"}
    )
    summary = operator.execute({"ti": ti})
    assert summary["conditions"][-1]["type"] == "Succeeded"
    record("rbac", mode="sync", step="create + wait to Succeeded", passed=True)
    assert "[Master-0] hello from rank 0 of 2" in capfd.readouterr().out
    record("rbac", mode="sync", step="lead log into the task log", passed=True)
    assert jobs(custom_objects, namespace) == []
    wait_for(lambda: live_pods(core_v1, namespace, summary["name"]) == [], what="pods cleaned")
    record("rbac", mode="sync", step="cleanup: cleanPodPolicy All + delete_succeeded_job", passed=True)


def replicas(kind: str, *types: str) -> dict:
    container = python_container("print('hello from the lead replica')", name=JOB_KINDS[kind].default_container)
    return {t: {"replicas": 1, "template": {"spec": {"containers": [dict(container)]}}} for t in types}


@pytest.mark.parametrize(
    ("kind", "types"),
    [
        ("TFJob", ("Worker",)),
        ("MPIJob", ("Launcher", "Worker")),
        ("XGBoostJob", ("Master",)),
        ("PaddleJob", ("Master",)),
        ("JAXJob", ("Worker",)),
    ],
)
@pytest.mark.usefixtures("least_privilege_conn")
def test_every_other_kind_runs_with_the_role(kind, types, ti, namespace, custom_objects, capfd):
    operator = TrainingJobOperator(task_id="train", kind=kind, replica_specs=replicas(kind, *types), poll_interval=0.5)
    summary = operator.execute({"ti": ti})
    assert summary["kind"] == kind and summary["conditions"][-1]["type"] == "Succeeded"
    assert "hello from the lead replica" in capfd.readouterr().out
    plural = JOB_KINDS[kind].plural
    assert custom_objects.list_namespaced_custom_object(GROUP, VERSION, namespace, plural)["items"] == []
    record("rbac", mode="sync", step=f"{kind}: create, wait, logs, cleanup", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_synchronous_failure_quotes_logs_and_events_keeps_the_job(ti, namespace, custom_objects, core_v1):
    # cleanPodPolicy Running: the still-running Worker goes, the failed Master stays (its log is quoted).
    operator = make(
        pytorch_specs(EXIT_1, SLEEP, workers=1), run_policy={"cleanPodPolicy": "Running"}, on_finish="keep_job"
    )
    with pytest.raises(AirflowFailException) as raised:
        operator.execute({"ti": ti})
    message = str(raised.value)
    assert "exit code 1" in message and "| bad input" in message and "Recent events:" in message
    record("rbac", mode="sync", step="failure verdict with log tail and events", passed=True)
    (kept,) = jobs(custom_objects, namespace)
    assert kept["metadata"]["name"] == ti.xcom["job_name"]
    wait_for(
        lambda: (
            [p.metadata.labels[LABEL_REPLICA_TYPE] for p in live_pods(core_v1, namespace, ti.xcom["job_name"])]
            == ["master"]
        ),
        what="only the failed Master's pod left",
    )
    record("rbac", mode="sync", step="cleanup: cleanPodPolicy Running + keep_job", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_synchronous_on_kill_deletes_the_running_job(ti, namespace, custom_objects):
    operator = make(pytorch_specs(SLEEP, workers=1))
    thread, outcome = run_in_thread(operator, {"ti": ti})
    wait_for(lambda: running(custom_objects, namespace), what="job running")
    operator.on_kill()
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="job deleted by on_kill")
    thread.join(30)
    assert isinstance(outcome.get("error"), TrainingJobStoppedError)
    record("rbac", mode="sync", step="on_kill deletes the running job", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_deferred_success_create_wait_logs_cleanup(ti, namespace, custom_objects, capfd):
    operator = make(pytorch_specs(OK, workers=1), deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    record("rbac", mode="deferred", step="create + defer", passed=True)
    event = first_event(deferred.value.trigger)
    assert event["outcome"] == FINISHED
    record("rbac", mode="deferred", step="trigger waits to Succeeded", passed=True)
    summary = operator.execute_complete({"ti": ti}, event)
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert "hello from rank 0 of 2" in capfd.readouterr().out
    record("rbac", mode="deferred", step="lead log quoted into the task log", passed=True)
    assert jobs(custom_objects, namespace) == []
    record("rbac", mode="deferred", step="cleanup: delete_succeeded_job", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_deferred_failure_and_on_kill(ti, namespace, custom_objects):
    failing = make(pytorch_specs(EXIT_1, workers=0), deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        failing.execute({"ti": ti})
    event = first_event(deferred.value.trigger)
    with pytest.raises(AirflowFailException) as raised:
        failing.execute_complete({"ti": ti}, event)
    assert "exit code 1" in str(raised.value) and "| bad input" in str(raised.value)
    record("rbac", mode="deferred", step="failure verdict with log tail and events", passed=True)

    from tests.support.jobs import TaskInstanceStandIn

    other_ti = TaskInstanceStandIn(task_id="train2")
    sleeper = TrainingJobOperator(
        task_id="train2", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    with pytest.raises(TaskDeferred) as deferred:
        sleeper.execute({"ti": other_ti})
    asyncio.run(deferred.value.trigger.on_kill())
    wait_for(
        lambda: [j["metadata"]["name"] for j in jobs(custom_objects, namespace)] == [ti.xcom["job_name"]],
        what="the killed deferred task's job deleted, the failed one kept",
    )
    record("rbac", mode="deferred", step="on_kill (trigger) deletes the running job", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_sensor_poke_and_deferred_with_the_role(namespace, custom_objects):
    manifest = build_manifest(
        spec=TrainingJobSpec.parse("PyTorchJob", pytorch_specs(OK, workers=0)),
        name="made-elsewhere",
        namespace=namespace,
    )
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", manifest)
    sensor = TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="made-elsewhere")
    wait_for(lambda: sensor.poke({}), what="sensor success")
    record("rbac", mode="sync", step="sensor poke", passed=True)
    deferrable = TrainingJobSensor(
        task_id="watch", kind="PyTorchJob", job_name="made-elsewhere", deferrable=True, timeout=60
    )
    with pytest.raises(TaskDeferred) as deferred:
        deferrable.execute({})
    assert first_event(deferred.value.trigger)["outcome"] == FINISHED
    record("rbac", mode="deferred", step="sensor trigger", passed=True)


# ---- TrainJobs with the Role -------------------------------------------------------------------

SAY_NODE = "import os; print('hello from node', os.environ['JOB_COMPLETION_INDEX'])"


def trainjob(code: str = SAY_NODE, runtime: str = "torch-distributed", **kwargs) -> TrainJobOperator:
    kwargs.setdefault("poll_interval", 0.5)
    trainer = {"numNodes": 1, "command": [sys.executable, "-c", code]}
    return TrainJobOperator(task_id="train", runtime=runtime, trainer=trainer, **kwargs)


def trainjobs(custom_objects, namespace):
    return custom_objects.list_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL)[
        "items"
    ]


@pytest.fixture
def runtime_reader(least_privilege_conn, kube_api_client, namespace, sa_client):
    """The optional ClusterRole bound to the ServiceAccount too (for this test's namespace's account)."""
    from kubernetes import client

    binding = apply_cluster_rbac(kube_api_client, namespace)

    def reads() -> bool:
        try:
            client.CustomObjectsApi(sa_client).get_cluster_custom_object(
                TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", "torch-distributed"
            )
        except ApiException as e:
            if e.status == 403:
                return False
            raise
        return True

    wait_for(reads, timeout=30, what="the ClusterRole to take effect")
    yield
    remove_cluster_binding(kube_api_client, binding)


@pytest.mark.usefixtures("least_privilege_conn")
def test_trainjob_synchronous_with_the_role_alone(ti, namespace, custom_objects, core_v1, capfd, caplog):
    # The Role alone: the ClusterTrainingRuntime read is refused (no ClusterRole), which does not stop the TrainJob.
    summary = trainjob().execute({"ti": ti})
    assert summary["kind"] == "TrainJob" and summary["conditions"][-1]["type"] == "Complete"
    out, err = capfd.readouterr()
    assert "hello from node 0" in out
    said = out + err + caplog.text
    assert "Could not check that ClusterTrainingRuntime torch-distributed exists (RBAC does not allow" in said
    assert trainjobs(custom_objects, namespace) == []
    record("rbac", mode="sync", step="TrainJob: create, wait, node 0's log, cleanup (Role alone)", passed=True)


@pytest.mark.usefixtures("runtime_reader")
def test_trainjob_deferred_and_on_kill_with_the_role_and_clusterrole(ti, namespace, custom_objects, capfd, caplog):
    operator = trainjob(deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    out, err = capfd.readouterr()
    assert "Created TrainJob" in out + err + caplog.text
    assert "Could not check" not in out + err + caplog.text  # the ClusterRole reads the runtime
    event = first_event(deferred.value.trigger)
    assert event["outcome"] == FINISHED
    summary = operator.execute_complete({"ti": ti}, event)
    assert summary["conditions"][-1]["type"] == "Complete"
    assert trainjobs(custom_objects, namespace) == []
    record("rbac", mode="deferred", step="TrainJob: create, trigger to Complete, cleanup", passed=True)

    from tests.support.jobs import TaskInstanceStandIn

    sleeper = TrainJobOperator(
        task_id="train2",
        runtime="torch-distributed",
        trainer={"numNodes": 1, "command": [sys.executable, "-c", SLEEP]},
        deferrable=True,
    )
    with pytest.raises(TaskDeferred) as deferred:
        sleeper.execute({"ti": TaskInstanceStandIn(task_id="train2")})
    asyncio.run(deferred.value.trigger.on_kill())
    wait_for(lambda: trainjobs(custom_objects, namespace) == [], what="the killed deferred task's TrainJob deleted")
    record("rbac", mode="deferred", step="TrainJob: on_kill (trigger) deletes it", passed=True)


@pytest.mark.usefixtures("runtime_reader")
def test_trainjob_on_a_missing_runtime_fails_at_once(ti, namespace, custom_objects):
    with pytest.raises(RuntimeNotFoundError) as raised:
        trainjob(runtime="no-such-runtime").execute({"ti": ti})
    assert isinstance(raised.value, AirflowFailException)  # not retried: the name is the task's
    assert str(raised.value) == (
        f'TrainJob {namespace}/{ti.xcom["job_name"]} names ClusterTrainingRuntime "no-such-runtime", which does '
        "not exist (404 NotFound to get clustertrainingruntimes.trainer.kubeflow.org no-such-runtime): name one "
        "that exists (kubectl get clustertrainingruntimes) or create it; nothing was created"
    )
    assert trainjobs(custom_objects, namespace) == []
    record(
        "rbac", mode="sync", step="TrainJob on a missing ClusterTrainingRuntime: refused, nothing created", passed=True
    )


@pytest.mark.usefixtures("least_privilege_conn")
def test_trainjob_on_a_missing_runtime_with_the_role_alone_ends_at_its_deadline_quoting_the_trainer(
    ti, namespace, custom_objects
):
    # The runtime cannot be read (no ClusterRole): the TrainJob is created, the trainer only warns and retries; the
    # deadline's message quotes its warning, and the TrainJob is deleted.
    with pytest.raises(TrainingJobTimeoutError) as raised:
        trainjob(runtime="no-such-runtime", timeout=8).execute({"ti": ti})
    message = str(raised.value)
    assert "timeout of 8 s passed" in message and "TrainJobResourcesCreationFailed" in message, message
    assert "no-such-runtime" in message, message
    wait_for(lambda: trainjobs(custom_objects, namespace) == [], what="the TrainJob deleted at the deadline")
    record(
        "rbac", mode="sync", step="TrainJob on a missing runtime, Role alone: deadline quotes the trainer", passed=True
    )


# ---- out of reach: another namespace -----------------------------------------------------------


@pytest.mark.usefixtures("least_privilege_conn")
def test_a_job_in_another_namespace_is_out_of_reach(ti, namespace, other_namespace, custom_objects):
    theirs = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, other_namespace, "pytorchjobs", foreign_job("theirs")
    )
    with pytest.raises(KubernetesAccessError) as raised:
        make(pytorch_specs(OK, workers=0), namespace=other_namespace).execute({"ti": ti})
    message = str(raised.value)
    assert "403" in message and f'namespace "{other_namespace}"' in message and "create a training job" in message
    with pytest.raises(KubernetesAccessError):
        TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="theirs", namespace=other_namespace).poke({})
    hook = TrainingJobHook()
    with pytest.raises(KubernetesAccessError):
        hook.delete_job("PyTorchJob", "theirs", other_namespace)
    with pytest.raises(KubernetesAccessError):
        hook.list_job_pods("theirs", other_namespace, kind="PyTorchJob")
    trigger = TrainingJobTrigger(
        kind="PyTorchJob",
        name="theirs",
        namespace=other_namespace,
        owner_labels=dict(TaskInstanceIdentity.from_context({"ti": ti}).labels()),
    )
    event = first_event(trigger)
    assert event["outcome"] == ERROR and "403" in event["message"] and event["job"] is None
    with pytest.raises(KubernetesAccessError) as refused:  # one line naming verb and resource, no headers
        asyncio.run(trigger.on_kill())
    assert refused.value.status == 403 and "to get pytorchjobs.kubeflow.org in namespace" in str(refused.value)
    assert "HTTPHeaderDict" not in str(refused.value) and refused.value.__cause__ is None
    (still,) = jobs(custom_objects, other_namespace)
    assert still["metadata"]["uid"] == theirs["metadata"]["uid"] and "deletionTimestamp" not in still["metadata"]
    assert jobs(custom_objects, namespace) == []  # nothing was created in our own namespace either
    record(
        "rbac",
        mode="sync+deferred",
        step="another namespace: 403 for create, poke, delete, list, watch, on_kill; untouched",
        passed=True,
    )


# ---- cleanup touches only this task instance's objects, even when names collide ----------------


@pytest.mark.usefixtures("least_privilege_conn")
def test_foreign_job_with_the_generated_name_is_refused_and_untouched(ti, namespace, custom_objects, core_v1):
    operator = make(pytorch_specs(OK, workers=0), run_policy={"cleanPodPolicy": "All"}, on_finish="delete_job")
    name = operator.build_job({"ti": ti}, namespace)["metadata"]["name"]  # the name the task will use
    created = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "pytorchjobs", foreign_job(name)
    )
    wait_for(lambda: running(custom_objects, namespace), what="the foreign job running")
    before = {p.metadata.uid for p in live_pods(core_v1, namespace, name)}
    with pytest.raises(JobNotOwnedError):
        operator.execute({"ti": ti})
    operator.on_kill()  # and a kill after the refusal touches nothing either
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == created["metadata"]["uid"] and "deletionTimestamp" not in still["metadata"]
    assert still["metadata"]["labels"] == {"team": "other"}
    assert before and {p.metadata.uid for p in live_pods(core_v1, namespace, name)} == before
    record("rbac", mode="sync", step="foreign job with the same name: refused, job and pods untouched", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_foreign_pods_with_the_jobs_label_and_pod_names_survive_cleanup(ti, namespace, custom_objects, core_v1):
    from kubernetes import client

    operator = make(pytorch_specs(OK, workers=0), run_policy={"cleanPodPolicy": "All"}, on_finish="delete_job")
    name = operator.build_job({"ti": ti}, namespace)["metadata"]["name"]
    # Pods named as the operator would name this job's workers, labelled as its pods, but not owned by it;
    # bound to a node that does not exist, so nothing runs them.
    foreign = []
    for index in range(2):
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(
                name=f"{name}-worker-{index}",
                labels={LABEL_JOB_NAME: name, LABEL_REPLICA_TYPE: "worker", LABEL_REPLICA_INDEX: str(index)},
            ),
            spec=client.V1PodSpec(node_name="nowhere", containers=[client.V1Container(name="pytorch", image="none")]),
        )
        foreign.append(core_v1.create_namespaced_pod(namespace, pod).metadata.uid)
    summary = operator.execute({"ti": ti})
    assert summary["conditions"][-1]["type"] == "Succeeded"
    assert jobs(custom_objects, namespace) == []
    wait_for(
        lambda: {p.metadata.uid for p in live_pods(core_v1, namespace, name)} == set(foreign),
        what="only the foreign pods left",
    )
    record("rbac", mode="sync", step="foreign pods with the job's label and pod names: not deleted", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_job_replaced_by_a_foreign_one_mid_run_is_not_cleaned_up(ti, namespace, custom_objects):
    operator = make(pytorch_specs(SLEEP, workers=0), on_finish="delete_job")
    thread, outcome = run_in_thread(operator, {"ti": ti})
    wait_for(lambda: running(custom_objects, namespace), what="job running")
    name = ti.xcom["job_name"]
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
    created = create_foreign_job_once_the_name_is_free(custom_objects, namespace, name)
    thread.join(30)
    assert isinstance(outcome.get("error"), JobDeletedError)
    operator.on_kill()
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == created["metadata"]["uid"] and "deletionTimestamp" not in still["metadata"]
    record("rbac", mode="sync", step="same-named foreign job after a deletion: not cleaned up", passed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_deferred_on_kill_leaves_a_foreign_job_with_the_same_name(ti, namespace, custom_objects):
    operator = make(pytorch_specs(SLEEP, workers=0), deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    name = ti.xcom["job_name"]
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
    created = create_foreign_job_once_the_name_is_free(custom_objects, namespace, name)
    trigger = deferred.value.trigger
    assert first_event(trigger)["outcome"] == DELETED
    asyncio.run(trigger.on_kill())
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == created["metadata"]["uid"] and "deletionTimestamp" not in still["metadata"]
    record("rbac", mode="deferred", step="same-named foreign job: trigger on_kill leaves it", passed=True)


# ---- every verb of the Role is needed ------------------------------------------------------------


def _probe(verb_key, namespace, custom_objects):
    """Run the provider's step that needs ``verb_key``; return the error text if the API refused it."""
    _group, resource, verb = verb_key
    hook = TrainingJobHook()
    if (resource, verb) == ("pytorchjobs", "create"):
        spec = TrainingJobSpec.parse("PyTorchJob", pytorch_specs(OK, workers=0))
        call = lambda: hook.create_job(
            build_manifest(spec=spec, name=f"probe-{uuid.uuid4().hex[:6]}", namespace=namespace)
        )
    elif (resource, verb) == ("pytorchjobs", "get"):
        call = lambda: hook.get_job("PyTorchJob", "absent", namespace)
    elif (resource, verb) == ("pytorchjobs", "delete"):
        call = lambda: hook.delete_job("PyTorchJob", "absent", namespace)
    elif (resource, verb) == ("pytorchjobs", "patch"):
        # A kept job's runPolicy given back at the end of the task.
        call = lambda: hook.patch_job("PyTorchJob", "absent", namespace, {"spec": {"runPolicy": {}}})
    elif (resource, verb) in (("pytorchjobs", "list"), ("pytorchjobs", "watch")):
        # The deferred wait: its stream lists the kind, then watches it; either refused ends the wait with an error.
        event = first_event(
            TrainingJobTrigger(
                kind="PyTorchJob", name="absent", namespace=namespace, wait_for_creation=True, timeout=6
            ),
            timeout=40,
        )
        return event["message"] if event["outcome"] == ERROR else None
    elif (resource, verb) == ("pods", "list"):
        call = lambda: hook.list_job_pods("absent", namespace, kind="PyTorchJob")
    elif (resource, verb) == ("pods", "watch"):
        # The synchronous wait's pod watch (job_watch.PodWatch); refused, the wait lists the pods every minute.
        try:
            watch = hook.core_v1_client.list_namespaced_pod(
                namespace, watch=True, timeout_seconds=1, _preload_content=False
            )
            watch.close()
        except ApiException as e:
            return f"{e.status} {e.reason}"
        return None
    elif (resource, verb) == ("pods", "delete"):
        call = lambda: hook.delete_pod("absent", namespace)
    elif (resource, verb) == ("pods/log", "get"):
        call = lambda: hook.read_pod_log("absent", namespace)
    elif (resource, verb) == ("events", "list"):
        call = lambda: hook.list_events(namespace, {"absent"})
    elif (resource, verb) == ("trainingruntimes", "get"):
        where = JobResource(TRAINER_GROUP, TRAINER_VERSION, "trainingruntimes")
        call = lambda: hook.get_prerequisite(Prerequisite(where, "TrainingRuntime", "absent", namespace, ""))
    else:
        raise AssertionError(f"no probe for {verb_key}")
    try:
        call()
    except KubernetesAccessError as e:
        return str(e)
    except ApiException as e:
        assert e.status == 404, e.status
    return None


#: One kind stands for the six: their rules are one rule (the same verbs on each plural); and for TrainJobs, whose rule
#: has the same verbs, used by the same steps (the TrainJob tests above run them with the Role).
_OTHER_PLURALS = ({j.plural for j in JOB_KINDS.values()} - {"pytorchjobs"}) | {TRAINJOB_PLURAL}
VERBS = sorted(k for k in NEEDED if k[1] not in _OTHER_PLURALS)


@pytest.mark.parametrize("verb_key", VERBS, ids=["/".join(filter(None, k)) for k in VERBS])
def test_each_verb_is_needed(verb_key, namespace, sa_client, kube_api_client, least_privilege_conn, custom_objects):
    group, resource, verb = verb_key
    without = []
    for rule in role_rules():
        if group in rule["apiGroups"] and resource in rule["resources"]:
            rule = {**rule, "verbs": [v for v in rule["verbs"] if v != verb]}
        if rule["verbs"]:
            without.append(rule)
    apply_rbac(kube_api_client, namespace, rules=without)
    wait_for(
        lambda: _probe(verb_key, namespace, custom_objects) is not None,
        timeout=30,
        what=f"the step needing {verb_key} to be refused once the verb is removed",
    )
    refused = _probe(verb_key, namespace, custom_objects)
    assert "403" in refused
    apply_rbac(kube_api_client, namespace)  # the shipped Role again: the same step passes
    wait_for(
        lambda: _probe(verb_key, namespace, custom_objects) is None,
        timeout=30,
        what=f"the step needing {verb_key} to pass with the shipped Role",
    )
    record("rbac_verbs", verb="/".join(filter(None, verb_key)), needed=True)


@pytest.mark.usefixtures("least_privilege_conn")
def test_killing_a_deferred_sensor_leaves_the_job_it_watches(namespace, custom_objects):
    """The sensor watches a job made elsewhere: marking the sensor task failed must not delete that job."""
    created = custom_objects.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "pytorchjobs", foreign_job("watched")
    )
    sensor = TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="watched", deferrable=True, timeout=60)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})
    asyncio.run(deferred.value.trigger.on_kill())
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == created["metadata"]["uid"] and "deletionTimestamp" not in still["metadata"]
    record("rbac", mode="deferred", step="killed deferrable sensor: the watched job is left", passed=True)

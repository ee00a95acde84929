"""The local training controller against a real kube-apiserver, without a kubelet: the tests play the kubelet
by writing pod statuses through the ``pods/status`` subresource, and read back what the controller did
(pods, services, job status, events) through the official client.

The controller under test runs in this process (:class:`Controller`); the cluster is private to this module
(Kubernetes only; ports base+40..base+43, clear of the shared fixtures' base..base+13), so no other controller
or kubelet touches its objects. One test runs the command line (``python -m airflow_trainjob_local.controller``)
as a subprocess.
Pure parts (conditions, policies, the work queue) have unit tests at the end.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.controller import policies
from airflow_trainjob_local.controller.controller import Controller
from airflow_trainjob_local.controller.spec import JobView
from airflow_trainjob_local.controller.status import update_conditions
from airflow_trainjob_local.controller.workqueue import WorkQueue
from airflow_trainjob_local.informer import Informer
from airflow_trainjob_local.kube import MERGE_PATCH, ApiException
from airflow_trainjob_local.testing import waiting

TIMEOUT = 30.0
#: A resync period no test waits for: what happens sooner was not caused by a resync.
RESYNC_FAR_AWAY = 600.0


# --- fixtures -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def private_cluster(kubernetes_only_cluster):
    """A Kubernetes-only cluster (no controller, no kubelet): the controllers under test are this module's own."""
    return kubernetes_only_cluster


@pytest.fixture(scope="module")
def api(private_cluster):
    api_client = private_cluster.api_client()
    yield api_client
    api_client.close()


@pytest.fixture(scope="module")
def core(api):
    from kubernetes import client

    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def custom(api):
    from kubernetes import client

    return client.CustomObjectsApi(api)


@pytest.fixture
def ns(core, request) -> Iterator[str]:
    from kubernetes import client

    name = f"ctl-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


@pytest.fixture
def controller(api) -> Iterator[Controller]:
    """The controller, started and synced; stopped after the test."""
    ctl = Controller(api, resync_seconds=5, workers=2)
    ctl.start()
    assert ctl.wait_synced(TIMEOUT), "the controller's watches never listed"
    yield ctl
    ctl.stop()


# --- helpers ----------------------------------------------------------------------------------------------


wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


def container(name: str = "pytorch", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "ignored", "command": ["python", "-c", "pass"], **extra}


def replica(replicas: int, restart_policy: str | None = None, name: str = "pytorch", **spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"replicas": replicas, "template": {"spec": {"containers": [container(name)], **spec}}}
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def job_manifest(kind: str, name: str, replicas: dict[str, Any], run_policy: dict[str, Any] | None = None, **spec: Any):
    k = c.JOB_KINDS[kind]
    body = {
        "apiVersion": c.API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": {k.replica_specs_key: replicas, **spec},
    }
    if run_policy:
        body["spec"]["runPolicy"] = run_policy
    return body


def create_job(custom, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    plural = c.JOB_KINDS[body["kind"]].plural
    return custom.create_namespaced_custom_object(c.GROUP, c.VERSION, ns, plural, body)


def get_job(custom, ns: str, kind: str, name: str) -> dict[str, Any]:
    return custom.get_namespaced_custom_object(c.GROUP, c.VERSION, ns, c.JOB_KINDS[kind].plural, name)


def job_reader(custom, ns: str, kind: str, name: str) -> Callable[[], dict[str, Any]]:
    return lambda: get_job(custom, ns, kind, name)


def condition(job: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((x for x in (job.get("status") or {}).get("conditions") or [] if x["type"] == ctype), None)


def is_true(job: dict[str, Any], ctype: str) -> bool:
    cond = condition(job, ctype)
    return cond is not None and cond["status"] == "True"


def pods(core, ns: str, job: str) -> dict[str, Any]:
    items = core.list_namespaced_pod(ns, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {p.metadata.name: p for p in items}


def services(core, ns: str, job: str) -> dict[str, Any]:
    items = core.list_namespaced_service(ns, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {s.metadata.name: s for s in items}


def wait_pods(core, ns: str, job: str, names: set[str]) -> dict[str, Any]:
    return wait_for(lambda: pods(core, ns, job), lambda p: set(p) == names, what=f"pods {sorted(names)}")


def env_of(pod, container_index: int = 0) -> dict[str, str]:
    return {e.name: e.value for e in pod.spec.containers[container_index].env or []}


def set_pod_status(
    core,
    ns: str,
    name: str,
    phase: str,
    *,
    exit_code: int | None = None,
    restart_count: int = 0,
    container_name: str = "pytorch",
) -> None:
    """Write a pod's status as a kubelet would (phase, and the container's state)."""
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}}
    elif phase == "Running":
        state = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    status = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": container_name,
                "ready": phase == "Running",
                "restartCount": restart_count,
                "image": "ignored",
                "imageID": "",
                "state": state,
            }
        ],
    }
    core.patch_namespaced_pod_status(name, ns, {"status": status}, _content_type=MERGE_PATCH)


def events(core, ns: str, name: str) -> list[Any]:
    return [e for e in core.list_namespaced_event(ns).items if e.involved_object.name == name]


def event_reasons(core, ns: str, name: str) -> set[str]:
    return {e.reason for e in events(core, ns, name)}


def ports_of(job: dict[str, Any]) -> dict[str, int]:
    return json.loads(job["metadata"]["annotations"][c.ANNOTATION_LOCAL_PORTS])


def pytorch_job(
    name: str,
    master_policy: str | None = "Never",
    worker_policy: str | None = "Never",
    workers: int = 2,
    run_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    replicas = {"Master": replica(1, master_policy), "Worker": replica(workers, worker_policy)}
    return job_manifest("PyTorchJob", name, replicas, run_policy)


# --- pods, services, labels, env ----------------------------------------------------------------------


def test_pytorch_job_gets_pods_and_headless_services_as_the_real_operator_makes_them(controller, core, custom, ns):
    created = create_job(custom, ns, pytorch_job("pt", master_policy="ExitCode", worker_policy=None))
    found = wait_pods(core, ns, "pt", {"pt-master-0", "pt-worker-0", "pt-worker-1"})
    svcs = wait_for(lambda: services(core, ns, "pt"), lambda s: len(s) == 3, what="three services")
    job = get_job(custom, ns, "PyTorchJob", "pt")
    ports = ports_of(job)

    assert set(ports) == {"master-0", "worker-0", "worker-1"}
    assert len(set(ports.values())) == 3, "every replica needs its own loopback port"
    for name, pod in found.items():
        rtype, index = name.split("-")[1], name.split("-")[2]
        assert pod.metadata.labels[c.LABEL_JOB_NAME] == "pt"
        assert pod.metadata.labels[c.LABEL_OPERATOR_NAME] == "pytorchjob-controller"
        assert pod.metadata.labels[c.LABEL_REPLICA_TYPE] == rtype
        assert pod.metadata.labels[c.LABEL_REPLICA_INDEX] == index
        assert (pod.metadata.labels.get(c.LABEL_JOB_ROLE) == "master") == (rtype == "master")
        (ref,) = pod.metadata.owner_references
        uid = created["metadata"]["uid"]
        assert (ref.api_version, ref.kind, ref.name, ref.uid) == (c.API_VERSION, "PyTorchJob", "pt", uid)
        assert ref.controller is True and ref.block_owner_deletion is True
        port = pod.spec.containers[0].ports[0]
        assert (port.name, port.container_port) == ("pytorchjob-port", ports[f"{rtype}-{index}"])
        svc = svcs[name]
        assert svc.spec.cluster_ip == "None"
        assert svc.spec.selector == {k: v for k, v in pod.metadata.labels.items() if k != c.LABEL_JOB_ROLE}
        assert [p.port for p in svc.spec.ports] == [ports[f"{rtype}-{index}"]]
        assert svc.metadata.owner_references[0].uid == created["metadata"]["uid"]

    # ExitCode becomes Never (the controller decides those restarts); unset becomes PyTorch's OnFailure.
    assert found["pt-master-0"].spec.restart_policy == "Never"
    assert found["pt-worker-1"].spec.restart_policy == "OnFailure"

    for name, rank in (("pt-master-0", "0"), ("pt-worker-0", "1"), ("pt-worker-1", "2")):
        env = env_of(found[name])
        assert env["MASTER_ADDR"] == "127.0.0.1"
        assert env["MASTER_PORT"] == str(ports["master-0"])
        assert env["WORLD_SIZE"] == "3"
        assert env["RANK"] == rank and env["PET_NODE_RANK"] == rank
        assert env["PET_NNODES"] == "3" and env["PET_NPROC_PER_NODE"] == "auto"
        assert env["PYTHONUNBUFFERED"] == "1"  # pytorch/envvar.go
        assert (env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == ("127.0.0.1", str(ports["master-0"]))

    wait_for(
        lambda: [e.reason for e in events(core, ns, "pt")],
        lambda r: r.count("SuccessfulCreatePod") == 3 and r.count("SuccessfulCreateService") == 3,
        what="3 SuccessfulCreatePod and 3 SuccessfulCreateService events",
    )
    created_event = next(e for e in events(core, ns, "pt") if e.reason == "SuccessfulCreatePod")
    assert created_event.involved_object.kind == "PyTorchJob"
    assert created_event.source.component == "pytorchjob-controller"


def test_pytorch_elastic_env_points_the_rendezvous_at_worker_0(controller, core, custom, ns):
    body = job_manifest(
        "PyTorchJob",
        "el",
        {"Worker": replica(2, "OnFailure")},
        elasticPolicy={
            "rdzvBackend": "c10d",
            "maxRestarts": 3,
            "rdzvId": "abc",
            "rdzvConf": [{"key": "timeout", "value": "60"}],
        },
    )
    create_job(custom, ns, body)
    found = wait_pods(core, ns, "el", {"el-worker-0", "el-worker-1"})
    ports = ports_of(get_job(custom, ns, "PyTorchJob", "el"))
    env = env_of(found["el-worker-1"])
    assert env["PET_RDZV_ENDPOINT"] == f"127.0.0.1:{ports['worker-0']}"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_NNODES"] == "2:2"  # min and max default to the worker replicas
    assert (env["PET_MAX_RESTARTS"], env["PET_RDZV_ID"], env["PET_RDZV_CONF"]) == ("3", "abc", "timeout=60")
    assert "MASTER_ADDR" not in env and "RANK" not in env  # no Master: torchrun decides


@pytest.mark.parametrize(
    ("kind", "replicas", "expected_pods", "check"),
    [
        pytest.param(
            "TFJob",
            {
                "Chief": replica(1, name="tensorflow"),
                "PS": replica(1, name="tensorflow"),
                "Worker": replica(2, name="tensorflow"),
                "Evaluator": replica(1, name="tensorflow"),
            },
            {"j-chief-0", "j-ps-0", "j-worker-0", "j-worker-1", "j-evaluator-0"},
            "tf",
            id="TFJob",
        ),
        pytest.param(
            "JAXJob", {"Worker": replica(3, name="jax")}, {"j-worker-0", "j-worker-1", "j-worker-2"}, "jax", id="JAXJob"
        ),
        pytest.param(
            "XGBoostJob",
            {"Master": replica(1, name="xgboost"), "Worker": replica(2, name="xgboost")},
            {"j-master-0", "j-worker-0", "j-worker-1"},
            "xgb",
            id="XGBoostJob",
        ),
        pytest.param(
            "PaddleJob",
            {"Master": replica(1, name="paddle"), "Worker": replica(2, name="paddle")},
            {"j-master-0", "j-worker-0", "j-worker-1"},
            "paddle",
            id="PaddleJob",
        ),
        pytest.param(
            "MPIJob",
            {
                "Launcher": replica(1, name="mpi"),
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "mpi", "image": "ignored"}]}}},
            },
            {"j-launcher", "j-worker-0", "j-worker-1"},
            "mpi",
            id="MPIJob",
        ),
    ],
)
def test_each_kind_gets_its_pods_roles_and_environment(
    controller, core, custom, ns, kind, replicas, expected_pods, check
):
    create_job(custom, ns, job_manifest(kind, "j", replicas))
    found = wait_pods(core, ns, "j", expected_pods)
    ports = ports_of(get_job(custom, ns, kind, "j"))
    roles = {n for n, p in found.items() if p.metadata.labels.get(c.LABEL_JOB_ROLE) == "master"}
    operator = found[sorted(found)[0]].metadata.labels[c.LABEL_OPERATOR_NAME]
    assert operator == c.JOB_KINDS[kind].controller_name

    if check == "tf":
        assert roles == {"j-chief-0"}
        config = json.loads(env_of(found["j-worker-1"])["TF_CONFIG"])
        assert config["task"] == {"type": "worker", "index": 1}
        assert config["environment"] == "cloud"
        assert config["cluster"] == {
            "chief": [f"127.0.0.1:{ports['chief-0']}"],
            "evaluator": [f"127.0.0.1:{ports['evaluator-0']}"],
            "ps": [f"127.0.0.1:{ports['ps-0']}"],
            "worker": [f"127.0.0.1:{ports['worker-0']}", f"127.0.0.1:{ports['worker-1']}"],
        }  # tensorflow.go genClusterSpec: every replica type, the evaluator too
        assert json.loads(env_of(found["j-evaluator-0"])["TF_CONFIG"])["task"] == {"type": "evaluator", "index": 0}
    elif check == "jax":
        assert roles == {"j-worker-0"}
        env = env_of(found["j-worker-2"])
        assert env["COORDINATOR_ADDRESS"] == "127.0.0.1"
        assert env["COORDINATOR_PORT"] == str(ports["worker-0"])
        assert (env["NUM_PROCESSES"], env["PROCESS_ID"]) == ("3", "2")
    elif check == "xgb":
        assert roles == {"j-master-0"}
        env = env_of(found["j-worker-1"])
        assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("127.0.0.1", str(ports["master-0"]))
        assert (env["WORLD_SIZE"], env["RANK"]) == ("3", "2")
        assert env["WORKER_PORT"] == str(ports["worker-0"])
        assert env["WORKER_ADDRS"] == "127.0.0.1,127.0.0.1"
    elif check == "paddle":
        assert roles == {"j-master-0"}
        master, worker = env_of(found["j-master-0"]), env_of(found["j-worker-0"])
        assert master["PADDLE_MASTER"] == worker["PADDLE_MASTER"] == f"127.0.0.1:{ports['master-0']}"
        assert (master["PADDLE_SERVER_NUM"], worker["PADDLE_TRAINER_NUM"]) == ("1", "1")
        assert (worker["PADDLE_NNODES"], worker["PADDLE_JOB_ID"]) == ("3", "j")
    else:  # MPI: launcher is <job>-launcher, the job's master; workers sleep unless told otherwise; no services
        assert roles == {"j-launcher"}
        assert found["j-worker-0"].spec.containers[0].command == ["sleep"]
        assert found["j-worker-0"].spec.containers[0].args == ["365d"]
        env = env_of(found["j-launcher"])
        assert env["OMPI_MCA_rmaps_base_oversubscribe"] == "1"
        assert env["I_MPI_HYDRA_BOOTSTRAP"] == "fork"
        time.sleep(1)
        assert services(core, ns, "j") == {}


# --- status ---------------------------------------------------------------------------------------------


def test_pytorch_conditions_follow_the_real_order_and_master_success_finishes_the_job(controller, core, custom, ns):
    create_job(custom, ns, pytorch_job("life"))
    wait_pods(core, ns, "life", {"life-master-0", "life-worker-0", "life-worker-1"})
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "life"), lambda j: is_true(j, "Created"), what="Created")
    assert condition(job, "Created")["reason"] == "PyTorchJobCreated"
    assert condition(job, "Created")["message"] == "PyTorchJob life is created."
    assert job["status"]["startTime"] and condition(job, "Running") is None

    for name in ("life-master-0", "life-worker-0", "life-worker-1"):
        set_pod_status(core, ns, name, "Running")
    job = wait_for(
        job_reader(custom, ns, "PyTorchJob", "life"),
        lambda j: is_true(j, "Running") and j["status"]["replicaStatuses"]["Worker"].get("active") == 2,
        what="Running with 2 active workers",
    )
    assert condition(job, "Running")["reason"] == "PyTorchJobRunning"
    assert condition(job, "Running")["message"] == "PyTorchJob life is running."
    assert job["status"]["replicaStatuses"]["Master"]["selector"] == (
        "training.kubeflow.org/job-name=life,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master"
    )

    set_pod_status(core, ns, "life-master-0", "Succeeded", exit_code=0)
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "life"), lambda j: is_true(j, "Succeeded"), what="Succeeded")
    assert [x["type"] for x in job["status"]["conditions"]] == ["Created", "Running", "Succeeded"]
    assert condition(job, "Running")["status"] == "False"
    assert condition(job, "Succeeded")["reason"] == "PyTorchJobSucceeded"
    assert condition(job, "Succeeded")["message"] == "PyTorchJob life is successfully completed."
    assert job["status"]["completionTime"] and job["status"]["lastReconcileTime"]
    # a succeeded job's still-active replicas are reported as succeeded (by the next reconcile, the finished
    # branch of ReconcileJobs: the one that set Succeeded may have written them as active)
    job = wait_for(
        job_reader(custom, ns, "PyTorchJob", "life"),
        lambda j: not j["status"]["replicaStatuses"]["Worker"].get("active"),
        what="no active worker",
    )
    assert job["status"]["replicaStatuses"]["Worker"] == {
        "succeeded": 2,
        "selector": job["status"]["replicaStatuses"]["Worker"]["selector"],
    }
    reasons = wait_for(lambda: event_reasons(core, ns, "life"), lambda r: "PyTorchJobSucceeded" in r, what="event")
    assert "ExitedWithCode" in reasons
    exited = next(e for e in events(core, ns, "life") if e.reason == "ExitedWithCode")
    assert exited.message == f"Pod: {ns}.life-master-0 exited with code 0"


def test_worker_failure_under_never_fails_the_job(controller, core, custom, ns):
    create_job(custom, ns, pytorch_job("nev"))
    wait_pods(core, ns, "nev", {"nev-master-0", "nev-worker-0", "nev-worker-1"})
    set_pod_status(core, ns, "nev-master-0", "Running")
    set_pod_status(core, ns, "nev-worker-1", "Failed", exit_code=1)
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "nev"), lambda j: is_true(j, "Failed"), what="Failed")
    assert condition(job, "Failed")["reason"] == "PyTorchJobFailed"
    assert condition(job, "Failed")["message"] == "PyTorchJob nev is failed because 1 Worker replica(s) failed."
    assert condition(job, "Running")["status"] == "False"
    assert job["status"]["completionTime"]
    assert "nev-worker-1" in pods(core, ns, "nev"), "Never: the failed pod stays (cleanPodPolicy None)"


def test_exit_code_policy_recreates_on_137_and_fails_on_1(controller, core, custom, ns):
    create_job(custom, ns, pytorch_job("ec", worker_policy="ExitCode"))
    found = wait_pods(core, ns, "ec", {"ec-master-0", "ec-worker-0", "ec-worker-1"})
    old_uid = found["ec-worker-0"].metadata.uid
    set_pod_status(core, ns, "ec-master-0", "Running")
    set_pod_status(core, ns, "ec-worker-0", "Failed", exit_code=137)

    def recreated(p):
        return "ec-worker-0" in p and p["ec-worker-0"].metadata.uid != old_uid

    new = wait_for(lambda: pods(core, ns, "ec"), recreated, what="worker 0 recreated")
    assert env_of(new["ec-worker-0"])["RANK"] == "1"
    job = get_job(custom, ns, "PyTorchJob", "ec")
    assert job["metadata"]["annotations"][c.ANNOTATION_LOCAL_RESTARTS] == "1"
    assert not is_true(job, "Failed")
    reasons = event_reasons(core, ns, "ec")
    assert {"PyTorchJobRestarting", "SuccessfulDeletePod", "ExitedWithCode"} <= reasons
    restarting = [e for e in events(core, ns, "ec") if e.reason == "PyTorchJobRestarting"]
    assert any(e.message == "job ec is restarting because Worker replica(s) failed." for e in restarting)
    assert all(e.type == "Warning" for e in restarting)

    set_pod_status(core, ns, "ec-worker-0", "Failed", exit_code=1)
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "ec"), lambda j: is_true(j, "Failed"), what="Failed")
    assert condition(job, "Failed")["message"] == 'job "ec" is failing because "Worker" replica(s) failed.'
    assert condition(job, "Failed")["reason"] == "PyTorchJobFailed"


def test_restarting_condition_is_written_while_a_pod_is_replaced(controller, core, custom, ns):
    # Worker 1 fails with 137 and nothing else changes: Master is Pending, so nothing sets Running over it.
    create_job(custom, ns, pytorch_job("rs", worker_policy="ExitCode"))
    wait_pods(core, ns, "rs", {"rs-master-0", "rs-worker-0", "rs-worker-1"})
    set_pod_status(core, ns, "rs-worker-1", "Failed", exit_code=137)
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "rs"), lambda j: is_true(j, "Restarting"), what="Restarting")
    assert condition(job, "Restarting")["reason"] == "PyTorchJobRestarting"


def test_backoff_limit_counts_container_restarts_and_fails_the_job(controller, core, custom, ns):
    create_job(custom, ns, pytorch_job("bo", worker_policy="OnFailure", run_policy={"backoffLimit": 2}))
    wait_pods(core, ns, "bo", {"bo-master-0", "bo-worker-0", "bo-worker-1"})
    set_pod_status(core, ns, "bo-master-0", "Running")
    set_pod_status(core, ns, "bo-worker-0", "Running", restart_count=1)
    time.sleep(2)
    assert not is_true(get_job(custom, ns, "PyTorchJob", "bo"), "Failed"), "1 restart is below the limit of 2"
    set_pod_status(core, ns, "bo-worker-0", "Running", restart_count=2)
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "bo"), lambda j: is_true(j, "Failed"), what="Failed")
    assert condition(job, "Failed")["reason"] == "PyTorchJobFailed"
    assert condition(job, "Failed")["message"] == "Job bo has failed because it has reached the specified backoff limit"
    # a job failed by a limit loses all its pods and services, whatever cleanPodPolicy says
    wait_for(lambda: pods(core, ns, "bo"), lambda p: not p, what="pods deleted")
    wait_for(lambda: services(core, ns, "bo"), lambda s: not s, what="services deleted")


def test_active_deadline_fails_the_job_and_deletes_its_pods(api, core, custom, ns):
    # Nothing but the deadline's own requeue can look at the job again in time: the resync is far longer.
    controller = Controller(api, resync_seconds=RESYNC_FAR_AWAY, workers=2)
    controller.start()
    try:
        assert controller.wait_synced(TIMEOUT), "the controller's watches never listed"
        create_job(custom, ns, pytorch_job("dl", run_policy={"activeDeadlineSeconds": 3}))
        wait_pods(core, ns, "dl", {"dl-master-0", "dl-worker-0", "dl-worker-1"})
        set_pod_status(core, ns, "dl-master-0", "Running")
        job = wait_for(job_reader(custom, ns, "PyTorchJob", "dl"), lambda j: is_true(j, "Failed"), what="Failed")
        assert condition(job, "Failed")["message"] == (
            "Job dl has failed because it was active longer than specified deadline"
        )
        start = dt.datetime.fromisoformat(job["status"]["startTime"].replace("Z", "+00:00"))
        done = dt.datetime.fromisoformat(job["status"]["completionTime"].replace("Z", "+00:00"))
        # At the deadline (3 s, 1 s of requeue slack, whole seconds), with room for a loaded machine; a resync
        # would come only after RESYNC_FAR_AWAY.
        assert 3 <= (done - start).total_seconds() <= 25
    finally:
        controller.stop()
    wait_for(lambda: pods(core, ns, "dl"), lambda p: not p, what="pods deleted")
    assert "PyTorchJobFailed" in event_reasons(core, ns, "dl")


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        ("All", set()),
        ("Running", {"cp-master-0", "cp-worker-0"}),
        ("None", {"cp-master-0", "cp-worker-0", "cp-worker-1"}),
        (None, {"cp-master-0", "cp-worker-0", "cp-worker-1"}),  # default: None
    ],
)
def test_clean_pod_policy_decides_which_pods_outlive_the_job(controller, core, custom, ns, policy, left):
    create_job(custom, ns, pytorch_job("cp", run_policy={"cleanPodPolicy": policy} if policy else None))
    wait_pods(core, ns, "cp", {"cp-master-0", "cp-worker-0", "cp-worker-1"})
    set_pod_status(core, ns, "cp-worker-0", "Succeeded", exit_code=0)
    set_pod_status(core, ns, "cp-worker-1", "Running")
    set_pod_status(core, ns, "cp-master-0", "Succeeded", exit_code=0)
    wait_for(job_reader(custom, ns, "PyTorchJob", "cp"), lambda j: is_true(j, "Succeeded"), what="Succeeded")
    wait_for(lambda: set(pods(core, ns, "cp")), lambda names: names == left, what=f"pods {sorted(left)}")
    time.sleep(1)
    assert set(pods(core, ns, "cp")) == left
    assert set(services(core, ns, "cp")) == left  # each deleted pod takes its service along


def test_ttl_seconds_after_finished_deletes_the_job(controller, core, custom, ns):
    create_job(custom, ns, pytorch_job("ttl", run_policy={"ttlSecondsAfterFinished": 2}))
    wait_pods(core, ns, "ttl", {"ttl-master-0", "ttl-worker-0", "ttl-worker-1"})
    set_pod_status(core, ns, "ttl-master-0", "Succeeded", exit_code=0)
    wait_for(job_reader(custom, ns, "PyTorchJob", "ttl"), lambda j: is_true(j, "Succeeded"), what="Succeeded")

    def gone() -> bool:
        try:
            get_job(custom, ns, "PyTorchJob", "ttl")
            return False
        except ApiException as exc:
            return exc.status == 404

    wait_for(gone, bool, what="job deleted by its TTL")


def test_min_available_holds_pods_until_enough_can_start(controller, core, custom, ns):
    """No Ready Node in this cluster: nothing can start, so nothing is created until a Node with room appears."""
    from kubernetes import client

    create_job(custom, ns, pytorch_job("ma", run_policy={"schedulingPolicy": {"minAvailable": 3}}))
    wait_for(lambda: event_reasons(core, ns, "ma"), lambda r: "MinAvailableNotMet" in r, what="MinAvailableNotMet")
    assert pods(core, ns, "ma") == {}

    node = f"node-{uuid.uuid4().hex[:6]}"
    core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=node)))
    try:
        # Room for 2 pods only: still not enough.
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "Test",
            "lastHeartbeatTime": "2024-01-01T00:00:00Z",
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }
        core.patch_node_status(
            node,
            {"status": {"conditions": [ready], "allocatable": {"pods": "2"}, "capacity": {"pods": "2"}}},
            _content_type=MERGE_PATCH,
        )
        time.sleep(4)
        assert pods(core, ns, "ma") == {}
        core.patch_node_status(
            node, {"status": {"allocatable": {"pods": "10"}, "capacity": {"pods": "10"}}}, _content_type=MERGE_PATCH
        )
        wait_pods(core, ns, "ma", {"ma-master-0", "ma-worker-0", "ma-worker-1"})
    finally:
        core.delete_node(node)


@pytest.mark.parametrize(
    ("kind", "replicas", "finish", "succeeded"),
    [
        # TFJob without chief: worker 0 exiting 0 is enough under the default successPolicy
        ("TFJob", {"Worker": replica(2, name="tensorflow")}, {"j-worker-0": 0}, True),
        ("JAXJob", {"Worker": replica(2, name="jax")}, {"j-worker-0": 0}, False),  # JAX needs all workers
        ("JAXJob", {"Worker": replica(2, name="jax")}, {"j-worker-0": 0, "j-worker-1": 0}, True),
        (
            "XGBoostJob",
            {"Master": replica(1, name="xgboost"), "Worker": replica(1, name="xgboost")},
            {"j-master-0": 0},
            True,
        ),
        ("PaddleJob", {"Worker": replica(2, name="paddle")}, {"j-worker-1": 0}, False),  # no master: all workers
        ("MPIJob", {"Launcher": replica(1, name="mpi"), "Worker": replica(1, name="mpi")}, {"j-launcher": 0}, True),
    ],
)
def test_each_kind_applies_its_success_rule(controller, core, custom, ns, kind, replicas, finish, succeeded):
    create_job(custom, ns, job_manifest(kind, "j", replicas))
    wait_for(lambda: pods(core, ns, "j"), lambda p: set(finish) <= set(p), what="pods")
    container_name = c.JOB_KINDS[kind].default_container
    for name, code in finish.items():
        set_pod_status(core, ns, name, "Succeeded", exit_code=code, container_name=container_name)
    if succeeded:
        job = wait_for(job_reader(custom, ns, kind, "j"), lambda j: is_true(j, "Succeeded"), what="Succeeded")
        assert condition(job, "Succeeded")["reason"] == f"{kind}Succeeded"
    else:
        time.sleep(3)
        job = get_job(custom, ns, kind, "j")
        assert not is_true(job, "Succeeded"), job["status"]["conditions"]


# --- robustness -----------------------------------------------------------------------------------------


def test_a_bad_job_is_reported_and_does_not_stop_the_controller(controller, core, custom, ns):
    bad = job_manifest("PyTorchJob", "bad", {"Master": {"replicas": 1, "template": {"spec": {"containers": []}}}})
    create_job(custom, ns, bad)
    create_job(custom, ns, pytorch_job("good", workers=1))
    wait_pods(core, ns, "good", {"good-master-0", "good-worker-0"})
    failed = wait_for(
        lambda: [e for e in events(core, ns, "bad") if e.reason == "PyTorchJobFailedValidation"], bool, what="event"
    )
    assert failed[0].type == "Warning" and "containers: Required value: must be specified" in failed[0].message
    job = wait_for(job_reader(custom, ns, "PyTorchJob", "bad"), lambda j: is_true(j, "Failed"), what="Failed")
    assert condition(job, "Failed")["reason"] == "PyTorchJobFailedValidation"
    assert pods(core, ns, "bad") == {}


def test_ports_and_pods_survive_a_controller_restart(api, core, custom, ns):
    first = Controller(api, resync_seconds=5)
    first.start()
    try:
        create_job(custom, ns, pytorch_job("rst", workers=1))
        before = wait_pods(core, ns, "rst", {"rst-master-0", "rst-worker-0"})
        ports = ports_of(get_job(custom, ns, "PyTorchJob", "rst"))
    finally:
        first.stop()
    second = Controller(api, resync_seconds=5)
    second.start()
    try:
        assert second.wait_synced(TIMEOUT)
        time.sleep(1)
        after = pods(core, ns, "rst")
        assert {n: p.metadata.uid for n, p in after.items()} == {n: p.metadata.uid for n, p in before.items()}
        core.delete_namespaced_pod("rst-worker-0", ns)
        old_uid = before["rst-worker-0"].metadata.uid
        new = wait_for(
            lambda: pods(core, ns, "rst"),
            lambda p: "rst-worker-0" in p and p["rst-worker-0"].metadata.uid != old_uid,
            what="worker recreated",
        )
        assert ports_of(get_job(custom, ns, "PyTorchJob", "rst")) == ports
        assert env_of(new["rst-worker-0"])["MASTER_PORT"] == str(ports["master-0"])
        assert new["rst-worker-0"].spec.containers[0].ports[0].container_port == ports["worker-0"]
    finally:
        second.stop()


def test_deleted_job_pods_are_removed_by_the_controller_too(controller, core, custom, ns):
    create_job(custom, ns, pytorch_job("del", workers=1))
    wait_pods(core, ns, "del", {"del-master-0", "del-worker-0"})
    custom.delete_namespaced_custom_object(c.GROUP, c.VERSION, ns, "pytorchjobs", "del")
    wait_for(lambda: pods(core, ns, "del"), lambda p: not p, what="pods gone")
    wait_for(lambda: services(core, ns, "del"), lambda s: not s, what="services gone")


def test_watch_from_a_too_old_resource_version_asks_for_a_relist(api, custom):
    """The apiserver answers a watch from a resourceVersion older than its window with 410 Gone (for the job
    CRDs, whose watch cache starts when they are installed); the loop must relist, not fail."""
    seen: list[str] = []
    watcher = Informer(
        "pytorchjobs",
        functools.partial(custom.list_cluster_custom_object, c.GROUP, c.VERSION, "pytorchjobs"),
        on_event=lambda kind, obj: seen.append(kind),
    )
    assert watcher.watch_from("1", timeout=5) is None
    assert seen == []


def test_command_line_runs_until_sigterm(private_cluster, core, custom, ns, tmp_path: Path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "airflow_trainjob_local.controller",
            "--kubeconfig",
            str(private_cluster.kubeconfig),
            "--resync-seconds",
            "5",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        create_job(custom, ns, pytorch_job("cli", workers=1))
        wait_pods(core, ns, "cli", {"cli-master-0", "cli-worker-0"})
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("the controller did not exit within 20s of SIGTERM")
    assert proc.returncode == 0, err
    assert "received SIGTERM, stopping" in err
    assert "Bearer" not in err and "token" not in err.lower()


def test_command_line_reports_a_missing_kubeconfig(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "airflow_trainjob_local.controller", "--kubeconfig", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "cannot load kubeconfig" in proc.stderr


# --- pure parts -----------------------------------------------------------------------------------------


def _status(*conds: tuple[str, str, str]) -> dict[str, Any]:
    return {"conditions": [{"type": t, "status": s, "reason": r, "message": r} for t, s, r in conds]}


def test_conditions_running_and_restarting_replace_each_other_and_failed_is_final():
    st = _status(("Created", "True", "PyTorchJobCreated"), ("Running", "True", "PyTorchJobRunning"))
    update_conditions(st, "Restarting", "True", "PyTorchJobRestarting", "m", "T1")
    assert [x["type"] for x in st["conditions"]] == ["Created", "Restarting"]
    update_conditions(st, "Running", "True", "PyTorchJobRunning", "m", "T2")
    assert [x["type"] for x in st["conditions"]] == ["Created", "Running"]
    update_conditions(st, "Failed", "True", "PyTorchJobFailed", "m", "T3")
    assert [(x["type"], x["status"]) for x in st["conditions"]] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Failed", "True"),
    ]
    update_conditions(st, "Succeeded", "True", "PyTorchJobSucceeded", "m", "T4")
    assert [x["type"] for x in st["conditions"]] == ["Created", "Running", "Failed"], "nothing changes after Failed"


def test_conditions_keep_transition_time_when_only_the_reason_changes():
    st = {
        "conditions": [
            {
                "type": "Running",
                "status": "True",
                "reason": "A",
                "message": "",
                "lastTransitionTime": "T0",
                "lastUpdateTime": "T0",
            }
        ]
    }
    update_conditions(st, "Running", "True", "A", "new message", "T1")
    assert st["conditions"][0]["lastUpdateTime"] == "T0", "same status and reason: no-op"
    update_conditions(st, "Running", "True", "B", "m", "T2")
    assert (st["conditions"][0]["lastTransitionTime"], st["conditions"][0]["lastUpdateTime"]) == ("T0", "T2")


@pytest.mark.parametrize(
    ("policy", "code", "action"),
    [
        ("ExitCode", 1, policies.PodAction.FAIL),
        ("ExitCode", 127, policies.PodAction.FAIL),
        ("ExitCode", 128, policies.PodAction.RESTART),
        ("ExitCode", 137, policies.PodAction.RESTART),
        ("ExitCode", 255, policies.PodAction.RESTART),
        ("OnFailure", 1, policies.PodAction.RESTART),
        ("Always", 0, policies.PodAction.RESTART),
        ("Never", 137, policies.PodAction.KEEP),
    ],
)
def test_failed_pod_action_follows_the_restart_policy(policy, code, action):
    assert policies.failed_pod_action(policy, code) is action


def _view(run_policy: dict[str, Any], worker_policy: str = "OnFailure") -> JobView:
    body = pytorch_job("v", worker_policy=worker_policy, run_policy=run_policy)
    body["metadata"].update(namespace="n", uid="u")
    return JobView.from_object(body)


def _pod(rtype: str, restarts: int) -> dict[str, Any]:
    return {
        "metadata": {"labels": {c.LABEL_REPLICA_TYPE: rtype}},
        "status": {"phase": "Running", "containerStatuses": [{"restartCount": restarts}]},
    }


def test_backoff_limit_counts_only_restartable_replicas_and_recreations():
    view = _view({"backoffLimit": 2})
    assert not policies.past_backoff_limit(view, [_pod("worker", 1), _pod("master", 5)], recreated=0)
    assert policies.past_backoff_limit(view, [_pod("worker", 1)], recreated=1)
    assert policies.past_backoff_limit(_view({"backoffLimit": 0}), [_pod("worker", 1)], recreated=0)
    assert not policies.past_backoff_limit(_view({}), [_pod("worker", 9)], recreated=9)


def test_free_pod_slots_counts_ready_schedulable_nodes_minus_unfinished_pods():
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    nodes = [
        {"metadata": {"name": "a"}, "status": {**ready, "allocatable": {"pods": "4"}}},
        {"metadata": {"name": "b"}, "status": {"conditions": [{"type": "Ready", "status": "False"}]}},
        {"metadata": {"name": "c"}, "spec": {"unschedulable": True}, "status": ready},
    ]
    pods_ = [
        {"spec": {"nodeName": "a"}, "status": {"phase": "Running"}},
        {"spec": {"nodeName": "a"}, "status": {"phase": "Succeeded"}},
        {"spec": {}, "status": {"phase": "Pending"}},
    ]
    assert policies.free_pod_slots(nodes, pods_) == 2
    assert policies.free_pod_slots([{"metadata": {"name": "d"}, "status": ready}], []) == policies.DEFAULT_MAX_PODS


def test_work_queue_deduplicates_and_never_hands_one_key_to_two_workers():
    queue = WorkQueue(base_delay=0.05)
    queue.add("a")
    queue.add("a")
    assert queue.get(timeout=30) == "a"
    assert queue.get(timeout=0.1) is None, "a queued key is processed once"
    queue.add("a")  # queued again while being processed
    assert queue.get(timeout=0.1) is None, "not handed out while in progress"
    queue.done("a")
    assert queue.get(timeout=30) == "a"
    queue.done("a")
    start = time.monotonic()
    queue.add_after("b", 0.3)
    assert queue.get(timeout=30) == "b" and time.monotonic() - start >= 0.29
    queue.done("b")
    assert queue.add_rate_limited("c") == pytest.approx(0.05)
    assert queue.add_rate_limited("c") == pytest.approx(0.1)
    queue.forget("c")
    assert queue.add_rate_limited("c") == pytest.approx(0.05)

"""TrainJobOperator, end to end against the local cluster (real apiserver, Kubeflow Trainer v2 and JobSet stand-ins,
process kubelet): the lifecycle guarantees of the v1 kinds, on a TrainJob, in both modes."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import LABEL_JOBSET_NAME, LABEL_POD_TOKEN, TRAINER_GROUP, TRAINER_VERSION
from airflow_trainjob.exceptions import (
    JobDeletedError,
    JobNotOwnedError,
    TrainingJobError,
    TrainingJobStoppedError,
    TrainingJobTimeoutError,
)
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, defer, first_event
from tests.support.jobs import TaskInstanceStandIn, TaskStateStoreStandIn, run_in_thread

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

PLURAL = "trainjobs"
#: Each node prints its rank (torchrun's environment, as torch-distributed sets it) and succeeds.
OK = "import os; print('hello from node', os.environ['PET_NODE_RANK'], 'of', os.environ['PET_NNODES'], flush=True)"
#: Node 1 fails permanently after one line; node 0 waits to be stopped.
NODE_1_FAILS = (
    "import os, sys, time\n"
    "if os.environ['PET_NODE_RANK'] == '1':\n"
    "    print('bad input', flush=True); sys.exit(1)\n"
    "time.sleep(60)"
)
SLEEP = "import time; time.sleep(120)"
SIGKILL_SELF = "import os, signal; print('about to die', flush=True); os.kill(os.getpid(), signal.SIGKILL)"


def make(code: str, nodes: int = 2, runtime: str = "torch-distributed", **kwargs) -> TrainJobOperator:
    kwargs.setdefault("poll_interval", 0.5)
    return TrainJobOperator(
        task_id="train",
        runtime=runtime,
        trainer={"numNodes": nodes, "command": ["python", "-c", code]},
        **kwargs,
    )


def run(operator: TrainJobOperator, ti, mode: str, timeout: float = 180) -> dict:
    """The task's try in ``mode``: ``execute``; or ``execute`` to its deferral, the trigger until it fires, and
    ``execute_complete`` with its event."""
    if mode == "sync":
        return operator.execute({"ti": ti})
    return operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=timeout))


def trainjobs(custom_objects, namespace: str) -> list[dict]:
    return custom_objects.list_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, PLURAL)["items"]


def pods_of(core_v1, namespace: str, name: str) -> list:
    return core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOBSET_NAME}={name}").items


def running(custom_objects, namespace: str) -> bool:
    """A TrainJob of the namespace has a ready node Job (what the family reads as Running)."""
    items = trainjobs(custom_objects, namespace)
    return bool(items) and any(j.get("ready") for j in (items[0].get("status") or {}).get("jobsStatus") or [])


@pytest.mark.parametrize("mode", MODES)
def test_success_returns_summary_streams_node_0_and_deletes_the_trainjob(
    ti, namespace, custom_objects, core_v1, capfd, mode
):
    summary = run(make(OK, deferrable=mode == "deferred"), ti, mode)
    task_log = capfd.readouterr().out
    name = ti.xcom["job_name"]
    assert summary["kind"] == "TrainJob" and summary["name"] == name and summary["namespace"] == namespace
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"] == ["Complete"]
    assert "[node-0] hello from node 0 of 2" in task_log  # the lead (node 0's container `node`), in both modes
    assert "Complete (AllJobsCompleted" in task_log
    assert trainjobs(custom_objects, namespace) == []  # delete_succeeded_job
    wait_for(lambda: pods_of(core_v1, namespace, name) == [], what="its pods gone with it (JobSet, Jobs, pods)")


@pytest.mark.parametrize("mode", MODES)
def test_a_node_that_fails_with_exit_1_fails_the_task_for_good_and_says_which(
    ti, namespace, custom_objects, capfd, mode
):
    """The failed node restarts in place (the JobSet's default ``restartPolicy: OnFailure``) until its Job's
    ``backoffLimit``; the Job's failure deletes it, log and all: its tail is the one the wait read when it first
    saw it fail (deferred: the trigger, when its pod watch first kept the failure; the event carries it)."""
    with pytest.raises(AirflowFailException) as raised:
        run(make(NODE_1_FAILS, deferrable=mode == "deferred"), ti, mode)
    message = str(raised.value)
    assert message.startswith(f"TrainJob {namespace}/{ti.xcom['job_name']} failed: FailedJobs")
    assert "First failure (permanent: not retried): node-1 (pod " in message and "exit code 1" in message
    assert "| bad input" in message  # node 1's log tail, read before the cleanup
    (kept,) = trainjobs(custom_objects, namespace)  # delete_succeeded_job keeps a failed TrainJob
    assert kept["metadata"]["name"] == ti.xcom["job_name"]
    # Its failed Job deleted its pods: the line says nothing of them (it said "its pods stay with it").
    keeping = f"Keeping Failed TrainJob {namespace}/{ti.xcom['job_name']} for inspection (on_finish="
    assert f"{keeping}'delete_succeeded_job'); remove it with: kubectl delete" in capfd.readouterr().out


def test_a_node_killed_137_is_retryable(ti, namespace):
    with pytest.raises(TrainingJobError) as raised:
        make(SIGKILL_SELF, nodes=1).execute({"ti": ti})
    assert not isinstance(raised.value, AirflowFailException)
    assert "exit code 137" in str(raised.value) and "retryable" in str(raised.value)


def test_active_deadline_seconds_fails_the_trainjob_retryably(ti, namespace):
    with pytest.raises(TrainingJobError) as raised:
        make(SLEEP, nodes=1, active_deadline_seconds=3).execute({"ti": ti})
    assert not isinstance(raised.value, AirflowFailException)  # a deadline: a retry may pass it
    assert "DeadlineExceeded" in str(raised.value)


@pytest.mark.parametrize("mode", MODES)
def test_a_suspended_trainjob_waits_in_its_queue_until_queue_timeout(ti, namespace, custom_objects, capfd, mode):
    operator = make(OK, suspend=True, queue_timeout=4, deferrable=mode == "deferred")
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(operator, ti, mode, timeout=60)
    assert "queue_timeout of 4 s passed while the job waited suspended: its spec.suspend is true" in str(raised.value)
    assert "is waiting in its queue (spec.suspend is true) (suspended: not admitted yet)" in capfd.readouterr().out
    wait_for(lambda: trainjobs(custom_objects, namespace) == [], what="the queued TrainJob deleted")


def test_a_trainjob_of_someone_else_is_refused_and_untouched(ti, namespace, custom_objects):
    foreign = {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
        "kind": "TrainJob",
        "metadata": {"name": "shared-name", "labels": {"team": "other"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True},
    }
    created = custom_objects.create_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, PLURAL, foreign)
    with pytest.raises(JobNotOwnedError) as raised:
        make(OK, job_name="shared-name").execute({"ti": ti})
    assert "not labelled as this task instance's" in str(raised.value)
    (still,) = trainjobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == created["metadata"]["uid"] and still["metadata"]["labels"] == {"team": "other"}


def test_on_kill_deletes_the_running_trainjob_and_its_pods(ti, namespace, custom_objects, core_v1):
    operator = make(SLEEP)
    thread, outcome = run_in_thread(operator, {"ti": ti})
    wait_for(lambda: running(custom_objects, namespace), what="the TrainJob running")
    operator.on_kill()
    wait_for(lambda: trainjobs(custom_objects, namespace) == [], what="the TrainJob deleted by on_kill")
    thread.join(30)
    error = outcome.get("error")
    assert isinstance(error, TrainingJobStoppedError) and "stopped by Airflow" in str(error)
    wait_for(lambda: pods_of(core_v1, namespace, ti.xcom["job_name"]) == [], what="its pods gone")


def test_a_trainjob_deleted_outside_the_task(ti, namespace, custom_objects):
    thread, outcome = run_in_thread(make(SLEEP, nodes=1), {"ti": ti})
    wait_for(lambda: running(custom_objects, namespace), what="the TrainJob running")
    name = trainjobs(custom_objects, namespace)[0]["metadata"]["name"]
    custom_objects.delete_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, PLURAL, name)
    thread.join(30)
    assert isinstance(outcome.get("error"), JobDeletedError)
    assert "deleted outside this task" in str(outcome["error"])


def test_a_retry_reconnects_to_the_trainjob_its_lost_worker_left(namespace, custom_objects, core_v1, capfd):
    """Try 1 stores its TrainJob's identity, then its worker is gone; try 2 reconnects: one TrainJob, trained once,
    and its pods are told from a same-named predecessor's by the pod token."""
    store = TaskStateStoreStandIn()
    first = TaskInstanceStandIn(try_number=1)
    code = "import time; time.sleep(4); print('done', flush=True)"
    external_id = make(code, get_logs=False).submit_job({"ti": first, "task_state_store": store})
    store.set(TrainJobOperator.external_id_key, external_id)
    wait_for(lambda: running(custom_objects, namespace), what="try 1's TrainJob running")
    (job,) = trainjobs(custom_objects, namespace)
    token = job["metadata"]["annotations"][LABEL_POD_TOKEN]
    assert {p.metadata.labels.get(LABEL_POD_TOKEN) for p in pods_of(core_v1, namespace, job["metadata"]["name"])} == {
        token
    }

    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    summary = make(code).execute({"ti": second, "task_state_store": store})
    assert "Reconnecting to existing job" in capfd.readouterr().out
    assert summary["name"] == external_id["name"] and summary["conditions"][-1]["type"] == "Complete"
    assert trainjobs(custom_objects, namespace) == []


def test_a_stored_trainjob_that_completed_is_not_run_again(namespace, custom_objects):
    store = TaskStateStoreStandIn()
    first = TaskInstanceStandIn(try_number=1)
    make(OK, on_finish="keep_job").execute({"ti": first, "task_state_store": store})
    (job,) = trainjobs(custom_objects, namespace)
    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    summary = make(OK, on_finish="keep_job").execute({"ti": second, "task_state_store": store})
    (still,) = trainjobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == job["metadata"]["uid"]  # not trained again
    assert summary["conditions"][-1]["type"] == "Complete"


# --- a runtime of the test's own: an initializer step before the nodes, an init container in each node ------------


def runtime_with_steps(name: str, *, fetch: str, node_init: str | None = None) -> dict:
    """A ClusterTrainingRuntime shaped like upstream's torchtune ones: a ``dataset-initializer`` step running
    ``fetch`` (its container named like the step), then the ``node`` step (torch), whose pods may run ``node_init``
    in an init container ``fetch-weights`` first."""
    node_pod: dict = {"containers": [{"name": "node", "image": "pytorch/pytorch"}]}
    if node_init is not None:
        node_pod["initContainers"] = [
            {"name": "fetch-weights", "image": "python:3.11-slim", "command": ["python", "-c", node_init]}
        ]
    step = {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}
    return {
        "apiVersion": f"{TRAINER_GROUP}/{TRAINER_VERSION}",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "dataset-initializer",
                            "template": {
                                "metadata": {"labels": step},
                                "spec": {
                                    "template": {
                                        "spec": {
                                            "containers": [
                                                {
                                                    "name": "dataset-initializer",
                                                    "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
                                                    "command": ["python", "-c", fetch],
                                                }
                                            ]
                                        }
                                    }
                                },
                            },
                        },
                        {
                            "name": "node",
                            "dependsOn": [{"name": "dataset-initializer", "status": "Complete"}],
                            "template": {
                                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                "spec": {"template": {"spec": node_pod}},
                            },
                        },
                    ]
                }
            },
        },
    }


@pytest.fixture
def own_runtime(custom_objects, namespace):
    """Makes a ClusterTrainingRuntime named after the test's namespace; deletes it afterwards."""
    made: list[str] = []

    def make_runtime(**steps) -> str:
        name = f"steps-{namespace}"[:63]
        body = runtime_with_steps(name, **steps)
        custom_objects.create_cluster_custom_object(TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", body)
        made.append(name)
        return name

    yield make_runtime
    for name in made:
        custom_objects.delete_cluster_custom_object(TRAINER_GROUP, TRAINER_VERSION, "clustertrainingruntimes", name)


def test_a_failed_initializer_step_is_named_with_its_container_and_tail(ti, namespace, own_runtime):
    runtime = own_runtime(fetch="import sys; print('fetching hf://tatsu-lab/alpaca: 401', flush=True); sys.exit(2)")
    with pytest.raises(AirflowFailException) as raised:
        make(OK, nodes=1, runtime=runtime).execute({"ti": ti})
    message = str(raised.value)
    assert "First failure (permanent: not retried): dataset-initializer-0 (pod " in message, message
    assert "container dataset-initializer): exit code 2" in message, message
    assert "| fetching hf://tatsu-lab/alpaca: 401" in message, message


def test_a_failed_init_container_of_a_node_is_named(ti, namespace, own_runtime):
    runtime = own_runtime(
        fetch="print('dataset ready', flush=True)",
        node_init="import sys; print('weights: access denied', flush=True); sys.exit(3)",
    )
    with pytest.raises(AirflowFailException) as raised:
        make(OK, nodes=1, runtime=runtime).execute({"ti": ti})
    message = str(raised.value)
    assert "First failure (permanent: not retried): node-0 (pod " in message, message
    assert "initContainer fetch-weights): exit code 3" in message and "| weights: access denied" in message, message

"""Training output survives ``cleanPodPolicy``: the lead replica's log and each failed replica's tail reach the task
log in both modes, the running pods of a failed job stop promptly, and the pods end as the user's policy says.

The local controller deletes pods at the terminal transition as upstream does; the provider holds the policy
(sends ``None``) and applies it itself: see airflow_trainjob/domain/cleanup_hold.py.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import (
    API_VERSION,
    LABEL_JOB_NAME,
    LABEL_OPERATOR_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from airflow_trainjob.hooks.training_job import TrainingJobHook
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, defer, first_event, operator_for
from tests.support.jobs import jobs, python_container, pytorch_specs

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

MASTER_WAITS = "import time; print('master: waiting for the workers', flush=True); time.sleep(300)"
WORKER_FAILS = "import sys, time; time.sleep(3); print('worker: shard 3 is corrupt', flush=True); sys.exit(1)"
#: Seconds within which the running pods of a failed job have been stopped, counted from its Failed condition
#: (the condition's time has a resolution of one second). The README states this bound.
STOP_BOUND = 10.0
#: Seconds a pod that is asked to stop (SIGTERM) takes to end: it finishes its step first, as a training process
#: saving a checkpoint does. Long enough that a task which does not wait for it ends first, on any machine.
SLOW_STOP = 3.0


def stops_slowly(ready_file: str, then: str = "import time; time.sleep(300)") -> str:
    """Container code that, asked to stop, takes :data:`SLOW_STOP` seconds to end; it writes ``ready_file`` once it
    will (its SIGTERM handler installed), then runs ``then``."""
    return (
        "import signal, sys, time\n"
        f"signal.signal(signal.SIGTERM, lambda *_: (time.sleep({SLOW_STOP}), sys.exit(0)))\n"
        f"open({ready_file!r}, 'w').close()\n"
        "print('worker: ready', flush=True)\n"
        f"{then}\n"
    )


def after(ready_file: str, code: str) -> str:
    """Container code that runs ``code`` once ``ready_file`` exists."""
    return f"import os, time\nwhile not os.path.exists({ready_file!r}): time.sleep(0.05)\n{code}\n"


def live_pods(core_v1, namespace: str, job_name: str) -> dict[str, bool]:
    """Pod name -> whether it is still running (not deleted, not finished)."""
    pods = core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOB_NAME}={job_name}").items
    return {
        p.metadata.name: p.metadata.deletion_timestamp is None and p.status.phase in ("Pending", "Running")
        for p in pods
    }


def failed_at(job: dict) -> dt.datetime:
    (condition,) = [c for c in job["status"]["conditions"] if c["type"] == "Failed" and c["status"] == "True"]
    return dt.datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))


@pytest.mark.parametrize("policy", ["All", "Running"])
@pytest.mark.parametrize("mode", MODES)
def test_failed_job_keeps_its_output_and_its_running_pods_stop(
    mode, policy, ti, namespace, custom_objects, core_v1, capfd
):
    operator = operator_for(
        mode,
        pytorch_specs(MASTER_WAITS, WORKER_FAILS, workers=1),
        poll_interval=60,
        run_policy={"cleanPodPolicy": policy},
    )
    with pytest.raises(AirflowFailException) as raised:
        if mode == "sync":
            operator.execute({"ti": ti})
        else:
            event = first_event(defer(operator, ti), timeout=120)
            fired = dt.datetime.now(dt.timezone.utc)
            name = ti.xcom["job_name"]
            # Before the task resumes: the Master, still running when the job failed, was stopped by the trigger,
            # after it copied the rest of the Master's log into the task log (not into the event, which stays
            # small); the failed Worker's pod is kept for the task to read.
            assert not live_pods(core_v1, namespace, name).get(f"{name}-master-0")
            assert f"{name}-worker-0" in live_pods(core_v1, namespace, name)
            assert event["lead_log"]["complete"] is True
            assert (fired - failed_at(event["job"])).total_seconds() < STOP_BOUND
            operator.execute_complete({"ti": ti}, event)
    ended = dt.datetime.now(dt.timezone.utc)
    name = ti.xcom["job_name"]
    message = str(raised.value)
    out = capfd.readouterr().out
    assert "| worker: shard 3 is corrupt" in message  # the failed replica's tail
    assert f"(pod {name}-worker-0, container pytorch): exit code 1" in message  # pod and container named
    assert "container )" not in message
    assert "[Master-0] master: waiting for the workers" in out  # the lead replica's log, in both modes
    # The kept failed job is announced, with how to remove it.
    assert (
        f"Keeping Failed PyTorchJob {namespace}/{name} for inspection (on_finish='delete_succeeded_job'; its pods "
        f"follow cleanPodPolicy {policy}); remove it with: kubectl delete pytorchjobs.kubeflow.org {name} "
        f"-n {namespace}"
    ) in out
    # No status line after Failed claims a replica is still active.
    failed_lines = [line for line in out.splitlines() if f"{name}: Failed (" in line]
    assert failed_lines and not [line for line in failed_lines if " active" in line], failed_lines
    (kept,) = jobs(custom_objects, namespace)  # on_finish keeps a failed job; its pods follow the user's policy
    if mode == "sync":
        assert (ended - failed_at(kept)).total_seconds() < STOP_BOUND
    left = live_pods(core_v1, namespace, name)
    assert not any(left.values())  # nothing runs any more
    expected = set() if policy == "All" else {f"{name}-worker-0"}  # Running keeps finished pods
    assert {p for p in left if not p.endswith("master-0")} == expected
    assert kept["spec"]["runPolicy"]["cleanPodPolicy"] == policy  # given back as the user wrote it


@pytest.mark.parametrize("mode", MODES)
def test_succeeded_job_with_clean_pod_policy_all_quotes_the_lead_log(mode, ti, namespace, core_v1, capfd):
    code = "import os; print('epoch 1/1 done on rank', os.environ['RANK'], flush=True)"
    operator = operator_for(
        mode, pytorch_specs(code, workers=1), poll_interval=60, run_policy={"cleanPodPolicy": "All"}
    )
    if mode == "sync":
        summary = operator.execute({"ti": ti})
    else:
        summary = operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=120))
    assert summary["conditions"][-1]["type"] == "Succeeded"
    out = capfd.readouterr().out
    assert "[Master-0] epoch 1/1 done on rank 0" in out
    assert live_pods(core_v1, namespace, summary["name"]) == {}  # All: no pod left once the task ended


@pytest.mark.parametrize("mode", MODES)
def test_a_pod_that_stops_slowly_is_gone_when_the_task_ends(mode, ti, namespace, core_v1, capfd, tmp_path):
    """The Worker still runs when the Master succeeds; cleanPodPolicy All stops it at the terminal transition, and it
    takes :data:`SLOW_STOP` seconds to end: the task ends once it is gone, not while it still runs."""
    ready = str(tmp_path / "worker-ready")
    master = after(ready, "import os; print('epoch 1/1 done on rank', os.environ['RANK'], flush=True)")
    operator = operator_for(
        mode,
        pytorch_specs(master, stops_slowly(ready), workers=1),
        poll_interval=60,
        timeout=300,
        run_policy={"cleanPodPolicy": "All"},
    )
    if mode == "sync":
        summary = operator.execute({"ti": ti})
    else:
        summary = operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=120))
    name = summary["name"]
    assert live_pods(core_v1, namespace, name) == {}  # the stopping Worker too: no pod left once the task ended
    out = capfd.readouterr().out
    assert f"stopping {name}-worker-0 (pods deleted), as cleanPodPolicy All asks" in out
    (gone,) = [
        line for line in out.splitlines() if f"Pods of PyTorchJob {namespace}/{name} stopped and gone after" in line
    ]
    assert f"{name}-worker-0" in gone, gone
    waited = float(gone.split("stopped and gone after ")[1].split(" s")[0])
    print(f"{mode}: the task waited {waited:.1f} s for the Worker to stop ({SLOW_STOP:g} s to end after SIGTERM)")


def late_pod(name: str, job: dict, ready_file: str) -> dict:
    """Worker 0 of ``job`` as its controller creates it (labels, controller ownerReference), running code that stops
    slowly (:func:`stops_slowly`)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {
                LABEL_JOB_NAME: job["metadata"]["name"],
                LABEL_OPERATOR_NAME: "pytorchjob-controller",
                LABEL_REPLICA_TYPE: "worker",
                LABEL_REPLICA_INDEX: "0",
            },
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": job["kind"],
                    "name": job["metadata"]["name"],
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [python_container(stops_slowly(ready_file))],
        },
    }


@pytest.mark.parametrize("on_finish", ["keep_job", "delete_succeeded_job"])
@pytest.mark.parametrize("mode", MODES)
def test_a_pod_created_after_the_cleanup_listed_the_pods_is_gone_when_the_task_ends(
    mode, on_finish, ti, namespace, core_v1, custom_objects, capfd, tmp_path, monkeypatch
):
    """A controller whose cache lagged creates a replica's pod after the job turned terminal, just after the task's
    cleanup listed the pods (here: the test creates it at the cleanup's first DELETE, and lets it start): the task
    deletes it too and ends once it is gone."""
    ready = str(tmp_path / "late-worker-ready")
    made: list[str] = []
    delete_pod = TrainingJobHook.delete_pod

    def delete_pod_after_a_late_create(hook, pod_name, pod_namespace, uid=None):
        if not made:
            (job,) = jobs(custom_objects, namespace)
            made.append(f"{job['metadata']['name']}-worker-0")
            core_v1.create_namespaced_pod(namespace, late_pod(made[0], job, ready))
            wait_for(lambda: tmp_path.joinpath("late-worker-ready").exists(), what="the late pod to start")
        return delete_pod(hook, pod_name, pod_namespace, uid=uid)

    monkeypatch.setattr(TrainingJobHook, "delete_pod", delete_pod_after_a_late_create)
    code = "import os; print('epoch 1/1 done on rank', os.environ['RANK'], flush=True)"
    operator = operator_for(
        mode,
        pytorch_specs(code, workers=0),
        poll_interval=60,
        on_finish=on_finish,
        run_policy={"cleanPodPolicy": "All"},
    )
    if mode == "sync":
        summary = operator.execute({"ti": ti})
    else:
        summary = operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=120))
    ended = time.monotonic()
    assert made, "the cleanup deleted no pod: the late pod was never made"
    assert live_pods(core_v1, namespace, summary["name"]) == {}  # the late pod too: no pod left
    out = capfd.readouterr().out
    if on_finish == "keep_job":  # a deleted job's pods go with it: the garbage collector may delete it first
        assert f"Deleting {made[0]} of PyTorchJob {namespace}/{summary['name']} too: created after the cleanup" in out
    (gone,) = [line for line in out.splitlines() if "stopped and gone after" in line]
    assert made[0] in gone, gone
    print(gone)
    print(f"{mode}, {on_finish}: checked {time.monotonic() - ended:.2f} s after the task ended")


def test_deleting_a_succeeded_job_names_the_pods_that_stop_with_it(ti, namespace, capfd):
    """cleanPodPolicy None keeps a still-running Worker; deleting the succeeded job (on_finish) stops it: said."""
    operator = operator_for(
        "sync",
        pytorch_specs("print('master done')", MASTER_WAITS, workers=1),
        poll_interval=60,
        run_policy={"cleanPodPolicy": "None"},
    )
    summary = operator.execute({"ti": ti})
    assert summary["conditions"][-1]["type"] == "Succeeded"
    name = summary["name"]
    assert (
        f"Deleting PyTorchJob {namespace}/{name} (delete_succeeded_job); its pods still running stop with it: "
        f"{name}-worker-0"
    ) in capfd.readouterr().out

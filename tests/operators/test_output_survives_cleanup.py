"""Training output survives ``cleanPodPolicy``: the lead replica's log and each failed replica's tail reach the task
log in both modes, the running pods of a failed job stop promptly, and the pods end as the user's policy says.

The local controller deletes pods at the terminal transition as upstream does; the provider holds the policy
(sends ``None``) and applies it itself: see airflow_trainjob/cleanup_hold.py.
"""

from __future__ import annotations

import datetime as dt

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_trainjob.constants import LABEL_JOB_NAME
from tests.support.deferred import MODES, defer, first_event, operator_for
from tests.support.jobs import jobs, pytorch_specs

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

MASTER_WAITS = "import time; print('master: waiting for the workers', flush=True); time.sleep(300)"
WORKER_FAILS = "import sys, time; time.sleep(3); print('worker: shard 3 is corrupt', flush=True); sys.exit(1)"
#: Seconds within which the running pods of a failed job have been stopped, counted from its Failed condition
#: (the condition's time has a resolution of one second). The README states this bound.
STOP_BOUND = 10.0


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

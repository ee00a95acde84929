"""Training jobs end to end on the local cluster: real kube-apiserver, the local training controller and the
process kubelet (both started by the session's ``local_cluster``), everything observed through the API.

Each job runs short Python programs (the kubelet ignores images; ``python`` is the venv's interpreter).
Skipped when the session cluster runs without workloads (``AIRFLOW_TRAINJOB_TEST_NO_WORKLOADS=1``).
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_trainjob_local import constants as c
from airflow_trainjob_local.testing import waiting
from airflow_trainjob_local.testing.jobs import python_replica, pytorch_job

TIMEOUT = 90.0


@pytest.fixture(autouse=True)
def _needs_workloads(local_cluster) -> None:
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the training controller and the process kubelet")


# --- helpers ----------------------------------------------------------------------------------------------


wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


def create(custom_objects, namespace: str, body: dict[str, Any]) -> None:
    custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", body)


def reader(custom_objects, namespace: str, name: str) -> Callable[[], dict[str, Any]]:
    return lambda: custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", name)


def condition(job: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((x for x in (job.get("status") or {}).get("conditions") or [] if x["type"] == ctype), None)


def has(ctype: str) -> Callable[[dict[str, Any]], bool]:
    return lambda job: (condition(job, ctype) or {}).get("status") == "True"


def pod_names(core_v1, namespace: str, job: str) -> set[str]:
    items = core_v1.list_namespaced_pod(namespace, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {p.metadata.name for p in items}


def pod_phases(core_v1, namespace: str, job: str) -> dict[str, str]:
    items = core_v1.list_namespaced_pod(namespace, label_selector=f"{c.LABEL_JOB_NAME}={job}").items
    return {p.metadata.name: p.status.phase for p in items}


def pod_log(core_v1, namespace: str, name: str) -> str:
    """A container's log as text (read raw: kubernetes 36.0.x returns ``str(bytes)`` for this call)."""
    response = core_v1.read_namespaced_pod_log(name, namespace, container="pytorch", _preload_content=False)
    try:
        return response.data.decode("utf-8")
    finally:
        response.release_conn()


def job_events(core_v1, namespace: str, job: str) -> list[Any]:
    return [e for e in core_v1.list_namespaced_event(namespace).items if e.involved_object.name == job]


SLEEP = "import time; time.sleep(120)"


# --- tests ------------------------------------------------------------------------------------------------


RENDEZVOUS = """
import json, os, socket, time
names = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PET_NNODES", "PET_NODE_RANK", "PYTHONUNBUFFERED")
env = {k: os.environ.get(k) for k in names}
print("ENV " + json.dumps(env), flush=True)
addr, port, world, rank = env["MASTER_ADDR"], int(env["MASTER_PORT"]), int(env["WORLD_SIZE"]), int(env["RANK"])
if rank == 0:
    server = socket.create_server((addr, port))
    server.settimeout(60)
    ranks = []
    while len(ranks) < world - 1:
        conn, _ = server.accept()
        ranks.append(int(conn.recv(16).decode()))
        conn.close()
    print("GOT " + json.dumps(sorted(ranks)), flush=True)
    time.sleep(1)
else:
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((addr, port), timeout=2) as s:
                s.sendall(str(rank).encode())
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    print(f"SENT {rank}", flush=True)
"""


def test_pytorch_job_master_and_two_workers_rendezvous_and_succeed(core_v1, custom_objects, namespace):
    create(custom_objects, namespace, pytorch_job("rdv", python_replica(RENDEZVOUS), python_replica(RENDEZVOUS, 2)))
    job = wait_for(reader(custom_objects, namespace, "rdv"), has("Succeeded"), what="Succeeded")

    types = [x["type"] for x in job["status"]["conditions"]]
    assert types[0] == "Created" and types[-1] == "Succeeded"
    assert all(x["status"] == "False" for x in job["status"]["conditions"] if x["type"] == "Running")
    assert condition(job, "Succeeded")["reason"] == "PyTorchJobSucceeded"
    assert job["status"]["replicaStatuses"]["Master"]["succeeded"] == 1
    assert job["status"]["startTime"] <= job["status"]["completionTime"]

    ports = json.loads(job["metadata"]["annotations"][c.ANNOTATION_LOCAL_PORTS])
    logs = {}
    for name in ("rdv-master-0", "rdv-worker-0", "rdv-worker-1"):
        logs[name] = pod_log(core_v1, namespace, name)
    for name, rank in (("rdv-master-0", "0"), ("rdv-worker-0", "1"), ("rdv-worker-1", "2")):
        env_line = next(line for line in logs[name].splitlines() if line.startswith("ENV "))
        env = json.loads(env_line[4:])
        assert env == {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(ports["master-0"]),
            "WORLD_SIZE": "3",
            "RANK": rank,
            "PET_NNODES": "3",
            "PET_NODE_RANK": rank,
            "PYTHONUNBUFFERED": "1",
        }
    # The workers really reached the master on its loopback port.
    assert "GOT [1, 2]" in logs["rdv-master-0"]
    assert "SENT 2" in logs["rdv-worker-1"]


def test_exit_1_under_exit_code_fails_the_job(core_v1, custom_objects, namespace):
    create(
        custom_objects,
        namespace,
        pytorch_job(
            "ex1",
            python_replica(SLEEP),
            python_replica("raise SystemExit(1)", restart_policy="ExitCode"),
            run_policy={"cleanPodPolicy": "Running"},
        ),
    )
    job = wait_for(reader(custom_objects, namespace, "ex1"), has("Failed"), what="Failed")
    assert condition(job, "Failed")["reason"] == "PyTorchJobFailed"
    assert condition(job, "Failed")["message"] == 'job "ex1" is failing because "Worker" replica(s) failed.'
    assert job["status"]["completionTime"]
    # cleanPodPolicy Running: the still-running master is deleted (its process stopped), the failed worker stays.
    wait_for(lambda: pod_names(core_v1, namespace, "ex1"), lambda n: n == {"ex1-worker-0"}, what="only the worker left")
    messages = [e.message for e in job_events(core_v1, namespace, "ex1") if e.reason == "ExitedWithCode"]
    assert f"Pod: {namespace}.ex1-worker-0 exited with code 1" in messages


def test_exit_137_under_exit_code_recreates_the_pod_and_the_job_goes_on(
    core_v1, custom_objects, namespace, tmp_path: Path
):
    killed, second = tmp_path / "killed", tmp_path / "second-run"
    worker = f"""
        import os, pathlib, signal
        if not pathlib.Path({str(killed)!r}).exists():
            pathlib.Path({str(killed)!r}).write_text("x")
            os.kill(os.getpid(), signal.SIGKILL)  # exit code 137
        pathlib.Path({str(second)!r}).write_text("x")
    """
    master = f"""
        import pathlib, time
        while not pathlib.Path({str(second)!r}).exists():
            time.sleep(0.2)
    """
    create(
        custom_objects,
        namespace,
        pytorch_job("ex137", python_replica(master), python_replica(worker, restart_policy="ExitCode")),
    )
    job = wait_for(reader(custom_objects, namespace, "ex137"), has("Succeeded"), what="Succeeded")
    assert job["metadata"]["annotations"][c.ANNOTATION_LOCAL_RESTARTS] == "1"
    events = job_events(core_v1, namespace, "ex137")
    assert f"Pod: {namespace}.ex137-worker-0 exited with code 137" in [e.message for e in events]
    restarting = [e for e in events if e.reason == "PyTorchJobRestarting"]
    assert restarting and all(e.type == "Warning" for e in restarting)
    assert "SuccessfulDeletePod" in {e.reason for e in events}
    assert killed.exists() and second.exists()


def test_active_deadline_seconds_fails_the_job_and_stops_its_pods(core_v1, custom_objects, namespace):
    create(
        custom_objects,
        namespace,
        pytorch_job("dl", python_replica(SLEEP), python_replica(SLEEP), run_policy={"activeDeadlineSeconds": 4}),
    )
    wait_for(
        lambda: pod_phases(core_v1, namespace, "dl"),
        lambda p: list(p.values()) == ["Running", "Running"],
        what="both pods running",
    )
    job = wait_for(reader(custom_objects, namespace, "dl"), has("Failed"), what="Failed")
    assert condition(job, "Failed")["reason"] == "PyTorchJobFailed"
    assert condition(job, "Failed")["message"] == (
        "Job dl has failed because it was active longer than specified deadline"
    )
    wait_for(lambda: pod_names(core_v1, namespace, "dl"), lambda n: not n, timeout=60, what="pods deleted")


@pytest.mark.parametrize(
    ("policy", "left"),
    [
        ("All", set()),
        ("Running", {"cp-master-0", "cp-worker-0"}),
        ("None", {"cp-master-0", "cp-worker-0", "cp-worker-1"}),
    ],
)
def test_clean_pod_policy_leaves_the_right_pods(core_v1, custom_objects, namespace, tmp_path, policy, left):
    # worker 0 finishes at once, worker 1 keeps running, the master finishes once the test has seen worker 0
    # succeed (however slow the machine).
    finish = tmp_path / "finish"
    master = f"import os, time\nend = time.time() + 300\nwhile not os.path.exists({str(finish)!r}) and time.time() < end: time.sleep(0.1)"
    worker = "import os, time\nif os.environ['RANK'] == '2': time.sleep(120)"
    create(
        custom_objects,
        namespace,
        pytorch_job("cp", python_replica(master), python_replica(worker, 2), run_policy={"cleanPodPolicy": policy}),
    )
    wait_for(
        lambda: pod_phases(core_v1, namespace, "cp"),
        lambda p: p.get("cp-worker-0") == "Succeeded" and p.get("cp-worker-1") == "Running",
        what="worker 0 succeeded and worker 1 running",
    )
    finish.touch()
    wait_for(reader(custom_objects, namespace, "cp"), has("Succeeded"), what="Succeeded")
    wait_for(lambda: pod_names(core_v1, namespace, "cp"), lambda n: n == left, timeout=60, what=f"pods {sorted(left)}")
    time.sleep(2)
    phases = pod_phases(core_v1, namespace, "cp")
    assert set(phases) == left
    assert all(phases[n] == "Succeeded" for n in left - {"cp-worker-1"})


def test_deleting_the_job_removes_its_pods_and_services(core_v1, custom_objects, namespace):
    create(custom_objects, namespace, pytorch_job("gone", python_replica(SLEEP), python_replica(SLEEP)))
    wait_for(
        lambda: pod_phases(core_v1, namespace, "gone"),
        lambda p: list(p.values()) == ["Running", "Running"],
        what="both pods running",
    )
    custom_objects.delete_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", "gone")
    wait_for(lambda: pod_names(core_v1, namespace, "gone"), lambda n: not n, timeout=60, what="pods deleted")
    services = core_v1.list_namespaced_service(namespace, label_selector=f"{c.LABEL_JOB_NAME}=gone").items
    wait_for(
        lambda: core_v1.list_namespaced_service(namespace, label_selector=f"{c.LABEL_JOB_NAME}=gone").items,
        lambda s: not s,
        what=f"services deleted (were {[s.metadata.name for s in services]})",
    )


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_get_pytorchjobs_shows_the_job(local_cluster, custom_objects, namespace):
    create(custom_objects, namespace, pytorch_job("shown", python_replica("print('done')")))
    wait_for(reader(custom_objects, namespace, "shown"), has("Succeeded"), what="Succeeded")
    out = subprocess.run(
        ["kubectl", "--kubeconfig", str(local_cluster.kubeconfig), "get", "pytorchjobs", "-n", namespace],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    header, *rows = out.strip().splitlines()
    assert header.split()[:2] == ["NAME", "STATE"]
    assert rows and rows[0].split()[:2] == ["shown", "Succeeded"]

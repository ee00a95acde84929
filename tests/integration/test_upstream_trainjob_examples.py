"""kubeflow/trainer v2.3.0's ``examples/yaml/`` run through TrainJobOperator on the local cluster, as a DAG author
would run them: the files of tests/data/upstream_trainjob (upstream's shapes, written anew), given as ``job`` text or
``job_template_file``.

- 01 (three nodes under torchrun) runs to ``Complete`` in both modes; rank 0 prints what every node saw.
- 02 (runtime patches): the user's patch and the provider's both reach the pods; as the file stands, its missing
  service account and its node selector keep the nodes from starting, as on a real cluster, and the wait says why
  until ``startup_timeout`` ends it with that reason.
- 03 (Kueue): with no Kueue it waits suspended in queue ``training-queue`` until ``queue_timeout`` names it.
- 05 (a dataset-initializer step, its runtime created first): the initializer's container has no command (the
  process kubelet ignores images), and the failure names the step and why.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_trainjob.constants import (
    LABEL_JOBSET_NAME,
    LABEL_POD_TOKEN,
    RUNTIME_PATCH_MANAGER,
    TRAINER_GROUP,
    TRAINER_VERSION,
)
from airflow_trainjob.exceptions import TrainingJobTimeoutError
from airflow_trainjob.operators.trainjob import TrainJobOperator
from tests.support.deferred import MODES, defer, first_event

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

DATA = Path(__file__).resolve().parents[1] / "data" / "upstream_trainjob"
STARTUP_TIMEOUT = 20


def documents(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DATA / name).read_text()) if d is not None]


def run(operator: TrainJobOperator, ti, timeout: float = 240) -> dict:
    """The try as Airflow runs it: its fields rendered (``job_template_file`` read), then, in the operator's mode,
    ``execute``; or ``execute`` to its deferral, the trigger until it fires, and ``execute_complete`` with its
    event."""
    operator.render_template_fields({"ti": ti})
    if not operator.deferrable:
        return operator.execute({"ti": ti})
    return operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=timeout))


def pods_of(core_v1, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOBSET_NAME}={name}").items
    return [core_v1.api_client.sanitize_for_serialization(p) for p in listed]


# ---- 01: multi-node under torchrun --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_01_three_nodes_under_torchrun_complete_and_each_saw_world_size_3(ti, namespace, capfd, mode):
    source = (
        {"job_template_file": str(DATA / "multi-node.yaml")}
        if mode == "sync"
        else {"job": (DATA / "multi-node.yaml").read_text()}
    )
    operator = TrainJobOperator(task_id="train", poll_interval=0.5, deferrable=mode == "deferred", **source)
    summary = run(operator, ti)
    log = capfd.readouterr().out
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"] == ["Complete"], summary
    for node in range(3):  # rank 0's log is the task's: what every node's torchrun worker saw
        assert f"[node-0] gathered: node {node}: rank {node}, local rank 0, world size 3" in log, log
    assert "[node-0] node 0: rank 0, local rank 0, world size 3" in log


# ---- 02: runtime patches ------------------------------------------------------------------------------------------


def node_pod_patch(job: dict[str, Any]) -> dict[str, Any]:
    """The pod template of the user's patch of replicated job ``node``."""
    (patch,) = job["spec"]["runtimePatches"]
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    return node["template"]["spec"]["template"]


def make_service_account(core_v1, namespace: str, name: str) -> None:
    core_v1.create_namespaced_service_account(namespace, {"metadata": {"name": name}})


def test_02_the_users_patch_and_the_providers_both_reach_the_jobset_and_pods(ti, namespace, core_v1, custom_objects):
    job = documents("runtime-patches.yaml")[0]
    node_pod_patch(job)["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}  # what this cluster's node has
    make_service_account(core_v1, namespace, "trainer-runner")
    operator = TrainJobOperator(task_id="train", job=job, on_finish="keep_job", poll_interval=0.5)
    summary = run(operator, ti)
    name = summary["name"]
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"] == ["Complete"], summary

    stored = custom_objects.get_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, "trainjobs", name)
    managers = [p["manager"] for p in stored["spec"]["runtimePatches"]]
    assert managers == ["platform.example.com/scheduling", RUNTIME_PATCH_MANAGER]
    # The patch's template metadata labels and annotates the JobSet (upstream's trainer: not its pods).
    jobset = custom_objects.get_namespaced_custom_object("jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", name)
    assert {"owner-team": "vision", "billing": "lab-7"}.items() <= jobset["metadata"]["labels"].items()
    assert jobset["metadata"]["annotations"]["example.com/scrape-port"] == "9100"

    pods = pods_of(core_v1, namespace, name)
    assert len(pods) == 2
    token = stored["metadata"]["annotations"][LABEL_POD_TOKEN]
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["runner-pool"] == "nightly"  # the user's patch of the node pods
        assert labels[LABEL_POD_TOKEN] == token  # the provider's patch
        assert all(labels[k] == v for k, v in stored["metadata"]["labels"].items() if k.startswith("airflow-trainjob"))
        assert "owner-team" not in labels
        spec = pod["spec"]
        assert spec["serviceAccountName"] == "trainer-runner"
        assert {"key": "dedicated-trainers", "operator": "Equal", "value": "yes", "effect": "NoSchedule"} in spec[
            "tolerations"
        ]
        (container,) = spec["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env["RUN_TAG"] == "nightly-42" and container["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}


@pytest.mark.parametrize("mode", MODES)
def test_02_as_written_a_missing_service_account_keeps_the_nodes_from_being_created(ti, namespace, capfd, mode):
    """A real apiserver's ServiceAccount admission refuses the pods: the Jobs record FailedCreate and make none."""
    operator = TrainJobOperator(
        task_id="train",
        job=(DATA / "runtime-patches.yaml").read_text(),
        startup_timeout=STARTUP_TIMEOUT,
        poll_interval=0.5,
        deferrable=mode == "deferred",
    )
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(operator, ti)
    message, log = str(raised.value), capfd.readouterr().out
    name = ti.xcom["job_name"]
    assert f"{name}: Created — node (2 nodes): waiting" in log  # the wait: no node Job has a pod
    assert f"{name}: startup_timeout of {STARTUP_TIMEOUT} s passed; last state: Created — node: waiting" in message
    assert (
        f'; warnings: FailedCreate: Error creating: pods "{name}-node-0-0-" is forbidden: error looking up service '
        f'account {namespace}/trainer-runner: serviceaccount "trainer-runner" not found'
    ) in message, message


@pytest.mark.parametrize("mode", MODES)
def test_02_as_written_a_node_selector_no_node_matches_keeps_the_nodes_pending(ti, namespace, core_v1, capfd, mode):
    """With the service account there, the pods are made and stay Pending: no node has label pool=trainers."""
    make_service_account(core_v1, namespace, "trainer-runner")
    operator = TrainJobOperator(
        task_id="train",
        job_template_file=str(DATA / "runtime-patches.yaml"),
        startup_timeout=STARTUP_TIMEOUT,
        poll_interval=0.5,
        deferrable=mode == "deferred",
    )
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(operator, ti)
    message = str(raised.value)
    assert f"startup_timeout of {STARTUP_TIMEOUT} s passed; last state: Created — node: 1 active; pending: " in message
    unschedulable = (
        "Pending: Unschedulable: 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector"
    )
    for node in (0, 1):
        assert re.search(rf"node-{node} \([^)]*\) {re.escape(unschedulable)}", message), message


# ---- 03: Kueue ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_03_with_no_kueue_it_waits_in_its_queue_until_queue_timeout_names_it(ti, namespace, capfd, mode):
    operator = TrainJobOperator(
        task_id="train",
        job=(DATA / "kueue-queued.yaml").read_text(),
        queue_timeout=5,
        poll_interval=0.5,
        deferrable=mode == "deferred",
    )
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(operator, ti, timeout=60)
    message, log = str(raised.value), capfd.readouterr().out
    assert (
        "queue_timeout of 5 s passed while the job waited in Kueue queue 'training-queue', suspended and not admitted"
        in message
    ), message
    assert "is waiting in Kueue queue 'training-queue'" in log, log


# ---- 05: a dataset-initializer step -------------------------------------------------------------------------------


def test_05_the_initializer_step_that_cannot_run_is_named_with_why(ti, namespace, custom_objects, capfd):
    """Its container has no command (the process kubelet ignores the image's entrypoint): it fails to start, again
    and again, in place (a Job's pod, ``OnFailure``), so its pod stays Running in CrashLoopBackOff, as a real
    kubelet phases it, and the node step waits on it until ``startup_timeout``."""
    runtime, trainjob = documents("dataset-init-runtime-and-job.yaml")
    custom_objects.create_namespaced_custom_object(
        TRAINER_GROUP, TRAINER_VERSION, namespace, "trainingruntimes", runtime
    )
    operator = TrainJobOperator(
        task_id="train", job=yaml.safe_dump(trainjob), startup_timeout=STARTUP_TIMEOUT, poll_interval=0.5
    )
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(operator, ti)
    message, log = str(raised.value), capfd.readouterr().out
    (line,) = [line for line in message.splitlines() if "StartError" in line]  # one line names the step and why
    assert (
        f"startup_timeout of {STARTUP_TIMEOUT} s passed; last state: Created — dataset-initializer: 1 active; node: waiting"
        in line
    )
    assert (
        "; pending: dataset-initializer-0 (" in line
        and ") Running: container dataset-initializer CrashLoopBackOff" in line
    )
    assert "last exit code 128 (Retryable), StartError: no command specified (the image's entrypoint" in line, line
    # The start error's missing previous log (400) is no error of the wait's.
    assert "Handling a change of the pods failed" not in log

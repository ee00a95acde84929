"""The Kubeflow SDK v2 (``kubeflow`` 0.5.x, ``TrainerClient`` with its Kubernetes backend) on the local cluster.

Run by ``scripts/sdk2-check.sh`` in ``.venv-sdk2`` (the SDK and pytest; the SDK requires ``kubernetes<36``, the
local cluster 36), against a local cluster the script starts. Not part of the main suite: the file name is outside
pytest's ``test_*.py`` collection, and it skips itself where ``kubeflow.trainer`` is not importable.

What a user of the SDK does and sees, unchanged (``KUBECONFIG`` points the SDK at the cluster, as it would a user):

1. ``list_runtimes``/``get_runtime`` show the built-in ``torch-distributed`` ClusterTrainingRuntime.
2. ``train()`` with a ``CustomTrainerContainer`` on 2 nodes (its command given with the ``TrainerCommand`` and
   ``TrainerArgs`` options: the process kubelet ignores images, so an image's entrypoint cannot run);
   ``list_jobs``/``get_job`` show the job Running with its steps ``node-0``/``node-1`` and their pods;
   ``wait_for_job_status`` reaches Complete; ``get_job_logs`` of each step (following it to its end, and read
   after) holds what its rank printed (``WORLD_SIZE 2``, the all-reduced sum); ``get_job_events`` names the pods;
   ``delete_job`` removes the job and (garbage collector) its pods.
3. The same with a ``CustomTrainer`` (a Python function): the SDK builds ``bash -c`` writing the function's source
   to a file and running ``torchrun`` on it, which the process kubelet runs with the host venv's ``torchrun``.
4. A job past its ``ActiveDeadlineSeconds`` option is Failed: ``wait_for_job_status`` for Complete raises.

The training holds after its all-reduce until the check opens a gate file (same host, same filesystem), so the
check sees the job Running on both nodes at a time of its own choosing rather than by luck of timing.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

trainer = pytest.importorskip("kubeflow.trainer", reason="the Kubeflow SDK v2 (kubeflow 0.5.x) is not installed here")

from kubeflow.trainer.options import ActiveDeadlineSeconds, Name, TrainerArgs, TrainerCommand
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

RUNTIME = "torch-distributed"
NUM_NODES = 2
#: The process kubelet ignores the image; the SDK requires one for a CustomTrainerContainer.
IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
#: Upper bounds, in seconds: both nodes Running after train(); Complete after the gate opens; the job and its pods
#: gone after delete_job.
RUNNING_WITHIN = 180
COMPLETE_WITHIN = 180
DELETED_WITHIN = 120
#: After Complete, the following log stream of a finished container has ended within this many seconds.
FOLLOW_ENDS_WITHIN = 30
#: The active deadline of the job that is to fail, in seconds.
DEADLINE = 5
POD_SELECTOR = "jobset.sigs.k8s.io/jobset-name={name}"


def train_with_torch(gate: str) -> None:
    """The training both trainers run on every node, under torchrun: one gloo all-reduce across the ranks, then
    wait (at most 300 s) for the check's gate file. Self-contained, as the SDK ships its source; no dollar sign
    and no backquote in it, as the SDK puts that source in an unquoted bash here-document."""
    import os
    import time

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    world = os.environ["WORLD_SIZE"]
    node_rank = os.environ["PET_NODE_RANK"]
    print(f"sdk2-check rank {rank} WORLD_SIZE {world} node {node_rank} sum {int(total.item())}", flush=True)
    deadline = time.monotonic() + 300
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.2)
    dist.destroy_process_group()


def say(message: str) -> None:
    print(f"sdk2-check: {message}", flush=True)


def wait_for(read: Callable[[], Any], done: Callable[[Any], bool], timeout: float, what: str) -> Any:
    """Poll ``read()`` until ``done(value)``; fail after ``timeout`` seconds showing the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = read()
        if done(value):
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:g}s waiting for {what}; last value: {value!r}")


@pytest.fixture(scope="module")
def core_v1() -> client.CoreV1Api:
    if not os.environ.get("KUBECONFIG"):
        pytest.fail("KUBECONFIG is not set: run this through scripts/sdk2-check.sh")
    return client.CoreV1Api(config.new_client_from_config())


@pytest.fixture(scope="module")
def namespace(core_v1: client.CoreV1Api) -> Iterator[str]:
    """The check's own namespace, created here and deleted at the end (with whatever a failed test left)."""
    name = f"sdk2-check-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    say(f"namespace {name} (KUBECONFIG {os.environ['KUBECONFIG']})")
    yield name
    try:
        core_v1.delete_namespace(name)
    except ApiException as e:
        if e.status != 404:
            raise


@pytest.fixture(scope="module")
def sdk(namespace: str) -> trainer.TrainerClient:
    # As a user: the kubeconfig from KUBECONFIG, only the namespace given.
    return trainer.TrainerClient(backend_config=trainer.KubernetesBackendConfig(namespace=namespace))


def test_runtime_is_listed(sdk: trainer.TrainerClient) -> None:
    runtimes = {runtime.name: runtime for runtime in sdk.list_runtimes()}
    say(f"list_runtimes: {sorted(runtimes)}")
    assert RUNTIME in runtimes, runtimes
    runtime = sdk.get_runtime(RUNTIME)
    say(f"get_runtime: {runtime}")
    assert runtime == runtimes[RUNTIME]
    assert runtime.kind == trainer.RuntimeKind.CLUSTER_TRAINING_RUNTIME
    assert runtime.trainer.framework == "torch"
    assert runtime.trainer.trainer_type == trainer.TrainerType.CUSTOM_TRAINER
    assert runtime.trainer.num_nodes == 1
    # The SDK chooses torchrun because the runtime's mlPolicy has torch.
    assert "torchrun" in runtime.trainer.command[-1], runtime.trainer.command


def test_custom_trainer_container_trains_on_two_nodes(
    sdk: trainer.TrainerClient, core_v1: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    gate = tmp_path / "open"
    code = f"{inspect.getsource(train_with_torch)}\ntrain_with_torch(gate={str(gate)!r})\n"
    name = sdk.train(
        runtime=RUNTIME,
        trainer=trainer.CustomTrainerContainer(image=IMAGE, num_nodes=NUM_NODES, env={"SDK2_CHECK": "container"}),
        # torchrun reads the PET_* variables the torch runtime sets; --no-python runs `python -c` as each rank.
        options=[TrainerCommand(command=["torchrun"]), TrainerArgs(args=["--no-python", "python", "-c", code])],
    )
    say(f"train (CustomTrainerContainer) made TrainJob {namespace}/{name}")
    assert len(name) == 12 and name[0].isalpha(), name
    run_to_completion(sdk, core_v1, namespace, name, gate)


def test_custom_trainer_function_trains_on_two_nodes(
    sdk: trainer.TrainerClient, core_v1: client.CoreV1Api, namespace: str, tmp_path: Path
) -> None:
    gate = tmp_path / "open"
    wanted = f"sdk2-function-{uuid.uuid4().hex[:6]}"
    name = sdk.train(
        runtime=sdk.get_runtime(RUNTIME),
        trainer=trainer.CustomTrainer(func=train_with_torch, func_args={"gate": str(gate)}, num_nodes=NUM_NODES),
        options=[Name(name=wanted)],
    )
    say(f"train (CustomTrainer) made TrainJob {namespace}/{name}")
    assert name == wanted
    run_to_completion(sdk, core_v1, namespace, name, gate)


def test_active_deadline_fails_the_job(sdk: trainer.TrainerClient, core_v1: client.CoreV1Api, namespace: str) -> None:
    """A job past its ``ActiveDeadlineSeconds`` is Failed to the SDK: ``wait_for_job_status`` for Complete raises."""
    name = sdk.train(
        runtime=RUNTIME,
        trainer=trainer.CustomTrainerContainer(image=IMAGE, num_nodes=1),
        options=[
            TrainerCommand(
                command=["python", "-c", "import time; print('sdk2-check waits', flush=True); time.sleep(300)"]
            ),
            ActiveDeadlineSeconds(seconds=DEADLINE),
        ],
    )
    say(f"train (CustomTrainerContainer, activeDeadlineSeconds {DEADLINE}) made TrainJob {namespace}/{name}")
    with pytest.raises(RuntimeError, match=f"TrainJob {name} is Failed"):
        sdk.wait_for_job_status(name, timeout=RUNNING_WITHIN, polling_interval=1)
    failed = sdk.wait_for_job_status(name, status={"Failed"}, timeout=10, polling_interval=1)
    say(f"get_job {name}: {failed.status}, steps {[(s.name, s.status) for s in failed.steps]}")
    assert failed.status == "Failed"
    check_deleted(sdk, core_v1, namespace, name)


def run_to_completion(
    sdk: trainer.TrainerClient, core_v1: client.CoreV1Api, namespace: str, name: str, gate: Path
) -> None:
    """Running on both nodes, listed; Complete once the gate opens; the logs of both ranks; deleted."""
    running = sdk.wait_for_job_status(name, status={"Running"}, timeout=RUNNING_WITHIN, polling_interval=1)
    check_steps(running, name, "Running")
    listed = {job.name: job for job in sdk.list_jobs()}
    assert name in listed, sorted(listed)
    assert listed[name].runtime.name == RUNTIME and listed[name].num_nodes == NUM_NODES
    assert [job.name for job in sdk.list_jobs(runtime=sdk.get_runtime(RUNTIME))].count(name) == 1

    follower = follow_logs(sdk, name)
    gate.touch()
    seen: list[str] = []
    started = time.monotonic()
    job = sdk.wait_for_job_status(
        name, timeout=COMPLETE_WITHIN, polling_interval=1, callbacks=[lambda j: seen.append(j.status)]
    )
    say(f"wait_for_job_status: {job.status} after {time.monotonic() - started:.1f} s (statuses seen {seen})")
    assert job.status == "Complete"
    assert set(seen) <= {"Running", "Complete"}, seen
    check_steps(job, name, "Succeeded")
    follower.join(timeout=FOLLOW_ENDS_WITHIN)
    assert not follower.is_alive(), "get_job_logs(follow=True) still streams after the job completed"
    assert f"sdk2-check rank 0 WORLD_SIZE {NUM_NODES} node 0 sum 3" in follower.lines, follower.lines
    check_logs(sdk, name)
    events = sdk.get_job_events(name)
    say(f"get_job_events: {[(e.involved_object_kind, e.involved_object_name, e.reason) for e in events]}")
    pods = {step.pod_name for step in job.steps}
    assert any(e.involved_object_kind == "Pod" and e.involved_object_name in pods for e in events), events
    check_deleted(sdk, core_v1, namespace, name)


class LogFollower(threading.Thread):
    """``get_job_logs(follow=True)`` of node-0 read to its end in a thread, so that a stream that never ends fails
    the check instead of hanging it."""

    def __init__(self, sdk: trainer.TrainerClient, name: str) -> None:
        super().__init__(daemon=True)
        self.sdk, self.name, self.lines = sdk, name, []

    def run(self) -> None:
        self.lines.extend(self.sdk.get_job_logs(self.name, follow=True))


def follow_logs(sdk: trainer.TrainerClient, name: str) -> LogFollower:
    follower = LogFollower(sdk, name)
    follower.start()
    return follower


def check_steps(job: Any, name: str, phase: str) -> None:
    """The job as ``get_job`` shows it: the runtime, 2 nodes, and one step per node with its pod in ``phase``."""
    steps = sorted(job.steps, key=lambda step: step.name)
    say(f"get_job {name}: {job.status}, steps {[(s.name, s.status, s.pod_name, s.device_count) for s in steps]}")
    assert job.name == name and job.runtime.name == RUNTIME and job.num_nodes == NUM_NODES
    assert [step.name for step in steps] == [f"node-{index}" for index in range(NUM_NODES)]
    assert [step.status for step in steps] == [phase] * NUM_NODES
    for index, step in enumerate(steps):
        # A JobSet's Job is <jobset>-<replicated job>-<job index>; an Indexed Job's pod <job>-<completion index>-.
        assert step.pod_name.startswith(f"{name}-node-0-{index}-"), step.pod_name
        # PET_NPROC_PER_NODE: 1 process per node when the TrainJob asks for no CPU or GPU.
        assert step.device_count == "1", step


def check_logs(sdk: trainer.TrainerClient, name: str) -> None:
    for rank in range(NUM_NODES):
        lines = list(sdk.get_job_logs(name, step=f"node-{rank}"))
        say(f"get_job_logs {name} node-{rank}: {[line for line in lines if 'sdk2-check' in line]}")
        wanted = f"sdk2-check rank {rank} WORLD_SIZE {NUM_NODES} node {rank} sum 3"
        assert wanted in lines, lines
    # The default step is node-0.
    assert "sdk2-check rank 0 WORLD_SIZE 2 node 0 sum 3" in list(sdk.get_job_logs(name))


def check_deleted(sdk: trainer.TrainerClient, core_v1: client.CoreV1Api, namespace: str, name: str) -> None:
    sdk.delete_job(name)

    def job_left() -> list[str]:
        return [job.name for job in sdk.list_jobs() if job.name == name]

    def pods_left() -> list[str]:
        pods = core_v1.list_namespaced_pod(namespace, label_selector=POD_SELECTOR.format(name=name)).items
        return [pod.metadata.name for pod in pods]

    wait_for(job_left, lambda left: not left, DELETED_WITHIN, f"TrainJob {name} to be gone")
    wait_for(pods_left, lambda left: not left, DELETED_WITHIN, f"the pods of {name} to be gone")
    say(f"delete_job {name}: the TrainJob and its pods are gone")

"""TrainingJobOperator under process-level faults: the apiserver stopped and started again mid-job, the local
training controller stopped for a while, the process running the task (or the trigger) SIGKILLed mid-job.

The apiserver and controller faults run on a private cluster with workloads (ports base+10..base+13, its own
state dir), so no other test sees the outage. Each case asserts the task's final state, exactly one job per task
instance (a watch counts every uid created, reconnecting across the outage), and no job or pod left behind.

A Kubeflow Trainer v2 TrainJob goes through each fault too (``kind``: the apiserver and the controller — the local
trainer and JobSet controllers with the training operator — stopped, in both modes; the task process and the trigger
process SIGKILLed), but for the death between the create and the stored identity (PyTorchJob only: the path it
takes, attaching by name after a 409, is the hook's and the take-up's, the same for every kind).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from airflow.providers.common.compat.sdk import TaskDeferred

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.families import family_of
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob.triggers.training_job import FINISHED
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import first_event, rebuild
from tests.support.faults import JobCreations, count_orphans
from tests.support.jobs import TaskInstanceStandIn, pytorch_specs, run_in_thread
from tests.support.run_try import FileTaskStateStore

ROOT = Path(__file__).resolve().parents[2]

#: The provider's backoff at a hundredth of its length: an outage is ridden out by the outage tolerance and the
#: reconnects, whose result (not the seconds between attempts) is what these tests assert.
pytestmark = pytest.mark.usefixtures("fast_backoff")


def sleeper(seconds: float) -> str:
    return f"import time\nprint('started', flush=True)\ntime.sleep({seconds})\nprint('done', flush=True)"


def until_released(flag: Path, limit: float = 180) -> str:
    """Container code that runs until ``flag`` exists (at most ``limit`` seconds): a job that is surely still
    running when a fault is over, and ends right after."""
    return (
        f"import os, time\nprint('started', flush=True)\ndeadline = time.monotonic() + {limit}\n"
        f"while not os.path.exists({str(flag)!r}) and time.monotonic() < deadline:\n    time.sleep(0.1)\n"
        f"print('done', flush=True)"
    )


KINDS = pytest.mark.parametrize("kind", ["PyTorchJob", "TrainJob"])


def trainer(code: str, workers: int = 0) -> dict:
    """A TrainJob's ``spec.trainer``: ``code`` on ``workers + 1`` nodes (the PyTorchJob's Master and workers)."""
    return {"numNodes": workers + 1, "command": [sys.executable, "-c", code]}


def make(code: str, deferrable: bool, workers: int = 0, kind: str = "PyTorchJob") -> TrainingJobOperator:
    common = dict(task_id="train", poll_interval=0.5, on_finish="delete_job", deferrable=deferrable)
    if kind == "TrainJob":
        return TrainJobOperator(runtime="torch-distributed", trainer=trainer(code, workers), **common)
    return TrainingJobOperator(kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=workers), **common)


def running(custom, namespace, kind: str = "PyTorchJob") -> bool:
    if kind == "TrainJob":  # no Running condition: its phase is read from its JobSet's counts
        family = family_of(kind)
        r = family.resource
        items = custom.list_namespaced_custom_object(r.group, r.version, namespace, r.plural)["items"]
        return any(family.phase(j.get("status")) == "Running" for j in items)
    items = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs")["items"]
    return any(
        c["type"] == "Running" and c["status"] == "True"
        for j in items
        for c in (j.get("status") or {}).get("conditions") or []
    )


def run_with_fault(operator, ti, custom, namespace, fault, deferrable: bool, kind: str = "PyTorchJob") -> dict:
    """Run the task; once its job is Running, call ``fault()`` (which returns when the fault is over)."""
    if not deferrable:
        thread, outcome = run_in_thread(operator, {"ti": ti})
        wait_for(lambda: running(custom, namespace, kind) or not thread.is_alive(), timeout=120, what="job running")
        fault()
        thread.join(300)
        assert not thread.is_alive(), "the task did not end within 300 s of the fault"
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    trigger = deferred.value.trigger

    async def scenario():
        waiting = asyncio.ensure_future(_first(trigger))
        await asyncio.to_thread(
            lambda: (wait_for(lambda: running(custom, namespace, kind), timeout=120, what="job running"), fault())
        )
        return await asyncio.wait_for(waiting, 300)

    event = asyncio.run(scenario())
    summary = operator.execute_complete({"ti": ti}, event)  # as Airflow resumes it, whatever the event
    assert event["outcome"] == FINISHED, event["message"]
    return summary


async def _first(trigger):
    async for event in trigger.run():
        return event.payload


def succeeded(summary) -> bool:
    success = family_of(summary["kind"]).success_condition  # Succeeded, Complete
    return [c["type"] for c in summary["conditions"] if c["status"] == "True"][-1] == success


# ---- a private cluster with workloads, for the apiserver and controller outages ---------------------------


@pytest.fixture(scope="module")
def private_cluster(tmp_path_factory):
    from airflow_trainjob_local.testing.plugin import private_cluster as started

    with started(tmp_path_factory.mktemp("process-faults") / "cluster", workloads=True) as cluster:
        yield cluster


@pytest.fixture
def private(private_cluster, monkeypatch):
    """A namespace on the private cluster, ``kubernetes_default`` pointing there, and a creations watch."""
    from kubernetes import client

    private_cluster.up()  # whatever an earlier case stopped runs again
    api = private_cluster.api_client()
    core = client.CoreV1Api(api)
    namespace = f"t-proc-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    monkeypatch.setenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", private_cluster.airflow_connection(namespace))
    creations = {kind: JobCreations(api, namespace, kind=kind).start() for kind in ("PyTorchJob", "TrainJob")}
    yield SimpleNamespace(
        cluster=private_cluster, api=api, custom=client.CustomObjectsApi(api), namespace=namespace, creations=creations
    )
    for watcher in creations.values():
        watcher.stop()
    private_cluster.up()
    core.delete_namespace(namespace)
    api.close()


def outage(cluster, component: str, seconds: float, case, release: Path | None = None):
    """The fault: ``component`` stopped for ``seconds``, then started again; then ``release`` is created (the job
    of :func:`until_released` ends)."""

    def fault():
        assert cluster.pids().get(component), f"{component} was not running when the fault was due"
        cluster.stop_component(component)
        case.observe(injected=int(component not in cluster.pids()))
        time.sleep(seconds)
        cluster.up()
        if release is not None:
            release.touch()

    return fault


@KINDS
@pytest.mark.parametrize("mode", ["synchronous", "deferred"])
def test_apiserver_stopped_then_started_mid_job(mode, kind, private, fault_case, tmp_path):
    ti = TaskInstanceStandIn()
    with fault_case("apiserver stopped 20 s, restarted", mode, "mid-job", job_kind=kind) as case:
        measuring(case, private, ti, kind)
        # The job runs until the apiserver is back, then ends: its end is seen after the outage.
        release = tmp_path / "apiserver-back"
        summary = run_with_fault(
            make(until_released(release), mode == "deferred", kind=kind),
            ti,
            private.custom,
            private.namespace,
            outage(private.cluster, "kube-apiserver", 20, case, release),
            mode == "deferred",
            kind,
        )
        case.measure()
        assert case.injected == 1, "the apiserver was never stopped"
        assert succeeded(summary) and summary["name"] == ti.xcom["job_name"]
        assert case.jobs == 1 and case.orphaned == 0


@KINDS
@pytest.mark.parametrize("mode", ["synchronous", "deferred"])
def test_controller_stopped_for_a_while_then_back(mode, kind, private, fault_case):
    ti = TaskInstanceStandIn()
    with fault_case("training controller stopped 8 s", mode, "mid-job", job_kind=kind) as case:
        measuring(case, private, ti, kind)
        summary = run_with_fault(
            make(sleeper(4), mode == "deferred", workers=1, kind=kind),
            ti,
            private.custom,
            private.namespace,
            outage(private.cluster, "controller", 8, case),
            mode == "deferred",
            kind,
        )
        case.measure()
        assert case.injected == 1, "the controller was never stopped"
        assert succeeded(summary) and summary["name"] == ti.xcom["job_name"]
        assert case.jobs == 1 and case.orphaned == 0


def measuring(case, private, ti, kind: str = "PyTorchJob") -> None:
    """Count jobs and orphans at the end (and for a case that failed); ``injected`` is set by the fault."""
    case.measurer = lambda: dict(
        injected=case.injected,
        jobs=private.creations[kind].jobs_of(ti.run_id),
        orphans=count_orphans(private.api, private.namespace, kind=kind),
    )


# ---- SIGKILL of the process running the task / the trigger (session cluster) ---------------------------------


@pytest.fixture
def creations(kube_api_client, namespace):
    watcher = JobCreations(kube_api_client, namespace).start()
    yield watcher
    watcher.stop()


@pytest.fixture
def creations_of(kube_api_client, namespace):
    """``creations_of(kind)``: a creations watch of ``kind`` in the test's namespace, stopped after the test."""
    watchers: list[JobCreations] = []

    def start(kind: str) -> JobCreations:
        watchers.append(JobCreations(kube_api_client, namespace, kind=kind).start())
        return watchers[-1]

    yield start
    for watcher in watchers:
        watcher.stop()


def job_args(code: str, kind: str, workers: int = 1) -> dict:
    """What ``run_try`` builds the task's job from: a PyTorchJob's replica specs, or a TrainJob's trainer."""
    return (
        {"trainer": trainer(code, workers)}
        if kind == "TrainJob"
        else {"replica_specs": pytorch_specs(code, workers=workers)}
    )


def spawn(args: dict, log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.support.run_try", json.dumps(args)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def sigkill(proc: subprocess.Popen) -> bool:
    """SIGKILL ``proc`` if it still runs; True when it was alive to be killed."""
    alive = proc.poll() is None
    if alive:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    return alive and proc.returncode == -signal.SIGKILL


def run_the_retry(code: str, run_id: str, store_path: Path, capfd, kind: str = "PyTorchJob") -> tuple[dict, str]:
    """Try 2 of the task, in this process, with the task_state_store try 1 left: its summary and task log."""
    capfd.readouterr()
    second = TaskInstanceStandIn(run_id=run_id, try_number=2)
    summary = make(code, deferrable=False, workers=1, kind=kind).execute(
        {"ti": second, "task_state_store": FileTaskStateStore(store_path)}
    )
    return summary, capfd.readouterr().out


@KINDS
@pytest.mark.usefixtures("kubernetes_default_conn")
def test_sigkill_of_the_task_process_then_the_retry_reattaches(
    kind, namespace, custom_objects, kube_api_client, creations_of, fault_case, tmp_path, capfd
):
    store_path, run_id = tmp_path / "task_state_store.json", f"manual__{uuid.uuid4().hex[:8]}"
    code = sleeper(8)
    creations = creations_of(kind)
    with fault_case("SIGKILL of the task process, then the retry", "synchronous", "mid-job", job_kind=kind) as case:
        proc = spawn(
            {
                "mode": "task",
                "run_id": run_id,
                "try_number": 1,
                "store": str(store_path),
                **job_args(code, kind),
                "out": str(tmp_path / "try1.json"),
            },
            tmp_path / "try1.log",
        )
        try:
            wait_for(
                lambda: (running(custom_objects, namespace, kind) and store_path.exists()) or proc.poll() is not None,
                timeout=120,
                what="try 1's job running and its identity stored",
            )
        finally:
            killed = sigkill(proc)
        case.observe(injected=int(killed))
        case.measurer = lambda: dict(
            jobs=creations.jobs_of(run_id), orphans=count_orphans(kube_api_client, namespace, kind=kind)
        )
        assert killed, f"try 1 ended before the kill: {(tmp_path / 'try1.log').read_text()[-2000:]}"
        stored = FileTaskStateStore(store_path).get(TrainingJobOperator.external_id_key)
        assert stored and stored["namespace"] == namespace

        summary, task_log = run_the_retry(code, run_id, store_path, capfd, kind)
        assert "Reconnecting to existing job" in task_log
        case.measure()
        assert succeeded(summary) and summary["name"] == stored["name"]
        assert case.jobs == 1, f"{case.jobs} jobs for one task instance"
        assert case.orphaned == 0


@pytest.mark.usefixtures("kubernetes_default_conn")
def test_death_between_create_and_the_stored_identity_then_the_retry_attaches(
    namespace, custom_objects, kube_api_client, creations, fault_case, tmp_path, capfd
):
    """Try 1 creates its job and dies (SIGKILL) before ``task_state_store`` holds the job's identity. Try 2 finds
    nothing stored, submits, meets its own running job by name (409) and, the labels saying it is this task
    instance's, attaches to it (``reattach_on_restart``): one job, run once."""
    store_path, run_id = tmp_path / "task_state_store.json", f"manual__{uuid.uuid4().hex[:8]}"
    code = sleeper(6)
    with fault_case(
        "SIGKILL between create and the task_state_store write, then the retry", "synchronous", "after create"
    ) as case:
        proc = spawn(
            {
                "mode": "task",
                "run_id": run_id,
                "try_number": 1,
                "store": str(store_path),
                "replica_specs": pytorch_specs(code, workers=1),
                "out": str(tmp_path / "try1.json"),
                "die_when_storing": True,
            },
            tmp_path / "try1.log",
        )
        proc.wait(120)
        died = proc.returncode == -signal.SIGKILL
        case.observe(injected=int(died))
        case.measurer = lambda: dict(jobs=creations.jobs_of(run_id), orphans=count_orphans(kube_api_client, namespace))
        assert died, f"try 1 did not die at the store: {(tmp_path / 'try1.log').read_text()[-2000:]}"
        assert not store_path.exists()

        summary, task_log = run_the_retry(code, run_id, store_path, capfd)
        assert "Attaching to PyTorchJob" in task_log
        case.measure()
        assert succeeded(summary)
        assert case.jobs == 1, f"{case.jobs} jobs for one task instance"
        assert case.orphaned == 0


@KINDS
@pytest.mark.usefixtures("kubernetes_default_conn")
def test_sigkill_of_the_trigger_process_then_another_triggerer(
    kind, namespace, kube_api_client, creations_of, fault_case, tmp_path, custom_objects
):
    ti = TaskInstanceStandIn()
    creations = creations_of(kind)
    with fault_case(
        "SIGKILL of the triggerer process, trigger re-created", "deferred", "mid-job", job_kind=kind
    ) as case:
        operator = make(sleeper(8), deferrable=True, workers=1, kind=kind)
        with pytest.raises(TaskDeferred) as deferred:
            operator.execute({"ti": ti})
        classpath, kwargs = deferred.value.trigger.serialize()
        log = tmp_path / "triggerer.log"
        proc = spawn(
            {"mode": "trigger", "classpath": classpath, "kwargs": kwargs, "out": str(tmp_path / "event.json")}, log
        )
        try:
            wait_for(lambda: running(custom_objects, namespace, kind), timeout=120, what="the job running")
            time.sleep(3)  # the trigger process is waiting on the job (its imports took less than that)
        finally:
            killed = sigkill(proc)
        case.observe(injected=int(killed))
        case.measurer = lambda: dict(
            jobs=creations.jobs_of(ti.run_id), orphans=count_orphans(kube_api_client, namespace, kind=kind)
        )
        assert killed, f"the trigger process ended before the kill: {log.read_text()[-2000:]}"
        assert not (tmp_path / "event.json").exists()
        event = first_event(
            rebuild(deferred.value.trigger), timeout=240.0
        )  # another triggerer, from the serialized kwargs
        summary = operator.execute_complete({"ti": ti}, event)
        assert event["outcome"] == FINISHED, event["message"]
        case.measure()
        assert succeeded(summary)
        assert case.jobs == 1 and case.orphaned == 0

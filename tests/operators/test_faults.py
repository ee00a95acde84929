"""TrainingJobOperator under HTTP faults, injected by the fault proxy between the provider and the real apiserver.

Every case runs a whole task (synchronous: ``execute``; deferred: ``execute`` -> ``TaskDeferred`` -> the trigger's
first event -> ``execute_complete``) with one scripted fault, and asserts what the issue asks of each fault:

- the fault was really injected (the proxy's count; a fault test whose fault never hit is a defect);
- the task's final state and message are right (here: the job succeeds and the summary says so; the lead
  replica's log lines each appear exactly once in the task log);
- exactly one job existed for the task instance (a watch on the namespace counts every uid ever created);
- nothing that should be gone remains (``on_finish="delete_job"``: no job, no pod — orphans are counted).

A Kubeflow Trainer v2 TrainJob (``TrainJobOperator``) goes through a representative subset (:data:`TRAINJOB_CASES`:
each place a request is made — create, watch, status read, pod list, log stream, cleanup delete — with the fault that
tests it hardest there, in both modes): the same assertions, with node 0's log and ``Complete``.

Process-level faults (apiserver restart, controller stopped, SIGKILL) are in ``test_process_faults.py``.
"""

from __future__ import annotations

import re
import sys

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred

from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob.triggers.training_job import FINISHED
from tests.support.deferred import first_event
from tests.support.fault_proxy import Fault
from tests.support.faults import JobCreations, count_orphans
from tests.support.jobs import TaskInstanceStandIn, pytorch_specs

LINES = 6
CODE = f"import time\nfor i in range({LINES}):\n    print('step', i, flush=True); time.sleep(0.5)"

CREATE = {"method": "POST", "path": r"/pytorchjobs$"}
STATUS = {"method": "GET", "path": r"/pytorchjobs/[^/]+$", "watch": False}
PODS = {"method": "GET", "path": r"/pods$", "watch": False}
LOG_STREAM = {"method": "GET", "path": r"/pods/[^/]+/log$", "watch": True}
WATCH = {"method": "GET", "path": r"/pytorchjobs$", "watch": True}
DELETE = {"method": "DELETE", "path": r"/pytorchjobs/[^/]+$"}

# (fault kind as reported, where, the Fault's arguments). Status reads and pod lists skip the first requests so
# the fault lands mid-job; ``times`` > 1 makes a fault persist through the first retry.
SYNC_CASES = [
    ("429 Retry-After", "create", dict(action="status", status=429, retry_after=1, times=2, **CREATE)),
    ("500", "create", dict(action="status", status=500, times=2, **CREATE)),
    ("502", "create", dict(action="status", status=502, times=2, **CREATE)),
    ("503", "create", dict(action="status", status=503, times=2, **CREATE)),
    ("504", "create", dict(action="status", status=504, times=2, **CREATE)),
    ("504 after the apiserver acted", "create", dict(action="status", status=504, after_forward=True, **CREATE)),
    ("connection reset", "create", dict(action="reset", times=2, **CREATE)),
    ("connection reset after the apiserver acted", "create", dict(action="reset", after_forward=True, **CREATE)),
    ("connection dropped", "create", dict(action="drop", **CREATE)),
    ("delay 2 s", "create", dict(action="delay", seconds=2, **CREATE)),
    # The synchronous wait watches its job (fieldSelector metadata.name): faults on that watch...
    ("429 Retry-After", "watch", dict(action="status", status=429, retry_after=1, times=2, **WATCH)),
    ("500", "watch", dict(action="status", status=500, times=3, **WATCH)),
    ("502", "watch", dict(action="status", status=502, times=3, **WATCH)),
    ("503", "watch", dict(action="status", status=503, times=3, **WATCH)),
    ("504", "watch", dict(action="status", status=504, times=3, **WATCH)),
    ("connection reset", "watch", dict(action="reset", times=3, **WATCH)),
    ("connection dropped", "watch", dict(action="drop", times=2, **WATCH)),
    ("delay 2 s", "watch", dict(action="delay", seconds=2, times=2, **WATCH)),
    ("watch cut mid-way", "watch", dict(action="cut", after_events=1, times=2, **WATCH)),
    ("watch expired (410)", "watch", dict(action="expire", times=2, **WATCH)),
    ("410 Gone answer", "watch", dict(action="status", status=410, times=1, **WATCH)),
    # ...and on its status reads (after a 410, while polling, and the cleanup's ownership check).
    ("429 Retry-After", "status read", dict(action="status", status=429, retry_after=1, times=2, **STATUS)),
    ("503", "status read", dict(action="status", status=503, times=3, **STATUS)),
    ("connection reset", "status read", dict(action="reset", times=3, **STATUS)),
    ("stall (read timeout)", "status read", dict(action="delay", seconds=120, times=1, **STATUS)),
    ("429 Retry-After", "pod list", dict(action="status", status=429, retry_after=1, skip=2, times=2, **PODS)),
    ("503", "pod list", dict(action="status", status=503, skip=2, times=3, **PODS)),
    ("connection reset", "pod list", dict(action="reset", skip=2, times=3, **PODS)),
    ("stream cut mid-way", "log stream", dict(action="cut", after_events=2, times=2, **LOG_STREAM)),
    ("connection reset", "log stream", dict(action="reset", times=2, **LOG_STREAM)),
    ("500", "log stream", dict(action="status", status=500, times=2, **LOG_STREAM)),
    ("429 Retry-After", "cleanup delete", dict(action="status", status=429, retry_after=1, times=2, **DELETE)),
    ("500", "cleanup delete", dict(action="status", status=500, times=2, **DELETE)),
    ("503", "cleanup delete", dict(action="status", status=503, times=3, **DELETE)),
    (
        "504 after the apiserver acted",
        "cleanup delete",
        dict(action="status", status=504, after_forward=True, **DELETE),
    ),
    ("connection reset", "cleanup delete", dict(action="reset", times=2, **DELETE)),
    (
        "connection reset after the apiserver acted",
        "cleanup delete",
        dict(action="reset", after_forward=True, **DELETE),
    ),
]

DEFERRED_CASES = [
    ("503", "create", dict(action="status", status=503, times=2, **CREATE)),
    ("504 after the apiserver acted", "create", dict(action="status", status=504, after_forward=True, **CREATE)),
    ("connection reset after the apiserver acted", "create", dict(action="reset", after_forward=True, **CREATE)),
    ("429 Retry-After", "status read", dict(action="status", status=429, retry_after=1, times=2, **STATUS)),
    ("503", "status read", dict(action="status", status=503, times=3, **STATUS)),
    ("connection reset", "status read", dict(action="reset", times=2, **STATUS)),
    ("watch cut mid-way", "watch", dict(action="cut", after_events=0, times=2, **WATCH)),
    ("watch expired (410)", "watch", dict(action="expire", times=2, **WATCH)),
    ("503", "watch", dict(action="status", status=503, times=2, **WATCH)),
    ("410 Gone answer", "watch", dict(action="status", status=410, times=1, **WATCH)),
    ("503", "pod list", dict(action="status", status=503, times=2, **PODS)),
    ("503", "cleanup delete", dict(action="status", status=503, times=2, **DELETE)),
    (
        "connection reset after the apiserver acted",
        "cleanup delete",
        dict(action="reset", after_forward=True, **DELETE),
    ),
]


# The TrainJob's requests: the same places, on its own resource.
TJ_CREATE = {"method": "POST", "path": r"/trainjobs$"}
TJ_STATUS = {"method": "GET", "path": r"/trainjobs/[^/]+$", "watch": False}
TJ_WATCH = {"method": "GET", "path": r"/trainjobs$", "watch": True}
TJ_DELETE = {"method": "DELETE", "path": r"/trainjobs/[^/]+$"}
#: (fault kind, where, mode, the Fault's arguments): a representative subset of the cases above for TrainJobs.
TRAINJOB_CASES = [
    ("503", "create", "synchronous", dict(action="status", status=503, times=2, **TJ_CREATE)),
    (
        "504 after the apiserver acted",
        "create",
        "synchronous",
        dict(action="status", status=504, after_forward=True, **TJ_CREATE),
    ),
    (
        "connection reset after the apiserver acted",
        "create",
        "synchronous",
        dict(action="reset", after_forward=True, **TJ_CREATE),
    ),
    ("503", "watch", "synchronous", dict(action="status", status=503, times=3, **TJ_WATCH)),
    ("watch cut mid-way", "watch", "synchronous", dict(action="cut", after_events=1, times=2, **TJ_WATCH)),
    ("watch expired (410)", "watch", "synchronous", dict(action="expire", times=2, **TJ_WATCH)),
    ("503", "status read", "synchronous", dict(action="status", status=503, times=3, **TJ_STATUS)),
    ("connection reset", "pod list", "synchronous", dict(action="reset", skip=2, times=3, **PODS)),
    ("stream cut mid-way", "log stream", "synchronous", dict(action="cut", after_events=2, times=2, **LOG_STREAM)),
    ("503", "cleanup delete", "synchronous", dict(action="status", status=503, times=3, **TJ_DELETE)),
    (
        "504 after the apiserver acted",
        "create",
        "deferred",
        dict(action="status", status=504, after_forward=True, **TJ_CREATE),
    ),
    ("503", "status read", "deferred", dict(action="status", status=503, times=3, **TJ_STATUS)),
    ("watch cut mid-way", "watch", "deferred", dict(action="cut", after_events=0, times=2, **TJ_WATCH)),
    ("watch expired (410)", "watch", "deferred", dict(action="expire", times=2, **TJ_WATCH)),
    ("503", "pod list", "deferred", dict(action="status", status=503, times=2, **PODS)),
    (
        "connection reset after the apiserver acted",
        "cleanup delete",
        "deferred",
        dict(action="reset", after_forward=True, **TJ_DELETE),
    ),
]


def _ids(cases):
    values = [case.values if hasattr(case, "values") else case for case in cases]
    return [f"{where}-{kind}".replace(" ", "_") for kind, where, _ in values]


@pytest.fixture
def creations(kube_api_client, namespace):
    watcher = JobCreations(kube_api_client, namespace).start()
    yield watcher
    watcher.stop()


@pytest.fixture
def short_read_timeout(monkeypatch):
    """The hook's read timeout, shortened so a stalled answer is given up on within the test's patience."""
    from airflow_trainjob.hooks import training_job

    monkeypatch.setattr(training_job, "REQUEST_TIMEOUT", (5.0, 3.0))


def make(deferrable: bool) -> TrainingJobOperator:
    return TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(CODE, workers=0),
        poll_interval=0.5,
        on_finish="delete_job",
        deferrable=deferrable,
    )


def measuring(case, proxy, fault, creations, kube_api_client, namespace, ti, kind="PyTorchJob"):
    case.measurer = lambda: dict(
        injected=proxy.hits(fault),
        jobs=creations.jobs_of(ti.run_id),
        orphans=count_orphans(kube_api_client, namespace, kind=kind),
    )


def assert_survived(case, proxy, ti, summary, success="Succeeded"):
    """The checks every HTTP fault case makes, recorded in the report row before they are asserted."""
    case.measure()
    assert case.injected >= 1, f"the fault was never injected; requests: {proxy.requests}"
    assert summary["name"] == ti.xcom["job_name"]
    assert [c["type"] for c in summary["conditions"] if c["status"] == "True"][-1] == success
    assert case.jobs == 1, f"{case.jobs} jobs existed for one task instance"
    assert case.orphaned == 0, f"{case.orphaned} jobs/pods left behind"


@pytest.mark.parametrize(("kind", "where", "fault_args"), SYNC_CASES, ids=_ids(SYNC_CASES))
def test_synchronous_task_survives(
    kind, where, fault_args, fault_proxy, fault_case, creations, kube_api_client, namespace, capfd, short_read_timeout
):
    ti = TaskInstanceStandIn()
    with fault_case(kind, "synchronous", where) as case:
        fault = fault_proxy.add(Fault(**fault_args))
        measuring(case, fault_proxy, fault, creations, kube_api_client, namespace, ti)
        summary = make(deferrable=False).execute({"ti": ti})
        task_log = capfd.readouterr().out
        assert_survived(case, fault_proxy, ti, summary)
        followed = re.findall(r"\[Master-0\] step (\d+)\b", task_log)
        # The followed log: every line once, none lost or repeated by a reconnect.
        assert followed == [str(i) for i in range(LINES)], f"lead replica's lines in the task log:\n{task_log}"


@pytest.mark.parametrize(("kind", "where", "fault_args"), DEFERRED_CASES, ids=_ids(DEFERRED_CASES))
def test_deferred_task_survives(
    kind, where, fault_args, fault_proxy, fault_case, creations, kube_api_client, namespace, capfd, short_read_timeout
):
    ti = TaskInstanceStandIn()
    with fault_case(kind, "deferred", where) as case:
        fault = fault_proxy.add(Fault(**fault_args))
        measuring(case, fault_proxy, fault, creations, kube_api_client, namespace, ti)
        operator = make(deferrable=True)
        with pytest.raises(TaskDeferred) as deferred:
            operator.execute({"ti": ti})
        event = first_event(deferred.value.trigger, timeout=120.0)
        summary = operator.execute_complete({"ti": ti}, event)  # as Airflow resumes it, whatever the event
        assert event["outcome"] == FINISHED, event["message"]
        task_log = capfd.readouterr().out
        assert_survived(case, fault_proxy, ti, summary)
        assert f"step {LINES - 1}" in task_log  # the lead replica's log, quoted at the end


@pytest.fixture
def trainjob_creations(kube_api_client, namespace):
    watcher = JobCreations(kube_api_client, namespace, kind="TrainJob").start()
    yield watcher
    watcher.stop()


def make_trainjob(deferrable: bool) -> TrainJobOperator:
    return TrainJobOperator(
        task_id="train",
        runtime="torch-distributed",
        trainer={"numNodes": 1, "command": [sys.executable, "-c", CODE]},
        poll_interval=0.5,
        on_finish="delete_job",
        deferrable=deferrable,
    )


@pytest.mark.parametrize(
    ("kind", "where", "mode", "fault_args"),
    TRAINJOB_CASES,
    ids=[f"{m}-{w}-{k}".replace(" ", "_") for k, w, m, _ in TRAINJOB_CASES],
)
def test_trainjob_task_survives(
    kind,
    where,
    mode,
    fault_args,
    fault_proxy,
    fault_case,
    trainjob_creations,
    kube_api_client,
    namespace,
    capfd,
    short_read_timeout,
):
    ti = TaskInstanceStandIn()
    with fault_case(kind, mode, where, job_kind="TrainJob") as case:
        fault = fault_proxy.add(Fault(**fault_args))
        measuring(case, fault_proxy, fault, trainjob_creations, kube_api_client, namespace, ti, kind="TrainJob")
        operator = make_trainjob(deferrable=mode == "deferred")
        if mode == "deferred":
            with pytest.raises(TaskDeferred) as deferred:
                operator.execute({"ti": ti})
            event = first_event(deferred.value.trigger, timeout=120.0)
            summary = operator.execute_complete({"ti": ti}, event)  # as Airflow resumes it, whatever the event
            assert event["outcome"] == FINISHED, event["message"]
        else:
            summary = operator.execute({"ti": ti})
        task_log = capfd.readouterr().out
        assert_survived(case, fault_proxy, ti, summary, success="Complete")
        if mode == "deferred":
            assert f"step {LINES - 1}" in task_log  # node 0's log, quoted at the end
        else:  # followed: every line once, none lost or repeated by a reconnect
            followed = re.findall(r"\[node-0\] step (\d+)\b", task_log)
            assert followed == [str(i) for i in range(LINES)], f"node 0's lines in the task log:\n{task_log}"


FAIL_CODE = (
    "import sys, time\nprint('loading', flush=True); time.sleep(1.5)\nprint('bad input', flush=True); sys.exit(1)"
)
LOG_READ = {"method": "GET", "path": r"/pods/[^/]+/log$", "watch": False}
FAILURE_CASES = [
    ("503", "watch", "synchronous", dict(action="status", status=503, times=3, **WATCH)),
    ("503", "status read", "synchronous", dict(action="status", status=503, times=3, **STATUS)),
    ("503", "failed replica's log read", "synchronous", dict(action="status", status=503, times=2, **LOG_READ)),
    ("connection reset", "pod list", "synchronous", dict(action="reset", skip=1, times=2, **PODS)),
    ("503", "status read", "deferred", dict(action="status", status=503, times=3, **STATUS)),
    ("503", "failed replica's log read", "deferred", dict(action="status", status=503, times=2, **LOG_READ)),
    ("503", "pod list", "deferred", dict(action="status", status=503, times=2, **PODS)),
]


def run_failing_job(mode: str, ti: TaskInstanceStandIn) -> str:
    """Run a task whose job fails with exit code 1, synchronously or deferred; the message of the permanent
    failure (``AirflowFailException``) it must raise."""
    operator = TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        poll_interval=0.5,
        on_finish="delete_job",
        replica_specs=pytorch_specs(FAIL_CODE, workers=0),
        deferrable=mode == "deferred",
    )
    with pytest.raises(AirflowFailException) as raised:
        if mode == "deferred":
            with pytest.raises(TaskDeferred) as deferred:
                operator.execute({"ti": ti})
            operator.execute_complete({"ti": ti}, first_event(deferred.value.trigger, timeout=120.0))
        else:
            operator.execute({"ti": ti})
    return str(raised.value)


@pytest.mark.parametrize(
    ("kind", "where", "mode", "fault_args"),
    FAILURE_CASES,
    ids=[f"{m}-{w}-{k}".replace(" ", "_") for k, w, m, _ in FAILURE_CASES],
)
def test_failed_job_keeps_its_verdict(
    kind, where, mode, fault_args, fault_proxy, fault_case, creations, kube_api_client, namespace, short_read_timeout
):
    """A job that fails (exit code 1) under a fault: the task fails permanently, with the exit code, the reason
    and the failed replica's log tail in its message, exactly as without the fault."""
    ti = TaskInstanceStandIn()
    with fault_case(f"{kind} (failing job)", mode, where) as case:
        fault = fault_proxy.add(Fault(**fault_args))
        measuring(case, fault_proxy, fault, creations, kube_api_client, namespace, ti)
        message = run_failing_job(mode, ti)
        assert "PyTorchJobFailed" in message and "Master-0" in message and "exit code 1" in message, message
        assert "| bad input" in message, message  # the failed replica's log tail
        case.measure()
        assert case.injected >= 1, f"the fault was never injected; requests: {fault_proxy.requests}"
        assert case.jobs == 1 and case.orphaned == 0


@pytest.mark.parametrize("job_state", ["running", "finished"])
def test_trigger_error_event_gets_the_jobs_real_verdict_and_cleanup(
    job_state, kubernetes_default_conn, fault_case, creations, kube_api_client, custom_objects, namespace
):
    """The trigger gave up (an ``error`` event, no job in it), whatever the reason: the resumed task reads the job
    itself. A finished job gets its verdict; a running one fails the task with the trigger's message and is deleted
    (the task ended). Neither is reported as 'deleted outside this task', and neither is left behind."""
    from airflow_trainjob.exceptions import TrainingJobError
    from airflow_trainjob_local.testing.waiting import wait_for

    ti = TaskInstanceStandIn()
    with fault_case("trigger error event", "deferred", f"job {job_state}") as case:
        case.measurer = lambda: dict(
            injected=1, jobs=creations.jobs_of(ti.run_id), orphans=count_orphans(kube_api_client, namespace)
        )
        code = CODE if job_state == "finished" else "import time; time.sleep(120)"
        operator = TrainingJobOperator(
            task_id="train",
            kind="PyTorchJob",
            replica_specs=pytorch_specs(code, workers=0),
            poll_interval=0.5,
            on_finish="delete_job",
            deferrable=True,
        )
        with pytest.raises(TaskDeferred):
            operator.execute({"ti": ti})
        phase = "Succeeded" if job_state == "finished" else "Running"
        wait_for(
            lambda: any(
                c["type"] == phase and c["status"] == "True"
                for j in custom_objects.list_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs")[
                    "items"
                ]
                for c in (j.get("status") or {}).get("conditions") or []
            ),
            what=f"job {phase}",
        )
        event = {
            "outcome": "error",
            "message": "waiting for the job failed: ClientPayloadError: injected",
            "job": None,
            "pods": [],
        }
        resumed = make(deferrable=True)  # Airflow resumes on a fresh operator object
        if job_state == "finished":
            summary = resumed.execute_complete({"ti": ti}, event)
            assert summary["conditions"][-1]["type"] == "Succeeded"
        else:
            with pytest.raises(TrainingJobError) as raised:
                resumed.execute_complete({"ti": ti}, event)
            assert type(raised.value) is TrainingJobError and "ClientPayloadError: injected" in str(raised.value)
        case.measure()
        assert case.jobs == 1 and case.orphaned == 0


@pytest.mark.parametrize("mode", ["synchronous", "deferred"])
def test_a_cleanup_that_keeps_failing_leaves_the_verdict(
    mode, fault_proxy, creations, custom_objects, core_v1, namespace, capfd, short_read_timeout
):
    """The job fails (exit code 1), then every DELETE of it answers 500: the task still fails permanently with the
    exit code — not with the cleanup's 500, which Airflow would retry, running the job again — and the task log
    says what could not be cleaned up. What is left has finished: nothing runs on."""
    from airflow_trainjob.hooks.retries import ATTEMPTS

    ti = TaskInstanceStandIn()
    fault = fault_proxy.add(Fault(action="status", status=500, times=1000, **DELETE))
    message = run_failing_job(mode, ti)
    assert "PyTorchJobFailed" in message and "exit code 1" in message, message
    assert fault_proxy.hits(fault) == ATTEMPTS, f"the job's DELETE was not retried as expected: {fault_proxy.requests}"
    task_log = capfd.readouterr()
    assert f"Could not clean up PyTorchJob {namespace}/{ti.xcom['job_name']}" in task_log.out + task_log.err
    assert creations.jobs_of(ti.run_id) == 1
    left = custom_objects.list_namespaced_custom_object("kubeflow.org", "v1", namespace, "pytorchjobs")["items"]
    assert [c["type"] for c in left[0]["status"]["conditions"] if c["status"] == "True"][-1] == "Failed"
    assert all(p.status.phase in ("Succeeded", "Failed") for p in core_v1.list_namespaced_pod(namespace).items)

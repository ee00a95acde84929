"""A job held in a queue (Kueue: ``runPolicy.suspend``) is queued, not starting: synchronous and deferred.

There is no Kueue on the local cluster: the tests do what Kueue does. The job is created suspended (Kueue's webhook
does so for a job with the ``kueue.x-k8s.io/queue-name`` label), and admitted by setting ``suspend`` to false; the
local training controller then resumes it as the training operator's ``ReconcileJobs`` does
(``pkg/controller.v1/common/job.go``: condition ``Suspended`` False, reason ``<Kind>Resumed``, then pods).
"""

from __future__ import annotations

import threading
import time

import pytest

from airflow_trainjob.constants import GROUP, LABEL_KUEUE_QUEUE_NAME, VERSION
from airflow_trainjob.exceptions import TrainingJobTimeoutError
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, defer, first_event, operator_for
from tests.support.jobs import OK, jobs, pytorch_specs, true_types

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: Seconds the job stays queued before the test admits it: longer than its startup_timeout.
QUEUED_FOR = 8.0


def admit_later(custom_objects, core_v1, namespace: str, seen: dict) -> threading.Thread:
    """Admit the namespace's one job QUEUED_FOR seconds after it exists, recording what it was like in the queue."""

    def admit():
        job = wait_for(lambda: (jobs(custom_objects, namespace) or [None])[0], timeout=60)
        name = job["metadata"]["name"]
        wait_for(
            lambda: (
                "Suspended"
                in true_types(
                    custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
                )
            ),
            timeout=30,
        )
        time.sleep(QUEUED_FOR)
        seen["queued"] = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
        seen["pods_while_queued"] = len(core_v1.list_namespaced_pod(namespace).items)
        custom_objects.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "pytorchjobs", name, {"spec": {"runPolicy": {"suspend": False}}}
        )
        seen["admitted_at"] = time.time()

    thread = threading.Thread(target=admit, daemon=True)
    thread.start()
    return thread


def run(mode: str, operator, ti, timeout: float = 120) -> dict:
    if mode == "sync":
        return operator.execute({"ti": ti})
    return operator.execute_complete({"ti": ti}, first_event(defer(operator, ti), timeout=timeout))


@pytest.mark.parametrize("mode", MODES)
def test_a_queued_job_is_not_failed_by_startup_timeout_and_runs_once_admitted(
    mode, ti, namespace, custom_objects, core_v1, capfd
):
    operator = operator_for(
        mode,
        pytorch_specs(OK, workers=1),
        queue_name="team-a",
        startup_timeout=5,
        run_policy={"suspend": True},
        on_finish="keep_job",
        poll_interval=60,
    )
    seen: dict = {}
    admitter = admit_later(custom_objects, core_v1, namespace, seen)
    summary = run(mode, operator, ti)
    admitter.join(timeout=5)
    task_log = "".join(capfd.readouterr())
    assert true_types({"status": {"conditions": summary["conditions"]}})[-1] == "Succeeded"
    queued = seen["queued"]
    assert queued["metadata"]["labels"][LABEL_KUEUE_QUEUE_NAME] == "team-a"
    assert "Suspended" in true_types(queued) and seen["pods_while_queued"] == 0
    (job,) = jobs(custom_objects, namespace)
    suspended = [c for c in job["status"]["conditions"] if c["type"] == "Suspended"]
    assert suspended and suspended[-1]["status"] == "False" and suspended[-1]["reason"] == "PyTorchJobResumed"
    assert "is waiting in Kueue queue 'team-a' (suspended: not admitted yet)" in task_log
    assert "was admitted from Kueue queue 'team-a'; startup_timeout of 5 s counts from now" in task_log


@pytest.mark.parametrize("mode", MODES)
def test_queue_timeout_bounds_the_wait_in_the_queue_and_deletes_the_job(mode, ti, namespace, custom_objects, core_v1):
    operator = operator_for(
        mode,
        pytorch_specs(OK, workers=0),
        queue_name="team-a",
        queue_timeout=3,
        run_policy={"suspend": True},
        poll_interval=60,
    )
    started = time.monotonic()
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(mode, operator, ti, timeout=60)
    elapsed = time.monotonic() - started
    message = str(raised.value)
    assert (
        "queue_timeout of 3 s passed while the job waited in Kueue queue 'team-a', suspended and not admitted"
        in message
    )
    assert "kubectl get workloads.kueue.x-k8s.io -n " + namespace in message
    assert 3 <= elapsed < 30
    assert jobs(custom_objects, namespace) == []  # deleted: nothing is left queued for a task that gave up
    assert core_v1.list_namespaced_pod(namespace).items == []


@pytest.mark.parametrize("mode", MODES)
def test_queue_timeout_of_a_job_that_names_no_queue_points_at_runpolicy_suspend(mode, ti, namespace, custom_objects):
    """No ``kueue.x-k8s.io/queue-name`` label: ``runPolicy.suspend`` alone held the job, and Kueue has no workload
    for it; the message says so, the same in both modes."""
    operator = operator_for(
        mode, pytorch_specs(OK, workers=0), queue_timeout=3, run_policy={"suspend": True}, poll_interval=60
    )
    with pytest.raises(TrainingJobTimeoutError) as raised:
        run(mode, operator, ti, timeout=60)
    message = str(raised.value)
    assert (
        "queue_timeout of 3 s passed while the job waited suspended: its runPolicy.suspend is true and nothing "
        "resumed it (it names no Kueue queue: set runPolicy.suspend to false, or let a queue controller admit it); "
        "the job was deleted"
    ) in message
    assert "kueue.x-k8s.io" not in message
    assert jobs(custom_objects, namespace) == []


def test_queue_name_conflicting_with_the_label_is_refused(ti, namespace, custom_objects):
    from airflow_trainjob.exceptions import InvalidJobSpecError

    operator = operator_for(
        "sync", pytorch_specs(OK, workers=0), queue_name="team-a", labels={LABEL_KUEUE_QUEUE_NAME: "team-b"}
    )
    with pytest.raises(InvalidJobSpecError) as raised:
        operator.execute({"ti": ti})
    assert "conflicts with queue_name='team-a'" in str(raised.value)
    assert jobs(custom_objects, namespace) == []


def test_the_sensor_waits_on_a_queued_job_and_succeeds_once_it_ran(namespace, custom_objects, core_v1, capfd, ti):
    operator = operator_for(
        "sync",
        pytorch_specs(OK, workers=0),
        queue_name="team-a",
        run_policy={"suspend": True},
        on_finish="keep_job",
        job_name="queued-elsewhere",
    )
    sensor = TrainingJobSensor(
        task_id="watch", kind="PyTorchJob", job_name="queued-elsewhere", poke_interval=1, timeout=60
    )
    seen: dict = {}
    admit_later(custom_objects, core_v1, namespace, seen)
    launcher = threading.Thread(target=lambda: operator.execute({"ti": ti}), daemon=True)
    launcher.start()
    wait_for(lambda: jobs(custom_objects, namespace), timeout=60)
    wait_for(lambda: "Suspended" in true_types(jobs(custom_objects, namespace)[0]), timeout=30)
    assert sensor.poke({}) is False  # suspended: waiting, not failed
    assert "is waiting in Kueue queue 'team-a' (suspended: not admitted yet)" in "".join(capfd.readouterr())
    wait_for(lambda: sensor.poke({}), timeout=90, interval=1)
    launcher.join(timeout=60)
    assert "Succeeded" in true_types(jobs(custom_objects, namespace)[0])

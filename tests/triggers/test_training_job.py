"""Deferrable mode against the local cluster: the trigger run as the triggerer runs it, then resumed."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException, TaskDeferred

from airflow_trainjob.constants import GROUP, LABEL_DAG_ID, VERSION
from airflow_trainjob.domain.ownership import ANNOTATION_FOLLOWED_BY_TRY
from airflow_trainjob.exceptions import JobDeletedError, TrainingJobTimeoutError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob.sensors.training_job import TrainingJobSensor
from airflow_trainjob.triggers.training_job import FINISHED, TIMED_OUT, TrainingJobTrigger
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import first_event, rebuild
from tests.support.jobs import EXIT_1, OK, SLEEP, jobs, pytorch_specs
from tests.support.report import record
from tests.support.triggerer_model import kill_as_the_triggerer_does

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")


def defer(operator: TrainingJobOperator, ti) -> TrainingJobTrigger:
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute({"ti": ti})
    assert deferred.value.method_name == "execute_complete"
    return deferred.value.trigger


def test_serialize_is_exact():
    trigger = TrainingJobTrigger(
        kind="PyTorchJob",
        name="train",
        namespace="ml",
        uid="u-1",
        started_at=1.5,
        timeout=60,
        owner_labels={"a": "b"},
        try_number=3,
        log_tail_lines=7,
        follow_lead_log=True,
    )
    assert trigger.serialize() == (
        "airflow_trainjob.triggers.training_job.TrainingJobTrigger",
        {
            "kind": "PyTorchJob",
            "name": "train",
            "namespace": "ml",
            "uid": "u-1",
            "kubernetes_conn_id": "kubernetes_default",
            "cluster_context": None,
            "config_file": None,
            "in_cluster": None,
            "target_conditions": [],  # the job's success, in its family's word
            "started_at": 1.5,
            "timeout": 60,
            "startup_timeout": None,
            "queue_timeout": None,
            "poll_interval": 10.0,
            "wait_for_creation": False,
            "owner_labels": {"a": "b"},
            "try_number": 3,
            "log_tail_lines": 7,
            "follow_lead_log": True,
            "secret_spans": [],
            "failed_tails": False,
        },
    )


def test_deferred_success_same_summary_and_cleanup(ti, namespace, custom_objects, capfd):
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(OK, workers=1), deferrable=True
    )
    trigger = defer(operator, ti)
    assert len(jobs(custom_objects, namespace)) == 1  # deferring left the job running
    event = first_event(rebuild(trigger))
    # A finished job's event carries its status (conditions, replica statuses); pods only come with a failure.
    assert event["outcome"] == FINISHED and event["job"]["status"]["replicaStatuses"] and event["pods"] == []
    summary = operator.execute_complete({"ti": ti}, event)
    assert summary["name"] == ti.xcom["job_name"] and summary["conditions"][-1]["type"] == "Succeeded"
    assert "hello from rank 0 of 2" in capfd.readouterr().out  # the lead replica's log, quoted
    assert jobs(custom_objects, namespace) == []


def test_deferred_failure_same_verdict_as_synchronous(ti, namespace):
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(EXIT_1, workers=0), deferrable=True
    )
    event = first_event(defer(operator, ti))
    with pytest.raises(AirflowFailException) as raised:
        operator.execute_complete({"ti": ti}, event)
    message = str(raised.value)
    assert "PyTorchJobFailed" in message and "Master-0" in message and "exit code 1" in message
    assert "permanent" in message


def test_triggerer_restart_mid_job_ends_right_and_creates_nothing(ti, namespace, custom_objects):
    code = "import time; time.sleep(4); print('done')"
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=0), deferrable=True
    )
    trigger = defer(operator, ti)
    with pytest.raises(asyncio.TimeoutError):
        first_event(trigger, timeout=1.5)  # the triggerer dies mid-wait
    event = first_event(rebuild(trigger))  # another triggerer picks it up from its kwargs
    assert event["outcome"] == FINISHED
    assert len(jobs(custom_objects, namespace)) == 1
    assert operator.execute_complete({"ti": ti}, event)["conditions"][-1]["type"] == "Succeeded"


def test_deadline_survives_a_restart_and_is_judged_after_reading_state(ti, namespace, custom_objects):
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True, timeout=3
    )
    trigger = defer(operator, ti)
    started = time.monotonic()
    event = first_event(rebuild(trigger))
    assert event["outcome"] == TIMED_OUT and event["which"] == "timeout"
    assert time.monotonic() - started < 10
    with pytest.raises(TrainingJobTimeoutError):
        operator.execute_complete({"ti": ti}, event)
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="the timed-out job deleted")


def test_a_short_ttl_waits_for_the_resumed_task_then_applies(ti, namespace, custom_objects):
    operator = TrainingJobOperator(
        task_id="train",
        kind="PyTorchJob",
        replica_specs=pytorch_specs(EXIT_1, workers=0),
        run_policy={"ttlSecondsAfterFinished": 1},
        deferrable=True,
    )
    event = first_event(defer(operator, ti))
    time.sleep(3)  # longer than the TTL: the provider holds it, so the job and its pods wait for the resume
    assert len(jobs(custom_objects, namespace)) == 1
    with pytest.raises(AirflowFailException) as raised:
        operator.execute_complete({"ti": ti}, event)
    assert "exit code 1" in str(raised.value) and "| bad input" in str(raised.value)  # the tail, from the pod
    # The failed job is kept (on_finish) with its runPolicy given back: the controller's TTL removes it now.
    wait_for(lambda: jobs(custom_objects, namespace) == [], timeout=30, what="TTL deletion after the task ended")


def test_killed_deferred_task_deletes_the_job(ti, namespace, custom_objects):
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    trigger = rebuild(defer(operator, ti))
    asyncio.run(trigger.on_kill())
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="on_kill deletion")


def test_on_kill_deletes_the_job_when_the_copy_of_the_lead_log_overruns_its_share(
    ti, namespace, custom_objects, monkeypatch, capfd
):
    """``on_kill`` copies the rest of the lead replica's log before it deletes the job, within a share of Airflow's
    ``[triggerer] on_kill_timeout``: a copy that takes longer is stopped, and the deletion still comes in time."""
    from airflow_trainjob.triggers import training_job as trigger_module

    monkeypatch.setattr(trigger_module, "_on_kill_seconds", lambda: 6.0)
    copies: list[str] = []

    async def stuck(self, hook, job, pods):  # e.g. a log read waiting for its place in a crowded triggerer's rate
        copies.append(job["metadata"]["uid"])
        await asyncio.sleep(3600)

    monkeypatch.setattr(TrainingJobTrigger, "_copy_rest_of_lead_log", stuck)
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    trigger = rebuild(defer(operator, ti))
    started = time.monotonic()
    asyncio.run(trigger.on_kill())
    assert time.monotonic() - started < 6.0 * trigger_module.ON_KILL_COPY_SHARE + 2.0
    assert len(copies) == 1
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="on_kill deletion")
    out = capfd.readouterr().out
    assert "Stopped copying the lead replica's log of PyTorchJob" in out
    assert out.index("Stopped copying") < out.index("the deferred task was killed")


def test_on_kill_leaves_a_job_that_is_not_ours(namespace, custom_objects):
    foreign = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "theirs"},
        "spec": {"pytorchReplicaSpecs": {}},
    }
    custom_objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", foreign)
    trigger = TrainingJobTrigger(
        kind="PyTorchJob",
        name="theirs",
        namespace=namespace,
        owner_labels={LABEL_DAG_ID: "retrain"},
    )
    asyncio.run(trigger.on_kill())
    assert [j["metadata"]["name"] for j in jobs(custom_objects, namespace)] == ["theirs"]


def test_job_deleted_outside_the_task_while_deferred(ti, namespace, custom_objects):
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    trigger = defer(operator, ti)

    async def run_and_delete():
        waiting = asyncio.ensure_future(trigger.run().__anext__())
        await asyncio.sleep(1.0)
        custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", ti.xcom["job_name"])
        return (await asyncio.wait_for(waiting, 30)).payload

    event = asyncio.run(run_and_delete())
    with pytest.raises(JobDeletedError):
        operator.execute_complete({"ti": ti}, event)


def test_deferrable_sensor_waits_for_creation_then_success(namespace, custom_objects):
    from tests.support.jobs import create

    sensor = TrainingJobSensor(task_id="watch", kind="PyTorchJob", job_name="later", deferrable=True, timeout=60)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({})

    async def run_then_create():
        waiting = asyncio.ensure_future(deferred.value.trigger.run().__anext__())
        await asyncio.sleep(0.5)
        create(custom_objects, namespace, "later", OK)
        return (await asyncio.wait_for(waiting, 60)).payload

    event = asyncio.run(run_then_create())
    assert event["outcome"] == FINISHED
    assert sensor.execute_complete({}, event) is None


def test_the_event_carries_no_pod_template(ti, namespace):
    """Airflow stores the event and prints it in the task log: no environment value, no embedded script."""
    secret = "FAKESECRET-wandb-7c3e9d"
    script = "# " + "x" * 5000 + "\n" + OK
    specs = pytorch_specs(script, workers=1)
    for replica in specs.values():
        replica["template"]["spec"]["containers"][0]["env"] = [{"name": "WANDB_API_KEY", "value": secret}]
    for code, outcome in ((script, "Succeeded"), (script + "\nraise SystemExit(1)", "Failed")):
        specs["Master"]["template"]["spec"]["containers"][0]["command"][-1] = code
        operator = TrainingJobOperator(
            task_id="train", kind="PyTorchJob", replica_specs=specs, deferrable=True, on_finish="delete_job"
        )
        event = first_event(defer(operator, type(ti)()))
        text = json.dumps(event)
        assert event["outcome"] == FINISHED and outcome in event["message"]
        assert secret not in text and "x" * 100 not in text
        assert event["job"]["spec"]["pytorchReplicaSpecs"]["Master"]["template"] == {
            "spec": {"containers": [{"name": "pytorch"}]}
        }
        assert stored_sizes(event) < 2048, stored_sizes(event)
        record("trigger_event", outcome=outcome, template_bytes=len(json.dumps(specs)), event_bytes=len(text))


def stored_sizes(payload: dict) -> int:
    """The largest of the forms Airflow keeps and shows an event in: its JSON, what the triggerer stores as the
    task's ``next_kwargs`` (``airflow.sdk.serde``), and its repr as the task log prints it."""
    import json

    from airflow.sdk.serde import serialize
    from airflow.triggers.base import TriggerEvent

    return max(
        len(json.dumps(payload)), len(json.dumps(serialize({"event": payload}))), len(repr(TriggerEvent(payload)))
    )


def test_the_event_stays_under_2_kb_with_a_long_script_and_failed_pods(ti, namespace):
    """A failed job of three replicas whose pod template embeds a 20 kB training script: the event carries the
    status and the failed pods' exits, not the templates; the verdict at resume is the synchronous one."""
    script = "# " + "y" * 20000 + "\nimport sys; print('bad input'); sys.exit(1)"
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(script, workers=2), deferrable=True
    )
    event = first_event(defer(operator, ti))
    assert event["outcome"] == FINISHED and "Failed" in event["message"]
    assert stored_sizes(event) < 2048, stored_sizes(event)
    assert "y" * 100 not in json.dumps(event) and event["pods"]  # the pods' exits, as many as fit
    first = event["pods"][0]["status"]["containerStatuses"][0]  # the first failure first: the root cause
    assert first["state"]["terminated"]["exitCode"] == 1
    with pytest.raises(AirflowFailException) as raised:
        operator.execute_complete({"ti": ti}, event)
    assert "exit code 1" in str(raised.value) and "permanent" in str(raised.value)
    record("trigger_event", outcome="Failed x3", template_bytes=len(script), event_bytes=stored_sizes(event))


def test_the_lead_log_goes_to_the_log_not_into_the_event(ti, namespace, capfd):
    """A worker fails while the Master runs: the trigger stops the Master (``cleanPodPolicy: Running``) and first
    copies the rest of its log into the task log, not into the event (60 long lines would be kilobytes); the
    event carries the copy's cursor, complete, and the resumed task copies nothing again."""
    master = "import time\nfor i in range(60): print('master step', i, 'z' * 60, flush=True)\ntime.sleep(60)"
    worker = "import sys, time; time.sleep(3); sys.exit(1)"
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(master, worker, workers=1), deferrable=True
    )
    event = first_event(defer(operator, ti))
    task_log = capfd.readouterr().out
    assert event["lead_log"]["complete"] is True and event["lead_log"]["lines"] == 60
    assert stored_sizes(event) < 2048, stored_sizes(event)
    assert all(f"[Master-0] master step {i} zzz" in task_log for i in range(60))
    with pytest.raises(AirflowFailException):
        operator.execute_complete({"ti": ti}, event)
    assert "[Master-0] master step" not in capfd.readouterr().out  # copied once, by the trigger


def progress_lines(output: str, ref: str) -> list[str]:
    """The progress lines about ``ref`` in a task log (structlog's console lines)."""
    import re

    return re.findall(rf"\] ({re.escape(ref)}: [^\[]*?)\s+\[", output)


def test_a_deferred_wait_logs_each_change_as_the_synchronous_wait_does(namespace, capfd):
    """While a deferred task waits, the trigger logs one line per change of phase and of replica counts: the line
    the synchronous wait writes (one function builds both)."""
    from tests.support.jobs import TaskInstanceStandIn

    # The Master outlives its Worker: the job succeeds with the Master, the Worker's success counted by then.
    master, worker = "import time; time.sleep(5); print('done')", "import time; time.sleep(2); print('done')"
    lines = {}
    for mode in ("sync", "deferred"):
        ti = TaskInstanceStandIn()
        operator = TrainingJobOperator(
            task_id="train",
            kind="PyTorchJob",
            replica_specs=pytorch_specs(master, worker, workers=1),
            deferrable=mode == "deferred",
            get_logs=False,
            poll_interval=0.5,
        )
        capfd.readouterr()
        if mode == "sync":
            operator.execute({"ti": ti})
        else:
            first_event(rebuild(defer(operator, ti)))
        ref = f"PyTorchJob {namespace}/{ti.xcom['job_name']}"
        lines[mode] = [line.replace(ti.xcom["job_name"], "JOB") for line in progress_lines(capfd.readouterr().out, ref)]
    for mode, seen in lines.items():
        assert all(a != b for a, b in itertools.pairwise(seen)), (mode, seen)  # one line per change
        assert any(
            ": Running (PyTorchJobRunning: " in line and line.endswith(") — Master 1/1 active, Worker 1/1 active")
            for line in seen
        ), (mode, seen)
        assert seen[-1].endswith("— Master 1 succeeded, Worker 1 succeeded"), (mode, seen)
        assert "Succeeded (PyTorchJobSucceeded" in seen[-1]
    assert lines["deferred"][-1] == lines["sync"][-1]


def test_a_clear_that_races_the_next_try_leaves_the_job_to_that_try(namespace, custom_objects):
    """Cleared while deferred: the next try may attach to the job before the old trigger's on_kill runs. The
    late on_kill leaves the job the new try follows, which then finishes normally."""
    from tests.support.jobs import TaskInstanceStandIn

    code = "import time; time.sleep(3); print('done')"
    first = TaskInstanceStandIn(try_number=1)
    old = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=0), deferrable=True
    )
    old_trigger = rebuild(defer(old, first))
    second = TaskInstanceStandIn(run_id=first.run_id, try_number=2)
    new = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(code, workers=0), deferrable=True
    )
    new_trigger = rebuild(defer(new, second))  # attaches to the running job, and says so on it
    (job,) = jobs(custom_objects, namespace)
    assert job["metadata"]["annotations"][ANNOTATION_FOLLOWED_BY_TRY] == "2"
    asyncio.run(old_trigger.on_kill())  # the old try's kill arrives late
    (still,) = jobs(custom_objects, namespace)
    assert still["metadata"]["uid"] == job["metadata"]["uid"] and "deletionTimestamp" not in still["metadata"]
    summary = new.execute_complete({"ti": second}, first_event(new_trigger))
    assert summary["conditions"][-1]["type"] == "Succeeded"


def test_a_killed_deferred_task_records_what_its_trigger_saw_before_the_job_goes(
    ti, namespace, custom_objects, monkeypatch
):
    """Airflow runs ``on_kill`` in the triggerer, which cannot write ``task_state_store``: the trigger leaves the
    try's end -- the job Running with its pod, as it reads them before deleting them -- in the task instance's XCom,
    where the Training job tab reads it."""
    from airflow.sdk.execution_time.xcom import XCom

    from airflow_trainjob.domain import records as job_record

    parked: list[tuple[str, dict, dict]] = []

    async def aset(key, value, **where):  # what the triggerer's comms would send to the api-server
        parked.append((key, json.loads(json.dumps(value)), where))

    monkeypatch.setattr(XCom, "aset", aset)
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    trigger = rebuild(defer(operator, ti))
    wait_for(
        lambda: jobs(custom_objects, namespace),
        lambda found: any(c["type"] == "Running" for c in (found[0].get("status") or {}).get("conditions") or []),
        what="the job running",
    )
    trigger.task_instance = ti  # as the triggerer sets it
    asyncio.run(trigger.on_kill())
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="on_kill deletion")
    ((key, value, where),) = parked
    assert key == job_record.PARKED_KEY
    assert where == {"dag_id": ti.dag_id, "task_id": ti.task_id, "run_id": ti.run_id, "map_index": ti.map_index}
    try_number, final = job_record.read_parked(value)
    assert (try_number, final.outcome, final.recorded_by) == (ti.try_number, "stopped", "trigger")
    assert final.job is not None and final.job["status"]["conditions"][-1]["type"] == "Running"
    assert [p["metadata"]["name"] for p in final.pods] == [f"{final.job['metadata']['name']}-master-0"]
    assert "Airflow stopped the deferred task" in (final.message or "")


def test_on_kill_deletes_and_records_though_the_triggerer_cancels_it_again_and_again(
    ti, namespace, custom_objects, monkeypatch
):
    """Airflow's triggerer cancels the trigger again at every pass of its loop while ``on_kill`` runs (about once a
    second; here every millisecond, with an XCom write that takes 0.3 s, as a busy triggerer's does): the job is
    deleted and the try's end recorded all the same. Before, the first cancellation after on_kill's start ended it at
    its next ``await`` (CI, under load: a killed deferred try deleted its job but recorded no end, a cleared one did
    neither)."""
    from airflow.sdk.execution_time.xcom import XCom

    from airflow_trainjob.domain import records as job_record

    parked: list[str] = []

    async def aset(key, value, **where):  # a busy triggerer's comms
        await asyncio.sleep(0.3)
        parked.append(key)

    monkeypatch.setattr(XCom, "aset", aset)
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    trigger = rebuild(defer(operator, ti))
    trigger.task_instance = ti  # as the triggerer sets it
    ended = asyncio.run(kill_as_the_triggerer_does(trigger, timeout=30, every=0.001, linger=5))
    assert ended in {"returned", "cut"}, ended  # (3.11's wait_for stops waiting at a second cancellation: "cut")
    wait_for(lambda: jobs(custom_objects, namespace) == [], what="on_kill deletion")
    assert parked == [job_record.PARKED_KEY]


def test_a_cleared_deferred_task_records_its_end_once_the_next_try_has_started(
    ti, namespace, custom_objects, monkeypatch
):
    """A cleared task instance's next try clears its XComs as it starts: the trigger records the killed try's end at
    once, and again once the task instance has left the states of a try to come."""
    from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance
    from airflow.sdk.execution_time.xcom import XCom

    from airflow_trainjob.triggers import training_job

    seen: list[str | None] = []
    states = iter([None, "scheduled", "queued", "running"])  # as the scheduler moves the cleared task instance on

    def get_task_states(**where):
        state = next(states)
        seen.append(state)
        return {where["run_ids"][0]: {where["task_ids"][0]: state}}

    async def aset(key, value, **where):
        seen.append("recorded")

    monkeypatch.setattr(RuntimeTaskInstance, "get_task_states", staticmethod(get_task_states))
    monkeypatch.setattr(XCom, "aset", aset)
    monkeypatch.setattr(training_job, "NEXT_TRY_LOOK_SECONDS", 0.05)
    operator = TrainingJobOperator(
        task_id="train", kind="PyTorchJob", replica_specs=pytorch_specs(SLEEP, workers=0), deferrable=True
    )
    trigger = rebuild(defer(operator, ti))
    trigger.task_instance = ti
    asyncio.run(trigger.on_kill())
    # recorded at once (a task instance marked failed has no next try), and again once the next try has started:
    # its start cleared the first
    assert seen == ["recorded", None, "scheduled", "queued", "running", "recorded"]

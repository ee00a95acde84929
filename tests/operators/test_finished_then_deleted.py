"""A job that finished and was then removed gets the verdict of its last state, synchronous and deferred.

Whatever removes the job (``ttlSecondsAfterFinished``, garbage collection, a person), Succeeded is a success and
Failed the failure with its reason; "deleted outside this task" only when the last state seen was not terminal.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException
from airflow.triggers.shared_stream import SharedStreamManager
from kubernetes.client.exceptions import ApiException

from airflow_trainjob.constants import GROUP, VERSION
from airflow_trainjob.exceptions import JobDeletedError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.deferred import MODES, defer, first_event, in_triggerer, operator_for, synced_stream
from tests.support.jobs import EXIT_1, OK, SLEEP, TaskInstanceStandIn, jobs, pytorch_specs, run_in_thread, true_types
from tests.support.report import record

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")

#: Repetitions of the race in each mode (the issue asks for at least 20).
REPETITIONS = 20


def run_to_verdict(mode: str, operator: TrainingJobOperator, ti) -> dict:
    """The task's return value, as Airflow runs it in ``mode`` (raises what the task raises)."""
    if mode == "sync":
        return operator.execute({"ti": ti})
    event = first_event(defer(operator, ti), timeout=120)
    return operator.execute_complete({"ti": ti}, event)


def mark_and_delete(custom_objects, namespace: str, name: str, condition: str) -> None:
    """Write a terminal condition and delete the job at once, as a fast TTL controller or a person would."""
    job = custom_objects.get_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    reason = f"PyTorchJob{condition}"
    conditions = [c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] != "Running"] + [
        {
            "type": condition,
            "status": "True",
            "reason": reason,
            "message": f"marked {condition} by the test",
            "lastUpdateTime": now,
            "lastTransitionTime": now,
        }
    ]
    custom_objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, "pytorchjobs", name, {"status": {"conditions": conditions, "completionTime": now}}
    )
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", name)


def running(custom_objects, namespace: str) -> str | None:
    items = jobs(custom_objects, namespace)
    return items[0]["metadata"]["name"] if items and "Running" in true_types(items[0]) else None


@pytest.mark.parametrize("mode", MODES)
def test_ttl_zero_with_a_poll_interval_far_longer_is_a_success(mode, ti, namespace, custom_objects, capfd):
    operator = operator_for(
        mode,
        pytorch_specs(OK, workers=1),
        poll_interval=120,
        on_finish="keep_job",
        run_policy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0},
    )
    started = time.monotonic()
    summary = run_to_verdict(mode, operator, ti)
    took = time.monotonic() - started
    assert "Succeeded" in [c["type"] for c in summary["conditions"] if c["status"] == "True"]
    assert took < 60, f"the verdict took {took:.1f} s: it waited for a poll, not for the watch"
    out = capfd.readouterr().out
    assert "hello from rank 0 of 2" in out  # the lead replica's log survived cleanPodPolicy All and TTL 0
    assert "deleted outside this task" not in out
    assert (
        "the training operator deletes it 0 s after it finished (ttlSecondsAfterFinished), now: that time has "
        "passed" in out
    )
    # Kept (on_finish), the job got its runPolicy back: the controller now applies the TTL of 0.
    wait_for(
        lambda: jobs(custom_objects, namespace),
        done=lambda j: j == [],
        timeout=30,
        what="the kept job deleted by its ttlSecondsAfterFinished once the task gave it back",
    )


@pytest.mark.parametrize(("mode", "condition"), [(m, c) for m in MODES for c in ("Succeeded", "Failed")])
def test_marked_terminal_and_deleted_in_one_step_gets_that_verdict(mode, condition, ti, namespace, custom_objects):
    operator = operator_for(mode, pytorch_specs(SLEEP, workers=0), poll_interval=120)
    if mode == "sync":
        thread, outcome = run_in_thread(operator, {"ti": ti})
        name = wait_for(lambda: running(custom_objects, namespace), what="job running")
        mark_and_delete(custom_objects, namespace, name, condition)
        thread.join(60)
        assert not thread.is_alive()
    else:
        trigger = defer(operator, ti)
        name = wait_for(lambda: running(custom_objects, namespace), what="job running")

        async def main():
            manager = SharedStreamManager()
            waiting = asyncio.create_task(in_triggerer(manager, 1, trigger))
            await asyncio.wait_for(synced_stream(trigger), 30)
            await asyncio.to_thread(mark_and_delete, custom_objects, namespace, name, condition)
            return await asyncio.wait_for(waiting, 60)

        event = asyncio.run(main())
        outcome = {}
        try:
            outcome["result"] = operator.execute_complete({"ti": ti}, event)
        except Exception as e:
            outcome["error"] = e
    if condition == "Succeeded":
        assert "error" not in outcome, f"a success judged as {outcome.get('error')!r}"
        assert outcome["result"]["conditions"][-1]["type"] == "Succeeded"
    else:
        error = outcome.get("error")
        assert error is not None and not isinstance(error, JobDeletedError), f"a failure judged as {error!r}"
        assert "PyTorchJobFailed" in str(error) and "marked Failed by the test" in str(error)
    assert jobs(custom_objects, namespace) == []


class Reaper(threading.Thread):
    """Deletes every job of a namespace the moment it is seen terminal: a TTL of 0 on a controller that nothing
    holds (or a person with a script)."""

    def __init__(self, custom_objects, namespace: str):
        super().__init__(daemon=True)
        self.custom_objects, self.namespace = custom_objects, namespace
        self.stop = threading.Event()
        self.reaped: set[str] = set()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            for job in jobs(self.custom_objects, self.namespace):
                if {"Succeeded", "Failed"} & set(true_types(job)) and job["metadata"]["name"] not in self.reaped:
                    try:
                        self.custom_objects.delete_namespaced_custom_object(
                            GROUP, VERSION, self.namespace, "pytorchjobs", job["metadata"]["name"]
                        )
                    except ApiException as e:
                        if e.status != 404:
                            raise
                        continue
                    self.reaped.add(job["metadata"]["name"])


@pytest.mark.parametrize("mode", MODES)
def test_jobs_deleted_the_moment_they_finish_are_never_misjudged(mode, namespace, custom_objects):
    """REPETITIONS jobs, half succeeding and half failing, each deleted as soon as it is terminal."""
    reaper = Reaper(custom_objects, namespace)
    reaper.start()
    verdicts: dict[int, str] = {}

    def one(i: int) -> None:
        code = f"import time; time.sleep({0.3 * (i % 5):.1f}); " + (OK if i % 2 == 0 else EXIT_1)
        # keep_job: only the reaper deletes the jobs.
        operator = operator_for(mode, pytorch_specs(code, workers=0), poll_interval=60, on_finish="keep_job")
        ti = TaskInstanceStandIn(run_id=f"race-{i}")
        try:
            run_to_verdict(mode, operator, ti)
            verdicts[i] = "success"
        except AirflowFailException as e:
            verdicts[i] = "failure" if "exit code 1" in str(e) or "PyTorchJobFailed" in str(e) else f"other: {e}"
        except Exception as e:
            verdicts[i] = f"{type(e).__name__}: {e}"

    try:
        for batch in range(0, REPETITIONS, 5):
            threads = [threading.Thread(target=one, args=(i,)) for i in range(batch, batch + 5)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(180)
        # A task may reach its verdict before the reaper's next look: let it delete the last ones too.
        wait_for(lambda: len(reaper.reaped), done=lambda n: n == REPETITIONS, timeout=60, what="every job reaped")
    finally:
        reaper.stop.set()
        reaper.join(5)
    expected = {i: "success" if i % 2 == 0 else "failure" for i in range(REPETITIONS)}
    misjudged = {i: v for i, v in verdicts.items() if v != expected[i]}
    record(
        "finished_then_deleted",
        mode=mode,
        runs=len(verdicts),
        deleted_at_once=len(reaper.reaped),
        misjudged=len(misjudged),
    )
    assert len(verdicts) == REPETITIONS and misjudged == {}, misjudged
    assert len(reaper.reaped) == REPETITIONS  # every one was deleted by someone else the moment it finished


def wait_terminal(custom_objects, namespace: str, condition: str) -> dict:
    return wait_for(
        lambda: jobs(custom_objects, namespace),
        done=lambda j: bool(j) and condition in true_types(j[0]),
        what=f"job {condition}",
    )[0]


@pytest.mark.parametrize("condition", ["Succeeded", "Failed"])
def test_deferred_job_gone_before_the_trigger_started_gets_the_verdict_its_events_announced(
    condition, ti, namespace, custom_objects, caplog
):
    """Finished and deleted in the gap between deferring and the trigger's first look (a fresh stream never sees
    it): the training operator's ``<Kind>Succeeded``/``<Kind>Failed`` event on the job tells how it ended."""
    operator = operator_for("deferred", pytorch_specs(OK if condition == "Succeeded" else EXIT_1, workers=0))
    trigger = defer(operator, ti)
    job = wait_terminal(custom_objects, namespace, condition)
    custom_objects.delete_namespaced_custom_object(GROUP, VERSION, namespace, "pytorchjobs", job["metadata"]["name"])
    wait_for(lambda: jobs(custom_objects, namespace), done=lambda j: j == [], what="job deleted")
    event = first_event(trigger, timeout=60)
    assert event["outcome"] == "finished" and f"PyTorchJob{condition}" in event["message"], event["message"]
    if condition == "Succeeded":
        assert operator.execute_complete({"ti": ti}, event)["conditions"][-1]["type"] == "Succeeded"
    else:
        with pytest.raises(AirflowFailException) as raised:
            operator.execute_complete({"ti": ti}, event)
        assert "exit code 1" in str(raised.value)  # from the operator's ExitedWithCode event: the pods are gone


def test_polling_fallback_judges_a_job_deleted_between_two_reads(fault_proxy, ti, namespace, custom_objects):
    """A Role without ``watch`` (every watch answered 403): the wait reads the job every ``poll_interval``; a job
    that succeeded and was deleted between two reads is a success, from the operator's events."""
    from tests.support.fault_proxy import Fault

    refused = fault_proxy.add(Fault("status", method="GET", path=r"/pytorchjobs$", watch=True, status=403, times=None))
    reaper = Reaper(custom_objects, namespace)
    reaper.start()
    try:
        operator = operator_for("sync", pytorch_specs(OK, workers=0), poll_interval=8, get_logs=False)
        summary = operator.execute({"ti": ti})
    finally:
        reaper.stop.set()
        reaper.join(5)
    assert fault_proxy.hits(refused) >= 1 and reaper.reaped
    assert summary["conditions"][-1]["type"] == "Succeeded"

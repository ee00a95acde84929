"""The lifecycle core (:mod:`airflow_trainjob.domain.lifecycle`): every decision it takes, with the words the three
waits print, from plain dicts and a clock given. No cluster, no client: milliseconds."""

from __future__ import annotations

import json

import pytest

from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY
from airflow_trainjob.domain.deadlines import (
    LOOK_MARGIN,
    QUEUE_LINE_SECONDS,
    QUEUE_TIMEOUT,
    STARTUP_TIMEOUT,
    TIMEOUT,
    Deadlines,
    QueueState,
)
from airflow_trainjob.domain.lifecycle import (
    Finished,
    Gone,
    JobWait,
    KeepWaiting,
    Lines,
    TimedOut,
    explained_timeout,
    judge_gone,
    one_look,
    pods_stopped_at_terminal,
)
from airflow_trainjob.families import kubeflow_v1

REF = "PyTorchJob ml/train"
T0 = 1_000_000.0  # the try's start, epoch seconds
STAMP = "1970-01-12T13:46:40Z"  # T0 as the API server writes it
FAMILY = kubeflow_v1.family("PyTorchJob")


def condition(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict:
    found = {"type": kind, "status": status, "lastTransitionTime": STAMP}
    return {**found, **({"reason": reason} if reason else {}), **({"message": message} if message else {})}


def job(*true: str, suspend: bool = False, queue: str | None = None, uid: str = "u-1", **extra) -> dict:
    """A PyTorchJob whose conditions ``true`` are true (in that order)."""
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "uid": uid, "labels": labels, **extra},
        "spec": {"runPolicy": {"suspend": suspend}},
        "status": {"conditions": [condition(t) for t in true]},
    }


def waiting(**limits) -> JobWait:
    return JobWait(REF, Deadlines(started_at=T0, family=FAMILY, **limits), FAMILY)


# --- keep waiting: the lines to log, and when to look again --------------------------------------------------------


def test_the_progress_line_is_said_once_per_change():
    wait = waiting()
    first = wait.seen(job("Created"), T0 + 1)
    assert first == KeepWaiting(Lines(progress=f"{REF}: Created"), None)
    assert wait.seen(job("Created"), T0 + 2) == KeepWaiting(Lines(), None)  # unchanged: nothing to say
    assert wait.seen(job("Created", "Running"), T0 + 3).lines.progress == f"{REF}: Running"


def test_the_progress_line_counts_replicas_against_the_desired_ones():
    running = job("Created", "Running")
    running["status"]["replicaStatuses"] = {"Master": {"active": 1}, "Worker": {"active": 1}}
    assert JobWait(REF, Deadlines(started_at=T0, family=FAMILY), FAMILY, desired={"Master": 1, "Worker": 2}).seen(
        running, T0
    ).lines.progress == (f"{REF}: Running — Master 1/1 active, Worker 1/2 active")
    # The trigger's: from the job as read, per look.
    running["spec"]["pytorchReplicaSpecs"] = {"Worker": {"replicas": 3}}
    assert waiting().seen(running, T0).lines.progress == f"{REF}: Running — Worker 1/3 active, Master 1 active"


@pytest.mark.parametrize(
    ("limits", "state", "at", "left"),
    [
        ({"timeout": 60}, ("Created", "Running"), T0 + 10, 50),
        ({"startup_timeout": 30, "timeout": 600}, ("Created",), T0 + 10, 20),
        ({"queue_timeout": 8, "timeout": 600}, ("Created", "Suspended"), T0, 8),
    ],
    ids=["timeout", "startup_timeout", "queue_timeout"],
)
def test_keep_waiting_says_to_look_again_just_past_the_next_deadline(limits, state, at, left):
    decision = waiting(**limits).seen(job(*state, suspend="Suspended" in state), at)
    assert isinstance(decision, KeepWaiting)
    assert decision.look_again_in == pytest.approx(left + LOOK_MARGIN)


def test_a_driver_with_its_own_interval_still_looks_before_the_deadline():
    wait = waiting(timeout=60)
    wait.seen(job("Created", "Running"), T0)
    assert wait.next_look(T0 + 50, every=30.0) == pytest.approx(10 + LOOK_MARGIN)
    assert wait.next_look(T0 + 10, every=30.0) == 30.0
    assert not wait.overdue(T0 + 59) and wait.overdue(T0 + 61)


def test_nothing_but_a_change_calls_for_a_look_without_deadlines():
    wait = waiting()
    assert wait.seen(job("Created", "Running"), T0).look_again_in is None
    assert wait.next_look(T0) is None


# --- queue lines -----------------------------------------------------------------------------------------------------


def test_a_queued_job_is_said_to_wait_at_once_and_every_five_minutes():
    wait = waiting(queue_timeout=900)
    queued = job("Created", "Suspended", suspend=True, queue="team-a")
    first = wait.seen(queued, T0)
    assert first.lines.queue == (
        f"{REF} is waiting in Kueue queue 'team-a' (suspended: not admitted yet) for 0 s; queue_timeout 900 s "
        "(900 s left)"
    )
    assert not first.lines.queue_warns
    assert first.look_again_in == pytest.approx(QUEUE_LINE_SECONDS)  # the next queue line, before the deadline
    assert wait.seen(queued, T0 + 100).lines.queue is None
    assert "for 300 s; queue_timeout 900 s (600 s left)" in (wait.seen(queued, T0 + 300).lines.queue or "")


def test_an_admission_is_said_with_the_startup_timeout_that_starts():
    wait = waiting(startup_timeout=20)
    wait.seen(job("Created", "Suspended", suspend=True), T0)
    admitted = wait.seen(job("Created"), T0 + 5)
    assert admitted.lines.queue == (
        f"{REF} was admitted from its queue; startup_timeout of 20 s counts from now"  # (no longer suspended)
    )
    assert admitted.look_again_in == pytest.approx(20 + LOOK_MARGIN)


def test_a_job_suspended_again_after_it_ran_is_a_warning():
    wait = waiting()
    wait.seen(job("Created", "Running"), T0)
    suspended = job("Created", "Suspended", suspend=True)
    suspended["status"]["conditions"].insert(1, condition("Running", "False"))  # the operator turns it False
    again = wait.seen(suspended, T0 + 10)
    assert again.lines.queue_warns
    assert (again.lines.queue or "").startswith(f"{REF} was suspended again after it had been admitted")


# --- finished ----------------------------------------------------------------------------------------------------


def test_succeeded_finishes_the_wait_with_the_summary():
    done = waiting(timeout=1).seen(job("Created", "Running", "Succeeded"), T0 + 5)  # even past a deadline
    assert isinstance(done, Finished) and not done.failed and not done.gone
    assert done.message == f"{REF}: Succeeded" and done.lines.progress == done.message
    assert done.job["metadata"]["uid"] == "u-1"


def test_failed_finishes_any_wait_and_says_why():
    failed = job("Created", "Running")
    failed["status"]["conditions"].append(condition("Failed", reason="PyTorchJobFailed", message="Master failed"))
    done = JobWait(REF, Deadlines(started_at=T0, family=FAMILY), FAMILY, targets=("Running",)).seen(failed, T0)
    assert isinstance(done, Finished) and done.failed
    assert done.message == f"{REF}: Failed (PyTorchJobFailed: Master failed)"


def test_a_target_condition_other_than_succeeded_ends_the_wait():
    wait = JobWait(REF, Deadlines(started_at=T0, family=FAMILY), FAMILY, targets=("Running",))
    assert isinstance(wait.seen(job("Created"), T0), KeepWaiting)
    running = wait.seen(job("Created", "Running"), T0 + 1)
    assert isinstance(running, Finished) and not running.failed


# --- timed out: each deadline, in the trigger's words -----------------------------------------------------------


@pytest.mark.parametrize(
    ("limits", "state", "at", "which", "seconds"),
    [
        ({"timeout": 60}, ("Created", "Running"), T0 + 61, TIMEOUT, 60),
        ({"startup_timeout": 30}, ("Created",), T0 + 31, STARTUP_TIMEOUT, 30),
        ({"queue_timeout": 8}, ("Created", "Suspended"), T0 + 9, QUEUE_TIMEOUT, 8),
    ],
    ids=["timeout", "startup_timeout", "queue_timeout"],
)
def test_each_deadline_times_out_with_its_name_and_the_last_state(limits, state, at, which, seconds):
    seen = job(*state, suspend="Suspended" in state)
    decision = waiting(**limits).seen(seen, at)
    assert isinstance(decision, TimedOut)
    assert (decision.which, decision.seconds, decision.job) == (which, seconds, seen)
    assert decision.message == f"{REF}: {which} passed; last state: {state[-1]}"
    assert decision.queue is not None and decision.queue.queued == ("Suspended" in state)


def test_timeout_outranks_the_others():
    decision = waiting(timeout=10, startup_timeout=10).seen(job("Created"), T0 + 11)
    assert isinstance(decision, TimedOut) and decision.which == TIMEOUT


def test_a_job_not_created_yet_waits_or_times_out():
    wait = waiting(timeout=60)
    assert wait.absent(T0 + 10) == KeepWaiting(look_again_in=pytest.approx(50 + LOOK_MARGIN))
    late = wait.absent(T0 + 61)
    assert isinstance(late, TimedOut) and (late.which, late.seconds, late.job) == (TIMEOUT, 60, None)
    assert late.message == f"{REF} was not created before the deadline"


# --- gone: judged by the last known state ------------------------------------------------------------------------


def test_gone_after_it_finished_is_finished_with_both_waits_words():
    final = job("Created", "Running", "Succeeded")
    decision = waiting().gone(final)
    assert isinstance(decision, Finished) and decision.gone and decision.job is final
    assert decision.message == f"{REF}: Succeeded (then deleted outside this task)"  # the trigger's event
    assert decision.deleted_line == f"{REF} was deleted outside this task right after it finished: Succeeded"


def test_gone_before_it_finished_names_its_last_state():
    last = job("Created", "Running")
    decision = waiting().gone(last)
    assert decision == Gone(f"{REF} was deleted outside this task before it finished (last seen Running)", last)


def test_gone_with_nothing_known_and_replaced():
    assert waiting().gone(None) == Gone(f"{REF} was deleted outside this task before it finished")
    replaced = waiting().gone(job("Created", "Succeeded"), replaced=True)  # whatever its last state
    assert replaced == Gone(f"{REF} was deleted outside this task and replaced by another object", replaced=True)


def test_the_announced_end_is_judged_like_a_last_state():
    announced = job("Failed")
    decision = judge_gone(REF, announced, FAMILY)
    assert isinstance(decision, Finished) and decision.failed and decision.gone


def test_a_wait_for_another_target_is_gone_when_its_job_succeeded_and_went():
    decision = judge_gone(REF, job("Created", "Succeeded"), FAMILY, targets=("Scaling",))
    assert isinstance(decision, Gone) and "(last seen Succeeded)" in decision.message


def test_a_sensors_poke_owns_nothing_and_says_so():
    decision = judge_gone(REF, job("Created", "Running"), FAMILY, said_of_task=False)
    assert isinstance(decision, Gone)
    assert decision.message == f"{REF} was deleted before it finished (last seen Running)"


# --- a look without memory (a sensor's poke) ---------------------------------------------------------------------


def test_a_look_says_the_summary_every_time_and_the_queue_whenever_queued():
    queued = job("Created", "Running", "Suspended", suspend=True)
    for _ in range(2):
        look = one_look(REF, queued, FAMILY, ("Succeeded",), T0)
        assert look == KeepWaiting(
            Lines(
                progress=f"{REF}: Suspended",
                queue=f"{REF} is waiting in its queue (runPolicy.suspend is true) (suspended: not admitted yet) for 0 s",
            )
        )
    assert one_look(REF, job("Created"), FAMILY, ("Succeeded",), T0) == KeepWaiting(Lines(progress=f"{REF}: Created"))
    done = one_look(REF, job("Created", "Succeeded"), FAMILY, ("Succeeded",), T0)
    assert isinstance(done, Finished) and not done.failed


# --- the synchronous task's timeout words, with its evidence ------------------------------------------------------


def words(which: str, status: dict | None, pods=(), **evidence) -> str:
    return explained_timeout(
        REF,
        which,
        30,
        status=status,
        queue=evidence.pop("queue", None),
        family=FAMILY,
        namespace="ml",
        pods=list(pods),
        **evidence,
    )


def test_a_queue_timeout_names_the_queue_and_kueues_command():
    queue = QueueState(queued=True, queue_name="team-a", queued_since=None, admitted_at=None)
    assert words(QUEUE_TIMEOUT, {}, queue=queue, warnings=["Evicted: no room"]) == (
        f"{REF}: queue_timeout of 30 s passed while the job waited in Kueue queue 'team-a', suspended and not "
        "admitted (for Kueue's reason: kubectl get workloads.kueue.x-k8s.io -n ml); the job was deleted; "
        "warnings: Evicted: no room"
    )


def test_a_queue_timeout_of_a_job_that_names_no_queue_says_runpolicy_suspend_holds_it_not_kueue():
    queue = QueueState(queued=True, queue_name=None, queued_since=None, admitted_at=None)
    for seen in (queue, None):
        message = words(QUEUE_TIMEOUT, {}, queue=seen)
        assert message == (
            f"{REF}: queue_timeout of 30 s passed while the job waited suspended: its runPolicy.suspend is true and "
            "nothing resumed it (it names no Kueue queue: set runPolicy.suspend to false, or let a queue controller "
            "admit it); the job was deleted"
        )
        assert "kueue.x-k8s.io" not in message


def test_a_deadline_with_no_controller_says_so():
    assert words(STARTUP_TIMEOUT, None) == (
        f"{REF}: startup_timeout of 30 s passed and no controller has acted on the job (no status, no pods): the "
        "Kubeflow training operator may not be running, or not watching namespace ml (its --namespace flag), or "
        "not serving PyTorchJob (--enable-scheme); the job was deleted"
    )


def test_a_deadline_names_the_pending_pods_the_warnings_and_the_tails():
    pending = {
        "metadata": {"name": "train-master-0", "labels": {"training.kubeflow.org/replica-type": "master"}},
        "status": {"phase": "Pending"},
    }
    said = words(
        STARTUP_TIMEOUT,
        job("Created")["status"],
        [pending],
        warnings=["FailedScheduling: 0/1 nodes"],
        tails=["Last log lines of Master-0:", "  | boom"],
    )
    head, *tail = said.split("\n")
    assert head.startswith(f"{REF}: startup_timeout of 30 s passed; last state: Created; pending: ")
    assert "train-master-0" in head and head.endswith("; warnings: FailedScheduling: 0/1 nodes")
    assert tail == ["Last log lines of Master-0:", "  | boom"]


# --- the pods to stop at the terminal transition -----------------------------------------------------------------


def pod(name: str, phase: str, owner: str = "u-1") -> dict:
    return {
        "metadata": {"name": name, "uid": f"p-{name}", "ownerReferences": [{"uid": owner}]},
        "status": {"phase": phase},
    }


def held(policy: str, *true: str) -> dict:
    return job(*true, annotations={ANNOTATION_HELD_RUN_POLICY: json.dumps({"cleanPodPolicy": policy})})


PODS = [pod("a", "Running"), pod("b", "Succeeded"), pod("c", "Pending"), pod("d", "Running", owner="u-2")]


@pytest.mark.parametrize("policy", ["Running", "All"])
def test_a_held_policy_stops_the_jobs_own_active_pods_and_says_so(policy):
    stop = pods_stopped_at_terminal(REF, held(policy, "Created", "Succeeded"), PODS, FAMILY)
    assert [p["metadata"]["name"] for p in stop.pods] == ["a", "c"]  # d is a successor's; b has finished
    assert stop.policy.held and stop.policy.clean_pod_policy == policy
    assert stop.line == f"{REF} is Succeeded: stopping a, c (pods deleted), as cleanPodPolicy {policy} asks"


def test_nothing_is_stopped_for_none_or_when_the_controller_was_sent_the_policy():
    assert pods_stopped_at_terminal(REF, held("None", "Failed"), PODS, FAMILY).pods == ()
    not_held = job("Failed")
    not_held["spec"]["runPolicy"]["cleanPodPolicy"] = "Running"
    stop = pods_stopped_at_terminal(REF, not_held, PODS, FAMILY)
    assert (stop.pods, stop.line, stop.policy.held) == ((), None, False)


# --- the family: the core reads a job's API family through its port, nothing else -------------------------------


class TrainJobLike:
    """A family of another vocabulary (``Complete``, ``Failed``; one ``node`` replica type): the core judges its jobs
    with no word of ``kubeflow.org/v1`` in it."""

    kind = "TrainJob"
    replica_types = ("node",)
    suspend_field = "spec.suspend"

    def _true(self, status, condition_type):
        return any(
            c.get("type") == condition_type and c.get("status") == "True" for c in (status or {}).get("conditions", [])
        )

    def is_failed(self, status):
        return self._true(status, "Failed")

    def is_succeeded(self, status):
        return self._true(status, "Complete")

    def is_terminal(self, status):
        return self.is_failed(status) or self.is_succeeded(status)

    def has_condition(self, status, condition_type):
        return self._true(status, condition_type)

    def phase(self, status):
        return "Complete" if self.is_succeeded(status) else "Failed" if self.is_failed(status) else "Active"

    def summary(self, status, desired=None):
        return self.phase(status) + (f" of {desired['node']} nodes" if desired else "")

    def trainer_progress(self, status):
        return None  # the port's: this family's controller reports no progress of its own

    def controller_has_acted(self, status):
        return bool(status)

    def desired_replicas(self, job):
        return {"node": job["spec"]["numNodes"]}

    def lead_pod(self, pods):
        return None

    def pending_reasons(self, pods):
        return []

    def is_spec_suspended(self, job):
        return job["spec"].get("suspend") is True

    def has_started(self, status):
        return self.is_terminal(status)

    def started_since_admission(self, status, admitted_at):
        return self.is_terminal(status)


def test_the_core_judges_another_familys_job_by_its_port():
    other = TrainJobLike()
    train_job = {"metadata": {"uid": "t-1"}, "spec": {"numNodes": 4}, "status": {"conditions": []}}
    wait = JobWait("TrainJob ml/t", Deadlines(started_at=T0, timeout=60, family=other), other)
    assert wait.seen(train_job, T0).lines.progress == "TrainJob ml/t: Active of 4 nodes"
    train_job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    done = wait.seen(train_job, T0 + 1)
    assert isinstance(done, Finished) and not done.failed and done.message == "TrainJob ml/t: Complete"
    assert (
        judge_gone("TrainJob ml/t", train_job, other).message
        == "TrainJob ml/t: Complete (then deleted outside this task)"
    )


def test_the_core_names_no_kind_and_reads_no_condition_of_its_own():
    import ast
    from pathlib import Path

    import airflow_trainjob.domain.lifecycle as core

    tree = ast.parse(Path(core.__file__).read_text())
    imported = {
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not {n for n in imported if n.endswith((".JOB_KINDS", ".JobKind", ".conditions"))}, imported
    assert not any("airflow_trainjob.constants" in n for n in imported), imported

"""failures.py: the one table of exit-code and reason classes, and what each restartPolicy does with them.

Upstream (training-operator release-1.9): ``pkg/util/train/train_util.go`` ``IsRetryableExitCode`` is
``exitCode >= 128``; ``pkg/controller.v1/common/pod.go`` restarts a Failed pod when the policy is ``ExitCode`` and
the default container's code is retryable (``0xbeef`` when it has none) or the policy is ``OnFailure``/``Always``,
and fails the job on ``ExitCode`` with a code that is not. No cluster needed.
"""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import JOB_KINDS, RestartPolicy
from airflow_trainjob.domain.failures import (
    ContainerEnd,
    ExitClass,
    classify_exit,
    exit_class,
    failure_message,
    is_permanent,
    is_permanent_exit_code,
    is_retryable_exit_code,
    restart_policies,
    root_cause,
)

A, O, N, E = RestartPolicy.ALWAYS, RestartPolicy.ON_FAILURE, RestartPolicy.NEVER, RestartPolicy.EXIT_CODE  # noqa: E741

# (exit code, reason) -> class, and per restartPolicy whether the replica is started again.
TABLE = [
    # code, reason, class, {policy: restarted}
    (0, "Completed", ExitClass.SUCCEEDED, {A: True, O: False, N: False, E: False}),
    (1, "Error", ExitClass.PERMANENT, {A: True, O: True, N: False, E: False}),
    (2, "Error", ExitClass.PERMANENT, {A: True, O: True, N: False, E: False}),
    (126, "ContainerCannotRun", ExitClass.PERMANENT, {A: True, O: True, N: False, E: False}),
    (127, "Error", ExitClass.PERMANENT, {A: True, O: True, N: False, E: False}),
    (128, "Error", ExitClass.RETRYABLE, {A: True, O: True, N: False, E: True}),
    (130, "Error", ExitClass.RETRYABLE, {A: True, O: True, N: False, E: True}),
    (137, "Error", ExitClass.RETRYABLE, {A: True, O: True, N: False, E: True}),
    (139, "Error", ExitClass.RETRYABLE, {A: True, O: True, N: False, E: True}),
    (143, "Error", ExitClass.RETRYABLE, {A: True, O: True, N: False, E: True}),
    (255, "Error", ExitClass.RETRYABLE, {A: True, O: True, N: False, E: True}),
    (137, "OOMKilled", ExitClass.OOM_KILLED, {A: True, O: True, N: False, E: True}),
    # An OOM-killed child whose parent exits 1: still OOMKilled for Airflow; the operator reads only the code.
    (1, "OOMKilled", ExitClass.OOM_KILLED, {A: True, O: True, N: False, E: False}),
    (None, "Evicted", ExitClass.EVICTED, {A: True, O: True, N: False, E: True}),
    (137, "Evicted", ExitClass.EVICTED, {A: True, O: True, N: False, E: True}),
    (None, "", ExitClass.UNKNOWN, {A: True, O: True, N: False, E: True}),
]


@pytest.mark.parametrize(("code", "reason", "cls", "restarts"), TABLE, ids=lambda v: repr(v))
def test_classification_table(code, reason, cls, restarts):
    assert exit_class(code, reason) is cls
    assert set(restarts) == set(RestartPolicy)
    for policy, restarted in restarts.items():
        for given in (policy, policy.value):  # the enum or the string read from the API
            verdict = classify_exit(code, reason, given)
            assert verdict.exit_class is cls and verdict.restarted is restarted, (policy, verdict)
            assert verdict.failed is (cls is not ExitClass.SUCCEEDED)
            assert verdict.permanent is (cls is ExitClass.PERMANENT)


def test_every_class_is_in_the_table_and_only_permanent_is_not_retried():
    assert {row[2] for row in TABLE} == set(ExitClass)
    assert [c for c in ExitClass if c.permanent] == [ExitClass.PERMANENT]
    assert [c for c in ExitClass if not c.failed] == [ExitClass.SUCCEEDED]


@pytest.mark.parametrize("policy", [None, "Sometimes"])
def test_no_or_unknown_policy_restarts_nothing(policy):
    assert classify_exit(137, "Error", policy).restarted is False


@pytest.mark.parametrize(
    ("code", "retryable", "permanent"),
    [
        (0, False, False),
        (1, False, True),
        (2, False, True),
        (3, False, True),
        (126, False, True),
        (127, False, True),
        (128, True, False),
        (130, True, False),
        (137, True, False),
        (138, True, False),
        (139, True, False),
        (143, True, False),
        (255, True, False),
        (0xBEEF, True, False),
    ],
)
def test_exit_code_rule_is_upstreams(code, retryable, permanent):
    # 1, 2, 3, 130, 138 are train_util_test.go's cases; 0xbeef is pod.go's "no exit code" magic number.
    assert is_retryable_exit_code(code) is retryable
    assert is_permanent_exit_code(code) is permanent


def end(replica, code, reason="Error", at="2026-01-01T00:00:01Z", pod=None):
    return ContainerEnd(pod or f"job-{replica.lower()}", replica, "pytorch", code, reason, finished_at=at)


def pytorch_job(master=None, worker=None):
    spec = {}
    for replica_type, policy in (("Master", master), ("Worker", worker)):
        spec[replica_type] = {"replicas": 1, "template": {}, **({"restartPolicy": policy} if policy else {})}
    return {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": spec}}


def test_restart_policies_fall_back_to_the_kinds_default():
    assert restart_policies(pytorch_job("ExitCode", None)) == {"Master": E, "Worker": O}  # PyTorchJob: OnFailure
    tf = {"kind": "TFJob", "spec": {"tfReplicaSpecs": {"chief": {}, "Worker": {"restartPolicy": "Always"}}}}
    assert restart_policies(tf) == {"Chief": N, "Worker": A}  # TFJob: Never; keys matched regardless of case
    for kind, row in JOB_KINDS.items():
        job = {"kind": kind, "spec": {row.replica_specs_key: {"Worker": {"restartPolicy": "Bogus"}}}}
        assert restart_policies(job) == {"Worker": row.default_restart_policy}
    assert restart_policies({"kind": "Pod"}) == {} and restart_policies({"kind": "TFJob"}) == {}


def test_root_cause_is_the_first_failure_no_restart_policy_recovered_from():
    # ExitCode: the master's 137 was restarted by the operator; the worker's exit 1 failed the job.
    ends = [end("Master-0", 137, at="t1"), end("Worker-0", 1, at="t2"), end("Worker-1", 0, "Completed", at="t3")]
    policies = {"Master": E, "Worker": E}
    assert root_cause(ends, policies) is ends[1] and is_permanent(ends, policies)
    # Never: nothing restarted, the first failure decides (a bug's exit 1 after a 137 still loses to it).
    assert root_cause(ends, {"Master": N, "Worker": N}) is ends[0] and not is_permanent(ends, {"Master": N})
    assert root_cause(ends) is ends[0] and not is_permanent(ends)
    # OnFailure restarts everything (backoffLimit failed the job): the first failure decides.
    assert root_cause(ends, {"Master": O, "Worker": O}) is ends[0]
    bug_first = [end("Worker-0", 1, at="t1"), end("Master-0", 137, at="t2")]
    assert root_cause(bug_first, {"Master": E, "Worker": E}) is bug_first[0] and is_permanent(bug_first)


def test_failures_in_the_same_second_rank_the_same_whatever_order_the_pods_were_read_in():
    """``finishedAt`` has whole seconds: two replicas that exit 1 in the same second are ranked by pod name, so the
    task's error (pods in the order its watch saw them) and the Training job tab (pods as it lists them) name the same
    first failure (CI once had the error name Worker-0 and the tab Master-0)."""
    master, worker = end("Master-0", 1, pod="j-master-0"), end("Worker-0", 1, pod="j-worker-0")
    policies = {"Master": O, "Worker": O}
    assert root_cause([worker, master], policies) is master and root_cause([master, worker], policies) is master


def test_a_pod_stopped_because_the_job_failed_is_never_the_cause():
    # The worker's exit 1 failed the job; cleanup then stopped the master (SIGTERM, 143) within the same second,
    # or later: the master's end is a consequence. Times are whole seconds, so a tie is common.
    same_second = [end("Master-0", 143, at="2026-12-02T03:00:05Z"), end("Worker-0", 1, at="2026-12-02T03:00:05Z")]
    assert root_cause(same_second) is same_second[1] and is_permanent(same_second)
    later = [end("Worker-0", 1, at="2026-12-02T03:00:05Z"), end("Master-0", 143, at="2026-12-02T03:00:07Z")]
    assert root_cause(later, failed_at="2026-12-02T03:00:05Z") is later[0]
    # A run that ended after the Failed transition cannot be its cause, whatever its code and order.
    stale_clock = [end("Master-0", 1, at="2026-12-02T03:00:09Z"), end("Worker-0", 137, at="2026-12-02T03:00:04Z")]
    assert root_cause(stale_clock, failed_at="2026-12-02T03:00:05Z") is stale_clock[1]
    # A kill before the job failed is still a cause (an OOM kill always is), and so is a lone stop signal.
    first_killed = [end("Master-0", 137, at="2026-12-02T03:00:01Z"), end("Worker-0", 1, at="2026-12-02T03:00:05Z")]
    assert root_cause(first_killed, failed_at="2026-12-02T03:00:05Z") is first_killed[0]
    oom = [end("Master-0", 137, "OOMKilled", at="2026-12-02T03:00:05Z"), end("Worker-0", 1, at="2026-12-02T03:00:05Z")]
    assert root_cause(oom) is oom[0]
    assert root_cause([end("Master-0", 143, at="2026-12-02T03:00:09Z")], failed_at="2026-12-02T03:00:05Z") is not None
    status = {
        "conditions": [
            {
                "type": "Failed",
                "status": "True",
                "reason": "PyTorchJobFailed",
                "lastTransitionTime": "2026-12-02T03:00:05Z",
            }
        ]
    }
    message = failure_message("PyTorchJob ns/j", status, later)
    assert message.splitlines()[1:3] == [
        "First failure (permanent: not retried): Worker-0 (pod job-worker-0, container pytorch): exit code 1 (Permanent), Error",
        "  stopped with the job: Master-0 (pod job-master-0, container pytorch): exit code 143 (Retryable), Error",
    ]
    # After the failure, a stop signal is the job's cleanup; any other exit is a failure of its own.
    after = [  # oldest first, as container_ends orders them
        end("Worker-0", 1, at="2026-12-02T03:00:04Z"),
        end("Master-0", 137, at="2026-12-02T03:00:05Z"),
        end("Worker-2", 137, "OOMKilled", at="2026-12-02T03:00:06Z"),
        end("Worker-1", 2, at="2026-12-02T03:00:07Z"),
    ]
    lines = failure_message("PyTorchJob ns/j", status, after).splitlines()[1:]
    assert [line.split(" (pod")[0] for line in lines] == [
        "First failure (permanent: not retried): Worker-0",
        "  also failed: Worker-2",
        "  also failed: Worker-1",
        "  stopped with the job: Master-0",
    ]


def test_oom_killed_and_evicted_are_retryable_whatever_the_code():
    assert not is_permanent([end("Master-0", 1, "OOMKilled")])
    assert not is_permanent([ContainerEnd("p", "Master-0", "", None, "Evicted")])
    assert is_permanent([end("Master-0", 2)]) and root_cause([end("Master-0", 0, "Completed")]) is None


def test_failure_message_names_the_cause_and_its_class():
    ends = [end("Master-0", 137, at="t1"), end("Worker-0", 1, at="t2")]
    status = {"conditions": [{"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "message": "boom"}]}
    first = failure_message("PyTorchJob ns/j", status, ends)
    assert first.splitlines()[:2] == [
        "PyTorchJob ns/j failed: PyTorchJobFailed: boom",
        "First failure (retryable): Master-0 (pod job-master-0, container pytorch): exit code 137 (Retryable), Error",
    ]
    deciding = failure_message("PyTorchJob ns/j", status, ends, policies={"Master": E, "Worker": E})
    assert deciding.splitlines()[1:] == [
        "Failure not restarted by its restartPolicy (permanent: not retried): "
        "Worker-0 (pod job-worker-0, container pytorch): exit code 1 (Permanent), Error",
        "  also failed: Master-0 (pod job-master-0, container pytorch): exit code 137 (Retryable), Error",
    ]

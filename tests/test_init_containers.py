"""Every container of a replica's pod is judged and quoted, init containers included: pods.py, failures.py and
the record's and the trigger event's pod summaries, over pod JSON shaped as a real kubelet reports it (Kubernetes
1.20's ``kubelet_pods.go``: an init container that fails under ``restartPolicy: Never`` fails the pod with its
``initContainerStatuses[].state.terminated``, the main containers left waiting ``PodInitializing``; under
``OnFailure``/``Always`` it is restarted, waiting ``CrashLoopBackOff`` with its failed run in ``lastState``).
No cluster needed.
"""

from __future__ import annotations

import json

from airflow_trainjob.constants import JOB_KINDS, RestartPolicy
from airflow_trainjob.domain.failures import (
    ExitClass,
    classify_exit,
    container_ends,
    failure_message,
    is_permanent,
    pending_failures,
    pending_reasons,
    replica_end,
    root_cause,
)
from airflow_trainjob.domain.pods import init_status, log_container, restart_counts
from airflow_trainjob.domain.records import chosen_pods, trim_pod
from airflow_trainjob.families import family_of
from airflow_trainjob.triggers.events import _pod_summary

V1_KEYS = frozenset(family_of("PyTorchJob").pod_keys)

PYTORCH = JOB_KINDS["PyTorchJob"]
PYTORCH_FAMILY = family_of("PyTorchJob")  # what the UI's views read
FAILED = {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed", "message": "job failed"}


def terminated(code, reason, started="2026-03-01T10:00:01Z", finished="2026-03-01T10:00:02Z", **extra):
    return {
        "terminated": {
            "exitCode": code,
            "reason": reason,
            "startedAt": started,
            "finishedAt": finished,
            "containerID": "containerd://0123abcd",
            **extra,
        }
    }


def container_status(name, state, last=None, restarts=0, ready=False):
    status = {
        "name": name,
        "image": "busybox:1.36",
        "imageID": "docker.io/library/busybox@sha256:0123",
        "state": state,
        "lastState": last or {},
        "ready": ready,
        "restartCount": restarts,
        "started": "running" in state,
    }
    if "terminated" in state:
        status["containerID"] = state["terminated"]["containerID"]
    return status


def pytorch_pod(replica, phase, init_statuses, statuses, restart_policy="Never", init_names=("fetch-data",), **spec):
    replica_type, index = replica.split("-")
    return {
        "metadata": {
            "name": f"job-{replica.lower()}",
            "labels": {
                "training.kubeflow.org/replica-type": replica_type.lower(),
                "training.kubeflow.org/replica-index": index,
            },
        },
        "spec": {
            "restartPolicy": restart_policy,
            "initContainers": [{"name": n, "image": "busybox:1.36", "command": ["fetch"]} for n in init_names],
            "containers": [{"name": "pytorch", "image": "pytorch:2", "command": ["python", "train.py"]}],
            "nodeName": "node-1",
            **spec,
        },
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized"},
                {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
                {"type": "PodScheduled", "status": "True"},
            ],
            "hostIP": "10.0.0.1",
            "startTime": "2026-03-01T10:00:00Z",
            "initContainerStatuses": init_statuses,
            "containerStatuses": statuses,
        },
    }


INITIALIZING = {"waiting": {"reason": "PodInitializing"}}


def init_failed_never():
    """restartPolicy Never: the init container exits 2, the pod is Failed, ``pytorch`` never started."""
    return pytorch_pod(
        "Master-0",
        "Failed",
        [container_status("fetch-data", terminated(2, "Error"))],
        [container_status("pytorch", INITIALIZING)],
    )


def init_crash_looping(restarts=3):
    """restartPolicy OnFailure: the init container keeps exiting 2; the pod stays Pending."""
    back_off = {
        "waiting": {
            "reason": "CrashLoopBackOff",
            "message": "back-off 40s restarting failed container=fetch-data pod=job-master-0_ns(0123)",
        }
    }
    return pytorch_pod(
        "Master-0",
        "Pending",
        [container_status("fetch-data", back_off, last=terminated(2, "Error"), restarts=restarts)],
        [container_status("pytorch", INITIALIZING)],
        restart_policy="OnFailure",
    )


def main_failed_after_init():
    """The init container completed; then ``pytorch`` exited 1."""
    return pytorch_pod(
        "Master-0",
        "Failed",
        [container_status("fetch-data", terminated(0, "Completed"), ready=True)],
        [container_status("pytorch", terminated(1, "Error", "2026-03-01T10:00:03Z", "2026-03-01T10:00:09Z"))],
    )


def worker_failed_main():
    return pytorch_pod(
        "Worker-0",
        "Failed",
        [container_status("fetch-data", terminated(0, "Completed"), ready=True)],
        [container_status("pytorch", terminated(1, "Error", "2026-03-01T10:00:03Z", "2026-03-01T10:00:05Z"))],
    )


def test_a_failed_init_container_is_the_replicas_failure_named_as_one():
    ends = container_ends([init_failed_never()], PYTORCH)
    assert [(e.replica, e.container, e.init, e.exit_code, e.exit_class, e.failed) for e in ends] == [
        ("Master-0", "fetch-data", True, 2, ExitClass.PERMANENT, True)
    ]
    assert ends[0].describe() == "Master-0 (pod job-master-0, initContainer fetch-data): exit code 2 (Permanent), Error"
    assert ends[0].source == "Master-0 (initContainer fetch-data)"
    assert root_cause(ends, {"Master": RestartPolicy.NEVER}) is ends[0] and is_permanent(ends)
    assert replica_end(init_failed_never(), PYTORCH) == ends[0]  # the tab's exit columns
    assert log_container(init_failed_never(), PYTORCH) == "fetch-data"  # whose log speaks for the replica
    assert init_status(init_failed_never()) == "Init:Error"


def test_the_failure_message_names_replica_init_container_code_class_and_its_last_lines():
    ends = container_ends([init_failed_never()], PYTORCH)
    tails = {ends[0].source: "fetching s3://data/train.csv\nerror: access denied\n"}
    message = failure_message("PyTorchJob ns/job", {"conditions": [FAILED]}, ends, [], tails)
    assert message.splitlines() == [
        "PyTorchJob ns/job failed: PyTorchJobFailed: job failed",
        "First failure (permanent: not retried): "
        "Master-0 (pod job-master-0, initContainer fetch-data): exit code 2 (Permanent), Error",
        "Last log lines of Master-0 (initContainer fetch-data):",
        "  | fetching s3://data/train.csv",
        "  | error: access denied",
    ]


def test_a_crash_looping_init_container_is_restarted_pending_and_counted():
    pod = init_crash_looping(restarts=3)
    (end,) = container_ends([pod], PYTORCH)
    assert (end.container, end.init, end.restarted, end.exit_code, end.failed) == ("fetch-data", True, True, 2, True)
    assert classify_exit(2, "Error", RestartPolicy.ON_FAILURE, init=True).restarted
    assert restart_counts([pod]) == {"job-master-0": 3}  # kubectl's RESTARTS counts init containers' too
    assert init_status(pod) == "Init:CrashLoopBackOff"
    assert log_container(pod, PYTORCH) == "fetch-data"
    assert pending_failures([pod], PYTORCH_FAMILY) == [end]
    assert pending_reasons([pod], PYTORCH) == [
        "Master-0 (job-master-0) Pending: Init:CrashLoopBackOff; initContainer fetch-data CrashLoopBackOff: "
        "back-off 40s restarting failed container=fetch-data pod=job-master-0_ns(0123); "
        "last exit code 2 (Permanent), Error"
    ]
    # Between two back-offs it runs again: still named, with the exit before, and its log is the one to read.
    rerun = init_crash_looping(restarts=4)
    rerun["status"]["initContainerStatuses"][0]["state"] = {"running": {"startedAt": "2026-03-01T10:01:00Z"}}
    assert init_status(rerun) == "Init:0/1" and log_container(rerun, PYTORCH) == "fetch-data"
    assert pending_reasons([rerun], PYTORCH) == [
        "Master-0 (job-master-0) Pending: Init:0/1; initContainer fetch-data running; last exit code 2 (Permanent), Error"
    ]
    # Failed by backoffLimit while it crash-loops: every failure was restarted, the first one is the cause. The pod
    # as last seen may hold two runs of it (lastState and state): one line, and the other run counted.
    assert root_cause([end], {"Master": RestartPolicy.ON_FAILURE}) is end
    both = pytorch_pod(
        "Master-0",
        "Pending",
        [
            container_status(
                "fetch-data", terminated(2, "Error", finished="2026-03-01T10:00:09Z"), last=terminated(2, "Error")
            )
        ],
        [container_status("pytorch", INITIALIZING)],
        restart_policy="OnFailure",
    )
    message = failure_message("PyTorchJob ns/job", {"conditions": [FAILED]}, container_ends([both], PYTORCH))
    assert message.splitlines()[1:] == [
        "First failure (permanent: not retried): "
        "Master-0 (pod job-master-0, initContainer fetch-data): exit code 2 (Permanent), Error",
        "  failed the same way again: 1 more run(s)",
    ]


def test_init_containers_waiting_or_running_are_pending_reasons_in_kubectls_words():
    first_done = container_status("fetch-data", terminated(0, "Completed"), ready=True)
    pulling = container_status("fix-perms", {"waiting": {"reason": "ImagePullBackOff", "message": "pull failed"}})
    two = ("fetch-data", "fix-perms")
    assert init_status(pytorch_pod("Master-0", "Pending", [], [], init_names=two)) == "Init:0/2"  # none reported
    running = container_status("fetch-data", {"running": {"startedAt": "2026-03-01T10:00:01Z"}})
    waiting = container_status("fix-perms", {"waiting": {"reason": "PodInitializing"}})
    assert init_status(pytorch_pod("Master-0", "Pending", [running, waiting], [], init_names=two)) == "Init:0/2"
    pulling_pod = pytorch_pod(
        "Master-0", "Pending", [first_done, pulling], [container_status("pytorch", INITIALIZING)], init_names=two
    )
    assert init_status(pulling_pod) == "Init:ImagePullBackOff"
    assert pending_reasons([pulling_pod], PYTORCH) == [
        "Master-0 (job-master-0) Pending: Init:ImagePullBackOff; initContainer fix-perms ImagePullBackOff: pull failed"
    ]
    assert log_container(pulling_pod, PYTORCH) == "pytorch"  # fix-perms never ran: no log of its own yet
    assert pending_failures([pulling_pod], PYTORCH_FAMILY) == []
    assert init_status(main_failed_after_init()) is None  # all completed


def test_a_main_container_failing_after_its_init_containers_completed():
    pod = main_failed_after_init()
    ends = container_ends([pod], PYTORCH)
    assert [(e.container, e.init, e.exit_code, e.failed) for e in ends] == [
        ("fetch-data", True, 0, False),  # a step that completed: no failure
        ("pytorch", False, 1, True),
    ]
    assert root_cause(ends) is ends[1] and replica_end(pod, PYTORCH) is not None
    assert replica_end(pod, PYTORCH).container == "pytorch" and log_container(pod, PYTORCH) == "pytorch"
    assert ends[1].source == "Master-0"
    # While the main container runs, the completed init container is no exit of the replica.
    running = pytorch_pod(
        "Master-0",
        "Running",
        [container_status("fetch-data", terminated(0, "Completed"), ready=True)],
        [container_status("pytorch", {"running": {"startedAt": "2026-03-01T10:00:03Z"}}, ready=True)],
    )
    assert replica_end(running, PYTORCH) is None and pending_reasons([running], PYTORCH) == []


def test_init_and_main_failures_across_replicas_in_order():
    # The Master's init container failed first (10:00:02), then a Worker's main container (10:00:05).
    pods = [worker_failed_main(), init_failed_never()]
    ends = [e for e in container_ends(pods, PYTORCH) if e.failed]
    assert [(e.replica, e.container_label) for e in ends] == [
        ("Master-0", "initContainer fetch-data"),
        ("Worker-0", "container pytorch"),
    ]
    message = failure_message("PyTorchJob ns/job", {"conditions": [FAILED]}, container_ends(pods, PYTORCH))
    assert message.splitlines()[1:] == [
        "First failure (permanent: not retried): "
        "Master-0 (pod job-master-0, initContainer fetch-data): exit code 2 (Permanent), Error",
        "  also failed: Worker-0 (pod job-worker-0, container pytorch): exit code 1 (Permanent), Error",
    ]
    # The same pod: its init container failed once and was restarted (OnFailure), then its main container failed.
    retried = pytorch_pod(
        "Master-0",
        "Failed",
        [container_status("fetch-data", terminated(0, "Completed"), last=terminated(2, "Error"), restarts=1)],
        [container_status("pytorch", terminated(1, "Error", "2026-03-01T10:00:03Z", "2026-03-01T10:00:09Z"))],
        restart_policy="OnFailure",
    )
    ends = container_ends([retried], PYTORCH)
    assert [(e.container, e.exit_code, e.restarted, e.failed) for e in ends] == [
        ("fetch-data", 2, True, True),
        ("fetch-data", 0, False, False),
        ("pytorch", 1, False, True),
    ]
    assert root_cause(ends, {"Master": RestartPolicy.ON_FAILURE}) is ends[0]  # both restarted: the first failure
    assert replica_end(retried, PYTORCH) == ends[2] and log_container(retried, PYTORCH) == "pytorch"


def test_under_exit_code_a_failed_init_container_gets_its_pod_recreated():
    # Pod restartPolicy Never fails the pod; the operator then reads no exit code of the default container
    # (0xbeef, retryable) and recreates it: a restart, whatever the init container's own code.
    assert classify_exit(2, "Error", RestartPolicy.EXIT_CODE, init=True).restarted
    assert not classify_exit(2, "Error", RestartPolicy.EXIT_CODE).restarted
    assert not classify_exit(2, "Error", RestartPolicy.NEVER, init=True).restarted


def test_a_sidecars_stop_at_the_end_is_no_failure_but_its_crashes_are_restarts():
    sidecar_spec = [
        {"name": "fetch-data", "image": "busybox:1.36"},
        {"name": "log-shipper", "image": "fluent-bit:3", "restartPolicy": "Always"},
    ]
    pod = pytorch_pod(
        "Master-0",
        "Succeeded",
        [
            container_status("fetch-data", terminated(0, "Completed"), ready=True),
            # Crashed once while training ran (restarted), then stopped by the kubelet after ``pytorch`` ended.
            container_status(
                "log-shipper",
                terminated(143, "Error", finished="2026-03-01T10:00:10Z"),
                last=terminated(1, "Error", finished="2026-03-01T10:00:04Z"),
                restarts=1,
            ),
        ],
        [container_status("pytorch", terminated(0, "Completed", "2026-03-01T10:00:03Z", "2026-03-01T10:00:09Z"))],
    )
    pod["spec"]["initContainers"] = sidecar_spec
    ends = container_ends([pod], PYTORCH)
    shipper = [e for e in ends if e.container == "log-shipper"]
    assert [(e.exit_code, e.sidecar, e.restarted, e.failed) for e in shipper] == [
        (1, True, True, True),
        (143, True, False, False),
    ]
    assert classify_exit(1, "Error", RestartPolicy.NEVER, init=True, sidecar=True).restarted
    assert root_cause(ends, {"Master": RestartPolicy.NEVER}) is shipper[0]  # only a restart: nothing kept
    assert init_status(pod) is None and log_container(pod, PYTORCH) == "pytorch"  # a sidecar holds nothing up
    # The record and the trigger's event keep which init containers are sidecars, and the verdict reads them.
    for kept in (trim_pod(pod), _pod_summary(pod, V1_KEYS)):
        assert kept["spec"]["initContainers"] == [{"name": "log-shipper", "restartPolicy": "Always"}]
        assert [e.failed for e in container_ends([kept], PYTORCH) if e.container == "log-shipper"] == [True, False]


def test_the_record_and_the_trigger_event_keep_the_init_containers_ends():
    pods = [init_failed_never(), worker_failed_main()]
    for kept in (
        [trim_pod(p) for p in pods],
        chosen_pods(pods, family_of("PyTorchJob")),
        [_pod_summary(p, V1_KEYS) for p in pods],
    ):
        assert [e.describe() for e in container_ends(kept, PYTORCH) if e.failed] == [
            "Master-0 (pod job-master-0, initContainer fetch-data): exit code 2 (Permanent), Error",
            "Worker-0 (pod job-worker-0, container pytorch): exit code 1 (Permanent), Error",
        ]
    summary = _pod_summary(init_failed_never(), V1_KEYS)
    assert "command" not in json.dumps(summary) and "image" not in json.dumps(summary)  # no spec, no script
    assert len(json.dumps(summary)) < 600  # within the event's budget (2,000 characters) with room for others


def test_the_tabs_replica_rows_show_the_init_containers_exit_and_log():
    from airflow_trainjob.ui import views

    live, recorded = init_failed_never(), trim_pod(init_crash_looping(restarts=3))
    (row,) = views.replicas([live], PYTORCH_FAMILY)
    assert (row["container"], row["exit_code"], row["reason"], row["exit_class"]) == (
        "fetch-data",
        2,
        "Error",
        "Permanent",
    )
    (row,) = views.replicas([recorded], PYTORCH_FAMILY, job_gone=True)
    assert (row["container"], row["restarts"], row["exit_code"], row["exit_class"]) == ("fetch-data", 3, 2, "Permanent")
    marks = views.restart_marks([init_crash_looping()], [], {"metadata": {"name": "job"}}, PYTORCH_FAMILY)
    assert [(m["replica"], m["exit_code"]) for m in marks] == [("Master-0", 2)]
    # A running replica whose init container completed shows no exit of it.
    (row,) = views.replicas(
        [pytorch_pod("Master-0", "Running", [container_status("fetch-data", terminated(0, "Completed"))], [])],
        PYTORCH_FAMILY,
    )
    assert (row["exit_code"], row["exit_class"], row["container"]) == (None, None, "pytorch")

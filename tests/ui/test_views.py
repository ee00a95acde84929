"""The UI's pure parts, without a cluster: a job, its pods and events -> the pages' JSON (:mod:`airflow_trainjob.ui.views`),
the options (:mod:`airflow_trainjob.ui.settings`) and the record's reference resolution (:mod:`airflow_trainjob.ui.store`).
The same view functions must say the same of a live job and of the trimmed copy a try records at its end."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import Any

import pytest

from airflow_trainjob.constants import (
    ANNOTATION_DAG_ID,
    ANNOTATION_MAP_INDEX,
    ANNOTATION_RUN_ID,
    ANNOTATION_TASK_ID,
    ANNOTATION_TRY_NUMBER,
    LABEL_JOB_NAME,
    LABEL_KUEUE_QUEUE_NAME,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
)
from airflow_trainjob.domain.ownership import TaskInstanceIdentity
from airflow_trainjob.domain.records import trim_event, trim_job, trim_pod
from airflow_trainjob.families import family_of
from airflow_trainjob.ui import settings, store, views
from airflow_trainjob.ui.try_view import try_has_ended, try_view
from tests.families import trainer_v2_objects as v2
from tests.support.legacy import as_legacy

NOW = datetime(2026, 12, 2, 5, 10, 0, tzinfo=timezone.utc)
IDENTITY = TaskInstanceIdentity("retrain_digits", "train", "manual__2026-12-02T05:00:00+00:00", -1, 2)


def condition(type_: str, status: str, time: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "lastTransitionTime": time, "reason": reason, "message": message}


def job(conditions=(), *, name="train-1", uid="uid-1", workers=2, suspend=False, labels=None, **status) -> dict:
    """A PyTorchJob as the API returns it, of the task instance :data:`IDENTITY`."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": uid,
            "creationTimestamp": "2026-12-02T05:00:00Z",
            "labels": {**IDENTITY.labels(), **(labels or {})},
            "annotations": {
                ANNOTATION_DAG_ID: IDENTITY.dag_id,
                ANNOTATION_TASK_ID: IDENTITY.task_id,
                ANNOTATION_RUN_ID: IDENTITY.run_id,
                ANNOTATION_MAP_INDEX: "-1",
                ANNOTATION_TRY_NUMBER: "2",
            },
        },
        "spec": {
            "runPolicy": {"suspend": suspend},
            "pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": workers}},
        },
        "status": {"conditions": list(conditions), **status},
    }


def pod(
    replica_type: str,
    index: int,
    *,
    phase="Running",
    created="2026-12-02T05:01:00Z",
    state=None,
    last_state=None,
    restarts=0,
    reason=None,
    node="local-node",
    job_name="train-1",
) -> dict:
    status: dict[str, Any] = {
        "phase": phase,
        "containerStatuses": [
            {
                "name": "pytorch",
                "restartCount": restarts,
                "state": state or {"running": {}},
                "lastState": last_state or {},
            }
        ],
    }
    if reason:
        status["reason"] = reason
    return {
        "metadata": {
            "name": f"{job_name}-{replica_type.lower()}-{index}",
            "uid": f"pod-{replica_type}-{index}",
            "creationTimestamp": created,
            "labels": {
                LABEL_JOB_NAME: job_name,
                LABEL_REPLICA_TYPE: replica_type.lower(),
                LABEL_REPLICA_INDEX: str(index),
            },
            "ownerReferences": [{"uid": "uid-1"}],
        },
        "spec": {"nodeName": node, "containers": [{"name": "pytorch"}]},
        "status": status,
    }


def terminated(code: int, reason: str, finished: str) -> dict:
    return {"terminated": {"exitCode": code, "reason": reason, "finishedAt": finished}}


def event(reason: str, message: str, time: str, kind="Pod", name="train-1-master-0", uid=None, type_="Normal") -> dict:
    involved = {"kind": kind, "name": name, **({"uid": uid} if uid else {})}
    return {
        "type": type_,
        "reason": reason,
        "message": message,
        "lastTimestamp": time,
        "count": 1,
        "involvedObject": involved,
    }


RUNNING = [
    condition("Created", "True", "2026-12-02T05:00:01Z", "PyTorchJobCreated", "created"),
    condition("Running", "True", "2026-12-02T05:01:30Z", "PyTorchJobRunning", "running"),
]
FAILED = [
    condition("Created", "True", "2026-12-02T05:00:01Z"),
    condition("Running", "False", "2026-12-02T05:05:00Z", "PyTorchJobFailed"),
    condition("Restarting", "False", "2026-12-02T05:03:00Z", "PyTorchJobRestarting", "Worker-1 restarting"),
    condition(
        "Failed",
        "True",
        "2026-12-02T05:05:00Z",
        "PyTorchJobFailed",
        "PyTorchJob train-1 is failed because 1 Worker replica(s) failed.",
    ),
]


# --- phase, timeline, times -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("made", "phase"),
    [
        (None, "Unknown"),
        (job(), "Created"),
        (job(RUNNING), "Running"),
        (job([*RUNNING, condition("Restarting", "True", "2026-12-02T05:02:00Z")]), "Restarting"),
        (job(FAILED), "Failed"),
        (job([condition("Suspended", "True", "2026-12-02T05:00:02Z")]), "Suspended"),
        (job(suspend=True, labels={LABEL_KUEUE_QUEUE_NAME: "team-a"}), "Queued"),
        (job([condition("Suspended", "True", "t")], labels={LABEL_KUEUE_QUEUE_NAME: "team-a"}), "Queued"),
        (job(FAILED, suspend=True, labels={LABEL_KUEUE_QUEUE_NAME: "team-a"}), "Failed"),  # finished waits for nothing
    ],
)
def test_phase_is_what_conditions_and_admission_decide(made, phase):
    assert views.job_phase(made) == phase


def test_timeline_lists_every_condition_oldest_first_true_or_not():
    line = views.timeline(job(FAILED))
    assert [(c["type"], c["status"]) for c in line] == [
        ("Created", "True"),
        ("Restarting", "False"),
        ("Running", "False"),
        ("Failed", "True"),
    ]
    assert line[1] == {
        "type": "Restarting",
        "status": "False",
        "reason": "PyTorchJobRestarting",
        "message": "Worker-1 restarting",
        "time": "2026-12-02T05:03:00Z",
    }


def test_duration_runs_to_now_while_running_and_to_the_end_once_finished():
    running = job(RUNNING, startTime="2026-12-02T05:01:30Z")
    assert views.times(running, "Running", NOW) == ("2026-12-02T05:01:30Z", None, 510.0)
    done = job(FAILED, startTime="2026-12-02T05:01:30Z")  # no completionTime: the Failed condition's turn
    assert views.times(done, "Failed", NOW) == ("2026-12-02T05:01:30Z", None, 210.0)
    completed = job(FAILED, startTime="2026-12-02T05:01:30Z", completionTime="2026-12-02T05:06:30Z")
    assert views.times(completed, "Failed", NOW)[2] == 300.0
    assert views.times(running, "Running", None)[2] is None  # a recorded running job: no "now" to measure to


# --- replicas and restarts --------------------------------------------------------------------------


def failing_pods() -> list[dict]:
    return [
        pod("Worker", 1, restarts=1, last_state=terminated(137, "OOMKilled", "2026-12-02T05:03:00Z")),
        pod("Worker", 0, phase="Failed", reason="Evicted", state={"waiting": {}}),
        pod("Master", 0, phase="Failed", state=terminated(1, "Error", "2026-12-02T05:04:59Z")),
    ]


def test_replicas_table_lead_first_with_last_exit_and_its_class():
    rows = views.replicas(failing_pods(), family_of("PyTorchJob"))
    assert [(r["replica_type"], r["index"]) for r in rows] == [("Master", 0), ("Worker", 0), ("Worker", 1)]
    master, evicted, oom = rows
    assert master == {
        "replica_type": "Master",
        "index": 0,
        "pod": "train-1-master-0",
        "container": "pytorch",
        "phase": "Failed",
        "restarts": 0,
        "exit_code": 1,
        "reason": "Error",
        "exit_class": "Permanent",
        "node": "local-node",
        "created_at": "2026-12-02T05:01:00Z",
        "age_seconds": None,  # a live pod: the page counts its age
        "lead": True,
        "gone": False,
        "failed": False,  # no job given: no judgement of its failure
        "first_failure": False,
        "failure": None,
    }
    assert (evicted["exit_code"], evicted["reason"], evicted["exit_class"], evicted["lead"]) == (
        None,
        "Evicted",
        "Evicted",
        False,
    )
    assert (oom["phase"], oom["restarts"], oom["exit_code"], oom["reason"], oom["exit_class"]) == (
        "Running",
        1,
        137,
        "OOMKilled",
        "OOMKilled",
    )


def test_a_pod_recorded_active_shows_stopped_once_its_job_is_gone():
    done = pod("Master", 0, phase="Succeeded", state={"terminated": {"exitCode": 0, "reason": "Completed"}})
    found = [done, pod("Worker", 0, phase="Running"), pod("Worker", 1, phase="Pending")]
    kind = family_of("PyTorchJob")
    live = views.replicas(found, kind)
    gone = views.replicas(found, kind, job_gone=True)
    assert [r["phase"] for r in live] == ["Succeeded", "Running", "Pending"]
    assert [(r["phase"], r["reason"]) for r in gone] == [
        ("Succeeded", "Completed"),  # finished pods keep what they recorded
        ("Stopped", "removed with its job"),
        ("Stopped", "removed with its job"),
    ]


def test_replica_counts_desired_from_the_spec_and_counts_from_the_status():
    made = job(RUNNING, replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 1, "failed": 1}})
    assert views.replica_counts(made, family_of("PyTorchJob")) == {
        "Master": {"desired": 1, "active": 1, "succeeded": 0, "failed": 0, "text": "1/1 active"},
        "Worker": {"desired": 2, "active": 1, "succeeded": 0, "failed": 1, "text": "1/2 active (1 failed)"},
    }
    # recorded jobs keep no spec: the desired count is unknown, the status still counts
    assert views.replica_counts(trim_job(made), family_of("PyTorchJob"))["Worker"]["desired"] is None


def test_a_terminal_jobs_replica_counts_say_only_what_finished():
    """The training operator leaves ``active`` as it was when the job stopped (here a Worker whose pod is deleted):
    once the job is terminal the counts say what finished, in the task log's words, and no active count."""
    made = job(FAILED, replicaStatuses={"Master": {"failed": 1}, "Worker": {"active": 1}})
    counts = views.replica_counts(made, family_of("PyTorchJob"))
    assert {t: (c["active"], c["text"]) for t, c in counts.items()} == {
        "Master": (None, "1 failed"),
        "Worker": (None, "none finished"),
    }
    view = try_view(record(), live=made, now=NOW)
    assert view["summary"].endswith(" — Master 1 failed, Worker none finished")  # the same decision, once
    assert view["replica_counts"] == counts


def test_restart_marks_from_last_state_and_from_exits_before_the_pod_was_made_again():
    found = [
        pod("Worker", 1, restarts=1, last_state=terminated(137, "OOMKilled", "2026-12-02T05:03:00Z")),
        pod("Master", 0, created="2026-12-02T05:04:00Z", state=terminated(0, "Completed", "2026-12-02T05:06:00Z")),
    ]
    seen = [
        # the operator recreated master-0 after this exit (ExitCode policy): a restart
        event(
            "ExitedWithCode",
            "Pod: ml.train-1-master-0 exited with code 143",
            "2026-12-02T05:03:30Z",
            kind="PyTorchJob",
            name="train-1",
        ),
        # the current master-0's own end: not a restart
        event(
            "ExitedWithCode",
            "Pod: ml.train-1-master-0 exited with code 0",
            "2026-12-02T05:06:00Z",
            kind="PyTorchJob",
            name="train-1",
        ),
        # a pod that is gone altogether (cleaned up): not a restart either
        event(
            "ExitedWithCode",
            "Pod: ml.train-1-worker-0 exited with code 1",
            "2026-12-02T05:02:00Z",
            kind="PyTorchJob",
            name="train-1",
        ),
    ]
    marks = views.restart_marks(found, seen, job(), family_of("PyTorchJob"))
    assert marks == [
        {"replica": "Worker-1", "time": "2026-12-02T05:03:00Z", "exit_code": 137, "reason": "OOMKilled"},
        {"replica": "Master-0", "time": "2026-12-02T05:03:30Z", "exit_code": 143, "reason": None},
    ]


# --- events -----------------------------------------------------------------------------------------


def test_events_of_the_job_and_its_pods_newest_first_without_a_predecessors_or_strangers():
    made = job(RUNNING)
    found = [
        event("Scheduled", "assigned", "2026-12-02T05:01:00Z"),
        event("PyTorchJobCreated", "created", "2026-12-02T05:00:01Z", kind="PyTorchJob", name="train-1", uid="uid-1"),
        event(
            "PyTorchJobFailed", "the predecessor", "2026-12-02T05:00:30Z", kind="PyTorchJob", name="train-1", uid="old"
        ),
        event("Pulled", "an hour before this job existed", "2026-12-02T04:00:00Z"),
        event("Scheduled", "another job's pod", "2026-12-02T05:02:00Z", name="other-master-0"),
        event(
            "OOMKilling", "node event", "2026-12-02T05:03:00Z", kind="Node", name="train-1-master-0", type_="Warning"
        ),
    ]
    kept = views.events(views.about_job(found, made, [pod("Master", 0)]))
    assert [(e["reason"], e["object"]) for e in kept] == [
        ("Scheduled", "Pod/train-1-master-0"),
        ("PyTorchJobCreated", "PyTorchJob/train-1"),
    ]
    assert kept[0] == {
        "time": "2026-12-02T05:01:00Z",
        "type": "Normal",
        "reason": "Scheduled",
        "message": "assigned",
        "object": "Pod/train-1-master-0",
        "count": 1,
    }


def test_times_in_either_clients_spelling_compare_as_times_and_show_as_utc_z():
    """The official clients' serialisation writes ``+00:00`` where custom objects say ``Z``: an event of the job's
    own creation second is the job's, and every time leaves in one spelling."""
    made = job(RUNNING)  # created 2026-12-02T05:00:00Z
    same_second = event("Scheduled", "assigned", "2026-12-02T05:00:00+00:00")
    a_second_before = event("Scheduled", "a predecessor's", "2026-12-02T04:59:59.500000+00:00")
    kept = views.events(views.about_job([same_second, a_second_before], made, [pod("Master", 0)]))
    assert [(e["message"], e["time"]) for e in kept] == [("assigned", "2026-12-02T05:00:00Z")]
    row = views.replicas([pod("Master", 0, created="2026-12-02T05:01:00+00:00")], family_of("PyTorchJob"))[0]
    assert row["created_at"] == "2026-12-02T05:01:00Z"
    assert views.stamp("2026-12-02T05:01:00.250000+00:00") == "2026-12-02T05:01:00.250000Z"
    assert views.stamp("not a time") == "not a time" and views.stamp(None) is None


def test_events_keep_the_newest_fifty():
    many = [event("Tick", str(i), f"2026-12-02T05:{i // 60:02d}:{i % 60:02d}Z") for i in range(80)]
    kept = views.events(many)
    assert len(kept) == 50 and kept[0]["message"] == "79" and kept[-1]["message"] == "30"


# --- one try: live and recorded ---------------------------------------------------------------------


def record(**final: Any) -> dict:
    return {
        "try_number": 2,
        "kubernetes_conn_id": "kubernetes_default",
        "kind": "PyTorchJob",
        "namespace": "ml",
        "name": "train-1",
        "uid": "uid-1",
        "created_at": "2026-12-02T05:00:00Z",
        "attached": False,
        "manifest_yaml": "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n",
        "final": final or None,
    }


def test_a_running_live_try_refreshes_and_shows_everything():
    made = job(RUNNING, startTime="2026-12-02T05:01:30Z", replicaStatuses={"Master": {"active": 1}})
    view = try_view(
        record(),
        live=made,
        live_pods=[pod("Master", 0)],
        live_events=[event("Scheduled", "assigned", "2026-12-02T05:01:00Z")],
        now=NOW,
        link="https://kubeflow.example/ml/train-1",
    )
    assert (view["phase"], view["reason"], view["message"]) == ("Running", "PyTorchJobRunning", "running")
    assert (view["exists"], view["source"], view["refresh_seconds"], view["duration_seconds"]) == (
        True,
        "live",
        5,
        510.0,
    )
    assert view["replicas"][0]["lead"] and view["events"][0]["reason"] == "Scheduled"
    assert view["link"] == "https://kubeflow.example/ml/train-1"
    assert view["manifest_yaml"].startswith("apiVersion")
    assert view["summary"] == "Running (PyTorchJobRunning: running) — Master 1/1 active, Worker 0/2 active"
    assert set(view) >= {
        "try_number", "kubernetes_conn_id", "kind", "namespace", "name", "uid", "created_at", "attached",
        "start_time", "completion_time", "timeline", "restarts", "replica_counts",
    }  # fmt: skip


def test_a_try_that_returned_an_earlier_success_says_so():
    """Airflow ran the task again after try 1's job succeeded: try 2 returned that success (its record names try 1)
    and created no job; the tab says so instead of "Created by try 2"."""
    succeeded = [*RUNNING[:1], condition("Succeeded", "True", "2026-12-02T05:09:00Z", "PyTorchJobSucceeded", "done")]
    reused = {**record(outcome="succeeded", ended_at="2026-12-02T05:10:00Z"), "attached": True, "reused_from_try": 1}
    view = try_view(reused, live=None, now=None)
    assert (view["reused_from_try"], view["attached"], view["outcome"]) == (1, True, "succeeded")
    plain = try_view(record(), live=job(succeeded), now=NOW)
    assert plain["reused_from_try"] is None


def test_a_finished_live_try_stops_refreshing():
    view = try_view(record(), live=job(FAILED), now=NOW)
    assert (view["phase"], view["refresh_seconds"]) == ("Failed", None)


def test_the_recorded_copy_says_what_the_live_job_said():
    """The record keeps trimmed copies (no spec, fewer fields): phase, reason, timeline, replicas, restarts and
    events read the same from them."""
    made, found = job(FAILED, startTime="2026-12-02T05:01:30Z"), failing_pods()
    seen = [
        event("Scheduled", "assigned", "2026-12-02T05:01:00Z"),
        event("Killing", "oom", "2026-12-02T05:03:00Z", name="train-1-worker-1"),
    ]
    live = try_view(record(), live=made, live_pods=found, live_events=seen, now=NOW)
    kept = record(
        ended_at="2026-12-02T05:05:10Z",
        outcome="failed",
        message="PyTorchJob ml/train-1 failed",
        job=trim_job(made),
        pods=[trim_pod(p) for p in found],
        events=[trim_event(e) for e in seen],
    )
    recorded = try_view(kept, live=None, now=None)
    for key in ("phase", "reason", "message", "timeline", "restarts", "events", "start_time", "duration_seconds"):
        assert recorded[key] == live[key], key
    # No spec: no containers; a pod still running when the try recorded it went with the job since.
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("container", "phase", "age_seconds")} for r in rows]
    assert strip(recorded["replicas"]) == strip(live["replicas"])
    # a recorded pod's age is its age at the try's end (05:01:00 to 05:05:10), not one that keeps counting
    assert [r["age_seconds"] for r in recorded["replicas"]] == [250.0, 250.0, 250.0]
    assert [r["phase"] for r in live["replicas"]] == ["Failed", "Failed", "Running"]
    assert [r["phase"] for r in recorded["replicas"]] == ["Failed", "Failed", "Stopped"]
    assert (recorded["source"], recorded["exists"], recorded["refresh_seconds"]) == ("recorded", False, None)
    assert (recorded["outcome"], recorded["ended_at"], recorded["outcome_message"]) == (
        "failed",
        "2026-12-02T05:05:10Z",
        "PyTorchJob ml/train-1 failed",
    )


def test_a_finished_job_whose_pods_are_gone_shows_what_the_events_know():
    """cleanPodPolicy (or the controller) deleted the pods of a job that is still there: no "no pods yet", but one
    row per replica from the operator's ExitedWithCode events, its earlier exits as restarts, and no log to read."""
    exited = lambda pod_name, code, time: event(
        "ExitedWithCode", f"Pod: ml.{pod_name} exited with code {code}", time, kind="PyTorchJob", name="train-1"
    )
    seen = [
        exited("train-1-worker-0", 137, "2026-12-02T05:02:00Z"),
        exited("train-1-worker-0", 1, "2026-12-02T05:04:00Z"),
        exited("train-1-master-0", 1, "2026-12-02T05:04:30Z"),
    ]
    view = try_view(record(), live=job(FAILED), live_events=seen, now=NOW)
    assert view["pods_gone"] is True
    rows = [(r["replica_type"], r["index"], r["phase"], r["restarts"], r["exit_code"], r["exit_class"], r["gone"])
            for r in view["replicas"]]  # fmt: skip
    assert rows == [
        ("Master", 0, "Gone", 0, 1, "Permanent", True),
        ("Worker", 0, "Gone", 1, 1, "Permanent", True),
    ]
    assert [(m["replica"], m["exit_code"]) for m in view["restarts"]] == [("Worker-0", 137)]
    # a running job with no pods has none yet; a read that failed says nothing of them
    assert try_view(record(), live=job(RUNNING), now=NOW)["pods_gone"] is False
    unread = try_view(record(), live=job(FAILED), now=NOW, pods_read=False)
    assert unread["pods_gone"] is False


def test_while_the_cluster_cannot_be_read_the_try_says_since_when_and_keeps_polling():
    """A finished job would stop polling; while its cluster cannot be read the page polls on (it recovers by itself)
    and says since when."""
    args = dict(live=job(FAILED), now=NOW)
    down = try_view(record(), **args, error="ClientConnectorError: ...", unreadable_since="2026-12-02T05:09:00+00:00")
    assert (down["cluster_unreadable_since"], down["refresh_seconds"]) == ("2026-12-02T05:09:00Z", 5)
    fine = try_view(record(), **args)
    assert (fine["cluster_unreadable_since"], fine["refresh_seconds"]) == (None, None)


def test_terminal_codes_are_stripped_from_log_text():
    coloured = "\x1b[32mINFO\x1b[0m step 1 \x1b[1;31mloss\x1b[m 0.25\x1b[K\x1b]0;title\x07 done"
    assert views.without_terminal_codes(coloured) == "INFO step 1 loss 0.25 done"
    assert views.without_terminal_codes("plain [brackets] stay") == "plain [brackets] stay"


def test_a_try_whose_job_is_not_seen_yet_keeps_polling_and_an_ended_one_does_not():
    args = dict(live=None, now=None)
    waiting = try_view(record(), **args, may_appear=True)
    assert (waiting["phase"], waiting["refresh_seconds"]) == ("Unknown", 5)
    assert try_view(record(), **args, may_appear=False)["refresh_seconds"] is None


# --- the jobs page ----------------------------------------------------------------------------------


def test_identity_from_annotations_only_when_the_labels_agree():
    assert views.job_identity(job()) == IDENTITY
    forged = job()
    forged["metadata"]["annotations"][ANNOTATION_DAG_ID] = "someone_elses_dag"
    assert views.job_identity(forged) is None
    unannotated = job()
    unannotated["metadata"]["annotations"] = {}
    assert views.job_identity(unannotated) is None
    stranger = job()
    stranger["metadata"]["labels"] = {}
    assert views.job_identity(stranger) is None


def test_a_job_an_earlier_release_launched_is_listed_as_its_task_instances():
    """Its labels and annotations under the legacy prefix (before 1.0): the jobs page still names its task instance."""
    legacy = as_legacy(job())
    assert ANNOTATION_DAG_ID not in legacy["metadata"]["annotations"]
    assert views.job_identity(legacy) == IDENTITY
    legacy["metadata"]["annotations"]["airflow-trainjob.apache.org/dag-id"] = "someone_elses_dag"
    assert views.job_identity(legacy) is None


def test_links_into_airflow_are_percent_encoded_and_know_mapped_instances():
    urls = views.ui_urls("", "d", "manual__2026-12-02T05:00:00+00:00", "t", -1)
    assert urls == {
        "dag_url": "/dags/d",
        "run_url": "/dags/d/runs/manual__2026-12-02T05%3A00%3A00%2B00%3A00",
        "task_instance_url": "/dags/d/runs/manual__2026-12-02T05%3A00%3A00%2B00%3A00/tasks/t",
        "training_job_url": "/dags/d/runs/manual__2026-12-02T05%3A00%3A00%2B00%3A00/tasks/t/plugin/training-job",
    }
    assert (
        views.ui_urls("/airflow/", "d", "r", "t", 3)["task_instance_url"] == "/airflow/dags/d/runs/r/tasks/t/mapped/3"
    )


def test_job_row():
    made = job(
        FAILED, startTime="2026-12-02T05:01:30Z", replicaStatuses={"Master": {"failed": 1}, "Worker": {"active": 1}}
    )
    row = views.job_row(made, IDENTITY, NOW)
    assert {k: row[k] for k in ("kind", "namespace", "name", "uid", "phase", "reason", "dag_id", "try_number")} == {
        "kind": "PyTorchJob",
        "namespace": "ml",
        "name": "train-1",
        "uid": "uid-1",
        "phase": "Failed",
        "reason": "PyTorchJobFailed",
        "dag_id": "retrain_digits",
        "try_number": 2,
    }
    # a terminal job's active count is the controller's leftover (its Worker pod is gone): none is shown
    assert (row["replicas_active"], row["replicas_desired"], row["duration_seconds"]) == (None, 3, 210.0)
    assert (row["replicas_succeeded"], row["replicas_failed"]) == (0, 1)
    assert (
        row["last_failure_reason"]
        == "PyTorchJobFailed: PyTorchJob train-1 is failed because 1 Worker replica(s) failed."
    )
    assert row["dag_url"] == "/dags/retrain_digits"


def test_a_running_jobs_row_counts_its_active_replicas():
    made = job(RUNNING, replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 2}})
    assert views.job_row(made, IDENTITY, NOW)["replicas_active"] == 3


def test_last_failure_reason_of_a_running_job_is_its_last_restart():
    restarted = job(
        [
            *RUNNING,
            condition("Restarting", "False", "2026-12-02T05:03:00Z", "PyTorchJobRestarting", "Worker-1 OOMKilled"),
        ]
    )
    assert views.last_failure_reason(restarted) == "PyTorchJobRestarting: Worker-1 OOMKilled"
    assert views.last_failure_reason(job(RUNNING)) is None


def test_a_source_whose_kinds_cannot_be_read_names_the_connections_namespace():
    """The page's warning names the namespace the connection resolved to, not null."""
    from airflow_trainjob.ui import routes

    class Cache:
        async def namespace_of(self, conn_id):
            return "default"

        async def served_kinds(self, conn_id):
            raise ConnectionRefusedError("Cannot connect to host 127.0.0.1:33443")

    entry, found = asyncio.run(routes._read_source(Cache(), settings.UiSource("kubernetes_default", None)))
    assert (entry["connection"], entry["namespace"], found) == ("kubernetes_default", "default", {})
    assert "Cannot connect to host 127.0.0.1:33443" in entry["error"]


def test_a_cluster_without_trainer_v2_lists_its_v1_jobs_and_says_so_once_quietly():
    """TrainJob's CRD is not served: the source has no error (no banner), TrainJob is among its skipped kinds, and no
    stream of TrainJobs is started (nothing waits for one); the v1 kinds' jobs are listed as before."""
    from airflow_trainjob.ui import routes

    made = job(RUNNING)
    streamed: list[str] = []

    class Stream:
        error, synced = None, True

        def __init__(self, kind: str):
            self.jobs = {"train-1": made} if kind == "PyTorchJob" else {}

    class Cache:
        async def served_kinds(self, conn_id):
            v1 = dict.fromkeys(("PyTorchJob", "TFJob"))
            return {**v1, "TrainJob": "the cluster does not serve trainjobs.trainer.kubeflow.org/v1alpha1"}

        async def stream(self, conn_id, namespace, kind):
            streamed.append(kind)
            return Stream(kind)

    entry, found = asyncio.run(routes._read_source(Cache(), settings.UiSource("kubernetes_default", "ml")))
    assert entry["error"] is None
    assert entry["skipped_kinds"] == [
        {"kind": "TrainJob", "reason": "the cluster does not serve trainjobs.trainer.kubeflow.org/v1alpha1"}
    ]
    assert sorted(streamed) == ["PyTorchJob", "TFJob"]
    assert [identity for _, identity in found.values()] == [IDENTITY]


def test_log_lines_lose_their_terminal_codes():
    from airflow_trainjob.ui import routes

    assert routes._log_lines("\x1b[1;32mepoch 1\x1b[0m\nloss 0.25") == ["epoch 1", "loss 0.25"]


def test_jobs_page_counts_before_filters_newest_first():
    rows = [
        {"phase": "Running", "dag_id": "a", "created_at": "2026-12-02T05:00:00Z", "name": "x"},
        {"phase": "Failed", "dag_id": "b", "created_at": "2026-12-02T06:00:00Z", "name": "y"},
        {"phase": "Running", "dag_id": "b", "created_at": "2026-12-02T07:00:00Z", "name": "z"},
    ]
    page = views.jobs_page(rows, sources=[{"connection": "kubernetes_default", "namespace": "ml", "error": None}])
    assert page["counts"] == {"Running": 2, "Failed": 1}
    assert [r["name"] for r in page["jobs"]] == ["z", "y", "x"]
    assert [r["name"] for r in views.jobs_page(rows, phase="Running")["jobs"]] == ["z", "x"]
    assert [r["name"] for r in views.jobs_page(rows, phase="Running", dag_id="b")["jobs"]] == ["z"]
    assert views.jobs_page(rows, dag_id="b")["counts"] == {"Running": 2, "Failed": 1}


def test_iso():
    assert views.iso(datetime(2026, 12, 2, 5, 0, tzinfo=timezone.utc)) == "2026-12-02T05:00:00Z"
    assert views.iso(datetime(2026, 12, 2, 5, 0)) == "2026-12-02T05:00:00Z"
    assert views.iso("2026-12-02T05:00:00Z") == "2026-12-02T05:00:00Z" and views.iso(None) is None


# --- settings ---------------------------------------------------------------------------------------


def test_ui_connections_parse():
    assert settings.parse_ui_connections(None) == [settings.UiSource("kubernetes_default")]
    assert settings.parse_ui_connections(" ") == [settings.UiSource("kubernetes_default")]
    assert settings.parse_ui_connections("kubernetes_default, gpu/ml-team,gpu/ml-team , other") == [
        settings.UiSource("kubernetes_default"),
        settings.UiSource("gpu", "ml-team"),
        settings.UiSource("other"),
    ]


@pytest.mark.parametrize("bad", ["gpu/", "gpu/ML", "gpu/a/b", "bad id", "/ns", "x/" + "a" * 64])
def test_ui_connections_refuse_what_is_no_conn_id_or_namespace(bad):
    with pytest.raises(ValueError, match=r"\[trainjob\] ui_connections: .* is not 'conn_id' or 'conn_id/namespace'"):
        settings.parse_ui_connections(bad)


def test_ui_connections_from_the_config(monkeypatch):
    monkeypatch.setenv("AIRFLOW__TRAINJOB__UI_CONNECTIONS", "a/ns1,b")
    assert settings.ui_connections() == [settings.UiSource("a", "ns1"), settings.UiSource("b")]


# --- the record's value through a custom state store backend -----------------------------------------


class _Backend:
    def deserialize_task_state_store_from_ref(self, stored: str) -> Any:
        return [{"ref": stored}]


def test_record_value_as_it_is_or_through_the_configured_backend(monkeypatch):
    assert store.resolve([{"try_number": 1}]) == [{"try_number": 1}]
    store._backend.cache_clear()
    monkeypatch.setenv("AIRFLOW__WORKERS__STATE_STORE_BACKEND", "")
    with pytest.raises(store.RecordUnavailableError, match=r"configure the same \[workers\] state_store_backend"):
        store.resolve({"__airflow_state_ref__": "s3://bucket/key"})
    store._backend.cache_clear()
    monkeypatch.setenv("AIRFLOW__WORKERS__STATE_STORE_BACKEND", f"{__name__}._Backend")
    try:
        assert store.resolve({"__airflow_state_ref__": "s3://bucket/key"}) == [{"ref": "s3://bucket/key"}]
    finally:
        store._backend.cache_clear()


# --- the tab agrees with the task's error and with Airflow's state of the try (issue 24, item 4) ------------------

from airflow_trainjob.domain import failures, verdict  # noqa: E402

BOTH_FAILED = [
    condition("Created", "True", "2026-12-02T05:00:01Z"),
    condition("Running", "False", "2026-12-02T05:02:00Z", "PyTorchJobFailed"),
    condition("Failed", "True", "2026-12-02T05:02:00Z", "PyTorchJobFailed", "1 Worker replica(s) failed."),
]


def test_every_replica_the_task_saw_fail_is_in_the_table_as_its_error_ranks_them():
    """Master and Worker both exited 1; the controller counted only the Worker (the job failed with it, and stops
    counting then) and the Master's pod is gone since (the task stopped it: cleanPodPolicy). The tab lists both --
    the Master from the task's record -- Master first, the same first failure as the task's error, the lead's log by
    default, and counts that agree with the rows."""
    master = pod("Master", 0, phase="Failed", state=terminated(1, "Error", "2026-12-02T05:01:58Z"))
    worker = pod("Worker", 0, phase="Failed", state=terminated(1, "Error", "2026-12-02T05:01:59Z"))
    made = job(BOTH_FAILED, workers=1, replicaStatuses={"Master": {"active": 1}, "Worker": {"failed": 1}})
    kept = record(
        ended_at="2026-12-02T05:02:05Z",
        outcome="failed",
        message="PyTorchJob ml/train-1 failed",
        job=trim_job(made),
        pods=[trim_pod(master), trim_pod(worker)],
    )
    view = try_view(kept, live=made, live_pods=[worker], now=NOW)
    rows = [(r["replica_type"], r["index"], r["phase"], r["exit_code"], r["gone"], r["failed"], r["first_failure"])
            for r in view["replicas"]]  # fmt: skip
    assert rows == [
        ("Master", 0, "Failed", 1, True, True, True),  # from the record: its pod is gone
        ("Worker", 0, "Failed", 1, False, True, False),
    ]
    assert [r["lead"] for r in view["replicas"]] == [True, False]  # the tab opens the lead's log
    assert {t: c["text"] for t, c in view["replica_counts"].items()} == {"Master": "1 failed", "Worker": "1 failed"}
    assert view["summary"].endswith("— Master 1 failed, Worker 1 failed")
    # The task's error, from the same pods, names the same replica first.
    ends = verdict.failure_ends(made, [worker, master], [], family_of("PyTorchJob"))
    message = failures.failure_message("PyTorchJob ml/train-1", made["status"], ends)
    assert "First failure (permanent: not retried): Master-0 (pod train-1-master-0" in message
    assert "also failed: Worker-0" in message


def test_a_replica_that_failed_before_it_was_stopped_shows_the_failure_that_counts():
    """restartPolicy OnFailure: the Master exited 1, restarted, and was stopped (143) when the job failed by its
    backoff limit; its last exit is 143, the failure that failed the job its exit 1."""
    master = pod(
        "Master",
        0,
        phase="Failed",
        restarts=1,
        last_state=terminated(1, "Error", "2026-12-02T05:01:10Z"),
        state=terminated(143, "Error", "2026-12-02T05:02:00Z"),
    )
    made = job(BOTH_FAILED, workers=0, replicaStatuses={"Master": {}})
    made["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"] = "OnFailure"
    view = try_view(record(), live=made, live_pods=[master], now=NOW)
    (row,) = view["replicas"]
    assert (row["exit_code"], row["failed"], row["first_failure"]) == (143, True, True)
    assert row["failure"] == {"exit_code": 1, "reason": "Error", "exit_class": "Permanent"}
    assert view["replica_counts"]["Master"]["text"] == "1 failed"  # the controller counted none


def states(**tries: tuple[str | None, bool, str | None]) -> dict[int, dict[str, Any]]:
    """Airflow's state of each try, as store.load_try_states reads it: ``t1=("failed", False, end)``..."""
    return {
        int(k[1:]): {"state": state, "current": current, "end_date": end} for k, (state, current, end) in tries.items()
    }


@pytest.mark.parametrize(
    ("airflow", "ended"),
    [
        ({}, None),  # no task instance row: no word
        (states(t2=("running", True, None)), False),
        (states(t2=("deferred", True, None)), False),
        (states(t2=("queued", True, None)), False),  # a deferred try resuming on a worker
        (states(t2=("scheduled", True, None)), False),
        (states(t2=("failed", True, "2026-12-02T05:09:00+00:00")), True),  # marked failed
        (states(t2=("success", True, "2026-12-02T05:09:00+00:00")), True),
        (states(t2=("up_for_retry", True, "2026-12-02T05:09:00+00:00")), True),  # its worker died
        (states(t2=("upstream_failed", True, None)), True),
        (states(t2=("failed", False, "2026-12-02T05:09:00+00:00"), t3=("running", True, None)), True),  # cleared
        (states(t3=("queued", True, None)), True),  # a later try: this one ended
    ],
)
def test_whether_a_try_has_ended_is_airflows_word(airflow, ended):
    assert try_has_ended(2, airflow) is ended


GONE_RUNNING = job(RUNNING, replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 2}})
MARKED_FAILED = states(t2=("failed", True, "2026-12-02T05:09:00+00:00"))


def test_a_deferred_try_marked_failed_shows_what_its_trigger_saw_and_is_not_live():
    """The trigger's on_kill left its last sight (``recorded_by: trigger``); the job is gone (on_kill deleted it).
    Not "Unknown", not "has not ended", not live."""
    by_trigger = record(
        ended_at="2026-12-02T05:09:01Z",
        outcome="stopped",
        message="Airflow stopped the deferred task",
        job=trim_job(GONE_RUNNING),
        pods=[trim_pod(pod("Master", 0)), trim_pod(pod("Worker", 0)), trim_pod(pod("Worker", 1))],
        recorded_by="trigger",
    )
    view = try_view(by_trigger, live=None, now=NOW, airflow=MARKED_FAILED, may_appear=True)
    assert (view["try_ended"], view["airflow_state"], view["refresh_seconds"]) == (True, "failed", None)
    assert (view["phase"], view["badge"], view["seen_by"], view["seen_at"]) == (
        "Running",
        "Stopped",
        "trigger",
        "2026-12-02T05:09:01Z",
    )
    assert {r["phase"] for r in view["replicas"]} == {"Stopped"}  # removed with the job
    # Before this change the same try, with nothing but its start recorded, read "Unknown" and polled on as live.
    started_only = try_view(record(), live=None, now=NOW, airflow=MARKED_FAILED, may_appear=True)
    assert (started_only["badge"], started_only["refresh_seconds"], started_only["try_ended"]) == ("Ended", None, True)


def test_an_ended_try_never_wears_its_jobs_last_live_phase():
    """The page's own watch saw the job Running before it was deleted; the try has ended (cleared): the badge says
    the try ended, the phase is the last seen, nothing polls."""
    view = try_view(record(), live=None, gone=GONE_RUNNING, now=NOW, airflow=states(
        t2=("failed", False, "2026-12-02T05:09:00+00:00"), t3=("running", True, None)))  # fmt: skip
    assert (view["phase"], view["badge"], view["seen_by"], view["exists"]) == ("Running", "Ended", "page", False)
    assert view["refresh_seconds"] is None and view["cluster_unreadable_since"] is None
    # under way, the same sight is the job's phase and keeps polling
    running = try_view(record(), live=None, gone=GONE_RUNNING, now=NOW, airflow=states(t2=("running", True, None)))
    assert (running["badge"], running["try_ended"]) == ("Running", False)


def test_a_cleared_synchronous_try_shows_what_it_saw_last():
    """Its end was refused (the clear replaced the task instance's id): the record has the wait's last sight."""
    seen = {
        **record(),
        "last_seen": {
            "seen_at": "2026-12-02T05:08:30Z",
            "job": trim_job(GONE_RUNNING),
            "pods": [trim_pod(pod("Master", 0)), trim_pod(pod("Worker", 0))],
        },
    }
    cleared = states(t2=("failed", False, "2026-12-02T05:09:00+00:00"), t3=("running", True, None))
    view = try_view(seen, live=None, gone=job(FAILED), now=NOW, airflow=cleared)
    assert (view["phase"], view["badge"], view["seen_by"], view["seen_at"], view["source"]) == (
        "Running",
        "Ended",
        "task",  # the task's own word wins over the page's watch
        "2026-12-02T05:08:30Z",
        "recorded",
    )
    assert [(r["replica_type"], r["phase"], r["age_seconds"]) for r in view["replicas"]] == [
        ("Master", "Stopped", 450.0),  # 05:01:00 to the sight at 05:08:30
        ("Worker", "Stopped", 450.0),
    ]
    assert view["summary"] == "Running (PyTorchJobRunning: running) — Master 1 active, Worker 2 active"


def test_an_ended_try_whose_job_still_runs_shows_its_own_last_sight():
    """Killed, its job still there (being deleted, or a later try follows it now): the try shows what it saw, the job
    is said to exist, and nothing polls."""
    live = job(RUNNING, replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 2}})
    kept = record(ended_at="2026-12-02T05:09:01Z", outcome="stopped", job=trim_job(job(RUNNING)), pods=[])
    view = try_view(kept, live=live, now=NOW, airflow=MARKED_FAILED)
    assert (view["exists"], view["source"], view["seen_by"], view["badge"], view["refresh_seconds"]) == (
        True,
        "recorded",
        "task",
        "Stopped",
        None,
    )
    # with nothing recorded but its start, the job as it is now, still not live
    now_only = try_view(record(), live=live, now=NOW, airflow=MARKED_FAILED)
    assert (now_only["seen_by"], now_only["badge"], now_only["refresh_seconds"]) == ("cluster", "Ended", None)
    # a finished job still there is shown live (its pods' logs can be read), and is not polled either
    finished = try_view(kept, live=job(FAILED), now=NOW, airflow=MARKED_FAILED)
    assert (finished["seen_by"], finished["badge"], finished["refresh_seconds"]) == ("cluster", "Failed", None)


def test_an_ended_try_polls_a_minute_for_its_record_of_its_end():
    """``on_kill`` writes the end after Airflow has marked the task: the tab looks again for a minute, then stops."""
    just_now = states(t2=("failed", True, "2026-12-02T05:09:30+00:00"))  # 30 s before NOW
    assert try_view(record(), live=None, now=NOW, airflow=just_now)["refresh_seconds"] == 5
    long_ago = states(t2=("failed", True, "2026-12-02T05:08:00+00:00"))
    assert try_view(record(), live=None, now=NOW, airflow=long_ago)["refresh_seconds"] is None
    ended = record(ended_at="2026-12-02T05:09:31Z", outcome="stopped", job=trim_job(job(RUNNING)))
    assert try_view(ended, live=None, now=NOW, airflow=just_now)["refresh_seconds"] is None


def test_an_ended_try_polls_for_its_record_as_long_as_the_killer_may_write_it():
    """A deferred try's trigger writes its end within the triggerer's ``on_kill_timeout``: with 120 s of it, the tab
    still looks 90 s after the kill, and stops once that time has passed."""
    ninety_ago = states(t2=("failed", True, "2026-12-02T05:08:30+00:00"))
    assert try_view(record(), live=None, now=NOW, airflow=ninety_ago)["refresh_seconds"] is None  # default
    waits = try_view(record(), live=None, now=NOW, airflow=ninety_ago, end_record_wait=135)
    assert waits["refresh_seconds"] == 5 and waits["badge"] == "Ended"
    long_ago = states(t2=("failed", True, "2026-12-02T05:07:40+00:00"))  # 140 s
    assert try_view(record(), live=None, now=NOW, airflow=long_ago, end_record_wait=135)["refresh_seconds"] is None


@pytest.mark.parametrize(("on_kill_timeout", "expected"), [("30", 60.0), ("120", 135.0), (None, 60.0)])
def test_the_tab_waits_for_an_end_record_as_long_as_the_triggerer_gives_on_kill(on_kill_timeout, expected, monkeypatch):
    if on_kill_timeout is None:
        monkeypatch.delenv("AIRFLOW__TRIGGERER__ON_KILL_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW__TRIGGERER__ON_KILL_TIMEOUT", on_kill_timeout)
    assert settings.end_record_wait_seconds() == expected


def test_a_try_under_way_is_live_as_before():
    view = try_view(record(), live=GONE_RUNNING, now=NOW, airflow=states(t2=("running", True, None)))
    assert (view["seen_by"], view["badge"], view["try_ended"], view["refresh_seconds"]) == (
        "cluster",
        "Running",
        False,
        5,
    )


# --- until when a job that did not finish is known; when it was created and attached to --------------------------

#: Killed while Running: Running since 05:01:30 (RUNNING), the try ended 47 s later.
KILLED_AT = "2026-12-02T05:02:17Z"


def test_the_last_phase_of_a_job_that_did_not_finish_runs_to_the_end_of_what_is_known():
    """A try that ended without a terminal condition (killed while Running, timed out while Suspended, its job
    deleted): its job's last phase lasted until the try's end, not a 1 s stub at its own transition. The timeline's
    last bar and the duration run to ``known_until``: now while the try watches the job live; the record's end, else
    Airflow's ``end_date``, else the sight's time, for an ended try; never past the job's deletion."""
    by_trigger = record(
        ended_at=KILLED_AT, outcome="stopped", job=trim_job(job(RUNNING, startTime="2026-12-02T05:01:30Z"))
    )
    killed = try_view({**by_trigger, "final": {**by_trigger["final"], "recorded_by": "trigger"}}, live=None, now=NOW)
    assert (killed["badge"], killed["known_until"], killed["duration_seconds"]) == ("Stopped", KILLED_AT, 47.0)
    # the header says the try ended and its badge is the try's outcome; the summary's phase is the job's, last seen
    assert (killed["try_ended"], killed["phase"], killed["seen_by"], killed["seen_at"]) == (
        True,
        "Running",
        "trigger",
        KILLED_AT,
    )
    # no record of its end: Airflow's end of the try, not the last sight of the job while it ran
    last_seen = {**record(), "last_seen": {"seen_at": "2026-12-02T05:08:30Z", "job": trim_job(GONE_RUNNING)}}
    ended = try_view(last_seen, live=None, now=NOW, airflow=MARKED_FAILED)
    assert ended["known_until"] == "2026-12-02T05:09:00Z"
    # timed out while Suspended: the Suspended bar lasts until the try's end
    suspended = [*RUNNING, condition("Suspended", "True", "2026-12-02T05:03:00Z", "PyTorchJobSuspended")]
    timed_out = try_view(
        record(ended_at="2026-12-02T05:03:14Z", outcome="timed_out", job=trim_job(job(suspended))), live=None, now=NOW
    )
    assert (timed_out["try_ended"], timed_out["phase"], timed_out["badge"], timed_out["known_until"]) == (
        True,
        "Suspended",
        "Timed out",
        "2026-12-02T05:03:14Z",
    )
    # deleted under a try still under way: known until its deletion
    deleted = {**GONE_RUNNING, "metadata": {**GONE_RUNNING["metadata"], "deletionTimestamp": "2026-12-02T05:04:00Z"}}
    under_way = try_view(record(), live=None, gone=deleted, now=NOW, airflow=states(t2=("running", True, None)))
    assert under_way["known_until"] == "2026-12-02T05:04:00Z"
    # live: now; and what the timeline lists stays as it was
    live = try_view(record(), live=job(RUNNING), now=NOW)
    assert live["known_until"] == "2026-12-02T05:10:00Z" and live["timeline"] == views.timeline(job(RUNNING))


def test_the_job_was_created_when_it_says_and_attached_to_when_the_record_says():
    """The record's ``created_at`` is when the try took the job up: its creation for a job it created, the attach
    for one it attached to. ``job_created_at`` is the job's own creation; ``attached_at`` says when a try attached (to
    an earlier try's job, or to an earlier release's job of its own try number, long after its creation)."""
    created = try_view({**record(), "created_at": "2026-12-02T05:00:00.4Z"}, live=job(RUNNING), now=NOW)
    assert (created["job_created_at"], created["attached_at"]) == ("2026-12-02T05:00:00Z", None)
    attached = {**record(), "attached": True, "created_at": "2026-12-02T05:07:00Z"}
    view = try_view(attached, live=job(RUNNING), now=NOW)
    assert (view["created_at"], view["attached"]) == ("2026-12-02T05:07:00Z", True)  # as before
    assert (view["job_created_at"], view["attached_at"]) == ("2026-12-02T05:00:00Z", "2026-12-02T05:07:00Z")
    taken_up = try_view({**record(), "created_at": "2026-12-02T05:07:00Z"}, live=job(RUNNING), now=NOW)
    assert (taken_up["attached"], taken_up["job_created_at"], taken_up["attached_at"]) == (
        False,
        "2026-12-02T05:00:00Z",
        "2026-12-02T05:07:00Z",
    )
    # no job known: the record's time is the creation only for a job the try created
    assert try_view(record(), live=None, now=NOW)["job_created_at"] == "2026-12-02T05:00:00Z"
    nothing = try_view(attached, live=None, now=NOW)
    assert (nothing["job_created_at"], nothing["attached_at"]) == (None, "2026-12-02T05:07:00Z")


# --- a TrainJob (Kubeflow Trainer v2): its steps, nodes, runtime and progress, through its family -------------------

TRAINJOB_RECORD = {
    **record(),
    "kind": "TrainJob",
    "name": v2.NAME,
    "namespace": v2.NAMESPACE,
    "uid": v2.UID,
    "created_at": v2.T0,
    "manifest_yaml": "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
    "spec:\n  runtimeRef: {name: torch-distributed}\n  trainer: {numNodes: 2}\n",
}
TRAINER_STATUS = {
    "progressPercentage": 42,
    "estimatedRemainingSeconds": 120,
    "metrics": [{"name": "loss", "value": "0.25"}, {"name": "accuracy", "value": "0.91"}],
    "lastUpdatedTime": "2026-12-07T10:00:50+00:00",
}
RUNNING_STEPS = {
    "conditions": [],
    "jobsStatus": v2.jobs(dataset_initializer={"succeeded": 1}, node={"active": 1, "ready": 1}),
    "trainerStatus": TRAINER_STATUS,
}
V2_NOW = datetime(2026, 12, 7, 10, 1, 0, tzinfo=timezone.utc)


def test_a_trainjobs_start_and_completion_are_its_admission_or_creation_and_its_deciding_condition():
    """A TrainJob's status has no startTime or completionTime: the tab shows what its family dates the run by."""
    assert views.times(v2.train_job(RUNNING_STEPS), "Running", V2_NOW) == (v2.T0, None, 60.0)
    assert views.times(v2.train_job(v2.RESUMED_RUNNING), "Running", V2_NOW) == (v2.T1, None, 55.0)
    assert views.times(v2.train_job(v2.COMPLETE), "Complete", V2_NOW) == (v2.T0, v2.T2, 60.0)
    assert views.times(v2.train_job(v2.SUSPENDED), "Suspended", V2_NOW) == (None, None, None)  # not started yet


def node_pods(*, failed: int | None = None) -> list[dict]:
    """The nodes' pods (node 1 failed with exit ``failed`` when given) and the dataset initializer's, succeeded."""
    done = v2.terminated("dataset-initializer", 0, "Completed", v2.T1)
    found = [v2.pod("dataset-initializer", 0, phase="Succeeded", containers=("dataset-initializer",),
                    container_statuses=[done], created=v2.T0)]  # fmt: skip
    for index in (0, 1):
        ended = failed is not None and index == 1
        statuses = [v2.terminated("node", failed or 0, "Error")] if ended else None
        found.append(v2.pod("node", index, phase="Failed" if ended else "Running", container_statuses=statuses))
    return found


@pytest.mark.parametrize(
    ("status", "labels", "phase"),
    [
        (None, {}, "Created"),
        (v2.SUSPENDED, {}, "Suspended"),
        (v2.SUSPENDED, {LABEL_KUEUE_QUEUE_NAME: "team-a"}, "Queued"),
        (v2.RESUMED_CREATED, {}, "Created"),
        (RUNNING_STEPS, {}, "Running"),
        (v2.COMPLETE, {}, "Complete"),
        (v2.FAILED_JOBS, {}, "Failed"),
    ],
)
def test_a_trainjobs_phase_is_what_its_family_infers(status, labels, phase):
    made = v2.train_job(status, suspend=status is v2.SUSPENDED)
    made["metadata"]["labels"] = labels
    assert views.job_phase(made) == phase
    assert views.is_finished(phase) is (phase in ("Complete", "Failed"))


def test_a_trainjobs_row_shows_its_runtime_nodes_steps_and_progress():
    row = views.job_row(v2.train_job(RUNNING_STEPS), IDENTITY, V2_NOW)
    assert (row["kind"], row["phase"], row["runtime"], row["nodes"]) == ("TrainJob", "Running", "torch-distributed", 2)
    assert row["progress"] == {
        "percentage": 42,
        "estimated_remaining_seconds": 120,
        "metrics": [{"name": "loss", "value": "0.25"}, {"name": "accuracy", "value": "0.91"}],
        "last_updated_time": "2026-12-07T10:00:50Z",
    }
    assert [(s["name"], s["nodes"], s["active"], s["ready"], s["succeeded"], s["text"]) for s in row["steps"]] == [
        ("dataset-initializer", None, 0, 0, 1, "1 succeeded"),
        ("node", 2, 1, 1, 0, "1 active, 1 ready"),
    ]
    # its status counts child Jobs, not pods: no replica counts; the duration runs from its creation
    assert [row[k] for k in ("replicas_active", "replicas_desired", "replicas_succeeded", "replicas_failed")] == [
        None,
        None,
        None,
        None,
    ]
    assert (row["start_time"], row["duration_seconds"]) == (
        v2.T0,
        60.0,
    )  # the start its family dates it by: the creation
    failed = views.job_row(v2.train_job(v2.FAILED_JOBS), IDENTITY, V2_NOW)
    assert (failed["phase"], failed["reason"], failed["progress"]) == ("Failed", "FailedJobs", None)
    assert failed["last_failure_reason"].startswith("FailedJobs: jobset failed due to one or more job failures")
    assert [(s["name"], s["active"], s["failed"], s["text"]) for s in failed["steps"]] == [
        ("node", None, 1, "1 failed")
    ]
    assert failed["duration_seconds"] == 60.0  # to its Failed condition's turn
    assert views.job_row(v2.train_job(v2.COMPLETE), IDENTITY, V2_NOW)["phase"] == "Complete"


def test_a_v1_jobs_row_has_no_trainjob_fields_and_its_counts_as_before():
    row = views.job_row(job(RUNNING, replicaStatuses={"Master": {"active": 1}, "Worker": {"active": 2}}), IDENTITY, NOW)
    assert [row[k] for k in ("runtime", "nodes", "steps", "progress")] == [None, None, None, None]
    assert [row[k] for k in ("replicas_active", "replicas_desired", "replicas_succeeded", "replicas_failed")] == [
        3,
        3,
        0,
        0,
    ]


def test_a_running_trainjobs_tab_shows_its_steps_pods_by_step_and_progress():
    view = try_view(TRAINJOB_RECORD, live=v2.train_job(RUNNING_STEPS), live_pods=node_pods(), now=V2_NOW)
    assert (view["phase"], view["badge"], view["kind"], view["refresh_seconds"]) == (
        "Running",
        "Running",
        "TrainJob",
        5,
    )
    assert view["replica_counts"] == {}  # the steps replace them
    assert [(s["name"], s["text"]) for s in view["steps"]] == [
        ("dataset-initializer", "1 succeeded"),
        ("node", "1 active, 1 ready"),
    ]
    assert (view["runtime"], view["nodes"], view["progress"]["percentage"]) == ("torch-distributed", 2, 42)
    assert view["progress"]["metrics"][0] == {"name": "loss", "value": "0.25"}
    # the pods grouped by step, the lead (node 0) first, then by step and index
    rows = [(r["replica_type"], r["index"], r["lead"], r["container"], r["phase"]) for r in view["replicas"]]
    assert rows == [
        ("node", 0, True, "node", "Running"),
        ("node", 1, False, "node", "Running"),
        ("dataset-initializer", 0, False, "dataset-initializer", "Succeeded"),
    ]
    assert view["summary"] == (
        "Running — dataset-initializer: 1 succeeded; node (2 nodes): 1 active, 1 ready; 42% done, about 120 s left"
    )
    assert (view["start_time"], view["duration_seconds"]) == (v2.T0, 60.0)


def test_a_failed_trainjobs_tab_marks_the_failed_node_as_its_error_does():
    view = try_view(TRAINJOB_RECORD, live=v2.train_job(v2.FAILED_JOBS), live_pods=node_pods(failed=1), now=V2_NOW)
    assert (view["phase"], view["reason"], view["refresh_seconds"]) == ("Failed", "FailedJobs", None)
    by_replica = {(r["replica_type"], r["index"]): r for r in view["replicas"]}
    failed = by_replica["node", 1]
    assert (failed["failed"], failed["first_failure"], failed["exit_code"], failed["exit_class"]) == (
        True,
        True,
        1,
        "Permanent",
    )
    assert failed["failure"] == {"exit_code": 1, "reason": "Error", "exit_class": "Permanent"}
    assert not by_replica["node", 0]["failed"] and not by_replica["dataset-initializer", 0]["failed"]
    assert [(s["name"], s["active"], s["ready"], s["failed"]) for s in view["steps"]] == [("node", None, None, 1)]
    assert view["restarts"] == [] and view["replica_counts"] == {}


def test_a_recorded_trainjob_says_what_the_live_one_said_its_nodes_from_the_manifest_sent():
    made, found = v2.train_job(RUNNING_STEPS), node_pods()
    live = try_view(TRAINJOB_RECORD, live=made, live_pods=found, now=V2_NOW)
    kept = {
        **TRAINJOB_RECORD,
        "final": {
            "outcome": "stopped",
            "ended_at": "2026-12-07T10:01:00Z",
            "job": trim_job(made),
            "pods": [trim_pod(p) for p in found],
            "events": [],
        },
    }
    recorded = try_view(kept, live=None, now=None)
    for key in ("phase", "steps", "progress", "runtime", "nodes", "summary", "duration_seconds"):
        assert recorded[key] == live[key], key
    assert [(r["replica_type"], r["index"]) for r in recorded["replicas"]] == [
        (r["replica_type"], r["index"]) for r in live["replicas"]
    ]
    assert (recorded["badge"], recorded["source"]) == ("Stopped", "recorded")


def test_an_ended_trainjob_try_that_succeeded_wears_its_familys_word():
    """A try that recorded a success while its job was last seen running: the badge is the TrainJob's success word."""
    kept = {**TRAINJOB_RECORD, "final": {"outcome": "succeeded", "job": trim_job(v2.train_job(RUNNING_STEPS))}}
    view = try_view(kept, live=None, now=V2_NOW, airflow=states(t2=("success", True, "2026-12-07T10:01:00Z")))
    assert (view["phase"], view["badge"]) == ("Running", "Complete")
    v1_kept = record(outcome="succeeded", job=trim_job(job(RUNNING)))
    assert try_view(v1_kept, live=None, now=NOW, airflow=states(t2=("success", True, None)))["badge"] == "Succeeded"


def test_the_tabs_metrics_over_time_are_the_recorded_points_then_the_live_one():
    earlier = [
        {
            "at": "2026-12-07T10:00:10Z",
            "percentage": 10,
            "estimated_remaining_seconds": 300,
            "metrics": {"loss": "0.9"},
        },
        {"at": "2026-12-07T10:00:30+00:00", "percentage": 30, "estimated_remaining_seconds": 200, "metrics": {}},
    ]
    running = {**TRAINJOB_RECORD, "last_seen": {"seen_at": "2026-12-07T10:00:30Z", "job": {}, "progress": earlier}}
    view = try_view(running, live=v2.train_job(RUNNING_STEPS), live_pods=node_pods(), now=V2_NOW)
    assert [(p["at"], p["percentage"], p["metrics"]) for p in view["progress_history"]] == [
        ("2026-12-07T10:00:10Z", 10, {"loss": "0.9"}),
        ("2026-12-07T10:00:30Z", 30, {}),
        ("2026-12-07T10:00:50Z", 42, {"loss": "0.25", "accuracy": "0.91"}),  # the live job's trainerStatus
    ]
    ended = {
        **TRAINJOB_RECORD,
        "final": {"outcome": "stopped", "job": trim_job(v2.train_job(RUNNING_STEPS)), "progress": earlier},
    }
    recorded = try_view(ended, live=None, now=None)
    assert [p["percentage"] for p in recorded["progress_history"]] == [10, 30, 42], "after a kill: as recorded"


def test_a_deferred_try_under_way_shows_the_points_its_trigger_wrote_then_its_recorded_end_wins():
    """The trigger's points (handed in by the store under ``trigger_progress``) show while the try has not recorded
    its end, with the live report; once the resumed try recorded its end, its record alone."""
    written = [
        {
            "at": "2026-12-07T10:00:10Z",
            "percentage": 10,
            "estimated_remaining_seconds": 300,
            "metrics": {"loss": "0.9"},
        },
        {"at": "2026-12-07T10:00:30Z", "percentage": 30, "estimated_remaining_seconds": 200, "metrics": {}},
    ]
    waiting = {**TRAINJOB_RECORD, "trigger_progress": written}
    view = try_view(waiting, live=v2.train_job(RUNNING_STEPS), live_pods=node_pods(), now=V2_NOW)
    assert [(p["at"], p["percentage"]) for p in view["progress_history"]] == [
        ("2026-12-07T10:00:10Z", 10),
        ("2026-12-07T10:00:30Z", 30),
        ("2026-12-07T10:00:50Z", 42),  # the live job's trainerStatus
    ]
    before = try_view(TRAINJOB_RECORD, live=v2.train_job(RUNNING_STEPS), live_pods=node_pods(), now=V2_NOW)
    assert [p["percentage"] for p in before["progress_history"]] == [42], "without them: the live report alone"
    resumed = {**waiting, "final": {"outcome": "succeeded", "job": trim_job(v2.train_job(RUNNING_STEPS))}}
    resumed["final"]["progress"] = written[:1]
    ended = try_view(resumed, live=None, now=V2_NOW, airflow=states(t2=("success", True, "2026-12-07T10:01:00Z")))
    assert [p["percentage"] for p in ended["progress_history"]] == [10, 42], "the record's points, then its job's"


def test_a_job_without_trainer_progress_has_no_metrics_over_time():
    assert try_view(TRAINJOB_RECORD, live=v2.train_job(v2.RESUMED_RUNNING), now=V2_NOW)["progress_history"] == []
    assert try_view(record(), live=job(RUNNING), now=NOW)["progress_history"] == []

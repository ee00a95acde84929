"""The cleanup hold: what is sent, what the user asked for, which pods stop at the terminal transition, which are
left for the end of the task, and what the end of the task does to its job."""

from __future__ import annotations

import json

import pytest

from airflow_trainjob.domain.cleanup_hold import (
    ANNOTATION_HELD_RUN_POLICY,
    FOLLOWED_BY_LATER_TRY,
    REPLACED,
    UserRunPolicy,
    cleanup_plan,
    hold,
    pods_left,
    pods_to_stop,
    release_patch,
    user_run_policy,
)
from airflow_trainjob.families import family_of
from tests.support.legacy import as_legacy


def manifest(**run_policy) -> dict:
    return {
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "annotations": {"team": "ml"}},
        "spec": {"runPolicy": run_policy, "pytorchReplicaSpecs": {}},
    }


def pod(name: str, phase: str, deleting: bool = False) -> dict:
    deletion = {"deletionTimestamp": "2026-01-01T00:00:30Z"} if deleting else {}
    return {"metadata": {"name": name, **deletion}, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("asked", "recorded"),
    [
        ({"cleanPodPolicy": "All"}, {"cleanPodPolicy": "All"}),
        (
            {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 0},
            {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": 0},
        ),
        (
            {"cleanPodPolicy": "None", "ttlSecondsAfterFinished": 30},
            {"cleanPodPolicy": "None", "ttlSecondsAfterFinished": 30},
        ),
    ],
)
def test_hold_sends_none_and_no_ttl_and_records_the_choice(asked, recorded):
    original = manifest(**asked, backoffLimit=2)
    sent = hold(original)
    assert sent["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "backoffLimit": 2}
    assert json.loads(sent["metadata"]["annotations"][ANNOTATION_HELD_RUN_POLICY]) == recorded
    assert sent["metadata"]["annotations"]["team"] == "ml"
    assert original["spec"]["runPolicy"] == {**asked, "backoffLimit": 2}  # the caller's manifest is untouched
    assert user_run_policy(sent) == UserRunPolicy(
        recorded["cleanPodPolicy"], recorded.get("ttlSecondsAfterFinished"), held=True
    )


def test_nothing_to_hold_is_sent_as_it_is():
    sent = hold(manifest(cleanPodPolicy="None"))
    assert ANNOTATION_HELD_RUN_POLICY not in sent["metadata"]["annotations"]
    assert user_run_policy(sent) == UserRunPolicy("None", None, held=False)
    assert release_patch(sent) is None and pods_to_stop([pod("a", "Running")], user_run_policy(sent)) == []


@pytest.mark.parametrize(
    "raw",
    ["not json", '{"cleanPodPolicy": "Sometimes"}', '{"cleanPodPolicy": "All", "ttlSecondsAfterFinished": -1}', "[]"],
)
def test_an_annotation_that_does_not_parse_falls_back_to_the_spec(raw):
    job = manifest(cleanPodPolicy="Running")
    job["metadata"]["annotations"][ANNOTATION_HELD_RUN_POLICY] = raw
    assert user_run_policy(job) == UserRunPolicy("Running", None, held=False)


@pytest.mark.parametrize(("policy", "stopped"), [("All", {"p", "r"}), ("Running", {"p", "r"}), ("None", set())])
def test_pods_to_stop_are_the_unfinished_ones(policy, stopped):
    pods = [pod("p", "Pending"), pod("r", "Running"), pod("s", "Succeeded"), pod("f", "Failed")]
    chosen = pods_to_stop(pods, user_run_policy(hold(manifest(cleanPodPolicy=policy, ttlSecondsAfterFinished=5))))
    assert {p["metadata"]["name"] for p in chosen} == stopped


def test_release_gives_the_run_policy_back_and_drops_the_annotation():
    sent = hold(manifest(cleanPodPolicy="All", ttlSecondsAfterFinished=0))
    assert release_patch(sent) == {
        "metadata": {"annotations": {ANNOTATION_HELD_RUN_POLICY: None}},
        "spec": {"runPolicy": {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0}},
    }
    no_ttl = release_patch(hold(manifest(cleanPodPolicy="Running")))
    assert no_ttl["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": None}


def test_a_policy_an_earlier_release_held_is_read_and_released():
    """Held under the legacy prefix (a job created before the upgrade): the user's policy still applies, and the
    release drops that annotation."""
    legacy = as_legacy(hold(manifest(cleanPodPolicy="All", ttlSecondsAfterFinished=0)))
    assert ANNOTATION_HELD_RUN_POLICY not in legacy["metadata"]["annotations"]
    assert user_run_policy(legacy) == UserRunPolicy("All", 0, held=True)
    assert release_patch(legacy) == {
        "metadata": {"annotations": {"airflow-trainjob.apache.org/held-run-policy": None}},
        "spec": {"runPolicy": {"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 0}},
    }


#: A job's pods at the end of the task: pending, running, finished, and one of each being deleted.
END_PODS = [
    pod("p", "Pending"),
    pod("r", "Running"),
    pod("s", "Succeeded"),
    pod("f", "Failed"),
    pod("r-stopping", "Running", deleting=True),
    pod("f-stopped", "Failed", deleting=True),
]


@pytest.mark.parametrize(
    ("policy", "job_deleted", "to_delete"),
    [
        ("All", False, {"p", "r", "s", "f"}),
        ("Running", False, {"p", "r"}),
        ("None", False, set()),
        # The job's deletion stops its running pods, whatever the policy; its finished ones go by garbage collection.
        ("None", True, {"p", "r"}),
        ("Running", True, {"p", "r"}),
        ("All", True, {"p", "r", "s", "f"}),
    ],
)
def test_pods_left_are_those_to_delete_and_those_still_stopping(policy, job_deleted, to_delete):
    left = pods_left(END_PODS, policy, job_deleted=job_deleted)
    assert {p["metadata"]["name"] for p in left.to_delete} == to_delete
    # A pod whose deletion was asked is waited for until it is gone, whether it still runs or not.
    assert {p["metadata"]["name"] for p in left.stopping} == {"r-stopping", "f-stopped"}
    assert not left.done


@pytest.mark.parametrize(
    ("pods", "policy", "job_deleted"),
    [
        ([], "All", True),
        ([pod("s", "Succeeded"), pod("f", "Failed")], "None", True),  # a deleted job's finished pods: its GC's
        ([pod("s", "Succeeded"), pod("f", "Failed")], "Running", False),  # Running keeps finished pods
        ([pod("r", "Running")], "None", False),  # None keeps every pod of a kept job
    ],
)
def test_nothing_left_when_no_pod_goes_and_none_is_stopping(pods, policy, job_deleted):
    left = pods_left(pods, policy, job_deleted=job_deleted)
    assert left.done and left.to_delete == [] and left.stopping == []


# --- cleanup_plan: what the end of the task does to its job ----------------------------------------------------------

RUNNING_STATUS = {"conditions": [{"type": "Running", "status": "True"}]}
SUCCEEDED_STATUS = {"conditions": [{"type": "Succeeded", "status": "True"}]}
FAILED_STATUS = {"conditions": [{"type": "Failed", "status": "True"}]}


def job_now(status: dict, uid: str = "u1", **run_policy) -> dict:
    """The job as the cleanup reads it: sent with the hold, ``status`` as given."""
    job = hold(manifest(**run_policy))
    job["metadata"]["uid"] = uid
    job["status"] = status
    return job


def plan_for(job: dict, **given):
    asked = {
        "held_uid": "u1",
        "owned": True,
        "followed": True,
        "outcome": "succeeded",
        "on_finish": "delete_succeeded_job",
        "success_unrecorded": False,
        "family": family_of("PyTorchJob"),
        **given,
    }
    return cleanup_plan(job, **asked)


@pytest.mark.parametrize(("uid", "owned"), [("u2", True), ("u1", False), ("u2", False)])
def test_a_job_that_is_no_longer_the_one_the_task_created_is_left_alone(uid, owned):
    plan = plan_for(job_now(SUCCEEDED_STATUS, uid), owned=owned)
    assert plan.leave_alone == REPLACED
    assert not plan.delete_job and not plan.clean_pods_first and plan.release is None


def test_a_killed_tries_job_that_a_later_try_follows_is_left_alone():
    plan = plan_for(job_now(RUNNING_STATUS), outcome="killed", followed=False)
    assert plan.leave_alone == FOLLOWED_BY_LATER_TRY and not plan.delete_job


@pytest.mark.parametrize("outcome", ["succeeded", "failed"])
def test_only_a_killed_try_defers_to_a_later_one(outcome):
    """A job that says a later try follows it, judged by a try that saw its end: that try's verdict stands."""
    assert plan_for(job_now(FAILED_STATUS), outcome=outcome, followed=False).leave_alone is None


@pytest.mark.parametrize("on_finish", ["keep_job", "delete_job", "delete_succeeded_job"])
def test_a_running_job_is_deleted_whole_whatever_on_finish_says(on_finish):
    plan = plan_for(job_now(RUNNING_STATUS, cleanPodPolicy="All"), outcome="killed", on_finish=on_finish)
    assert plan.delete_job and plan.deletion_reason == "not finished"
    assert not plan.clean_pods_first  # its pods go after it: none dies before it (it would be restarted)
    assert plan.release is None and plan.leave_alone is None


@pytest.mark.parametrize(
    ("on_finish", "outcome", "deleted"),
    [
        ("delete_job", "succeeded", True),
        ("delete_job", "failed", True),
        ("delete_succeeded_job", "succeeded", True),
        ("delete_succeeded_job", "failed", False),
        ("delete_succeeded_job", "killed", False),
        ("keep_job", "succeeded", False),
        ("keep_job", "failed", False),
    ],
)
def test_a_finished_job_loses_its_pods_first_then_goes_as_on_finish_says(on_finish, outcome, deleted):
    status = SUCCEEDED_STATUS if outcome == "succeeded" else FAILED_STATUS
    plan = plan_for(job_now(status, cleanPodPolicy="Running"), outcome=outcome, on_finish=on_finish)
    assert plan.clean_pods_first and plan.delete_job is deleted and plan.leave_alone is None
    assert plan.policy == UserRunPolicy("Running", None, held=True)
    if deleted:
        assert plan.deletion_reason == on_finish and plan.release is None
    else:  # kept: its runPolicy back as the user wrote it, the uid a precondition
        assert plan.release is not None and plan.release["metadata"]["uid"] == "u1"
        assert plan.release["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "ttlSecondsAfterFinished": None}
    assert not plan.keep_unrecorded_success


def test_a_success_that_could_not_be_recorded_keeps_its_job():
    """The job is then what tells a try that Airflow runs after this one that it succeeded."""
    plan = plan_for(job_now(SUCCEEDED_STATUS, cleanPodPolicy="All"), success_unrecorded=True)
    assert plan.keep_unrecorded_success and not plan.delete_job and plan.clean_pods_first
    assert plan.release is not None and plan.release["metadata"]["uid"] == "u1"


@pytest.mark.parametrize(("on_finish", "outcome"), [("delete_job", "failed"), ("keep_job", "succeeded")])
def test_an_unrecorded_success_matters_only_when_on_finish_would_delete_the_succeeded_job(on_finish, outcome):
    status = SUCCEEDED_STATUS if outcome == "succeeded" else FAILED_STATUS
    plan = plan_for(job_now(status), outcome=outcome, on_finish=on_finish, success_unrecorded=True)
    assert not plan.keep_unrecorded_success
    assert plan.delete_job is (on_finish == "delete_job")


def test_a_kept_job_whose_policy_is_not_held_has_nothing_to_release():
    plan = plan_for(job_now(SUCCEEDED_STATUS), on_finish="keep_job")  # None and no TTL: sent as it is
    assert not plan.delete_job and plan.release is None
    assert plan.policy == UserRunPolicy("None", None, held=False)


def test_a_kept_job_keeps_its_ttl_for_the_log():
    plan = plan_for(job_now(FAILED_STATUS, ttlSecondsAfterFinished=30), outcome="failed")
    assert not plan.delete_job and plan.policy.ttl_seconds_after_finished == 30
    assert plan.release is not None and plan.release["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 30

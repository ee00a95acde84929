"""The cleanup hold: what is sent, what the user asked for, which pods stop at the terminal transition, which are
left for the end of the task."""

from __future__ import annotations

import json

import pytest

from airflow_trainjob.domain.cleanup_hold import (
    ANNOTATION_HELD_RUN_POLICY,
    UserRunPolicy,
    hold,
    pods_left,
    pods_to_stop,
    release_patch,
    user_run_policy,
)
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

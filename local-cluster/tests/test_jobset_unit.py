"""The pure decisions of the local JobSet controller, without a cluster: a JobSet's defaults, the Jobs and
Service it owns, its status from its Jobs (:func:`plan_jobset`), an Indexed Job's pods and status from its pods
(:func:`plan_job`). Upstream: kubernetes-sigs/jobset v0.12.0 ``pkg/controllers``; kubernetes
``pkg/controller/job``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.jobset.builders import build_job, build_service
from airflow_trainjob_local.jobset.conditions import update_jobset_condition
from airflow_trainjob_local.jobset.job_plan import format_indexes, normalized_status, plan_job
from airflow_trainjob_local.jobset.jobset_plan import plan_jobset
from airflow_trainjob_local.jobset.pods import build_pod
from airflow_trainjob_local.jobset.spec import JobSetView, job_hash_key
from airflow_trainjob_local.jobset.volume_claims import add_claim_volumes, build_claims

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
STAMP = "2026-01-02T03:04:05Z"


def rjob(name: str, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "node", "image": "x", "command": ["python", "-c", "print(1)"]}]}}
    return {"name": name, "replicas": replicas, "template": {"spec": {"template": pod}}, **extra}


def jobset(*rjobs: dict[str, Any], status: dict[str, Any] | None = None, **spec: Any) -> JobSetView:
    obj = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": "js", "namespace": "ns", "uid": "uid-1"},
        "spec": {"replicatedJobs": list(rjobs), **spec},
    }
    if status is not None:
        obj["status"] = status
    return JobSetView(obj)


def job_of(view: JobSetView, rjob_name: str, index: int, *, finished: str = "", **status: Any) -> dict[str, Any]:
    """A Job as the controller would have built it, with a status."""
    spec_rjob = next(r for r in view.replicated_jobs() if r["name"] == rjob_name)
    job = build_job(view, spec_rjob, index)
    job["spec"].setdefault("parallelism", 1)
    job["status"] = dict(status)
    if finished:
        condition = {"type": finished, "status": "True", "reason": "R", "message": "m", "lastTransitionTime": STAMP}
        job["status"]["conditions"] = [condition]
    return job


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {x["type"]: (x["status"], x["reason"], x["message"]) for x in status.get("conditions") or []}


# --- spec and builders -----------------------------------------------------------------------------------


def test_defaults_are_the_webhooks():
    view = jobset(rjob("node"))
    assert view.dns_hostnames and view.publish_not_ready_addresses
    assert view.subdomain == "js"
    assert view.success_policy == {"operator": "All"}
    node = view.replicated_jobs()[0]
    assert node["groupName"] == "default"
    assert node["template"]["spec"]["completionMode"] == "Indexed"
    assert node["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_job_carries_the_jobset_labels_on_itself_and_its_pod_template():
    view = jobset(rjob("init"), rjob("node", 2), network={"subdomain": "sub"}, suspend=True)
    job = build_job(view, view.replicated_jobs()[1], 1)
    assert job["metadata"]["name"] == "js-node-1"
    expected = {
        c.LABEL_JOBSET_NAME: "js",
        c.LABEL_JOBSET_UID: "uid-1",
        c.LABEL_REPLICATED_JOB_NAME: "node",
        c.LABEL_REPLICATED_JOB_REPLICAS: "2",
        c.LABEL_JOB_INDEX: "1",
        c.LABEL_JOB_GLOBAL_INDEX: "2",
        c.LABEL_GLOBAL_REPLICAS: "3",
        c.LABEL_RESTART_ATTEMPT: "0",
        c.LABEL_JOB_KEY: job_hash_key("ns", "js-node-1"),
        c.LABEL_GROUP_NAME: "default",
        c.LABEL_GROUP_REPLICAS: "3",
        c.LABEL_JOB_GROUP_INDEX: "2",
    }
    pod_meta = job["spec"]["template"]["metadata"]
    for labels in (
        job["metadata"]["labels"],
        job["metadata"]["annotations"],
        pod_meta["labels"],
        pod_meta["annotations"],
    ):
        assert expected.items() <= labels.items()
    assert len(expected[c.LABEL_JOB_KEY]) == 40
    assert job["spec"]["template"]["spec"]["subdomain"] == "sub"
    assert job["spec"]["suspend"] is True and job["metadata"]["annotations"][c.ANNOTATION_JOB_SUSPEND] == "true"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("JobSet", "js", "uid-1", True)


def test_no_subdomain_without_dns_hostnames():
    view = jobset(rjob("node"), network={"enableDNSHostnames": False})
    assert "subdomain" not in build_job(view, view.replicated_jobs()[0], 0)["spec"]["template"].get("spec", {})


def test_headless_service_selects_the_jobset_pods():
    svc = build_service(jobset(rjob("node")))
    assert svc["metadata"]["name"] == "js"
    assert svc["spec"] == {
        "clusterIP": "None",
        "selector": {c.LABEL_JOBSET_NAME: "js"},
        "publishNotReadyAddresses": True,
    }


def test_pod_of_a_completion_index():
    view = jobset(rjob("node"))
    job = job_of(view, "node", 0)
    job["metadata"]["uid"] = "job-uid"
    pod = build_pod(job, 3)
    meta = pod["metadata"]
    assert meta["generateName"] == "js-node-0-3-"
    assert meta["labels"][c.JOB_COMPLETION_INDEX] == "3" == meta["annotations"][c.JOB_COMPLETION_INDEX]
    for key in (c.LABEL_JOB_NAME, c.LABEL_JOB_NAME_LEGACY):
        assert meta["labels"][key] == "js-node-0"
    for key in (c.LABEL_CONTROLLER_UID, c.LABEL_CONTROLLER_UID_LEGACY):
        assert meta["labels"][key] == "job-uid"
    assert meta["labels"][c.LABEL_JOBSET_NAME] == "js"
    assert pod["spec"]["hostname"] == "js-node-0-3"
    env = pod["spec"]["containers"][0]["env"]
    assert env == [
        {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
            },
        }
    ]
    assert meta["ownerReferences"][0]["kind"] == "Job" and meta["ownerReferences"][0]["controller"] is True


# --- JobSet decisions ------------------------------------------------------------------------------------


def test_new_jobset_creates_every_job_and_the_service():
    plan = plan_jobset(jobset(rjob("a", 2), rjob("b")), [], NOW)
    assert [j["metadata"]["name"] for j in plan.create_jobs] == ["js-a-0", "js-a-1", "js-b-0"]
    assert plan.ensure_service
    assert plan.status["replicatedJobsStatus"] == [
        {"name": "a", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
        {"name": "b", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0},
    ]
    assert "conditions" not in plan.status  # never suspended: no Suspended condition


def test_existing_jobs_are_not_created_again():
    view = jobset(rjob("a", 2))
    plan = plan_jobset(view, [job_of(view, "a", 0, active=1)], NOW)
    assert [j["metadata"]["name"] for j in plan.create_jobs] == ["js-a-1"]


def test_depends_on_complete_waits_for_every_job_of_the_dependency():
    view = jobset(rjob("init"), rjob("node", dependsOn=[{"name": "init", "status": "Complete"}]))
    running = plan_jobset(view, [job_of(view, "init", 0, active=1)], NOW)
    assert running.create_jobs == []
    done = plan_jobset(view, [job_of(view, "init", 0, finished="Complete", succeeded=1)], NOW)
    assert [j["metadata"]["name"] for j in done.create_jobs] == ["js-node-0"]


def test_depends_on_ready_needs_ready_pods():
    view = jobset(rjob("init"), rjob("node", dependsOn=[{"name": "init", "status": "Ready"}]))
    not_ready = job_of(view, "init", 0, active=1)
    assert plan_jobset(view, [not_ready], NOW).create_jobs == []
    ready = job_of(view, "init", 0, active=1)
    ready["metadata"]["annotations"][c.ANNOTATION_JOB_READY] = "1"
    assert [j["metadata"]["name"] for j in plan_jobset(view, [ready], NOW).create_jobs] == ["js-node-0"]


def test_in_order_startup_creates_one_replicated_job_at_a_time():
    view = jobset(rjob("a"), rjob("b"), startupPolicy={"startupPolicyOrder": "InOrder"})
    first = plan_jobset(view, [], NOW)
    assert [j["metadata"]["name"] for j in first.create_jobs] == ["js-a-0"]
    assert conditions(first.status)["StartupPolicyInProgress"][0] == "True"
    ready = job_of(view, "a", 0, active=1)
    ready["metadata"]["annotations"][c.ANNOTATION_JOB_READY] = "1"
    second = plan_jobset(JobSetView({**view.obj, "status": first.status}), [ready], NOW)
    assert [j["metadata"]["name"] for j in second.create_jobs] == ["js-b-0"]
    b_ready = job_of(view, "b", 0, active=1)
    b_ready["metadata"]["annotations"][c.ANNOTATION_JOB_READY] = "1"
    third = plan_jobset(JobSetView({**view.obj, "status": second.status}), [ready, b_ready], NOW)
    found = conditions(third.status)
    assert found["StartupPolicyCompleted"] == (
        "True",
        "InOrderStartupPolicyCompleted",
        "in order startup policy has completed",
    )
    assert found["StartupPolicyInProgress"][0] == "False"


def test_all_jobs_succeeded_completes_the_jobset():
    view = jobset(rjob("a"), rjob("b"))
    jobs = [
        job_of(view, "a", 0, finished="Complete", succeeded=1),
        job_of(view, "b", 0, finished="Complete", succeeded=1),
    ]
    plan = plan_jobset(view, jobs, NOW)
    assert conditions(plan.status)["Completed"] == ("True", "AllJobsCompleted", "jobset completed successfully")
    assert plan.status["terminalState"] == "Completed"
    assert ("Normal", "AllJobsCompleted", "jobset completed successfully") in plan.events
    assert plan.create_jobs == []


def test_success_policy_any_of_a_target():
    view = jobset(rjob("a", 2), rjob("b"), successPolicy={"operator": "Any", "targetReplicatedJobs": ["b"]})
    a_done = plan_jobset(view, [job_of(view, "a", 0, finished="Complete")], NOW)
    assert "Completed" not in conditions(a_done.status)
    b_done = plan_jobset(view, [job_of(view, "b", 0, finished="Complete")], NOW)
    assert conditions(b_done.status)["Completed"][0] == "True"


def test_finished_jobset_deletes_its_active_jobs_and_creates_nothing():
    done = {
        "conditions": [
            {"type": "Completed", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": STAMP}
        ]
    }
    view = jobset(rjob("a", 2), rjob("b"), status=done)
    active = job_of(view, "a", 1, active=1)
    plan = plan_jobset(view, [job_of(view, "a", 0, finished="Complete"), active], NOW)
    assert plan.delete_jobs == [active] and plan.create_jobs == [] and not plan.ensure_service


def test_a_failed_job_without_failure_policy_fails_the_jobset():
    view = jobset(rjob("a", 2))
    plan = plan_jobset(view, [job_of(view, "a", 0, active=1), job_of(view, "a", 1, finished="Failed")], NOW)
    message = "jobset failed due to one or more job failures (first failed job: js-a-1)"
    assert conditions(plan.status)["Failed"] == ("True", "FailedJobs", message)
    assert plan.status["terminalState"] == "Failed"
    assert ("Warning", "FailedJobs", message) in plan.events


def test_max_restarts_restarts_then_fails():
    view = jobset(rjob("a"), failurePolicy={"maxRestarts": 1})
    plan = plan_jobset(view, [job_of(view, "a", 0, finished="Failed")], NOW)
    assert plan.status["restarts"] == 1 and plan.status["restartsCountTowardsMax"] == 1
    message = "applying RestartJobSet failure policy action (first failed job: js-a-0)"
    assert conditions(plan.status)["RestartingJobSet"] == ("True", "DefaultFailurePolicy", message)
    assert ("Warning", "RestartJobSetFailurePolicyAction", message) in plan.events
    assert "Failed" not in conditions(plan.status)

    restarted = JobSetView({**view.obj, "status": plan.status})
    old = job_of(view, "a", 0, finished="Failed")  # restart-attempt 0 < 1: a previous Job
    second = plan_jobset(restarted, [old], NOW)
    assert second.delete_jobs == [old] and second.create_jobs == []  # the same name is still taken

    new_failed = job_of(restarted, "a", 0, finished="Failed")
    assert new_failed["metadata"]["labels"][c.LABEL_RESTART_ATTEMPT] == "1"
    third = plan_jobset(restarted, [new_failed], NOW)
    message = "jobset failed due to reaching max number of restarts (first failed job: js-a-0)"
    assert conditions(third.status)["Failed"] == ("True", "ReachedMaxRestarts", message)
    assert conditions(third.status)["RestartingJobSet"][:2] == ("False", "JobSetFailed")


def test_failure_policy_rule_fail_jobset_for_a_target():
    rules = [{"action": "FailJobSet", "targetReplicatedJobs": ["b"]}]
    view = jobset(rjob("a"), rjob("b"), failurePolicy={"maxRestarts": 3, "rules": rules})
    b_failed = plan_jobset(view, [job_of(view, "b", 0, finished="Failed")], NOW)
    assert conditions(b_failed.status)["Failed"][1] == "FailJobSetFailurePolicyAction"
    a_failed = plan_jobset(view, [job_of(view, "a", 0, finished="Failed")], NOW)
    assert a_failed.status["restarts"] == 1  # no rule matched: the default action restarts


def test_suspend_and_resume():
    view = jobset(rjob("a"), suspend=True)
    created = plan_jobset(view, [], NOW)
    assert created.create_jobs[0]["metadata"]["annotations"][c.ANNOTATION_JOB_SUSPEND] == "true"
    assert conditions(created.status)["Suspended"] == ("True", "SuspendedJobs", "jobset is suspended")
    running = job_of(jobset(rjob("a")), "a", 0, active=1)
    suspending = plan_jobset(view, [running], NOW)
    assert suspending.suspend_jobs == ["js-a-0"]
    resumed_view = JobSetView({**view.obj, "spec": {**view.obj["spec"], "suspend": False}, "status": created.status})
    suspended_job = job_of(view, "a", 0)
    resumed = plan_jobset(resumed_view, [suspended_job], NOW)
    assert resumed.resume_jobs == ["js-a-0"]
    assert conditions(resumed.status)["Suspended"] == ("False", "ResumeJobs", "jobset is resumed")


def test_ttl_after_finished():
    done = {
        "conditions": [{"type": "Failed", "status": "True", "reason": "r", "message": "m", "lastTransitionTime": STAMP}]
    }
    view = jobset(rjob("a"), ttlSecondsAfterFinished=10, status=done)
    assert plan_jobset(view, [], NOW).requeue_after == 10
    assert plan_jobset(view, [], NOW + dt.timedelta(seconds=10)).delete_jobset


def test_condition_update_keeps_transition_time_when_only_the_message_changes():
    status: dict[str, Any] = {}
    assert not update_jobset_condition(status, "Suspended", "False", "ResumeJobs", "m", STAMP)
    assert "conditions" not in status
    assert update_jobset_condition(status, "Suspended", "True", "SuspendedJobs", "m", STAMP)
    assert update_jobset_condition(status, "Suspended", "True", "SuspendedJobs", "m2", "2030-01-01T00:00:00Z")
    assert status["conditions"][0]["lastTransitionTime"] == STAMP
    assert not update_jobset_condition(status, "Suspended", "True", "SuspendedJobs", "m2", STAMP)


# --- Job decisions ------------------------------------------------------------------------------------------


def batch_job(
    parallelism: int = 1, completions: int | None = None, restart: str = "Never", **spec: Any
) -> dict[str, Any]:
    template = {"spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "x"}]}}
    body = {"parallelism": parallelism, "template": template, **spec}
    if completions is not None:
        body["completions"] = completions
    return {"metadata": {"name": "j", "namespace": "ns", "uid": "u", "annotations": {}}, "spec": body, "status": {}}


def pod(
    index: int, phase: str = "Running", ready: bool = True, restarts: int = 0, created: str = STAMP
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"j-{index}-{phase}",
            "annotations": {c.JOB_COMPLETION_INDEX: str(index)},
            "creationTimestamp": created,
        },
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }


def test_indexes_get_pods_within_parallelism():
    plan = plan_job(batch_job(parallelism=2, completions=4), [], NOW)
    assert plan.create_indexes == [0, 1]
    assert plan.status["active"] == 2 and plan.status["startTime"] == STAMP
    later = plan_job(batch_job(parallelism=2, completions=4), [pod(0, "Succeeded"), pod(1)], NOW)
    assert later.create_indexes == [2]
    assert later.completed_indexes == "0" and later.ready == 1 and later.status["succeeded"] == 1


def test_a_failed_pod_is_replaced_until_the_backoff_limit():
    replaced = plan_job(batch_job(backoffLimit=1), [pod(0, "Failed")], NOW)
    assert replaced.create_indexes == [0] and replaced.status["failed"] == 1
    failed = plan_job(batch_job(backoffLimit=1), [pod(0, "Failed"), pod(0, "Failed")], NOW)
    assert failed.create_indexes == []
    found = {x["type"]: (x["reason"], x["message"]) for x in failed.status["conditions"]}
    assert found["Failed"] == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert "FailureTarget" in found


def test_on_failure_counts_container_restarts():
    running = pod(0, restarts=2)
    assert plan_job(batch_job(restart="OnFailure", backoffLimit=3), [running], NOW).create_indexes == []
    failed = plan_job(batch_job(restart="OnFailure", backoffLimit=2), [running], NOW)
    assert failed.delete_pods == [running] and failed.status["failed"] == 1


def test_active_deadline():
    job = batch_job(activeDeadlineSeconds=5)
    job["status"]["startTime"] = STAMP
    assert plan_job(job, [pod(0)], NOW + dt.timedelta(seconds=2)).requeue_after == 3
    late = plan_job(job, [pod(0)], NOW + dt.timedelta(seconds=5))
    assert [x["reason"] for x in late.status["conditions"]] == ["DeadlineExceeded", "DeadlineExceeded"]
    assert len(late.delete_pods) == 1


def test_every_index_succeeded_completes_the_job():
    plan = plan_job(batch_job(parallelism=2, completions=2), [pod(0, "Succeeded"), pod(1, "Succeeded")], NOW)
    types = {x["type"]: x["reason"] for x in plan.status["conditions"]}
    assert types == {"SuccessCriteriaMet": "CompletionsReached", "Complete": "CompletionsReached"}
    assert plan.status["completionTime"] == STAMP and plan.completed_indexes == "0-1"


def test_suspended_job_deletes_its_pods_and_resumes_with_a_new_start_time():
    job = batch_job()
    job["metadata"]["annotations"][c.ANNOTATION_JOB_SUSPEND] = "true"
    running = pod(0)
    suspended = plan_job(job, [running], NOW)
    assert suspended.delete_pods == [running] and suspended.create_indexes == []
    assert suspended.status["conditions"][0]["reason"] == "JobSuspended"
    job["metadata"]["annotations"][c.ANNOTATION_JOB_SUSPEND] = "false"
    job["status"] = suspended.status
    resumed = plan_job(job, [], NOW + dt.timedelta(seconds=9))
    assert resumed.status["conditions"][0]["status"] == "False"
    assert resumed.status["conditions"][0]["reason"] == "JobResumed"
    assert resumed.status["startTime"] == "2026-01-02T03:04:14Z" and resumed.create_indexes == [0]


@pytest.mark.parametrize(("indexes", "text"), [([], ""), ([0], "0"), ([0, 1, 2, 5], "0-2,5"), ([3, 1], "1,3")])
def test_completed_indexes_format(indexes, text):
    assert format_indexes(indexes) == text


def test_the_status_written_is_valid_for_the_published_model():
    from kubeflow_trainer_api.models import JobsetV1alpha2JobSetStatus  # type: ignore[import-untyped]

    view = jobset(rjob("a"), failurePolicy={"maxRestarts": 1})
    restarting = plan_jobset(view, [job_of(view, "a", 0, finished="Failed")], NOW).status
    completed = plan_jobset(view, [job_of(view, "a", 0, finished="Complete")], NOW).status
    for status in (restarting, completed):
        model = JobsetV1alpha2JobSetStatus.from_dict(status)
        assert model is not None
        # Nothing is unknown to the model (a structural CRD derived from it would prune it).
        assert model.model_dump(by_alias=True, exclude_none=True, mode="json") == status


def test_coordinator_label_and_exclusive_placement_annotations():
    view = jobset(rjob("a"), rjob("b", 2), coordinator={"replicatedJob": "b", "jobIndex": 1, "podIndex": 2})
    view.obj["metadata"]["annotations"] = {c.ANNOTATION_EXCLUSIVE_TOPOLOGY: "zone", "other": "x"}
    job = build_job(view, view.replicated_jobs()[0], 0)
    pod_meta = job["spec"]["template"]["metadata"]
    for values in (
        job["metadata"]["labels"],
        job["metadata"]["annotations"],
        pod_meta["labels"],
        pod_meta["annotations"],
    ):
        assert values[c.LABEL_COORDINATOR] == "js-b-1-2.js"
    assert job["metadata"]["annotations"][c.ANNOTATION_EXCLUSIVE_TOPOLOGY] == "zone"
    assert pod_meta["annotations"][c.ANNOTATION_EXCLUSIVE_TOPOLOGY] == "zone"
    assert c.ANNOTATION_EXCLUSIVE_TOPOLOGY not in job["metadata"]["labels"] and "other" not in pod_meta["annotations"]


def test_blocking_recreate_waits_for_every_previous_job():
    policy = {"maxRestarts": 2, "restartStrategy": "BlockingRecreate"}
    view = jobset(rjob("a", 2), failurePolicy=policy, status={"restarts": 1})
    previous = job_of(jobset(rjob("a", 2)), "a", 1, finished="Failed")  # restart-attempt 0
    blocked = plan_jobset(view, [previous], NOW)
    assert blocked.create_jobs == [] and blocked.delete_jobs == [previous]
    recreate = plan_jobset(
        jobset(rjob("a", 2), failurePolicy={"maxRestarts": 2}, status={"restarts": 1}), [previous], NOW
    )
    assert [j["metadata"]["name"] for j in recreate.create_jobs] == ["js-a-0"]


def test_a_finished_job_keeps_its_counts_when_its_pods_are_gone():
    job = batch_job(parallelism=2, completions=2)
    job["metadata"]["annotations"][c.ANNOTATION_JOB_COMPLETED_INDEXES] = "0-1"
    job["status"] = {"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}
    plan = plan_job(job, [], NOW)
    assert normalized_status(plan.status) == job["status"] and plan.completed_indexes == "0-1"
    assert plan.create_indexes == [] and plan.delete_pods == []


def test_volume_claim_templates_become_claims_named_template_dash_jobset_owned_unless_retained():
    spec = {"accessModes": ["ReadWriteOnce"]}
    view = jobset(
        rjob("node"),
        volumeClaimPolicies=[
            {"templates": [{"metadata": {"name": "data", "annotations": {"a": "b"}}, "spec": spec}]},
            {"retentionPolicy": {"whenDeleted": "Retain"}, "templates": [{"metadata": {"name": "kept"}, "spec": spec}]},
        ],
    )
    data, kept = build_claims(view)
    assert data["metadata"]["name"] == "data-js" and data["metadata"]["annotations"] == {"a": "b"}
    assert data["metadata"]["labels"] == {c.LABEL_JOBSET_NAME: "js"}
    assert data["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert (kept["metadata"]["name"], "ownerReferences" in kept["metadata"]) == ("kept-js", False)
    assert data["spec"] == spec


def test_a_claim_volume_is_added_only_to_jobs_that_mount_it():
    view = jobset(rjob("node"), volumeClaimPolicies=[{"templates": [{"metadata": {"name": "data"}, "spec": {}}]}])
    mounting = {"spec": {"template": {"spec": {"initContainers": [{"volumeMounts": [{"name": "data"}]}]}}}}
    other = {"spec": {"template": {"spec": {"containers": [{"volumeMounts": [{"name": "cache"}]}]}}}}
    add_claim_volumes(view, mounting)
    add_claim_volumes(view, other)
    assert mounting["spec"]["template"]["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-js"}}
    ]
    assert "volumes" not in other["spec"]["template"]["spec"]

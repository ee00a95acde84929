"""The local JobSet controller on the session's ``local_cluster``: a real kube-apiserver, the controller process
(which runs the JobSet controller and the Jobs JobSets own) and the process kubelet, observed through the API.

Upstream: kubernetes-sigs/jobset v0.12.0 (``pkg/controllers/jobset_controller.go``, ``failure_policy.go``,
``depends_on.go``) and the Kubernetes Job controller (``pkg/controller/job``) for Indexed Jobs, with the
JobSet CRD the cluster installs (:mod:`airflow_trainjob_local.trainer.crds`). Skipped when the session cluster
runs without workloads.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
from kubernetes import client

from airflow_trainjob_local.jobset import constants as c
from airflow_trainjob_local.kube import MERGE_PATCH, ApiException
from airflow_trainjob_local.testing import waiting

TIMEOUT = 90.0
wait_for = functools.partial(waiting.wait_for, timeout=TIMEOUT)


@pytest.fixture(autouse=True)
def _needs_workloads(local_cluster) -> None:
    if not local_cluster.workloads:
        pytest.skip("the session cluster runs without the controller and the process kubelet")


# --- helpers ----------------------------------------------------------------------------------------------


def replicated_job(name: str, script: str, replicas: int = 1, pods: int = 1, **job_spec: Any) -> dict[str, Any]:
    container = {"name": "node", "image": "python:3.11", "command": ["python", "-c", script]}
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "parallelism": pods,
                "completions": pods,
                **job_spec,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            }
        },
    }


def create_jobset(custom_objects, namespace: str, name: str, *rjobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name},
        "spec": {"replicatedJobs": list(rjobs), **spec},
    }
    return custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL, body)


def get_jobset(custom_objects, namespace: str, name: str) -> dict[str, Any]:
    return custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL, name)


def condition(obj: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    return next((x for x in (obj.get("status") or {}).get("conditions") or [] if x["type"] == condition_type), None)


def wait_condition(
    custom_objects, namespace: str, name: str, condition_type: str, status: str = "True"
) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        return get_jobset(custom_objects, namespace, name)

    return wait_for(
        read,
        lambda js: (condition(js, condition_type) or {}).get("status") == status,
        what=f"JobSet {name} {condition_type}={status}",
    )


def jobs(kube_api_client, namespace: str) -> dict[str, client.V1Job]:
    return {j.metadata.name: j for j in client.BatchV1Api(kube_api_client).list_namespaced_job(namespace).items}


def pods(core_v1, namespace: str) -> list[client.V1Pod]:
    return core_v1.list_namespaced_pod(namespace).items


def running_pods(core_v1, namespace: str, count: int) -> list[client.V1Pod]:
    return wait_for(
        lambda: [
            p for p in pods(core_v1, namespace) if p.status.phase == "Running" and not p.metadata.deletion_timestamp
        ],
        lambda found: len(found) == count,
        what=f"{count} running pods",
    )


def set_suspend(custom_objects, namespace: str, name: str, suspend: bool) -> None:
    custom_objects.patch_namespaced_custom_object(
        c.GROUP, c.VERSION, namespace, c.PLURAL, name, {"spec": {"suspend": suspend}}, _content_type=MERGE_PATCH
    )


# --- tests ------------------------------------------------------------------------------------------------


def test_two_replicated_jobs_run_to_completed(custom_objects, core_v1, kube_api_client, namespace):
    script = "import os, socket; print('index', os.environ['JOB_COMPLETION_INDEX'], socket.gethostname())"
    js = create_jobset(
        custom_objects, namespace, "js", replicated_job("init", "print('init')"), replicated_job("node", script, 2, 2)
    )
    done = wait_condition(custom_objects, namespace, "js", c.CONDITION_COMPLETED)
    assert condition(done, c.CONDITION_COMPLETED)["reason"] == c.REASON_ALL_JOBS_COMPLETED
    assert done["status"]["terminalState"] == "Completed"
    assert sorted(done["status"]["replicatedJobsStatus"], key=lambda s: s["name"]) == [
        {"name": "init", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0},
        {"name": "node", "ready": 0, "succeeded": 2, "failed": 0, "active": 0, "suspended": 0},
    ]

    found = jobs(kube_api_client, namespace)
    assert sorted(found) == ["js-init-0", "js-node-0", "js-node-1"]
    uid = js["metadata"]["uid"]
    for name, job in found.items():
        owner = job.metadata.owner_references[0]
        assert (owner.kind, owner.name, owner.uid, owner.controller) == ("JobSet", "js", uid, True)
        assert job.metadata.labels[c.LABEL_JOBSET_NAME] == "js"
        assert (
            job.metadata.annotations[c.LABEL_JOB_GLOBAL_INDEX]
            == {"js-init-0": "0", "js-node-0": "1", "js-node-1": "2"}[name]
        )
        assert [x.type for x in job.status.conditions if x.status == "True"] == ["SuccessCriteriaMet", "Complete"]
        assert job.status.succeeded == job.spec.completions
        assert job.metadata.annotations[c.ANNOTATION_JOB_COMPLETED_INDEXES] == ("0" if name == "js-init-0" else "0-1")

    all_pods = pods(core_v1, namespace)
    assert len(all_pods) == 5 and all(p.status.phase == "Succeeded" for p in all_pods)
    for pod in all_pods:
        labels, index = pod.metadata.labels, pod.metadata.annotations[c.JOB_COMPLETION_INDEX]
        job_name = labels[c.LABEL_JOB_NAME]
        assert re.fullmatch(rf"{job_name}-{index}-[a-z0-9]{{5}}", pod.metadata.name)
        assert labels[c.JOB_COMPLETION_INDEX] == index and labels[c.LABEL_JOB_NAME_LEGACY] == job_name
        assert labels[c.LABEL_CONTROLLER_UID] == labels[c.LABEL_CONTROLLER_UID_LEGACY] == found[job_name].metadata.uid
        assert labels[c.LABEL_REPLICATED_JOB_NAME] == job_name.split("-")[1]
        assert labels[c.LABEL_JOB_INDEX] == job_name.rsplit("-", 1)[1]
        assert (pod.spec.hostname, pod.spec.subdomain) == (f"{job_name}-{index}", "js")
        assert pod.metadata.owner_references[0].kind == "Job" and pod.metadata.owner_references[0].name == job_name
        if job_name != "js-init-0":
            log = core_v1.read_namespaced_pod_log(pod.metadata.name, namespace, _preload_content=False).data
            assert log.decode().startswith(f"index {index} ")

    svc = core_v1.read_namespaced_service("js", namespace)
    assert svc.spec.cluster_ip == "None" and svc.spec.selector == {c.LABEL_JOBSET_NAME: "js"}
    assert svc.spec.publish_not_ready_addresses is True
    assert svc.metadata.owner_references[0].uid == uid


def test_failing_container_fails_the_job_then_the_jobset(custom_objects, core_v1, kube_api_client, namespace):
    create_jobset(custom_objects, namespace, "fails", replicated_job("node", "import sys; sys.exit(1)", backoffLimit=1))
    failed = wait_condition(custom_objects, namespace, "fails", c.CONDITION_FAILED)
    assert condition(failed, c.CONDITION_FAILED)["reason"] == c.REASON_FAILED_JOBS
    assert condition(failed, c.CONDITION_FAILED)["message"] == (
        "jobset failed due to one or more job failures (first failed job: fails-node-0)"
    )
    assert failed["status"]["terminalState"] == "Failed"
    job = jobs(kube_api_client, namespace)["fails-node-0"]
    job_failed = next(x for x in job.status.conditions if x.type == "Failed")
    assert (job_failed.status, job_failed.reason) == ("True", "BackoffLimitExceeded")
    assert job.status.failed == 2  # the first pod and its one replacement (backoffLimit 1)
    assert sorted(p.status.phase for p in pods(core_v1, namespace)) == ["Failed", "Failed"]


def test_max_restarts_recreates_the_jobs(custom_objects, kube_api_client, namespace):
    create_jobset(
        custom_objects,
        namespace,
        "again",
        replicated_job("node", "import sys; sys.exit(1)", backoffLimit=0),
        failurePolicy={"maxRestarts": 1},
    )
    first_uid = wait_for(
        lambda: jobs(kube_api_client, namespace).get("again-node-0"), what="the first Job"
    ).metadata.uid
    failed = wait_condition(custom_objects, namespace, "again", c.CONDITION_FAILED)
    assert condition(failed, c.CONDITION_FAILED)["reason"] == c.REASON_REACHED_MAX_RESTARTS
    assert condition(failed, c.CONDITION_FAILED)["message"] == (
        "jobset failed due to reaching max number of restarts (first failed job: again-node-0)"
    )
    assert failed["status"]["restarts"] == 1 and failed["status"]["restartsCountTowardsMax"] == 1
    job = jobs(kube_api_client, namespace)["again-node-0"]
    assert job.metadata.uid != first_uid and job.metadata.labels[c.LABEL_RESTART_ATTEMPT] == "1"


def test_depends_on_runs_the_initializer_first(custom_objects, kube_api_client, namespace):
    node = replicated_job("node", "print('node')")
    node["dependsOn"] = [{"name": "initializer", "status": "Complete"}]
    create_jobset(
        custom_objects, namespace, "ordered", replicated_job("initializer", "import time; time.sleep(2)"), node
    )
    wait_condition(custom_objects, namespace, "ordered", c.CONDITION_COMPLETED)
    found = jobs(kube_api_client, namespace)
    assert found["ordered-node-0"].metadata.creation_timestamp >= found["ordered-initializer-0"].status.completion_time


def test_suspend_and_resume(custom_objects, core_v1, kube_api_client, namespace):
    create_jobset(custom_objects, namespace, "pausable", replicated_job("node", "import time; time.sleep(600)", 1, 2))
    before = {p.metadata.name for p in running_pods(core_v1, namespace, 2)}

    set_suspend(custom_objects, namespace, "pausable", True)
    suspended = wait_condition(custom_objects, namespace, "pausable", c.CONDITION_SUSPENDED)
    assert (
        condition(suspended, c.CONDITION_SUSPENDED)["reason"],
        condition(suspended, c.CONDITION_SUSPENDED)["message"],
    ) == (
        c.REASON_SUSPENDED,
        "jobset is suspended",
    )
    wait_for(lambda: pods(core_v1, namespace), lambda found: not found, what="the pods deleted")
    job = wait_for(
        lambda: jobs(kube_api_client, namespace)["pausable-node-0"],
        lambda j: any(x.type == "Suspended" and x.status == "True" for x in j.status.conditions or []),
        what="the Job Suspended",
    )
    assert job.metadata.annotations[c.ANNOTATION_JOB_SUSPEND] == "true"
    wait_for(
        lambda: get_jobset(custom_objects, namespace, "pausable")["status"]["replicatedJobsStatus"][0]["suspended"],
        lambda n: n == 1,
        what="replicatedJobsStatus suspended 1",
    )

    set_suspend(custom_objects, namespace, "pausable", False)
    resumed = wait_condition(custom_objects, namespace, "pausable", c.CONDITION_SUSPENDED, "False")
    assert condition(resumed, c.CONDITION_SUSPENDED)["reason"] == c.REASON_RESUMED
    after = {p.metadata.name for p in running_pods(core_v1, namespace, 2)}
    assert not after & before


def test_managed_by_another_controller_is_left_alone(custom_objects, core_v1, kube_api_client, namespace):
    create_jobset(
        custom_objects, namespace, "elsewhere", replicated_job("node", "print(1)"), managedBy=c.MANAGED_BY_MULTIKUEUE
    )
    create_jobset(custom_objects, namespace, "here", replicated_job("node", "print(1)"))
    wait_condition(custom_objects, namespace, "here", c.CONDITION_COMPLETED)
    # The JobSet created first was looked at before the second one completed, and left alone.
    assert "status" not in get_jobset(custom_objects, namespace, "elsewhere")
    assert sorted(jobs(kube_api_client, namespace)) == ["here-node-0"]
    assert [s.metadata.name for s in core_v1.list_namespaced_service(namespace).items] == ["here"]


def test_deleting_the_jobset_removes_its_jobs_pods_and_service(custom_objects, core_v1, kube_api_client, namespace):
    create_jobset(custom_objects, namespace, "doomed", replicated_job("node", "import time; time.sleep(600)"))
    running_pods(core_v1, namespace, 1)
    custom_objects.delete_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL, "doomed")

    def leftovers() -> list[str]:
        return (
            list(jobs(kube_api_client, namespace))
            + [p.metadata.name for p in pods(core_v1, namespace)]
            + [s.metadata.name for s in core_v1.list_namespaced_service(namespace).items]
        )

    wait_for(leftovers, lambda left: not left, what="the Jobs, pods and Service gone")


def test_a_job_not_owned_by_a_jobset_is_not_run(custom_objects, core_v1, kube_api_client, namespace):
    batch = client.BatchV1Api(kube_api_client)
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x", "command": ["true"]}]}}
    # It carries the jobset-name label, so the controller's watch sees it; no JobSet owns it.
    foreign = {"metadata": {"name": "foreign", "labels": {c.LABEL_JOBSET_NAME: "x"}}, "spec": {"template": template}}
    batch.create_namespaced_job(namespace, foreign)
    create_jobset(custom_objects, namespace, "owner", replicated_job("node", "print(1)"))
    wait_condition(custom_objects, namespace, "owner", c.CONDITION_COMPLETED)
    assert [p.metadata.labels[c.LABEL_JOB_NAME] for p in pods(core_v1, namespace)] == ["owner-node-0"]
    assert not batch.read_namespaced_job("foreign", namespace).status.conditions


def test_in_order_startup_waits_for_the_ready_jobs_of_each_replicated_job(
    custom_objects, core_v1, kube_api_client, namespace
):
    create_jobset(
        custom_objects,
        namespace,
        "inorder",
        replicated_job("first", "import time; time.sleep(600)"),
        replicated_job("second", "import time; time.sleep(600)"),
        startupPolicy={"startupPolicyOrder": "InOrder"},
    )
    done = wait_condition(custom_objects, namespace, "inorder", c.CONDITION_STARTUP_POLICY_COMPLETED)
    assert condition(done, c.CONDITION_STARTUP_POLICY_COMPLETED)["reason"] == c.REASON_IN_ORDER_COMPLETED
    assert condition(done, c.CONDITION_STARTUP_POLICY_IN_PROGRESS)["status"] == "False"
    first_pod = next(p for p in pods(core_v1, namespace) if p.metadata.labels[c.LABEL_REPLICATED_JOB_NAME] == "first")
    ready_at = next(x.last_transition_time for x in first_pod.status.conditions if x.type == "Ready")
    assert jobs(kube_api_client, namespace)["inorder-second-0"].metadata.creation_timestamp >= ready_at


def test_active_deadline_fails_the_job_and_the_jobset(custom_objects, core_v1, kube_api_client, namespace):
    create_jobset(
        custom_objects,
        namespace,
        "slow",
        replicated_job("node", "import time; time.sleep(600)", activeDeadlineSeconds=2),
    )
    failed = wait_condition(custom_objects, namespace, "slow", c.CONDITION_FAILED)
    assert condition(failed, c.CONDITION_FAILED)["reason"] == c.REASON_FAILED_JOBS
    job = jobs(kube_api_client, namespace)["slow-node-0"]
    assert next(x.reason for x in job.status.conditions if x.type == "Failed") == "DeadlineExceeded"
    wait_for(lambda: pods(core_v1, namespace), lambda found: not found, what="the running pod deleted")


def test_ttl_after_finished_deletes_the_jobset(custom_objects, kube_api_client, namespace):
    create_jobset(custom_objects, namespace, "brief", replicated_job("node", "print(1)"), ttlSecondsAfterFinished=1)

    def gone() -> bool:
        try:
            get_jobset(custom_objects, namespace, "brief")
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return False

    wait_for(gone, what="the JobSet deleted after its TTL")
    wait_for(lambda: jobs(kube_api_client, namespace), lambda found: not found, what="its Job deleted")


def test_created_suspended_runs_nothing_until_resumed(custom_objects, core_v1, kube_api_client, namespace):
    """Kueue's way: the JobSet is created suspended and resumed once admitted."""
    create_jobset(custom_objects, namespace, "queued", replicated_job("node", "print(1)", 1, 2), suspend=True)
    wait_condition(custom_objects, namespace, "queued", c.CONDITION_SUSPENDED)
    # The reconcile that creates the Jobs writes Suspended from the Jobs it listed before (none, as upstream's
    # does); the count follows on the next one.
    wait_for(
        lambda: get_jobset(custom_objects, namespace, "queued"),
        lambda js: [s.get("suspended") for s in js["status"].get("replicatedJobsStatus") or []] == [1],
        what="the Job counted suspended",
    )
    job = wait_for(
        lambda: jobs(kube_api_client, namespace)["queued-node-0"],
        lambda j: any(x.type == "Suspended" and x.status == "True" for x in j.status.conditions or []),
        what="the Job Suspended",
    )
    assert job.status.start_time is None and not pods(core_v1, namespace)

    set_suspend(custom_objects, namespace, "queued", False)
    done = wait_condition(custom_objects, namespace, "queued", c.CONDITION_COMPLETED)
    assert condition(done, c.CONDITION_SUSPENDED)["status"] == "False"
    job = jobs(kube_api_client, namespace)["queued-node-0"]
    resumed = next(x for x in job.status.conditions if x.type == "Suspended")
    assert (resumed.status, resumed.reason) == ("False", "JobResumed")
    assert job.status.start_time is not None and len(pods(core_v1, namespace)) == 2


def test_on_failure_by_default_counts_restarts_in_place(custom_objects, core_v1, kube_api_client, namespace):
    """No restartPolicy: the JobSet's default OnFailure; the kubelet restarts the container in place and the
    Job fails once the restarts reach backoffLimit."""
    rjob = replicated_job("node", "import sys; sys.exit(3)", backoffLimit=1)
    del rjob["template"]["spec"]["template"]["spec"]["restartPolicy"]
    create_jobset(custom_objects, namespace, "crashes", rjob)
    failed = wait_condition(custom_objects, namespace, "crashes", c.CONDITION_FAILED)
    assert condition(failed, c.CONDITION_FAILED)["reason"] == c.REASON_FAILED_JOBS
    job = jobs(kube_api_client, namespace)["crashes-node-0"]
    assert job.spec.template.spec.restart_policy == "OnFailure"
    assert next(x.reason for x in job.status.conditions if x.type == "Failed") == "BackoffLimitExceeded"
    assert job.status.failed == 1  # the one pod, deleted when the Job failed
    wait_for(lambda: pods(core_v1, namespace), lambda found: not found, what="the restarting pod deleted")


def test_failure_policy_rule_fails_the_jobset_on_a_job_failure_reason(custom_objects, kube_api_client, namespace):
    rules = [{"name": "deadline", "action": "FailJobSet", "onJobFailureReasons": ["DeadlineExceeded"]}]
    create_jobset(
        custom_objects,
        namespace,
        "ruled",
        replicated_job("node", "import time; time.sleep(600)", activeDeadlineSeconds=1),
        failurePolicy={"maxRestarts": 3, "rules": rules},
    )
    failed = wait_condition(custom_objects, namespace, "ruled", c.CONDITION_FAILED)
    assert condition(failed, c.CONDITION_FAILED)["reason"] == c.REASON_FAIL_JOBSET_ACTION
    assert condition(failed, c.CONDITION_FAILED)["message"] == (
        "applying FailJobSet failure policy action (first failed job: ruled-node-0)"
    )
    assert failed["status"]["restarts"] == 0


def test_launcher_after_ready_nodes_and_success_of_the_launcher_alone(
    custom_objects, core_v1, kube_api_client, namespace
):
    """The shape of upstream's MPI runtimes: the launcher waits for the nodes to be Ready; the JobSet completes
    when the launcher does (successPolicy targeting it), and then deletes the node Jobs still running."""
    launcher = replicated_job("launcher", "import time; time.sleep(3)")  # the nodes are read meanwhile
    launcher["dependsOn"] = [{"name": "node", "status": "Ready"}]
    create_jobset(
        custom_objects,
        namespace,
        "mpi",
        replicated_job("node", "import time; time.sleep(600)", 1, 2),
        launcher,
        successPolicy={"operator": "All", "targetReplicatedJobs": ["launcher"]},
    )
    launcher_job = wait_for(lambda: jobs(kube_api_client, namespace).get("mpi-launcher-0"), what="the launcher Job")
    node_pods = [p for p in pods(core_v1, namespace) if p.metadata.labels[c.LABEL_REPLICATED_JOB_NAME] == "node"]
    assert len(node_pods) == 2
    last_ready = max(next(x.last_transition_time for x in p.status.conditions if x.type == "Ready") for p in node_pods)
    assert launcher_job.metadata.creation_timestamp >= last_ready
    done = wait_condition(custom_objects, namespace, "mpi", c.CONDITION_COMPLETED)
    assert condition(done, c.CONDITION_COMPLETED)["reason"] == c.REASON_ALL_JOBS_COMPLETED
    wait_for(
        lambda: sorted(jobs(kube_api_client, namespace)),
        lambda names: names == ["mpi-launcher-0"],
        what="the node Job deleted",
    )


def test_events_on_the_jobset_and_its_job(custom_objects, core_v1, namespace):
    create_jobset(custom_objects, namespace, "noted", replicated_job("node", "print(1)"))
    wait_condition(custom_objects, namespace, "noted", c.CONDITION_COMPLETED)
    pod_name = pods(core_v1, namespace)[0].metadata.name

    def events() -> set[tuple[str, str, str, str, str]]:
        return {
            (e.involved_object.kind, e.involved_object.name, e.type, e.reason, e.message)
            for e in core_v1.list_namespaced_event(namespace).items
            if e.involved_object.kind in ("JobSet", "Job") and e.first_timestamp
        }

    wanted = {
        ("JobSet", "noted", "Normal", "AllJobsCompleted", "jobset completed successfully"),
        ("Job", "noted-node-0", "Normal", "SuccessfulCreate", f"Created pod: {pod_name}"),
        ("Job", "noted-node-0", "Normal", "Completed", "Job completed"),
    }
    wait_for(events, lambda found: wanted <= found, what="the JobSet's and the Job's events")


def test_a_pod_naming_a_missing_service_account_is_refused_as_admission_refuses_it(custom_objects, core_v1, namespace):
    """The ServiceAccount admission plugin's refusal (``admission.py``): the Job makes no pod and records
    FailedCreate with the apiserver's words, and makes it once the account exists."""
    rjob = replicated_job("node", "print(1)")
    rjob["template"]["spec"]["template"]["spec"]["serviceAccountName"] = "trainer-runner"
    create_jobset(custom_objects, namespace, "no-account", rjob)

    def refusals() -> list[str]:
        return [
            e.message
            for e in core_v1.list_namespaced_event(namespace).items
            if (e.involved_object.name, e.type, e.reason) == ("no-account-node-0", "Warning", "FailedCreate")
        ]

    (refused, *_) = wait_for(refusals, bool, what="the Job's FailedCreate")
    assert refused == (
        'Error creating: pods "no-account-node-0-0-" is forbidden: error looking up service account '
        f'{namespace}/trainer-runner: serviceaccount "trainer-runner" not found'
    )
    assert pods(core_v1, namespace) == []
    core_v1.create_namespaced_service_account(namespace, {"metadata": {"name": "trainer-runner"}})
    wait_condition(custom_objects, namespace, "no-account", c.CONDITION_COMPLETED)
    assert [p.spec.service_account_name for p in pods(core_v1, namespace)] == ["trainer-runner"]


def test_volume_claim_policies_create_the_claims_and_mount_them_in_the_jobs_that_use_them(
    custom_objects, core_v1, kube_api_client, namespace
):
    """As upstream's torchtune runtimes use them (``initializer``): before, the Job was refused (422, volume
    ``initializer`` not found) and the JobSet never ran."""
    using = replicated_job("init", "print('init')")
    using["template"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "initializer", "mountPath": "/workspace"}
    ]
    claim_spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    policies = [
        {"templates": [{"metadata": {"name": "initializer", "labels": {"team": "a"}}, "spec": claim_spec}]},
        {
            "retentionPolicy": {"whenDeleted": "Retain"},
            "templates": [{"metadata": {"name": "kept"}, "spec": claim_spec}],
        },
    ]
    js = create_jobset(
        custom_objects,
        namespace,
        "vc",
        using,
        replicated_job("node", "print('node')"),
        volumeClaimPolicies=policies,
    )
    wait_condition(custom_objects, namespace, "vc", c.CONDITION_COMPLETED)

    claim = core_v1.read_namespaced_persistent_volume_claim("initializer-vc", namespace)
    assert claim.metadata.labels == {"team": "a", c.LABEL_JOBSET_NAME: "vc"}
    owner = claim.metadata.owner_references[0]
    assert (owner.kind, owner.name, owner.uid, owner.controller) == ("JobSet", "vc", js["metadata"]["uid"], True)
    assert claim.spec.resources.requests == {"storage": "1Gi"}
    assert not core_v1.read_namespaced_persistent_volume_claim("kept-vc", namespace).metadata.owner_references

    found = jobs(kube_api_client, namespace)
    init_volumes = found["vc-init-0"].spec.template.spec.volumes
    assert [(v.name, v.persistent_volume_claim.claim_name) for v in init_volumes] == [("initializer", "initializer-vc")]
    assert not found["vc-node-0"].spec.template.spec.volumes

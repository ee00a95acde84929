"""The Kubeflow Trainer v2 adapter (:mod:`airflow_trainjob.families.trainer_v2`): a ``TrainJob``'s status, pods,
cleanup and events, as the lifecycle core and the drivers read them through the port, on objects in the shapes
kubeflow/trainer v2.3.0 and JobSet v0.12.0 write (:mod:`tests.families.trainer_v2_objects`)."""

from __future__ import annotations

import copy

import pytest
from kubeflow_trainer_api.models import (  # type: ignore[import-untyped]
    IoK8sApiCoreV1Pod,
    TrainerV1alpha1TrainJob,
)

from airflow_trainjob import families
from airflow_trainjob.domain.deadlines import Deadlines
from airflow_trainjob.domain.failures import ExitClass
from airflow_trainjob.domain.family import JobFamily
from airflow_trainjob.domain.lifecycle import Finished, JobWait, KeepWaiting, judge_gone, pods_stopped_at_terminal
from airflow_trainjob.families import is_known, trainer_v2
from airflow_trainjob.hooks import requests
from airflow_trainjob.hooks.addressing import JobAddress
from airflow_trainjob.links.training_job import job_url
from airflow_trainjob.triggers.events import FINISHED, event_payload
from airflow_trainjob.triggers.training_job import TrainingJobTrigger
from tests.families import trainer_v2_objects as v2
from tests.families.trainer_v2_objects import JOBSET_UID, NAME, T2, pod, terminated, train_job

FAMILY: JobFamily = trainer_v2.family("TrainJob")  # (mypy checks the adapter against the port)
REF = f"TrainJob {v2.NAMESPACE}/{NAME}"
STATUSES = {
    "suspended": v2.SUSPENDED,
    "resumed, created": v2.RESUMED_CREATED,
    "resumed, running": v2.RESUMED_RUNNING,
    "complete": v2.COMPLETE,
    "failed jobs": v2.FAILED_JOBS,
    "deadline exceeded": v2.DEADLINE_EXCEEDED,
    "runtime not supported": v2.RUNTIME_NOT_SUPPORTED,
}


def two_nodes_and_a_dataset_initializer() -> list[dict]:
    return [
        pod("dataset-initializer", 0, phase="Succeeded", containers=("dataset-initializer",)),
        pod("node", 1),
        pod("node", 0),
    ]


# --- the kind and its address ------------------------------------------------------------------------------------


def test_the_kind_and_its_address():
    assert FAMILY.kind == "TrainJob" and trainer_v2.kinds() == ("TrainJob",)
    assert FAMILY.resource.api_version == "trainer.kubeflow.org/v1alpha1"
    assert FAMILY.resource.name == "trainjobs.trainer.kubeflow.org"
    with pytest.raises(KeyError):
        trainer_v2.family("PyTorchJob")
    assert is_known("TrainJob") and families.family_of("TrainJob") is trainer_v2.TRAINJOB


@pytest.mark.parametrize("status", list(STATUSES.values()), ids=list(STATUSES))
def test_the_fixtures_are_in_upstreams_shapes(status):
    v2.upstream_shape(TrainerV1alpha1TrainJob, train_job(status))
    for found in two_nodes_and_a_dataset_initializer():
        v2.upstream_shape(IoK8sApiCoreV1Pod, found)


# --- what a status means -----------------------------------------------------------------------------------------


def test_a_job_suspended_then_resumed_is_queued_then_created_then_running():
    assert FAMILY.phase(v2.SUSPENDED) == "Suspended" and FAMILY.has_condition(v2.SUSPENDED, "Suspended")
    assert FAMILY.summary(v2.SUSPENDED) == "Suspended (Suspended: TrainJob is suspended)"
    resumed = v2.RESUMED_CREATED
    assert not FAMILY.has_condition(resumed, "Suspended"), "Suspended False (reason Resumed) holds no more"
    assert FAMILY.phase(resumed) == "Created"
    assert FAMILY.summary(resumed, {"node": 2}) == "Created — node (2 nodes): 1 active"
    assert FAMILY.phase(v2.RESUMED_RUNNING) == "Running"
    assert FAMILY.summary(v2.RESUMED_RUNNING, {"node": 2}) == "Running — node (2 nodes): 1 active, 1 ready"
    for status in (v2.SUSPENDED, resumed, v2.RESUMED_RUNNING):
        assert not FAMILY.is_terminal(status) and not FAMILY.is_failed(status) and not FAMILY.is_succeeded(status)
        assert FAMILY.controller_has_acted(status)


def test_complete_with_all_jobs_completed_is_the_success():
    status = v2.COMPLETE
    assert FAMILY.is_succeeded(status) and FAMILY.is_terminal(status) and not FAMILY.is_failed(status)
    assert FAMILY.phase(status) == "Complete" and FAMILY.has_condition(status, "Complete")
    assert FAMILY.summary(status, {"node": 2}) == (
        "Complete (AllJobsCompleted: jobset completed successfully) — node (2 nodes): 1 succeeded"
    )


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (
            v2.FAILED_JOBS,
            "Failed (FailedJobs: jobset failed due to one or more job failures (first failed job: digits-node-0)) "
            "— node (2 nodes): 1 failed",
        ),
        (
            v2.DEADLINE_EXCEEDED,
            "Failed (DeadlineExceeded: TrainJob exceeded its active deadline) — node (2 nodes): none finished",
        ),
        (
            v2.RUNTIME_NOT_SUPPORTED,
            "Failed (TrainingRuntimeNotSupported: unsupported runtime: MyRuntime.example.org) — node (2 nodes): "
            "no job yet",
        ),
    ],
    ids=["FailedJobs", "DeadlineExceeded", "TrainingRuntimeNotSupported"],
)
def test_failed_with_each_reason_is_a_failure(status, words):
    assert FAMILY.is_failed(status) and FAMILY.is_terminal(status) and not FAMILY.is_succeeded(status)
    assert FAMILY.phase(status) == "Failed"
    assert FAMILY.summary(status, {"node": 2}) == words


def test_failed_and_complete_both_true_the_later_decides():
    complete, failed = v2.COMPLETE["conditions"][0], v2.DEADLINE_EXCEEDED["conditions"][0]
    assert FAMILY.phase({"conditions": [complete, failed]}) == "Failed"  # same time: Failed
    later = {**complete, "lastTransitionTime": "2026-12-07T10:05:00Z"}
    assert FAMILY.is_succeeded({"conditions": [failed, later]})


def test_no_status_is_not_started_and_a_failed_child_job_of_a_live_job_is_restarting():
    for nothing in (None, {}, {"conditions": None}):
        assert FAMILY.phase(nothing) == "NotStarted" and not FAMILY.controller_has_acted(nothing)
        assert FAMILY.summary(nothing) == "NotStarted"
    assert FAMILY.summary(None, {"node": 1}) == "NotStarted — node (1 node): no job yet"
    assert FAMILY.phase({"jobsStatus": v2.jobs(node={"failed": 1, "active": 1})}) == "Restarting"
    waiting = {"jobsStatus": v2.jobs(dataset_initializer={"active": 1}, node={})}
    assert FAMILY.phase(waiting) == "Created"
    assert FAMILY.summary(waiting) == "Created — dataset-initializer: 1 active; node: waiting"
    ran = {"jobsStatus": v2.jobs(dataset_initializer={"succeeded": 1}, node={"active": 1})}
    assert FAMILY.phase(ran) == "Running", "an initializer done: the job started, the trainer pending"


def test_the_trainers_progress_joins_the_summary():
    status = {
        **v2.RESUMED_RUNNING,
        "trainerStatus": {"progressPercentage": 42, "estimatedRemainingSeconds": 120, "lastUpdatedTime": T2},
    }
    assert FAMILY.summary(status) == "Running — node: 1 active, 1 ready; 42% done, about 120 s left"


def test_the_models_status_reads_as_its_json():
    model = TrainerV1alpha1TrainJob.model_validate(train_job(v2.FAILED_JOBS)).status
    assert FAMILY.is_failed(model) and FAMILY.summary(model) == FAMILY.summary(v2.FAILED_JOBS)


# --- the pods ----------------------------------------------------------------------------------------------------


def test_pods_of_two_nodes_and_a_dataset_initializer():
    found = two_nodes_and_a_dataset_initializer()
    assert [FAMILY.replica_of(p) for p in found] == [("dataset-initializer", 0), ("node", 1), ("node", 0)]
    assert FAMILY.lead_pod(found) is found[2]
    assert [FAMILY.log_container(p) for p in found] == ["dataset-initializer", "node", "node"]
    assert FAMILY.pod_selector(NAME) == "jobset.sigs.k8s.io/jobset-name=digits"
    assert FAMILY.pod_selector(NAME, 0) == (
        "jobset.sigs.k8s.io/jobset-name=digits,batch.kubernetes.io/job-completion-index=0"
    )
    assert FAMILY.any_job_pod_selector == "jobset.sigs.k8s.io/jobset-name"
    assert FAMILY.lead_pod(found[:1]) is None, "an initializer never leads: the trainer's node 0 does"


def test_the_launcher_leads_and_of_a_replicas_pods_the_newest_attempt():
    launcher = pod("launcher", 0)
    assert FAMILY.lead_order == ("launcher", "node")
    assert FAMILY.lead_pod([pod("node", 0), launcher]) is launcher and FAMILY.log_container(launcher) == "node"
    failed = pod("node", 0, phase="Failed", suffix="aaaaa", created="2026-12-07T10:00:01Z")
    replaced = pod("node", 0, suffix="bbbbb", created="2026-12-07T10:00:30Z")
    earlier_restart = pod("node", 0, suffix="ccccc", created="2026-12-07T10:00:59Z")
    restarted = pod("node", 0, attempt=1, suffix="ddddd", created="2026-12-07T10:00:40Z")
    assert FAMILY.lead_pod([replaced, failed]) is replaced
    assert FAMILY.lead_pod([restarted, earlier_restart, failed]) is restarted


def test_a_replicated_job_of_several_jobs_names_each_jobs_pods():
    found = [pod("worker", 1, job_index=1, replicas=2), pod("worker", 0, job_index=0, replicas=2)]
    assert [FAMILY.replica_of(p) for p in found] == [("worker-1", 1), ("worker-0", 0)]
    assert FAMILY.replica_of({"metadata": {"name": "other"}}) == ("", 0)


def test_a_failed_node_pod_with_exit_code_1_is_a_permanent_end():
    failed = pod("node", 1, phase="Failed", container_statuses=[terminated("node", 1, "Error", message="boom")])
    found = [pod("node", 0, container_statuses=[]), failed]
    (end,) = FAMILY.container_ends(found)
    assert (end.pod, end.replica, end.container, end.exit_code) == (failed["metadata"]["name"], "node-1", "node", 1)
    assert end.exit_class is ExitClass.PERMANENT and end.failed and not end.init
    assert (
        end.describe() == f"node-1 (pod {failed['metadata']['name']}, container node): exit code 1 (Permanent), "
        "Error: boom"
    )


def test_an_init_container_failure_is_named_and_its_log_speaks():
    crashing = {
        "name": "fetch-data",
        "restartCount": 2,
        "ready": False,
        "image": "busybox",
        "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
        "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "finishedAt": T2}},
    }
    held = pod(
        "node",
        0,
        phase="Pending",
        init=("fetch-data",),
        init_statuses=[crashing],
        container_statuses=[
            {
                "name": "node",
                "ready": False,
                "restartCount": 0,
                "image": "python:3.11",
                "imageID": "",
                "state": {"waiting": {"reason": "PodInitializing"}},
            }
        ],
    )
    v2.upstream_shape(IoK8sApiCoreV1Pod, held)
    (end,) = FAMILY.container_ends([held])
    assert end.init and end.restarted and end.source == "node-0 (initContainer fetch-data)"
    assert end.exit_class is ExitClass.PERMANENT
    assert FAMILY.log_container(held) == "fetch-data"
    (reason,) = FAMILY.pending_reasons([held])
    assert reason == (
        f"node-0 ({held['metadata']['name']}) Pending: Init:CrashLoopBackOff; initContainer fetch-data "
        "CrashLoopBackOff: back-off 20s; last exit code 2 (Permanent), Error"
    )


def test_a_running_step_whose_container_cannot_start_says_why_and_a_running_one_says_nothing():
    """A Job's pod restarts in place: one whose container never starts stays Running in CrashLoopBackOff (the
    kubelet's phase), and says the start error; a pod that runs has nothing to say."""
    said = "no command specified (the image's entrypoint is not available: the image is ignored)"
    crashing = {
        "name": "dataset-initializer",
        "ready": False,
        "restartCount": 2,
        "image": "ghcr.io/kubeflow/trainer/dataset-initializer",
        "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s restarting failed container"}},
        "lastState": {"terminated": {"exitCode": 128, "reason": "StartError", "message": said, "finishedAt": v2.T2}},
    }
    initializer = pod("dataset-initializer", 0, containers=("dataset-initializer",), container_statuses=[crashing])
    v2.upstream_shape(IoK8sApiCoreV1Pod, initializer)
    running = pod("node", 0, container_statuses=[{**crashing, "name": "node", "state": {"running": {}}}])
    assert FAMILY.pending_reasons([initializer, running]) == [
        f"dataset-initializer-0 ({initializer['metadata']['name']}) Running: container dataset-initializer "
        f"CrashLoopBackOff: back-off 20s restarting failed container; last exit code 128 (Retryable), StartError: {said}"
    ]
    # A v1 job's running pods are not read so (its lines are unchanged).
    assert families.family_of("PyTorchJob").pending_reasons([initializer]) == []


# --- cleanup, the spec, events -----------------------------------------------------------------------------------


def test_nothing_is_held_and_the_end_stops_no_pod():
    job = train_job(v2.FAILED_JOBS)
    policy = FAMILY.user_run_policy(job)
    assert (policy.clean_pod_policy, policy.ttl_seconds_after_finished, policy.held) == ("None", None, False)
    assert FAMILY.cleanup_policy_field == ""  # no such field: no message names one
    stop = pods_stopped_at_terminal(REF, job, two_nodes_and_a_dataset_initializer(), FAMILY)
    assert stop.pods == () and stop.line is None


def test_desired_replicas_are_the_trainers_num_nodes_or_unknown():
    assert FAMILY.desired_replicas(train_job()) == {"node": 2}
    without = train_job()
    del without["spec"]["trainer"]["numNodes"]
    assert FAMILY.desired_replicas(without) == {} and FAMILY.desired_replicas(None) == {}
    assert FAMILY.desired_replicas({"spec": {"trainer": {"numNodes": True}}}) == {}


def test_the_spec_summary_keeps_no_argument_of_the_command():
    spec = train_job(suspend=True, initializer={"dataset": {"storageUri": "hf://user:token@x/y"}})["spec"]
    assert FAMILY.spec_summary(spec) == {
        "runtimeRef": {
            "name": "torch-distributed",
            "kind": "ClusterTrainingRuntime",
            "apiGroup": "trainer.kubeflow.org",
        },
        "trainer": {"numNodes": 2, "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime", "command": ["torchrun"]},
        "initializer": {"dataset": {}},
        "suspend": True,
    }
    assert FAMILY.spec_summary({}) == {}


def jobset_event(reason: str, message: str, uid: str = JOBSET_UID, when: str = T2) -> dict:
    return {
        "reason": reason,
        "message": message,
        "type": "Normal" if reason == "AllJobsCompleted" else "Warning",
        "involvedObject": {"kind": "JobSet", "name": NAME, "namespace": v2.NAMESPACE, "uid": uid},
        "lastTimestamp": when,
    }


def test_events_announce_no_end_of_the_trainjob_but_the_jobsets_end_reads_by_its_uid():
    events = [
        jobset_event("AllJobsCompleted", "jobset completed successfully"),
        {
            "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
            "involvedObject": {"kind": "Job", "name": f"{NAME}-node-0", "uid": "job-uid-node"},
        },
    ]
    assert FAMILY.status_from_events(events, v2.UID) is None
    assert FAMILY.ends_from_events(events, NAME) == []
    announced = trainer_v2.status_from_jobset_events(events, JOBSET_UID)
    assert announced is not None and FAMILY.is_succeeded(announced)
    assert announced["conditions"][0]["reason"] == "AllJobsCompleted"
    failed = [*events, jobset_event("FailedJobs", "jobset failed", when="2026-12-07T10:09:00Z")]
    assert FAMILY.is_failed(trainer_v2.status_from_jobset_events(failed, JOBSET_UID))
    assert trainer_v2.status_from_jobset_events(events, "another-jobset") is None
    assert trainer_v2.status_from_jobset_events(events, None) is None


# --- the lifecycle core through the port ---------------------------------------------------------------------------


def test_the_lifecycle_core_waits_through_the_queue_and_ends_on_complete_or_failed():
    wait = JobWait(REF, Deadlines(started_at=0.0, family=FAMILY), FAMILY, desired=FAMILY.desired_replicas(train_job()))
    seen = wait.seen(train_job(v2.SUSPENDED, suspend=True), 1.0)
    assert isinstance(seen, KeepWaiting)
    assert seen.lines.progress == f"{REF}: Suspended (Suspended: TrainJob is suspended) — node (2 nodes): no job yet"
    assert seen.lines.queue is not None and "suspended: not admitted yet" in seen.lines.queue
    assert isinstance(wait.seen(train_job(v2.RESUMED_RUNNING), 2.0), KeepWaiting)
    done = wait.seen(train_job(v2.COMPLETE), 3.0)
    assert isinstance(done, Finished) and not done.failed
    failed = JobWait(REF, Deadlines(started_at=0.0, family=FAMILY), FAMILY).seen(train_job(v2.DEADLINE_EXCEEDED), 1.0)
    assert isinstance(failed, Finished) and failed.failed and "DeadlineExceeded" in failed.summary
    gone = judge_gone(REF, train_job(copy.deepcopy(v2.FAILED_JOBS)), FAMILY)
    assert isinstance(gone, Finished) and gone.failed and gone.gone


# --- the drivers that read the port, with the adapter registered for the test only ----------------------------------


@pytest.fixture
def registered():
    """The adapter, as :func:`~airflow_trainjob.families.family_of` gives it."""
    return families.family_of("TrainJob")


def test_the_drivers_address_select_link_and_summarise_a_trainjob_through_the_port(registered):
    assert registered is trainer_v2.TRAINJOB
    address = JobAddress("TrainJob", "ml", NAME)
    assert address.object() == ("trainer.kubeflow.org", "v1alpha1", "ml", "trainjobs", NAME)
    assert address.pod_selector == "jobset.sigs.k8s.io/jobset-name=digits"
    listing = requests.list_job_pods(NAME, "ml", 0, kind="TrainJob")
    assert listing.options["label_selector"] == (
        "jobset.sigs.k8s.io/jobset-name=digits,batch.kubernetes.io/job-completion-index=0"
    )
    assert job_url("/{kind}/{plural}/{namespace}/{name}", "TrainJob", "ml", NAME) == "/TrainJob/trainjobs/ml/digits"
    payload = event_payload(FINISHED, "done", train_job(v2.COMPLETE))
    assert payload["job"]["spec"]["trainer"]["command"] == ["torchrun"], "never the command's arguments"


def test_the_triggers_judging_reads_a_trainjob(registered):
    # (target_conditions given: the trigger's default target is v1's Succeeded, not read through the port yet)
    trigger = TrainingJobTrigger(
        kind="TrainJob", name=NAME, namespace="ml", target_conditions=["Complete"], follow_lead_log=True
    )
    assert isinstance(trigger._judge_seen(train_job(v2.SUSPENDED, suspend=True)), KeepWaiting)
    assert isinstance(trigger._judge_seen(train_job(v2.RESUMED_RUNNING)), KeepWaiting)
    done = trigger._judge_seen(train_job(v2.COMPLETE))
    assert isinstance(done, Finished) and not done.failed
    failed = trigger._judge_seen(train_job(v2.FAILED_JOBS))
    assert isinstance(failed, Finished) and failed.failed and failed.summary.startswith("Failed (FailedJobs: ")


# --- what the port gained when the family was registered ------------------------------------------------------------


def test_its_words_for_success_targets_and_suspension():
    assert FAMILY.success_condition == "Complete" and FAMILY.target_conditions == ("Complete", "Suspended")
    assert FAMILY.suspend_field == "spec.suspend"
    assert FAMILY.is_spec_suspended(train_job(suspend=True)) and not FAMILY.is_spec_suspended(train_job())
    assert "kubeflow-trainer-controller-manager" in FAMILY.no_controller_hint("ml")


@pytest.mark.parametrize(
    ("status", "started"),
    [
        (v2.SUSPENDED, False),
        (v2.RESUMED_CREATED, False),  # a node Job active, none ready: pending
        (v2.RESUMED_RUNNING, True),
        (v2.COMPLETE, True),
        (v2.FAILED_JOBS, True),
        (None, False),
    ],
)
def test_it_started_once_a_node_job_is_ready_or_it_finished(status, started):
    assert FAMILY.has_started(status) is started
    assert FAMILY.started_since_admission(status, 0.0) is started


def test_a_deadline_is_retryable_and_an_unserved_runtime_is_not_by_their_reasons_alone():
    assert FAMILY.permanent_by_reason(v2.DEADLINE_EXCEEDED) is False
    assert FAMILY.permanent_by_reason(v2.RUNTIME_NOT_SUPPORTED) is True
    assert FAMILY.permanent_by_reason(v2.FAILED_JOBS) is None  # the failed node's exit decides
    assert FAMILY.restart_policies(train_job()) == {}


def test_its_pods_are_told_apart_by_the_pod_token_else_by_name_and_creation():
    mine = train_job()
    mine["metadata"]["annotations"] = {"airflow-trainjob/pod-token": "abc123"}
    tokened = pod("node", 0)
    tokened["metadata"]["labels"]["airflow-trainjob/pod-token"] = "abc123"
    predecessors = pod("node", 0)
    predecessors["metadata"]["labels"]["airflow-trainjob/pod-token"] = "old999"
    assert FAMILY.owns_pod(mine, tokened) and not FAMILY.owns_pod(mine, predecessors)
    assert FAMILY.job_name_of(tokened) == NAME and FAMILY.job_name_of({"metadata": {}}) is None
    made_elsewhere = train_job()  # no token: its JobSet's name, and no pod older than the TrainJob
    older = pod("node", 1)
    older["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    assert FAMILY.owns_pod(made_elsewhere, pod("node", 0)) and not FAMILY.owns_pod(made_elsewhere, older)
    assert not FAMILY.owns_pod(made_elsewhere, {"metadata": {"labels": {"jobset.sigs.k8s.io/jobset-name": "other"}}})


def test_the_summary_dates_the_run_from_its_admission_to_its_end_and_carries_its_steps_and_progress():
    from airflow_trainjob.domain.summary import job_summary

    progress = {"progressPercentage": 100, "metrics": [{"name": "loss", "value": "0.12"}]}
    done = train_job({**copy.deepcopy(v2.COMPLETE), "trainerStatus": progress})
    done["status"]["conditions"].insert(0, v2.condition("Suspended", "False", "Resumed", "TrainJob is resumed"))
    summary = job_summary(done, FAMILY)
    assert (summary["startTime"], summary["completionTime"]) == (v2.T1, v2.T2)
    assert summary["duration"] is not None and summary["duration"] > 0
    assert summary["jobsStatus"] == v2.COMPLETE["jobsStatus"] and summary["trainerStatus"] == progress
    never_suspended = job_summary(train_job(v2.COMPLETE), FAMILY)
    assert never_suspended["startTime"] == v2.T0  # its creation
    assert job_summary(train_job(v2.RESUMED_RUNNING), FAMILY)["completionTime"] is None


# ---- the runtime a TrainJob needs before its create --------------------------------------------


def _manifest(runtime_ref: dict, namespace: str = "ml") -> dict:
    return {"kind": "TrainJob", "metadata": {"name": "t", "namespace": namespace}, "spec": {"runtimeRef": runtime_ref}}


def test_the_runtime_is_a_prerequisite_cluster_scoped_by_default():
    (needed,) = trainer_v2.TRAINJOB.prerequisites(_manifest({"name": "torch-distributed"}))
    assert (needed.kind, needed.name, needed.namespace) == ("ClusterTrainingRuntime", "torch-distributed", None)
    assert needed.resource.name == "clustertrainingruntimes.trainer.kubeflow.org"
    assert needed.missing_message("TrainJob ml/t", "404 NotFound") == (
        'TrainJob ml/t names ClusterTrainingRuntime "torch-distributed", which does not exist (404 NotFound to get '
        "clustertrainingruntimes.trainer.kubeflow.org torch-distributed): name one that exists (kubectl get "
        "clustertrainingruntimes) or create it; nothing was created"
    )


def test_a_training_runtime_is_read_in_the_trainjobs_namespace():
    ref = {"name": "mine", "kind": "TrainingRuntime", "apiGroup": "trainer.kubeflow.org"}
    (needed,) = trainer_v2.TRAINJOB.prerequisites(_manifest(ref, "team-a"))
    assert (needed.resource.plural, needed.namespace) == ("trainingruntimes", "team-a")
    assert needed.listing == "kubectl get trainingruntimes -n team-a"
    assert 'TrainingRuntime "mine" in namespace team-a, which does not' in needed.missing_message("x", "404 NotFound")


@pytest.mark.parametrize(
    "ref",
    [
        {"name": "r", "apiGroup": "example.com"},  # another group's runtime: not the trainer's to check
        {"name": "r", "kind": "SomeRuntime"},
        {"kind": "ClusterTrainingRuntime"},  # no name: the create's validation says so
        {},
    ],
)
def test_no_prerequisite_the_provider_cannot_read(ref):
    assert trainer_v2.TRAINJOB.prerequisites(_manifest(ref)) == ()


def test_a_v1_job_has_no_prerequisite():
    assert families.family_of("PyTorchJob").prerequisites({"kind": "PyTorchJob", "spec": {}}) == ()


# --- the objects whose events explain the TrainJob ----------------------------------------------------------------


def test_the_events_worth_reading_are_the_trainjobs_its_jobsets_and_each_steps_job():
    assert FAMILY.event_names(train_job()) == {NAME}  # no JobSet counted yet: no Job known
    job = train_job({"jobsStatus": v2.jobs(**{"dataset-initializer": {"succeeded": 1}, "node": {"active": 1}})})
    assert FAMILY.event_names(job) == {NAME, f"{NAME}-dataset-initializer-0", f"{NAME}-node-0"}


def test_a_v1_job_explains_itself_in_its_own_events():
    job = {"metadata": {"name": "mnist"}, "status": {"replicaStatuses": {"Master": {"active": 1}}}}
    assert families.family_of("PyTorchJob").event_names(job) == {"mnist"}

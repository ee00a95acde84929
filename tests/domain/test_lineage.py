"""What a training task tells OpenLineage (airflow_trainjob.domain.lineage), field by field: both families, a job that
succeeded and one that failed, the datasets a storage URI names, and nothing secret copied."""

from __future__ import annotations

import json

import pytest

from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY
from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.lineage import (
    DatasetName,
    dataset_of_uri,
    describe_failure,
    describe_job,
    describe_run,
    initializer_datasets,
)
from airflow_trainjob.families import family_of

SECRET = "hunter2-not-to-be-seen"


def pod_template(image: str, init_image: str | None = None) -> dict:
    spec: dict = {
        "containers": [
            {
                "name": "pytorch",
                "image": image,
                "command": ["python", "-c", f"print('{SECRET}')"],
                "env": [{"name": "TOKEN", "value": SECRET}],
            }
        ]
    }
    if init_image:
        spec["initContainers"] = [{"name": "fetch", "image": init_image}]
    return {"spec": spec}


PYTORCH_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {
        "name": "train-abc",
        "namespace": "ml",
        # The provider holds the user's cleanup while the task runs; the facet says what the user asked.
        "annotations": {
            ANNOTATION_HELD_RUN_POLICY: json.dumps({"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 60})
        },
    },
    "spec": {
        "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 2, "activeDeadlineSeconds": 600, "suspend": False},
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": pod_template("pytorch/pytorch:2.4", init_image="busybox:1")},
            "Worker": {"replicas": 3, "template": pod_template("pytorch/pytorch:2.4")},
        },
    },
}

TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "tj-abc", "namespace": "ml"},
    "spec": {
        "runtimeRef": {
            "name": "torch-distributed",
            "kind": "ClusterTrainingRuntime",
            "apiGroup": "trainer.kubeflow.org",
        },
        "trainer": {
            "image": "ghcr.io/me/train:1",
            "numNodes": 2,
            "numProcPerNode": 4,
            "env": [{"name": "TOKEN", "value": SECRET}],
            "command": ["torchrun", SECRET],
        },
        "initializer": {
            "dataset": {"storageUri": "hf://tatsu-lab/alpaca", "env": [{"name": "HF_TOKEN", "value": SECRET}]},
            "model": {"storageUri": "s3://models/llama/3b?X-Amz-Signature=" + SECRET, "secretRef": {"name": SECRET}},
        },
        "activeDeadlineSeconds": 3600,
        "managedBy": "trainer.kubeflow.org/trainjob-controller",
    },
}


def with_status(job: dict, uid: str, status: dict) -> dict:
    return {**job, "metadata": {**job["metadata"], "uid": uid}, "status": status}


# ---- the job facet -------------------------------------------------------------------------------------------------


def test_a_pytorchjob_is_described_by_its_replicas_images_and_the_run_policy_the_user_asked_for():
    described = describe_job(PYTORCH_JOB, family_of("PyTorchJob"))
    assert described == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "namespace": "ml",
        "replicas": {"Master": 1, "Worker": 3},
        "images": {"Master": ["busybox:1", "pytorch/pytorch:2.4"], "Worker": ["pytorch/pytorch:2.4"]},
        # cleanPodPolicy and the TTL as asked (held: the spec sent says None and no TTL)
        "runPolicy": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": 600,
            "suspend": False,
            "cleanPodPolicy": "All",
            "ttlSecondsAfterFinished": 60,
        },
    }
    assert SECRET not in json.dumps(described)


def test_a_trainjob_is_described_by_its_runtime_nodes_image_and_run_settings():
    described = describe_job(TRAINJOB, family_of("TrainJob"))
    assert described == {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "namespace": "ml",
        "runtime": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"},
        "replicas": {"node": 2},
        "images": {"node": ["ghcr.io/me/train:1"]},
        "runPolicy": {"activeDeadlineSeconds": 3600, "managedBy": "trainer.kubeflow.org/trainjob-controller"},
        "initializers": ["dataset", "model"],
        "processesPerNode": 4,
    }
    assert SECRET not in json.dumps(described)


def test_a_trainjob_that_leaves_nodes_and_image_to_its_runtime_says_none():
    job = {**TRAINJOB, "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"command": ["x"]}}}
    described = describe_job(job, family_of("TrainJob"))
    assert (described["replicas"], described["images"], described["runPolicy"], described["initializers"]) == (
        {},
        {},
        {},
        [],
    )
    assert "processesPerNode" not in described


def test_a_job_without_its_spec_is_described_by_its_identity_only():
    event_job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "ml"}}
    assert describe_job(event_job, family_of("PyTorchJob")) == {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "namespace": "ml",
    }


# ---- the run facet -------------------------------------------------------------------------------------------------


def test_the_manifest_before_the_job_exists_gives_its_name_and_namespace_only():
    assert describe_run(PYTORCH_JOB, family_of("PyTorchJob")) == {"name": "train-abc", "namespace": "ml"}


def test_a_succeeded_pytorchjob_run_has_its_uid_conditions_and_duration():
    status = {
        "startTime": "2026-12-07T10:00:00Z",
        "completionTime": "2026-12-07T10:01:30Z",
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "lastTransitionTime": "2026-12-07T09:59:59Z",
            },
            {"type": "Running", "status": "False", "reason": "PyTorchJobRunning", "message": "running"},
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded", "message": "x" * 600},
        ],
    }
    run = describe_run(with_status(PYTORCH_JOB, "uid-1", status), family_of("PyTorchJob"))
    assert run == {
        "name": "train-abc",
        "namespace": "ml",
        "uid": "uid-1",
        "phase": "Succeeded",
        "conditions": [
            {
                "type": "Created",
                "status": "True",
                "reason": "PyTorchJobCreated",
                "lastTransitionTime": "2026-12-07T09:59:59Z",
            },
            {"type": "Running", "status": "False", "reason": "PyTorchJobRunning", "message": "running"},
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded", "message": "x" * 500},
        ],
        "startTime": "2026-12-07T10:00:00Z",
        "completionTime": "2026-12-07T10:01:30Z",
        "durationSeconds": 90.0,
    }


def test_a_failed_trainjob_run_times_come_from_its_conditions():
    status = {
        "conditions": [
            {"type": "Suspended", "status": "False", "reason": "Resumed", "lastTransitionTime": "2026-12-07T10:00:10Z"},
            {
                "type": "Failed",
                "status": "True",
                "reason": "TrainingFailed",
                "lastTransitionTime": "2026-12-07T10:00:40Z",
            },
        ]
    }
    job = with_status(TRAINJOB, "uid-2", status)
    job["metadata"]["creationTimestamp"] = "2026-12-07T10:00:00Z"
    run = describe_run(job, family_of("TrainJob"))
    assert (run["uid"], run["phase"]) == ("uid-2", "Failed")
    assert [c["reason"] for c in run["conditions"]] == ["Resumed", "TrainingFailed"]
    assert (run["startTime"], run["completionTime"], run["durationSeconds"]) == (
        "2026-12-07T10:00:10Z",
        "2026-12-07T10:00:40Z",
        30.0,
    )


def test_a_running_job_has_no_completion_nor_duration():
    status = {"startTime": "2026-12-07T10:00:00Z", "conditions": [{"type": "Running", "status": "True"}]}
    run = describe_run(with_status(PYTORCH_JOB, "u", status), family_of("PyTorchJob"))
    assert run["phase"] == "Running" and "completionTime" not in run and "durationSeconds" not in run


# ---- the failure facet ---------------------------------------------------------------------------------------------


def test_the_failure_names_each_failed_replica_by_its_first_failed_run_never_its_message():
    ends = [
        ContainerEnd("j-worker-1", "Worker-1", "pytorch", 1, "Error", message=SECRET),
        ContainerEnd("j-master-0", "Master-0", "pytorch", 0, "Completed"),  # not a failure
        ContainerEnd("j-worker-2", "Worker-2", "pytorch", 137, "OOMKilled"),
        ContainerEnd("j-worker-0", "Worker-0", "", None, "Evicted"),
        ContainerEnd("j-worker-1", "Worker-1", "pytorch", 143, "Error"),  # restarted, then stopped
        ContainerEnd("j-worker-1", "Worker-1", "fetch", 2, "Error", init=True),  # its init container: apart
    ]
    failure = describe_failure(ends, permanent=True)
    assert failure == {
        "permanent": True,
        "failedReplicas": [
            {
                "replica": "Worker-1",
                "pod": "j-worker-1",
                "container": "pytorch",
                "exitCode": 1,
                "reason": "Error",
                "exitClass": "Permanent",
                "failedRuns": 2,
            },
            {
                "replica": "Worker-2",
                "pod": "j-worker-2",
                "container": "pytorch",
                "exitCode": 137,
                "reason": "OOMKilled",
                "exitClass": "OOMKilled",
                "failedRuns": 1,
            },
            {
                "replica": "Worker-0",
                "pod": "j-worker-0",
                "container": "",
                "exitCode": None,
                "reason": "Evicted",
                "exitClass": "Evicted",
                "failedRuns": 1,
            },
            {
                "replica": "Worker-1",
                "pod": "j-worker-1",
                "container": "fetch",
                "exitCode": 2,
                "reason": "Error",
                "exitClass": "Permanent",
                "failedRuns": 1,
            },
        ],
    }
    assert SECRET not in json.dumps(failure)


def test_a_failure_no_container_explains_has_no_failed_replicas():
    assert describe_failure([], permanent=False) == {"permanent": False, "failedReplicas": []}


# ---- datasets ------------------------------------------------------------------------------------------------------


def test_a_trainjob_initializers_storage_uris_are_its_input_datasets_without_query_or_user_info():
    assert initializer_datasets(TRAINJOB) == [
        DatasetName("hf", "tatsu-lab/alpaca", "dataset"),
        DatasetName("s3://models", "llama/3b", "model"),
    ]


def test_a_v1_job_and_a_trainjob_without_initializer_have_no_datasets():
    assert initializer_datasets(PYTORCH_JOB) == []
    assert initializer_datasets({**TRAINJOB, "spec": {"runtimeRef": {"name": "r"}}}) == []


@pytest.mark.parametrize(
    ("uri", "namespace", "name"),
    [
        ("s3://bucket/path/to/data.parquet", "s3://bucket", "path/to/data.parquet"),
        ("s3a://bucket/key", "s3://bucket", "key"),
        ("gcs://bucket/dir/", "gs://bucket", "dir/"),
        ("gs://bucket", "gs://bucket", "/"),
        ("hdfs://namenode:8020/data/x", "hdfs://namenode:8020", "data/x"),
        ("file:///mnt/data/set", "file", "/mnt/data/set"),
        ("s3://AKIA:secret@bucket/key?token=1#frag", "s3://bucket", "key"),
        ("hf://meta-llama/Llama-3.2-1B-Instruct", "hf", "meta-llama/Llama-3.2-1B-Instruct"),
        ("cache://schema/table", "cache", "schema/table"),
        ("hf://Meta-Llama/Llama-3.1-8B", "hf", "Meta-Llama/Llama-3.1-8B"),  # an organisation's case kept
        (
            "abfss://mycontainer@myaccount.dfs.core.windows.net/data/train",
            "abfss://mycontainer@myaccount.dfs.core.windows.net",
            "data/train",
        ),
        ("wasbs://box@acct.blob.core.windows.net/k", "wasbs://box@acct.blob.core.windows.net", "k"),
        ("s3://user@bucket/key", "s3://bucket", "key"),  # user info is credentials elsewhere
        ("pvc://claim-a/datasets/train", "pvc://ml/claim-a", "datasets/train"),
    ],
)
def test_a_storage_uri_names_its_dataset_as_openlineage_names_its_scheme(uri, namespace, name):
    assert dataset_of_uri(uri, "ml") == DatasetName(namespace, name)


@pytest.mark.parametrize("uri", ["", "not a uri", "s3://", "relative/path"])
def test_what_is_not_a_scheme_uri_names_no_dataset(uri):
    assert dataset_of_uri(uri) is None

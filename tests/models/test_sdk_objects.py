"""Objects of the Kubeflow training SDK (``kubeflow-training``) read as their JSON form.

Uses the real SDK classes: the test environment installs ``kubeflow-training`` (its models are
OpenAPI-generated classes; ``kubernetes.client.ApiClient().sanitize_for_serialization`` walks them).
"""

from __future__ import annotations

import datetime

import pytest
from kubeflow.training import (
    KubeflowOrgV1ElasticPolicy,
    KubeflowOrgV1JobCondition,
    KubeflowOrgV1JobStatus,
    KubeflowOrgV1MPIJob,
    KubeflowOrgV1MPIJobSpec,
    KubeflowOrgV1PyTorchJob,
    KubeflowOrgV1PyTorchJobSpec,
    KubeflowOrgV1ReplicaSpec,
    KubeflowOrgV1RunPolicy,
    KubeflowOrgV1SchedulingPolicy,
    KubeflowOrgV1TFJob,
    KubeflowOrgV1TFJobSpec,
)
from kubernetes.client import V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec, V1ResourceRequirements

from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models import TrainingJobSpec, parse_whole_job
from airflow_trainjob.models.manifest import build_manifest


def sdk_template(name="pytorch", image="python:3.11-slim"):
    return V1PodTemplateSpec(
        spec=V1PodSpec(
            containers=[
                V1Container(
                    name=name,
                    image=image,
                    command=["python", "-c", "print(1)"],
                    resources=V1ResourceRequirements(limits={"cpu": "1", "memory": "1Gi"}),
                )
            ]
        )
    )


def dict_template(name="pytorch", image="python:3.11-slim"):
    return {
        "spec": {
            "containers": [
                {
                    "name": name,
                    "image": image,
                    "command": ["python", "-c", "print(1)"],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                }
            ]
        }
    }


def sdk_pytorch_job(**metadata):
    return KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1",
        kind="PyTorchJob",
        metadata=V1ObjectMeta(name="sdk-train", namespace="ml", labels={"team": "ml"}, **metadata),
        spec=KubeflowOrgV1PyTorchJobSpec(
            nproc_per_node="2",
            elastic_policy=KubeflowOrgV1ElasticPolicy(rdzv_backend="c10d", max_restarts=3),
            run_policy=KubeflowOrgV1RunPolicy(
                clean_pod_policy="All",
                backoff_limit=1,
                suspend=True,
                managed_by="kubeflow.org/training-operator",
                scheduling_policy=KubeflowOrgV1SchedulingPolicy(min_available=3, queue="gpu"),
            ),
            pytorch_replica_specs={
                "Master": KubeflowOrgV1ReplicaSpec(replicas=1, restart_policy="OnFailure", template=sdk_template()),
                "Worker": KubeflowOrgV1ReplicaSpec(replicas=2, restart_policy="OnFailure", template=sdk_template()),
            },
        ),
    )


DICT_PYTORCH_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "sdk-train", "namespace": "ml", "labels": {"team": "ml"}},
    "spec": {
        "nprocPerNode": "2",
        "elasticPolicy": {"rdzvBackend": "c10d", "maxRestarts": 3},
        "runPolicy": {
            "cleanPodPolicy": "All",
            "backoffLimit": 1,
            "suspend": True,
            "managedBy": "kubeflow.org/training-operator",
            "schedulingPolicy": {"minAvailable": 3, "queue": "gpu"},
        },
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": dict_template()},
            "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": dict_template()},
        },
    },
}


def manifest_of(whole):
    return build_manifest(spec=whole.spec, name=whole.name, namespace=whole.namespace or "ml", labels=whole.labels)


def test_an_sdk_job_reads_as_its_json_form():
    from_sdk = parse_whole_job(sdk_pytorch_job())
    assert from_sdk == parse_whole_job(DICT_PYTORCH_JOB)
    manifest = manifest_of(from_sdk)
    assert manifest["spec"]["runPolicy"] == DICT_PYTORCH_JOB["spec"]["runPolicy"]
    assert manifest["spec"]["pytorchReplicaSpecs"] == DICT_PYTORCH_JOB["spec"]["pytorchReplicaSpecs"]
    assert manifest["spec"]["nprocPerNode"] == "2"


def test_an_sdk_job_read_from_the_cluster_drops_what_the_server_wrote():
    job = sdk_pytorch_job(uid="1f2e", resource_version="99", creation_timestamp=datetime.datetime(2025, 1, 1))
    job.status = KubeflowOrgV1JobStatus(conditions=[KubeflowOrgV1JobCondition(type="Created", status="True")])
    whole = parse_whole_job(job)
    assert whole.ignored == ("status", "metadata.creationTimestamp", "metadata.resourceVersion", "metadata.uid")
    assert manifest_of(whole)["spec"] == manifest_of(parse_whole_job(DICT_PYTORCH_JOB))["spec"]


def test_an_sdk_job_without_kind_takes_it_from_its_class():
    job = KubeflowOrgV1TFJob(
        metadata=V1ObjectMeta(name="tf"),
        spec=KubeflowOrgV1TFJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(),
            success_policy="AllWorkers",
            tf_replica_specs={"worker": KubeflowOrgV1ReplicaSpec(replicas=2, template=sdk_template("tensorflow"))},
        ),
    )
    whole = parse_whole_job(job)
    assert whole.spec.kind.kind == "TFJob"
    assert list(whole.spec.replica_specs) == ["Worker"]
    assert whole.spec.kind_fields.success_policy == "AllWorkers"


def test_an_sdk_mpijob_with_the_deprecated_clean_pod_policy():
    job = KubeflowOrgV1MPIJob(
        api_version="kubeflow.org/v1",
        kind="MPIJob",
        metadata=V1ObjectMeta(name="mpi"),
        spec=KubeflowOrgV1MPIJobSpec(
            clean_pod_policy="Running",
            slots_per_worker=2,
            run_policy=KubeflowOrgV1RunPolicy(),
            mpi_replica_specs={
                "Launcher": KubeflowOrgV1ReplicaSpec(template=sdk_template("launcher")),
                "Worker": KubeflowOrgV1ReplicaSpec(replicas=2, template=sdk_template("worker")),
            },
        ),
    )
    whole = parse_whole_job(job)
    assert manifest_of(whole)["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}
    assert whole.spec.warnings == (
        "job.spec.cleanPodPolicy: deprecated; moved to job.spec.runPolicy.cleanPodPolicy ('Running'), "
        "where the operator reads it",
    )


def test_sdk_parts_inside_a_dict_job():
    job = {
        "kind": "PyTorchJob",
        "metadata": {"name": "sdk-train", "namespace": "ml", "labels": {"team": "ml"}},
        "spec": {
            "nprocPerNode": "2",
            "elasticPolicy": KubeflowOrgV1ElasticPolicy(rdzv_backend="c10d", max_restarts=3),
            "runPolicy": KubeflowOrgV1RunPolicy(
                clean_pod_policy="All",
                backoff_limit=1,
                suspend=True,
                managed_by="kubeflow.org/training-operator",
                scheduling_policy=KubeflowOrgV1SchedulingPolicy(min_available=3, queue="gpu"),
            ),
            "pytorchReplicaSpecs": {
                "Master": KubeflowOrgV1ReplicaSpec(replicas=1, restart_policy="OnFailure", template=sdk_template()),
                "Worker": KubeflowOrgV1ReplicaSpec(replicas=2, restart_policy="OnFailure", template=sdk_template()),
            },
        },
    }
    assert manifest_of(parse_whole_job(job)) == manifest_of(parse_whole_job(DICT_PYTORCH_JOB))


def test_training_job_spec_parse_takes_sdk_replica_specs_and_run_policy():
    from_sdk = TrainingJobSpec.parse(
        "PyTorchJob",
        {
            "Master": KubeflowOrgV1ReplicaSpec(replicas=1, template=sdk_template()),
            "Worker": KubeflowOrgV1ReplicaSpec(replicas=3, restart_policy="ExitCode", template=sdk_template()),
        },
        KubeflowOrgV1RunPolicy(clean_pod_policy="None", ttl_seconds_after_finished=60, suspend=False),
    )
    from_dicts = TrainingJobSpec.parse(
        "PyTorchJob",
        {
            "Master": {"replicas": 1, "template": dict_template()},
            "Worker": {"replicas": 3, "restartPolicy": "ExitCode", "template": dict_template()},
        },
        {"cleanPodPolicy": "None", "ttlSecondsAfterFinished": 60, "suspend": False},
    )
    assert from_sdk == from_dicts
    assert from_sdk.run_policy.to_api() == {"cleanPodPolicy": "None", "ttlSecondsAfterFinished": 60, "suspend": False}


def test_an_invalid_sdk_replica_spec_is_named_by_its_api_path():
    with pytest.raises(InvalidJobSpecError) as raised:
        TrainingJobSpec.parse(
            "PyTorchJob",
            {"Master": KubeflowOrgV1ReplicaSpec(replicas=1, restart_policy="Sometimes", template=sdk_template())},
            KubeflowOrgV1RunPolicy(managed_by="someone-else"),
        )
    assert [p.split(":")[0] for p in raised.value.problems] == [
        "replicaSpecs.Master.restartPolicy",
        "runPolicy.managedBy",
    ]

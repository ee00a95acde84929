"""The kubeflow/common v1 models: defaults, aliases, strict writing, lenient reading."""

from __future__ import annotations

import pytest
from kubernetes.client import V1Container, V1EnvVar, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec

from airflow_trainjob.models import (
    CleanPodPolicy,
    JobConditionType,
    JobStatus,
    ReplicaSpec,
    RestartPolicy,
    RunPolicy,
    SchedulingPolicy,
)

TEMPLATE = {"spec": {"containers": [{"name": "pytorch", "image": "python:3.11"}]}}


def test_enums_mirror_the_api():
    assert [p.value for p in RestartPolicy] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert [p.value for p in CleanPodPolicy] == ["", "All", "Running", "None"]
    assert [t.value for t in JobConditionType] == [
        "Created",
        "Pending",
        "Running",
        "Restarting",
        "Succeeded",
        "Failed",
        "Scaling",
        "Suspended",
    ]


def test_replica_spec_defaults_and_camel_case():
    spec = ReplicaSpec(template=TEMPLATE)
    assert spec.to_api() == {"replicas": 1, "template": TEMPLATE, "restartPolicy": "Never"}
    assert ReplicaSpec(replicas=3, template=TEMPLATE, restart_policy="ExitCode").to_api()["restartPolicy"] == "ExitCode"
    assert (
        ReplicaSpec.model_validate({"restartPolicy": "OnFailure", "template": TEMPLATE}).restart_policy == "OnFailure"
    )


def test_integer_strings_from_templates_are_accepted():
    assert ReplicaSpec.model_validate({"replicas": "3", "template": TEMPLATE}).replicas == 3


def test_run_policy_writes_clean_pod_policy_explicitly_and_no_nulls():
    assert RunPolicy().to_api() == {"cleanPodPolicy": "Running"}
    policy = RunPolicy(
        clean_pod_policy="All",
        ttl_seconds_after_finished=600,
        active_deadline_seconds=7200,
        backoff_limit=0,
        scheduling_policy=SchedulingPolicy(min_available=3, queue="gpu", min_resources={"cpu": "4"}),
    )
    assert policy.to_api() == {
        "cleanPodPolicy": "All",
        "ttlSecondsAfterFinished": 600,
        "activeDeadlineSeconds": 7200,
        "backoffLimit": 0,
        "schedulingPolicy": {"minAvailable": 3, "queue": "gpu", "minResources": {"cpu": "4"}},
    }
    assert RunPolicy(clean_pod_policy="").to_api() == {"cleanPodPolicy": ""}


def test_pod_template_object_is_normalised_to_camel_case_dict():
    template = V1PodTemplateSpec(
        metadata=V1ObjectMeta(labels={"app": "train"}),
        spec=V1PodSpec(
            containers=[
                V1Container(
                    name="pytorch",
                    image="python:3.11",
                    image_pull_policy="IfNotPresent",
                    env=[V1EnvVar(name="EPOCHS", value="3")],
                )
            ],
            restart_policy="Never",
        ),
    )
    assert ReplicaSpec(template=template).to_api()["template"] == {
        "metadata": {"labels": {"app": "train"}},
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "python:3.11",
                    "imagePullPolicy": "IfNotPresent",
                    "env": [{"name": "EPOCHS", "value": "3"}],
                }
            ],
            "restartPolicy": "Never",
        },
    }


def test_status_from_a_newer_controller_parses_and_keeps_what_it_does_not_know():
    status = JobStatus.model_validate(
        {
            "conditions": [
                {
                    "type": "Created",
                    "status": "True",
                    "reason": "PyTorchJobCreated",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                },
                {"type": "Suspended", "status": "True", "reason": "JobSuspended", "observedGeneration": 4},
            ],
            "replicaStatuses": {"Worker": {"active": 2, "selector": "training.kubeflow.org/job-name=x"}},
            "startTime": "2026-01-01T00:00:00Z",
            "futureField": {"a": 1},
        }
    )
    assert [c.type for c in status.conditions] == ["Created", "Suspended"]
    assert status.conditions[1].model_extra == {"observedGeneration": 4}
    assert status.replica_statuses["Worker"].active == 2
    assert status.replica_statuses["Worker"].model_extra == {"selector": "training.kubeflow.org/job-name=x"}
    assert status.model_extra == {"futureField": {"a": 1}}


@pytest.mark.parametrize("raw", [{}, {"conditions": None, "replicaStatuses": None}])
def test_empty_status_parses_as_nothing_yet(raw):
    status = JobStatus.model_validate(raw)
    assert status.conditions == [] and status.replica_statuses == {}


def test_float_quantities_are_sent_as_text():
    """A job's CRD types quantities as integer-or-string: a float (``cpu: 0.5`` in YAML) is refused with 422 by a
    real API server, so the provider sends what the user meant, as text; integers and strings stay."""
    template = {
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "x",
                    "resources": {
                        "limits": {"cpu": 0.5, "memory": "1Gi", "nvidia.com/gpu": 1},
                        "requests": {"cpu": 0.25, "memory": 1e-05},
                    },
                }
            ],
            "initContainers": [{"name": "fetch", "image": "x", "resources": {"requests": {"cpu": 2.0}}}],
            "overhead": {"cpu": 0.1},
        }
    }
    spec = ReplicaSpec(template=template).to_api()["template"]["spec"]
    assert spec["containers"][0]["resources"] == {
        "limits": {"cpu": "0.5", "memory": "1Gi", "nvidia.com/gpu": 1},
        "requests": {"cpu": "0.25", "memory": "0.00001"},
    }
    assert spec["initContainers"][0]["resources"]["requests"]["cpu"] == "2" and spec["overhead"]["cpu"] == "0.1"
    from airflow_trainjob.models import SchedulingPolicy

    policy = SchedulingPolicy(min_resources={"cpu": 1.5, "memory": "4Gi", "pods": 4}).to_api()
    assert policy["minResources"] == {"cpu": "1.5", "memory": "4Gi", "pods": 4}

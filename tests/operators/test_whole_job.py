"""A whole job (``job``, ``job_template_file``), as kubectl and the Kubeflow SDK hold one, run by the operator."""

from __future__ import annotations

import sys

import pytest
import yaml

from airflow_trainjob.constants import LABEL_DAG_ID, LABEL_TRY_NUMBER
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.operators.training_job import TrainingJobOperator
from tests.support.jobs import OK, jobs

pytestmark = pytest.mark.usefixtures("kubernetes_default_conn")


def container(code: str) -> dict:
    return {"name": "pytorch", "image": "python:3.11-slim", "command": [sys.executable, "-c", code]}


def kubectl_style_job(namespace: str) -> dict:
    """What ``kubectl get pytorchjob -o yaml`` prints of a job someone ran before: server fields, status, a pod
    template with apiVersion/kind, replica types in lower case."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "digits",
            "namespace": namespace,
            "uid": "0b0e",
            "resourceVersion": "4711",
            "generation": 3,
            "creationTimestamp": "2026-11-30T10:00:00Z",
            "labels": {"team": "vision"},
            "annotations": {"owner": "ml-platform"},
        },
        "spec": {
            "runPolicy": {"cleanPodPolicy": "All"},
            "pytorchReplicaSpecs": {
                "master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"apiVersion": "v1", "kind": "PodTemplate", "spec": {"containers": [container(OK)]}},
                },
                "worker": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container(OK)]}},
                },
            },
        },
        "status": {"conditions": [{"type": "Succeeded", "status": "True"}]},
    }


def test_a_job_as_kubectl_prints_it_runs_with_the_providers_identity(ti, namespace, custom_objects, capfd):
    operator = TrainingJobOperator(
        task_id="train", job=kubectl_style_job(namespace), on_finish="keep_job", poll_interval=1
    )
    summary = operator.execute({"ti": ti})
    task_log = "".join(capfd.readouterr())
    # Named per task instance (the same on every try), not after the copied YAML: every run would share "digits".
    assert summary["kind"] == "PyTorchJob" and summary["name"] == ti.xcom["job_name"] != "digits"
    assert summary["name"].startswith("retrain-train-")
    (job,) = jobs(custom_objects, namespace)
    assert [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    assert job["metadata"]["uid"] != "0b0e"  # a new object, not the one printed
    assert set(job["spec"]["pytorchReplicaSpecs"]) == {"Master", "Worker"}
    assert job["metadata"]["labels"]["team"] == "vision" and job["metadata"]["labels"][LABEL_DAG_ID] == "retrain"
    assert job["metadata"]["labels"][LABEL_TRY_NUMBER] == "1"
    assert job["metadata"]["annotations"]["owner"] == "ml-platform"
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "All"  # given back as written once the task ended
    assert "Input: job: metadata.labels: " in task_log and "added (this task instance's ownership)" in task_log
    assert "from the generated name, one per task instance and the same on every try" in task_log
    assert f"metadata.namespace: '{namespace}' from the job" in task_log
    assert "dropped: " in task_log and "metadata.uid" in task_log and "status" in task_log
    assert "replicaSpecs.Master.template: dropped apiVersion, kind" in task_log or "dropped apiVersion" in task_log


def test_a_job_template_file_is_rendered_with_the_context(ti, namespace, custom_objects, tmp_path):
    job = kubectl_style_job(namespace)
    del job["status"], job["metadata"]["uid"]
    job["metadata"]["labels"]["dataset-date"] = "{{ ds }}"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    operator = TrainingJobOperator(task_id="train", job_template_file=str(path), on_finish="keep_job", poll_interval=1)
    operator.render_template_fields({"ds": "2026-12-01", "ti": ti})
    assert yaml.safe_load(operator.manifest)["metadata"]["labels"]["dataset-date"] == "2026-12-01"
    operator.execute({"ti": ti})
    (created,) = jobs(custom_objects, namespace)
    assert created["metadata"]["labels"]["dataset-date"] == "2026-12-01"


def test_two_runs_of_one_copied_job_get_two_jobs(namespace, custom_objects):
    from tests.support.jobs import TaskInstanceStandIn

    for run in (TaskInstanceStandIn(), TaskInstanceStandIn()):  # two DAG runs, the same YAML
        TrainingJobOperator(
            task_id="train", job=kubectl_style_job(namespace), on_finish="keep_job", poll_interval=1
        ).execute({"ti": run})
    assert len(jobs(custom_objects, namespace)) == 2


def test_a_relative_job_template_file_is_found_beside_the_dag(ti, tmp_path):
    from airflow.sdk import DAG

    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "train.yaml").write_text(yaml.safe_dump(kubectl_style_job("ml")))
    with DAG("retrain", schedule=None, template_searchpath=[str(tmp_path)]):
        operator = TrainingJobOperator(task_id="train", job_template_file="jobs/train.yaml")
    operator.render_template_fields({"ti": ti}, operator.dag.get_template_env())
    shown = yaml.safe_load(operator.manifest)
    assert shown["kind"] == "PyTorchJob" and shown["metadata"]["namespace"] == "ml"


def test_a_missing_job_template_file_is_one_clear_error(ti, tmp_path):
    operator = TrainingJobOperator(task_id="train", job_template_file=str(tmp_path / "absent.yaml"))
    with pytest.raises(InvalidJobSpecError) as raised:
        operator.render_template_fields({"ti": ti})
    assert "job_template_file: cannot read" in str(raised.value) and "absent.yaml" in str(raised.value)


@pytest.mark.parametrize(
    "extra, expected",
    [
        ({"replica_specs": {"Master": {}}}, "replica_specs: not allowed with job"),
        ({"run_policy": {"backoffLimit": 1}}, "run_policy: not allowed with job"),
        ({"kind": "TFJob"}, "kind: 'TFJob' differs from the job's kind 'PyTorchJob'"),
        ({"job_template_file": "/nonexistent.yaml"}, "give one whole job, not both"),
    ],
)
def test_a_whole_job_with_parts_is_refused_before_any_api_call(extra, expected, ti, namespace, custom_objects):
    operator = TrainingJobOperator(task_id="train", job=kubectl_style_job(namespace), **extra)
    with pytest.raises(InvalidJobSpecError) as raised:
        operator.execute({"ti": ti})
    assert expected in str(raised.value)
    assert jobs(custom_objects, namespace) == [] and ti.xcom == {}


def test_the_parameter_namespace_and_job_name_override_the_jobs_own(ti, namespace, custom_objects, capfd):
    job = kubectl_style_job("somewhere-else")
    operator = TrainingJobOperator(
        task_id="train", job=job, namespace=namespace, job_name="digits-nightly", on_finish="keep_job", poll_interval=1
    )
    operator.execute({"ti": ti})
    (created,) = jobs(custom_objects, namespace)
    assert created["metadata"]["name"] == "digits-nightly"
    task_log = "".join(capfd.readouterr())
    assert "metadata.name: 'digits-nightly' from job_name, not 'digits'" in task_log
    assert f"metadata.namespace: '{namespace}' from the namespace parameter, not 'somewhere-else'" in task_log


def test_a_kubeflow_sdk_job_object_runs(ti, namespace, custom_objects):
    """The SDK's own typed job (``KubeflowOrgV1PyTorchJob``), built as its docs show, with an SDK run policy."""
    from kubeflow.training import (
        KubeflowOrgV1PyTorchJob,
        KubeflowOrgV1PyTorchJobSpec,
        KubeflowOrgV1ReplicaSpec,
        KubeflowOrgV1RunPolicy,
    )
    from kubernetes.client import V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec

    def replica() -> KubeflowOrgV1ReplicaSpec:
        pod = V1PodTemplateSpec(
            spec=V1PodSpec(
                containers=[V1Container(name="pytorch", image="python:3.11-slim", command=[sys.executable, "-c", OK])]
            )
        )
        return KubeflowOrgV1ReplicaSpec(replicas=1, restart_policy="OnFailure", template=pod)

    sdk_job = KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1",
        kind="PyTorchJob",
        metadata=V1ObjectMeta(name="sdk-made"),
        spec=KubeflowOrgV1PyTorchJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy="None", backoff_limit=1),
            pytorch_replica_specs={"Master": replica(), "Worker": replica()},
        ),
    )
    summary = TrainingJobOperator(task_id="train", job=sdk_job, on_finish="keep_job", poll_interval=1).execute(
        {"ti": ti}
    )
    assert summary["name"] == ti.xcom["job_name"] != "sdk-made"
    (job,) = jobs(custom_objects, namespace)
    assert job["spec"]["runPolicy"]["backoffLimit"] == 1 and job["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    assert job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] == "OnFailure"
    assert [c["type"] for c in job["status"]["conditions"] if c["status"] == "True"][-1] == "Succeeded"

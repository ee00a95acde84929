"""parse_whole_job: a whole job document (dict or YAML/JSON text) read, checked and named in one error."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from airflow_trainjob.constants import LABEL_DAG_ID
from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY, hold
from airflow_trainjob.domain.own_keys import legacy_key
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models import RunPolicy, TrainingJobSpec, WholeJob, parse_whole_job
from airflow_trainjob.models.manifest import build_manifest


def container(name="pytorch"):
    return {"name": name, "image": "python:3.11-slim", "command": ["python", "-c", "print(1)"]}


def replica(replicas=1, name="pytorch", **more):
    return {"replicas": replicas, "template": {"spec": {"containers": [container(name)]}}, **more}


def pytorch_job(**spec_overrides):
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "train", "namespace": "ml", "labels": {"team": "ml"}, "annotations": {"owner": "me"}},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(), "Worker": replica(2)}, **spec_overrides},
    }


def problems_of(job, **kwargs) -> list[str]:
    with pytest.raises(InvalidJobSpecError) as raised:
        parse_whole_job(job, **kwargs)
    return raised.value.problems


def test_a_dict_parses_into_spec_and_metadata():
    whole = parse_whole_job(pytorch_job(runPolicy={"backoffLimit": 2}, nprocPerNode="2"))
    assert isinstance(whole, WholeJob) and isinstance(whole.spec, TrainingJobSpec)
    assert (whole.name, whole.namespace) == ("train", "ml")
    assert whole.labels == {"team": "ml"} and whole.annotations == {"owner": "me"}
    assert whole.ignored == () and whole.spec.warnings == ()
    assert whole.spec.kind.kind == "PyTorchJob"
    assert set(whole.spec.replica_specs) == {"Master", "Worker"}
    assert whole.spec.run_policy.backoff_limit == 2
    assert whole.spec.kind_fields.nproc_per_node == "2"


def test_yaml_and_json_text_parse_the_same_as_the_dict():
    job = pytorch_job(runPolicy={"cleanPodPolicy": "All"})
    expected = parse_whole_job(copy.deepcopy(job))
    assert parse_whole_job(yaml.safe_dump(job)) == expected
    assert parse_whole_job(json.dumps(job)) == expected
    assert parse_whole_job("---\n" + yaml.safe_dump(job) + "---\n") == expected  # empty documents do not count


def test_metadata_is_optional_and_apiversion_may_be_left_out():
    job = pytorch_job()
    del job["apiVersion"], job["metadata"]
    whole = parse_whole_job(job)
    assert (whole.name, whole.namespace, whole.labels, whole.annotations) == (None, None, {}, {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            yaml.safe_dump(pytorch_job()) + "---\n" + yaml.safe_dump(pytorch_job()),
            "job: holds 2 documents (PyTorchJob train, PyTorchJob train): give each job a task of its own",
        ),
        ("", "job: holds no YAML/JSON document: pass one job"),
        ("---\n---\n", "job: holds no YAML/JSON document: pass one job"),
    ],
)
def test_text_must_hold_exactly_one_document(text, expected):
    assert problems_of(text) == [expected]


def test_text_holding_the_job_and_what_it_needs_says_to_create_that_beforehand():
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "ckpt"}, "spec": {}}
    text = yaml.safe_dump_all([claim, pytorch_job(), {"kind": "ConfigMap", "metadata": {"name": "cfg"}}])
    assert problems_of(text) == [
        "job: holds 3 documents (PersistentVolumeClaim ckpt, PyTorchJob train, ConfigMap cfg): pass the PyTorchJob "
        "alone, and create the ConfigMap, PersistentVolumeClaim beforehand (kubectl apply -f)"
    ]
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "tj"}}
    assert problems_of(yaml.safe_dump_all([pytorch_job(), trainjob])) == [
        "job: holds 2 documents (PyTorchJob train, TrainJob tj): pass the PyTorchJob alone, and a TrainJob runs "
        "with TrainJobOperator"
    ]


def test_text_that_is_not_yaml_is_one_problem():
    [problem] = problems_of("kind: PyTorchJob\nspec: {a: [1\n")
    assert problem.startswith("job: not valid YAML/JSON:")


@pytest.mark.parametrize("job", [["a"], 3, None])
def test_not_a_mapping(job):
    [problem] = problems_of(job)
    assert problem.startswith("job: must be a job (a mapping with apiVersion, kind, metadata, spec)")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"apiVersion": "kubeflow.org/v1beta1"},
            "job.apiVersion: must be 'kubeflow.org/v1' (or absent), got 'kubeflow.org/v1beta1'",
        ),
        (
            {"kind": "SparkJob"},
            "job.kind: 'SparkJob' is not a training job kind; allowed: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob",
        ),
        ({"kind": None}, "job.kind: missing; allowed: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob"),
        ({"spec": None}, "job.spec: required (the job's replica specs, runPolicy and the kind's fields)"),
        ({"spec": "pytorchReplicaSpecs"}, "job.spec: must be a mapping of fields, got str"),
        ({"spek": {}}, "job.spek: unknown field; allowed fields: apiVersion, kind, metadata, spec, status"),
        ({"metadata": ["train"]}, "job.metadata: must be a mapping of fields, got list"),
    ],
)
def test_document_level_problems(change, expected):
    job = {**pytorch_job(), **change}
    job = {k: v for k, v in job.items() if v is not None}
    assert problems_of(job) == [expected]


def test_spec_needs_the_kinds_replica_specs_and_refuses_other_keys():
    job = pytorch_job()
    job["spec"] = {"tfReplicaSpecs": job["spec"]["pytorchReplicaSpecs"], "runPolicy": {"backoffLimit": -1}}
    assert problems_of(job) == [
        "job.spec.tfReplicaSpecs: unknown field; allowed fields: pytorchReplicaSpecs, runPolicy, elasticPolicy, nprocPerNode",
        "job.spec.pytorchReplicaSpecs: required (a PyTorchJob's replica specs)",
        "job.spec.runPolicy.backoffLimit: Input should be greater than or equal to 0 (got -1)",
    ]


def test_mpijob_spec_allows_its_deprecated_clean_pod_policy():
    job = {
        "kind": "MPIJob",
        "spec": {"cleanPodPolicy": "All", "mpiReplicaSpecs": {"Launcher": replica(1, "mpi")}, "slotsPerWorker": 1},
    }
    whole = parse_whole_job(job)
    assert whole.spec.run_policy.clean_pod_policy == "All"
    assert "cleanPodPolicy" not in build_manifest(spec=whole.spec, name="mpi", namespace="ml")["spec"]


def test_generate_name_is_refused_with_the_reason():
    job = pytorch_job()
    job["metadata"] = {"generateName": "train-"}
    assert problems_of(job) == [
        "job.metadata.generateName: not supported: the provider names each job deterministically so that a "
        "retried task finds the job it created; set metadata.name (or the job_name argument)"
    ]


def test_other_metadata_fields_are_refused_naming_what_is_kept():
    job = pytorch_job()
    job["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "x"}]
    [problem] = problems_of(job)
    assert problem.startswith(
        "job.metadata.ownerReferences: not supported; allowed fields: name, namespace, labels, annotations (ignored: uid,"
    )


def test_labels_annotations_name_and_namespace_must_be_strings():
    job = pytorch_job()
    job["metadata"] = {"name": 7, "namespace": "", "labels": {"replicas": 3}, "annotations": ["a"]}
    assert problems_of(job) == [
        "job.metadata.name: must be a non-empty string, got int 7",
        "job.metadata.namespace: must be a non-empty string, got str ''",
        "job.metadata.labels['replicas']: value must be a string, got int 3",
        "job.metadata.annotations: must be a mapping of strings to strings, got list",
    ]


def test_what_the_server_kubectl_and_provider_wrote_is_dropped_and_listed():
    job = pytorch_job()
    job["metadata"].update(
        uid="0b8c",
        resourceVersion="12",
        creationTimestamp="2025-01-01T00:00:00Z",
        generation=3,
        managedFields=[{"manager": "kubectl"}],
        selfLink="/apis/x",
    )
    job["metadata"]["annotations"].update(
        {
            "kubectl.kubernetes.io/last-applied-configuration": "{}",
            ANNOTATION_HELD_RUN_POLICY: '{"cleanPodPolicy": "All"}',
        }
    )
    job["metadata"]["labels"].update({LABEL_DAG_ID: "old-dag", legacy_key(LABEL_DAG_ID): "older-dag"})
    job["status"] = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    whole = parse_whole_job(job)
    assert whole.labels == {"team": "ml"} and whole.annotations == {"owner": "me"}
    assert whole.ignored == (
        "status",
        "metadata.uid",
        "metadata.resourceVersion",
        "metadata.creationTimestamp",
        "metadata.generation",
        "metadata.managedFields",
        "metadata.selfLink",
        f"metadata.labels[{LABEL_DAG_ID!r}]",
        f"metadata.labels[{legacy_key(LABEL_DAG_ID)!r}]",
        "metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']",
        f"metadata.annotations[{ANNOTATION_HELD_RUN_POLICY!r}]",
    )


def test_spec_problems_are_named_under_the_path_all_at_once():
    job = pytorch_job(runPolicy={"cleanPodPolicy": "Sometimes"}, nprocPerNode="many")
    job["apiVersion"] = "v1"
    job["metadata"]["generateName"] = "x-"
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"] = "pod.yaml"
    problems = problems_of(job, path="tasks.train.job")
    assert [p.split(":")[0] for p in problems] == [
        "tasks.train.job.apiVersion",
        "tasks.train.job.metadata.generateName",
        "tasks.train.job.spec.pytorchReplicaSpecs.Master.template",
        "tasks.train.job.spec.runPolicy.cleanPodPolicy",
        "tasks.train.job.spec",
    ]
    assert "'auto', 'cpu', 'gpu' or a positive integer" in problems[-1]


def test_an_invalid_lead_spec_is_not_also_reported_missing():
    job = {
        "kind": "XGBoostJob",
        "spec": {"xgbReplicaSpecs": {"master": {"template": {"kind": "Pod"}}, "Worker": replica(2, "xgboost")}},
    }
    assert problems_of(job) == [
        "job.spec.xgbReplicaSpecs.master.template: 'spec' must be a pod spec (a dict with 'containers')"
    ]


def test_two_keys_for_one_replica_type_name_both():
    job = pytorch_job()
    job["spec"]["pytorchReplicaSpecs"]["WORKER"] = replica(1)
    assert problems_of(job) == [
        "job.spec.pytorchReplicaSpecs: 'Worker' and 'WORKER' both name the Worker replica type "
        "(types match regardless of case); give it once"
    ]


def test_the_cleanup_hold_covers_a_deprecated_mpijob_clean_pod_policy():
    job = {
        "kind": "MPIJob",
        "metadata": {"name": "mpi"},
        "spec": {
            "cleanPodPolicy": "All",
            "mpiReplicaSpecs": {"launcher": replica(1, "mpi"), "worker": replica(2, "mpi")},
        },
    }
    whole = parse_whole_job(job)
    sent = hold(build_manifest(spec=whole.spec, name=whole.name, namespace="ml"))
    assert sent["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
    assert "cleanPodPolicy" not in {k for k in sent["spec"] if k != "runPolicy"}
    assert json.loads(sent["metadata"]["annotations"][ANNOTATION_HELD_RUN_POLICY]) == {"cleanPodPolicy": "All"}
    assert list(sent["spec"]["mpiReplicaSpecs"]) == ["Launcher", "Worker"]


def test_suspend_and_managed_by_reach_the_manifest():
    whole = parse_whole_job(pytorch_job(runPolicy={"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"}))
    assert whole.spec.run_policy == RunPolicy(suspend=True, managed_by="kueue.x-k8s.io/multikueue")
    sent = build_manifest(spec=whole.spec, name="train", namespace="ml")["spec"]["runPolicy"]
    assert sent == {"cleanPodPolicy": "Running", "suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"}

"""A TrainJob's input read through the ``kubeflow_trainer_api`` models (models/trainjob): each part in each form it
may take, a whole TrainJob, every refusal naming its field, and the name's bound. No cluster."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubeflow_trainer_api.models import (  # type: ignore[import-untyped]
    TrainerV1alpha1Initializer,
    TrainerV1alpha1RuntimePatch,
    TrainerV1alpha1RuntimeRef,
    TrainerV1alpha1Trainer,
    TrainerV1alpha1TrainJob,
)

from airflow_trainjob.constants import MAX_NAME_LENGTH, RUNTIME_PATCH_MANAGER
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models.trainjob import (
    max_generated_name_length,
    max_name_length,
    parse_spec_parts,
    parse_whole_trainjob,
)
from airflow_trainjob.models.trainjob.names import pod_name_suffix

REF = {"name": "torch-distributed", "kind": "ClusterTrainingRuntime", "apiGroup": "trainer.kubeflow.org"}
TRAINER = {
    "image": "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    "command": ["torchrun", "train.py"],
    "env": [{"name": "EPOCHS", "value": "3"}],
    "numNodes": 2,
    "resourcesPerNode": {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}},
}
INITIALIZER = {"dataset": {"storageUri": "hf://kubeflow/digits"}, "model": {"storageUri": "s3://bucket/model"}}
PATCH = {
    "manager": "example.com/ml-team",
    "trainingRuntimeSpec": {
        "template": {
            "spec": {
                "replicatedJobs": [
                    {"name": "node", "template": {"spec": {"template": {"metadata": {"labels": {"team": "a"}}}}}}
                ]
            }
        }
    },
}
WHOLE = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "digits", "namespace": "ml", "labels": {"team": "vision"}},
    "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": TRAINER},
}


def refused(**parts: Any) -> list[str]:
    with pytest.raises(InvalidJobSpecError) as raised:
        parse_spec_parts(**{"runtime": "torch-distributed", **parts})
    return raised.value.problems


def refused_whole(job: Any) -> list[str]:
    with pytest.raises(InvalidJobSpecError) as raised:
        parse_whole_trainjob(job)
    return raised.value.problems


# ---- each part in each of its forms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "runtime",
    [
        "torch-distributed",
        {"name": "torch-distributed"},
        "name: torch-distributed",
        json.dumps(REF),
        TrainerV1alpha1RuntimeRef(name="torch-distributed"),
    ],
    ids=["name", "mapping", "yaml", "json", "model"],
)
def test_the_runtime_is_a_name_or_a_runtime_ref_with_upstreams_defaults_written_out(runtime):
    assert parse_spec_parts(runtime).spec == {"runtimeRef": REF}


def test_a_namespaced_training_runtime_is_named_by_its_kind():
    spec = parse_spec_parts({"name": "mine", "kind": "TrainingRuntime"}).spec
    assert spec["runtimeRef"] == {**REF, "name": "mine", "kind": "TrainingRuntime"}


@pytest.mark.parametrize(
    "trainer",
    [TRAINER, yaml.safe_dump(TRAINER), json.dumps(TRAINER), TrainerV1alpha1Trainer.from_dict(TRAINER)],
    ids=["mapping", "yaml", "json", "model"],
)
def test_the_trainer_in_each_form_is_sent_in_the_apis_keys_as_given(trainer):
    assert parse_spec_parts("torch-distributed", trainer=trainer).spec["trainer"] == TRAINER


def test_attribute_keys_are_read_as_the_apis_and_digits_as_integers():
    given = {"num_nodes": "4", "num_proc_per_node": 2, "resources_per_node": {"requests": {"cpu": "500m"}}}
    assert parse_spec_parts("torch-distributed", trainer=given).spec["trainer"] == {
        "numNodes": 4,
        "numProcPerNode": 2,
        "resourcesPerNode": {"requests": {"cpu": "500m"}},
    }


@pytest.mark.parametrize(
    "initializer",
    [INITIALIZER, yaml.safe_dump(INITIALIZER), TrainerV1alpha1Initializer.from_dict(INITIALIZER)],
    ids=["mapping", "yaml", "model"],
)
def test_the_initializer_in_each_form(initializer):
    assert parse_spec_parts("torch-distributed", initializer=initializer).spec["initializer"] == INITIALIZER


@pytest.mark.parametrize(
    "patches",
    [[PATCH], yaml.safe_dump([PATCH]), json.dumps([PATCH]), [TrainerV1alpha1RuntimePatch.from_dict(PATCH)]],
    ids=["list", "yaml", "json", "models"],
)
def test_runtime_patches_in_each_form(patches):
    assert parse_spec_parts("torch-distributed", runtime_patches=patches).spec["runtimePatches"] == [PATCH]


def test_the_scalars_are_sent_as_given_and_unset_ones_left_out():
    spec = parse_spec_parts(
        "torch-distributed", suspend=True, managed_by="kueue.x-k8s.io/multikueue", active_deadline_seconds="600"
    ).spec
    assert spec == {
        "runtimeRef": REF,
        "suspend": True,
        "managedBy": "kueue.x-k8s.io/multikueue",
        "activeDeadlineSeconds": 600,
    }
    assert parse_spec_parts("torch-distributed", trainer={"image": None, "numNodes": 1}).spec["trainer"] == {
        "numNodes": 1
    }


# ---- refusals, each naming its field by parameter ---------------------------------------------------------------


@pytest.mark.parametrize(
    "parts, expected",
    [
        (
            {"trainer": {"numNode": 2}},
            "trainer.numNode: unknown field; did you mean numNodes? allowed fields: args, command, env, image, "
            "numNodes, numProcPerNode, resourcesPerNode",
        ),
        ({"trainer": {"numNodes": 0}}, "trainer.numNodes: must be 1 or more (nodes), got 0"),
        ({"trainer": {"numNodes": True}}, "trainer.numNodes: Input should be a valid integer (got True)"),
        ({"trainer": {"numProcPerNode": 0}}, "trainer.numProcPerNode: must be 1 or more (processes per node), got 0"),
        ({"trainer": {"command": ["python", 3]}}, "trainer.command[1]: Input should be a valid string (got 3)"),
        (
            {"trainer": {"command": "python train.py"}},
            "trainer.command: Input should be a valid list (got 'python train.py')",
        ),
        (
            {"trainer": {"resourcesPerNode": {"limits": {"memory": "4 GB"}}}},
            "trainer.resourcesPerNode.limits['memory']: must be a quantity (a string such as '500m', '4Gi', or a "
            "number), got '4 GB'",
        ),
        (
            {"trainer": {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}},
            "trainer.env[1].name: 'A' is given twice; give each variable once",
        ),
        ({"trainer": {"env": [{"value": "1"}]}}, "trainer.env[0].name: required"),
        ({"trainer": "numNodes: [2"}, "trainer: not valid YAML/JSON"),
        ({"trainer": ["numNodes"]}, "trainer: must be a mapping of fields, got list"),
        ({"runtime": {"name": "x", "kind": "Runtime"}}, "runtime.kind: 'Runtime' is not a runtime kind; allowed: "),
        (
            {"runtime": {"name": "x", "apiGroup": "kubeflow.org"}},
            "runtime.apiGroup: must be 'trainer.kubeflow.org' (or unset), got 'kubeflow.org'",
        ),
        ({"runtime": {"kind": "TrainingRuntime"}}, "runtime.name: required"),
        ({"runtime": "  "}, "runtime: must name a runtime, got ''"),
        ({"runtime": 5}, "runtime: must be a runtime's name or a runtimeRef (a mapping), got int"),
        (
            {"initializer": {"dataset": {"storageUri": "digits"}}},
            "initializer.dataset.storageUri: must be empty or a URI (scheme://...",
        ),
        ({"initializer": {"datasets": {}}}, "initializer.datasets: unknown field; did you mean dataset?"),
        ({"suspend": "yes"}, "suspend: Input should be a valid boolean (got 'yes')"),
        ({"managed_by": "me"}, "managed_by: 'me' is not allowed; allowed: trainer.kubeflow.org/trainjob-controller"),
        ({"active_deadline_seconds": 0}, "active_deadline_seconds: must be 1 or more (seconds), got 0"),
        ({"active_deadline_seconds": 1.5}, "active_deadline_seconds: Input should be a valid integer (got 1.5)"),
        ({"runtime_patches": PATCH}, "runtime_patches: must be a list of runtime patches, got dict"),
        ({"runtime_patches": [{"manager": RUNTIME_PATCH_MANAGER}]}, "runtime_patches[0].manager: 'airflow-trainjob/"),
        ({"runtime_patches": [{"manager": "ml-team"}]}, "runtime_patches[0].manager: must be a domain-prefixed path"),
        ({"runtime_patches": [{}]}, "runtime_patches[0].manager: required"),
        ({"runtime_patches": [PATCH, PATCH]}, "runtime_patches[1].manager: 'example.com/ml-team' is given twice"),
        (
            {"runtime_patches": [{"manager": f"example.com/t{i}"} for i in range(16)]},
            "runtime_patches: at most 15 patches (the API takes 16, one is this provider's), got 16",
        ),
    ],
)
def test_each_refusal_names_its_field_by_parameter(parts, expected):
    assert any(problem.startswith(expected) for problem in refused(**parts)), refused(**parts)


def test_a_patch_takes_only_labels_and_annotations_of_metadata_and_no_env_of_the_trainers_containers():
    pod = {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "node", "env": [{"name": "A", "value": "1"}]}]}}
    patch = {
        "manager": "example.com/ml-team",
        "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod}}}]}}
        },
    }
    where = "runtime_patches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template"
    assert refused(runtime_patches=[patch]) == [
        f"{where}.metadata.name: unknown field; allowed fields: labels, annotations",
        f"{where}.spec.containers[0].env: the 'node' container's env is set by trainer.env / "
        "initializer.<step>.env, not by a runtime patch",
    ]
    del pod["spec"]["containers"][0]["env"]
    assert refused(runtime_patches=[patch]) == [
        f"{where}.metadata.name: unknown field; allowed fields: labels, annotations"
    ]
    del pod["metadata"]
    assert parse_spec_parts("torch-distributed", runtime_patches=[patch]).spec["runtimePatches"] == [patch]


def test_every_problem_is_reported_at_once():
    found = refused(trainer={"numNodes": 0, "imag": "x"}, managed_by="me", suspend="no")
    assert [p.split(":")[0] for p in found] == ["trainer.imag", "suspend", "trainer.numNodes", "managed_by"]


# ---- a whole TrainJob ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "job",
    [WHOLE, yaml.safe_dump(WHOLE), json.dumps(WHOLE), TrainerV1alpha1TrainJob.from_dict(WHOLE)],
    ids=["mapping", "yaml", "json", "model"],
)
def test_a_whole_trainjob_in_each_form(job):
    whole = parse_whole_trainjob(job)
    assert whole.spec.spec == {"runtimeRef": REF, "trainer": TRAINER}
    assert (whole.name, whole.namespace, whole.labels, whole.ignored) == ("digits", "ml", {"team": "vision"}, ())


def test_what_the_server_kubectl_and_the_provider_wrote_is_dropped_and_listed():
    job = yaml.safe_load(yaml.safe_dump(WHOLE))
    job["metadata"].update(uid="u-1", resourceVersion="7", creationTimestamp="2026-12-07T10:00:00Z")
    job["metadata"]["labels"]["airflow-trainjob/dag-id"] = "old"
    job["metadata"]["annotations"] = {"airflow-trainjob/pod-token": "abc", "note": "kept"}
    job["spec"]["runtimePatches"] = [
        {"manager": RUNTIME_PATCH_MANAGER, "time": "2026-12-07T10:00:00Z"},
        {**PATCH, "time": "2026-12-07T10:00:00Z"},
    ]
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}], "someNewField": 1}
    whole = parse_whole_trainjob(job)
    assert whole.spec.spec["runtimePatches"] == [PATCH]
    assert whole.labels == {"team": "vision"} and whole.annotations == {"note": "kept"}
    assert whole.ignored == (
        "status",
        "metadata.uid",
        "metadata.resourceVersion",
        "metadata.creationTimestamp",
        "metadata.labels['airflow-trainjob/dag-id']",
        "metadata.annotations['airflow-trainjob/pod-token']",
        "spec.runtimePatches[manager='airflow-trainjob/manager']",
        "spec.runtimePatches[manager='example.com/ml-team'].time",
    )


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            {"apiVersion": "kubeflow.org/v1"},
            ["job.apiVersion: must be 'trainer.kubeflow.org/v1alpha1' (or absent), got 'kubeflow.org/v1'"],
        ),
        (
            {"kind": "PyTorchJob"},
            [
                "job.kind: must be 'TrainJob' (or absent), got 'PyTorchJob'; a kubeflow.org/v1 job (PyTorchJob...) "
                "runs with TrainingJobOperator"
            ],
        ),
        ({"spec": None}, ["job.spec: required (runtimeRef, and the trainer, initializer... the TrainJob runs with)"]),
        (
            {"spec": {"trainer": {"numNodes": 0}}},
            ["job.spec.runtimeRef: required", "job.spec.trainer.numNodes: must be 1 or more (nodes), got 0"],
        ),
        (
            {"spec": {"runtimeRef": {"name": "x", "kind": "Runtime"}, "trainer": {"numNode": 1}}},
            [
                "job.spec.trainer.numNode: unknown field; did you mean numNodes? allowed fields: args, command, env, "
                "image, numNodes, numProcPerNode, resourcesPerNode",
                "job.spec.runtimeRef.kind: 'Runtime' is not a runtime kind; allowed: ClusterTrainingRuntime, "
                "TrainingRuntime",
            ],
        ),
        ({"metadata": {"generateName": "digits-"}}, ["job.metadata.generateName: not supported"]),
        (
            {"replicaSpecs": {}},
            ["job.replicaSpecs: unknown field; allowed fields: apiVersion, kind, metadata, spec, status"],
        ),
    ],
)
def test_a_whole_trainjob_refused_names_its_api_path(change, expected):
    found = refused_whole({**WHOLE, **change})
    assert len(found) == len(expected) and all(f.startswith(e) for f, e in zip(found, expected, strict=True)), found


def test_text_that_is_not_one_trainjob_is_refused():
    assert refused_whole("a: 1\n---\nb: 2\n") == [
        "job: holds 2 documents (a mapping without kind, a mapping without kind): pass one TrainJob"
    ]
    assert refused_whole("# nothing but a comment\n---\n") == ["job: holds no YAML/JSON document: pass one TrainJob"]
    assert refused_whole("- 1") == [
        "job: must be a TrainJob (a mapping with apiVersion, kind, metadata, spec), got list"
    ]


# ---- the name's bound ---------------------------------------------------------------------------------------------


def test_a_generated_name_fits_the_pods_of_every_upstream_runtime_step():
    bound = max_generated_name_length(None)
    assert bound == 33
    longest = "d" * bound + pod_name_suffix("dataset-initializer", 0)
    assert len(longest) == MAX_NAME_LENGTH  # <name>-dataset-initializer-0-0-abcde: exactly 63
    # numNodes is an int32: its last pod's index never makes the node step's names the longest.
    assert max_generated_name_length(2**31 - 1) == bound


def test_a_given_name_is_bound_by_the_steps_the_trainjob_names():
    assert max_name_length(None) == MAX_NAME_LENGTH - len("-node-0-0-abcde") == 48
    assert max_name_length(100) == MAX_NAME_LENGTH - len("-node-0-99-abcde")
    assert max_name_length(2, ["model-initializer"]) == MAX_NAME_LENGTH - len("-model-initializer-0-0-abcde")
    spec = parse_spec_parts("torch-distributed", trainer={"numNodes": 12}, initializer=INITIALIZER)
    assert (spec.num_nodes, spec.initializer_steps) == (12, ("dataset-initializer", "model-initializer"))

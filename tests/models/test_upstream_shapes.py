"""TrainingJobSpec.parse takes input as upstream writes it: the normalisations and their warnings."""

from __future__ import annotations

import pytest

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models import ManagedBy, ReplicaSpec, RunPolicy, TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest


def template(container="pytorch", **extra):
    return {**extra, "spec": {"containers": [{"name": container, "image": "python:3.11"}]}}


def spec_for(kind, **more):
    return {"replicas": 1, "template": template(JOB_KINDS[kind].default_container), **more}


def problems(*args, **kwargs) -> list[str]:
    with pytest.raises(InvalidJobSpecError) as raised:
        TrainingJobSpec.parse(*args, **kwargs)
    return raised.value.problems


@pytest.mark.parametrize(
    ("kind", "replica_type"), [(k, t) for k, kind in JOB_KINDS.items() for t in kind.replica_types]
)
@pytest.mark.parametrize("spelling", [str.lower, str.upper])
def test_replica_types_match_regardless_of_case(kind, replica_type, spelling):
    key = spelling(replica_type)
    lead = JOB_KINDS[kind].required_replica_types
    specs = {t: spec_for(kind) for t in lead if t != replica_type}
    specs[key] = spec_for(kind)
    parsed = TrainingJobSpec.parse(kind, specs)
    assert set(parsed.replica_specs) == {*lead, replica_type}
    assert parsed.warnings == ()


def test_normalised_keys_keep_their_order_and_errors_name_the_key_as_written():
    parsed = TrainingJobSpec.parse(
        "TFJob", {"ps": spec_for("TFJob"), "chief": spec_for("TFJob"), "evaluator": spec_for("TFJob")}
    )
    assert list(parsed.replica_specs) == ["PS", "Chief", "Evaluator"]
    assert problems("TFJob", {"chief": spec_for("TFJob", replicas=2)}) == [
        "replicaSpecs.chief.replicas: must be 1 for a TFJob (got 2)"
    ]


def test_template_api_version_and_kind_are_dropped_with_a_warning():
    parsed = TrainingJobSpec.parse(
        "PyTorchJob",
        {
            "Master": {"template": template(apiVersion="v1", kind="Pod")},
            "Worker": {"replicas": 2, "template": template(kind="Pod")},
        },
    )
    assert parsed.replica_specs["Master"].template == template()
    assert parsed.warnings == (
        "replicaSpecs.Master.template: dropped apiVersion, kind "
        "(a pod template has only metadata and spec; the cluster's schema prunes them)",
        "replicaSpecs.Worker.template: dropped kind "
        "(a pod template has only metadata and spec; the cluster's schema prunes them)",
    )


def test_the_replica_spec_model_itself_still_refuses_them():
    with pytest.raises(ValueError, match="a pod template has only"):
        ReplicaSpec(template=template(kind="Pod"))


def mpi(kind_fields, run_policy=None):
    specs = {"Launcher": {"template": template("launcher")}}
    return TrainingJobSpec.parse("MPIJob", specs, run_policy, kind_fields)


@pytest.mark.parametrize("value", ["All", "Running", "None", ""])
def test_mpijob_deprecated_clean_pod_policy_moves_to_run_policy(value):
    parsed = mpi({"cleanPodPolicy": value, "slotsPerWorker": 2}, {"backoffLimit": 1})
    manifest = build_manifest(spec=parsed, name="mpi", namespace="ml")["spec"]
    assert manifest["runPolicy"] == {"cleanPodPolicy": value, "backoffLimit": 1}
    assert manifest["slotsPerWorker"] == 2 and "cleanPodPolicy" not in manifest
    assert parsed.kind_fields.to_api() == {"slotsPerWorker": 2}
    assert parsed.warnings == (
        f"spec.cleanPodPolicy: deprecated; moved to runPolicy.cleanPodPolicy ({value!r}), where the operator reads it",
    )


def test_mpijob_run_policy_clean_pod_policy_wins_as_the_operator_decides():
    parsed = mpi({"cleanPodPolicy": "All"}, RunPolicy(clean_pod_policy="None"))
    assert parsed.run_policy.clean_pod_policy == "None"
    assert parsed.warnings == (
        "spec.cleanPodPolicy: deprecated; 'All' ignored because runPolicy.cleanPodPolicy ('None') is set and "
        "wins, as the MPIJob controller decides",
    )
    same = mpi({"cleanPodPolicy": "All"}, {"cleanPodPolicy": "All"})
    assert same.run_policy.clean_pod_policy == "All"
    assert same.warnings == (
        "spec.cleanPodPolicy: deprecated; dropped, runPolicy.cleanPodPolicy says the same ('All')",
    )


def test_an_unset_run_policy_field_does_not_count_as_set():
    # RunPolicy() writes Running by default, but the user did not say so: the deprecated value applies.
    assert mpi({"cleanPodPolicy": "None"}, RunPolicy(backoff_limit=0)).run_policy.clean_pod_policy == "None"


def test_other_kinds_have_no_spec_clean_pod_policy():
    assert problems("PyTorchJob", {"Master": spec_for("PyTorchJob")}, None, {"cleanPodPolicy": "All"}) == [
        "spec.cleanPodPolicy: unknown field; allowed fields: elasticPolicy, nprocPerNode"
    ]


@pytest.mark.parametrize(
    ("kind", "specs", "expected"),
    [
        (
            "XGBoostJob",
            {"Master": {"template": "pod.yaml"}, "Worker": spec_for("XGBoostJob")},
            "replicaSpecs.Master.template",
        ),
        ("MPIJob", {"Launcher": {"replicas": -1, "template": template()}}, "replicaSpecs.Launcher.replicas"),
        (
            "PyTorchJob",
            {"Master": {"template": {}}, "Worker": spec_for("PyTorchJob", replicas=0)},
            "replicaSpecs.Master.template",
        ),
        (
            "TFJob",
            {"chief": {"template": None}, "Worker": spec_for("TFJob", replicas=0)},
            "replicaSpecs.chief.template",
        ),
    ],
)
def test_an_invalid_spec_is_not_also_reported_missing(kind, specs, expected):
    [problem] = problems(kind, specs)
    assert problem.startswith(f"{expected}:"), problem


def test_suspend_and_managed_by():
    policy = RunPolicy.model_validate({"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"})
    assert policy.to_api() == {"cleanPodPolicy": "Running", "suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"}
    assert RunPolicy(suspend=False, managed_by=ManagedBy.TRAINING_OPERATOR).to_api() == {
        "cleanPodPolicy": "Running",
        "suspend": False,
        "managedBy": "kubeflow.org/training-operator",
    }
    assert [m.value for m in ManagedBy] == ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]
    assert RunPolicy().to_api() == {"cleanPodPolicy": "Running"}  # neither is written unless given


def test_empty_managed_by_is_refused_with_the_reason():
    assert problems("PyTorchJob", {"Master": spec_for("PyTorchJob")}, {"managedBy": ""}) == [
        "runPolicy.managedBy: must be 'kubeflow.org/training-operator' or 'kueue.x-k8s.io/multikueue', not "
        "empty: the operator's webhook refuses an empty managedBy, and its controllers would leave such a job "
        "to a manager that does not exist (got '')"
    ]


def test_warnings_default_to_none_for_input_taken_as_written():
    parsed = TrainingJobSpec.parse("JAXJob", {"Worker": spec_for("JAXJob")})
    assert parsed.warnings == ()
    assert TrainingJobSpec(parsed.kind, parsed.replica_specs, parsed.run_policy, parsed.kind_fields).warnings == ()

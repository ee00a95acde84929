"""constants.py: the per-kind table is internally consistent and agrees with the models; the enums are the one
home of the API's closed sets of values."""

from __future__ import annotations

import json

import pytest
import yaml

from airflow_trainjob import constants
from airflow_trainjob.constants import (
    API_VERSION,
    JOB_KINDS,
    CleanPodPolicy,
    ConditionStatus,
    JobConditionType,
    ManagedBy,
    RDZVBackend,
    RestartPolicy,
    SuccessPolicy,
)
from airflow_trainjob.models import (
    ElasticPolicy,
    ReplicaSpec,
    RunPolicy,
    TFJobFields,
)
from airflow_trainjob.models.kinds import DEPRECATED_FIELDS_MODELS, KIND_FIELDS_MODELS, kind_field_names

ENUMS = (JobConditionType, ConditionStatus, RestartPolicy, CleanPodPolicy, ManagedBy, RDZVBackend, SuccessPolicy)
TEMPLATE = {"spec": {"containers": [{"name": "pytorch", "image": "python:3.11"}]}}


def test_the_six_kinds():
    assert list(JOB_KINDS) == ["PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"]
    assert API_VERSION == "kubeflow.org/v1"


@pytest.mark.parametrize("kind", list(JOB_KINDS))
def test_kind_row_is_consistent(kind):
    row = JOB_KINDS[kind]
    assert row.kind == kind
    assert row.plural == kind.lower() + "s"
    assert row.replica_specs_key.endswith("ReplicaSpecs")
    for listed in (
        row.lead_replica_types,
        row.required_replica_types,
        row.single_replica_types,
        row.exclusive_replica_types,
    ):
        assert set(listed) <= set(row.replica_types)
    assert 0 < row.default_port < 65536
    assert row.lead_order == (*row.lead_replica_types, "Worker") and "Worker" in row.replica_types
    assert row.sdk_class == f"KubeflowOrgV1{kind}"


# training-operator release-1.9, pkg/apis/kubeflow.org/v1/<kind>_types.go: <Kind>DefaultContainerName,
# <Kind>DefaultPortName, <Kind>DefaultPort, <Kind>DefaultRestartPolicy.
UPSTREAM_DEFAULTS = {
    "PyTorchJob": ("pytorch", "pytorchjob-port", 23456, "OnFailure"),
    "TFJob": ("tensorflow", "tfjob-port", 2222, "Never"),
    "MPIJob": ("mpi", "mpi-port", 9999, "Never"),
    "XGBoostJob": ("xgboost", "xgboostjob-port", 9999, "Never"),
    "PaddleJob": ("paddle", "master", 36543, "OnFailure"),
    "JAXJob": ("jax", "jaxjob-port", 6666, "Never"),
}


@pytest.mark.parametrize("kind", list(JOB_KINDS))
def test_per_kind_defaults_are_upstreams(kind):
    row = JOB_KINDS[kind]
    assert (row.default_container, row.default_port_name, row.default_port, row.default_restart_policy) == (
        UPSTREAM_DEFAULTS[kind]
    )
    assert isinstance(row.default_restart_policy, RestartPolicy)


# The kinds' own spec fields, as the v1 API's <kind>_types.go declare them; listed once, by the fields models.
KIND_FIELDS = {
    "PyTorchJob": ("elasticPolicy", "nprocPerNode"),
    "TFJob": ("successPolicy", "enableDynamicWorker"),
    "MPIJob": ("slotsPerWorker", "mainContainer"),
    "XGBoostJob": (),
    "PaddleJob": ("elasticPolicy",),
    "JAXJob": (),
}


@pytest.mark.parametrize("kind", list(JOB_KINDS))
def test_kind_fields_are_read_from_the_fields_model(kind):
    assert kind_field_names(kind) == KIND_FIELDS[kind]
    assert not hasattr(JOB_KINDS[kind], "kind_fields")  # one list: the model's
    deprecated = ("cleanPodPolicy",) if kind == "MPIJob" else ()
    assert kind_field_names(kind, deprecated=True) == KIND_FIELDS[kind] + deprecated


def test_every_per_kind_registry_is_keyed_by_the_table():
    assert list(KIND_FIELDS_MODELS) == list(JOB_KINDS)
    assert set(DEPRECATED_FIELDS_MODELS) <= set(JOB_KINDS)
    with pytest.raises(KeyError):
        kind_field_names("NotAJob")


def test_enum_values_mirror_the_api():
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
    assert [s.value for s in ConditionStatus] == ["True", "False", "Unknown"]
    assert [m.value for m in ManagedBy] == ["kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"]
    assert [b.value for b in RDZVBackend] == ["c10d", "etcd", "etcd-v2"]
    assert [p.value for p in SuccessPolicy] == ["", "AllWorkers"]


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
def test_members_are_their_strings(enum):
    """A member compares, hashes, prints and JSON-dumps as its value, so JSON from the API compares with it."""
    for member in enum:
        assert isinstance(member, str) and member == member.value and {member.value: 1}[member] == 1
        assert str(member) == f"{member}" == "%s" % member == member.value  # noqa: UP031 - %-formatting is checked too
        assert json.loads(json.dumps({"v": member})) == {"v": member.value}
        assert enum(json.loads(json.dumps(member))) is member  # the JSON round trip


def test_the_models_re_export_the_enums_not_copies():
    from airflow_trainjob import models
    from airflow_trainjob.models import common, kinds

    for enum in (RestartPolicy, CleanPodPolicy, JobConditionType, ManagedBy):
        assert getattr(models, enum.__name__) is enum and getattr(common, enum.__name__) is enum
    assert kinds.RDZVBackend is RDZVBackend and kinds.SuccessPolicy is SuccessPolicy


def test_models_dump_plain_strings_to_json_and_yaml():
    """What the models write holds the values, not enum members: JSON and safe YAML dump it as plain strings."""
    dumped = {
        "replica": ReplicaSpec(template=TEMPLATE, restart_policy=RestartPolicy.EXIT_CODE).to_api(),
        "runPolicy": RunPolicy(clean_pod_policy=CleanPodPolicy.ALL, managed_by=ManagedBy.MULTIKUEUE).to_api(),
        "elastic": ElasticPolicy(rdzv_backend="c10d").to_api(),
        "tf": TFJobFields(success_policy=SuccessPolicy.ALL_WORKERS).to_api(),
        "python": RunPolicy(clean_pod_policy="None").model_dump(by_alias=True, exclude_none=True),
        "default": ReplicaSpec(template=TEMPLATE).model_dump(by_alias=True),
    }
    expected = {
        "replica": {"replicas": 1, "template": TEMPLATE, "restartPolicy": "ExitCode"},
        "runPolicy": {"cleanPodPolicy": "All", "managedBy": "kueue.x-k8s.io/multikueue"},
        "elastic": {"rdzvBackend": "c10d"},
        "tf": {"successPolicy": "AllWorkers"},
        "python": {"cleanPodPolicy": "None"},
        "default": {"replicas": 1, "template": TEMPLATE, "restartPolicy": "Never"},
    }
    assert json.loads(json.dumps(dumped)) == expected
    assert yaml.safe_load(yaml.safe_dump(dumped)) == expected  # safe_dump refuses any str subclass
    assert type(dumped["python"]["cleanPodPolicy"]) is str and type(dumped["default"]["restartPolicy"]) is str


def test_the_string_constants_left_are_the_enum_members():
    """Only the aliases other modules still import remain, and they are the members themselves."""
    assert constants.CONDITION_SUCCEEDED is JobConditionType.SUCCEEDED
    assert constants.CONDITION_FAILED is JobConditionType.FAILED
    left = {n for n in vars(constants) if n.startswith(("CONDITION_", "CLEAN_POD_POLICY_", "RESTART_POLICY_"))}
    assert left == {"CONDITION_SUCCEEDED", "CONDITION_FAILED"}
    assert not hasattr(constants, "FATAL_EXIT_CODE")

"""Every invalid job spec we could think of is refused with one error naming the field and what is allowed."""

from __future__ import annotations

import copy

import pytest

from airflow_trainjob.exceptions import InvalidJobSpecError
from airflow_trainjob.models import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest
from tests.support.report import record

CONTAINER = {"name": "pytorch", "image": "python:3.11", "command": ["python", "-c", "print(1)"]}
TEMPLATE = {"spec": {"containers": [CONTAINER]}}


def pytorch_specs(**worker_overrides):
    worker = {"replicas": 2, "template": copy.deepcopy(TEMPLATE), **worker_overrides}
    return {"Master": {"replicas": 1, "template": copy.deepcopy(TEMPLATE)}, "Worker": worker}


def template_with(**container_overrides):
    container = {**CONTAINER, **container_overrides}
    return {"spec": {"containers": [{k: v for k, v in container.items() if v is not None}]}}


# (id, arguments of TrainingJobSpec.parse + build_manifest, field path named, allowed values named)
CASES = [
    ("unknown kind", dict(kind="SparkJob"), "kind", "PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob"),
    ("kind wrong type", dict(kind=["PyTorchJob"]), "kind", "allowed: PyTorchJob"),
    (
        "negative replicas",
        dict(replica_specs=pytorch_specs(replicas=-1)),
        "replicaSpecs.Worker.replicas",
        "greater than or equal to 0",
    ),
    (
        "replicas not a number",
        dict(replica_specs=pytorch_specs(replicas="two")),
        "replicaSpecs.Worker.replicas",
        "valid integer",
    ),
    (
        "replicas a boolean",
        dict(replica_specs=pytorch_specs(replicas=True)),
        "replicaSpecs.Worker.replicas",
        "not a boolean",
    ),
    (
        "replicas a fraction",
        dict(replica_specs=pytorch_specs(replicas=1.5)),
        "replicaSpecs.Worker.replicas",
        "valid integer",
    ),
    (
        "replicas over int32",
        dict(replica_specs=pytorch_specs(replicas=2**31)),
        "replicaSpecs.Worker.replicas",
        "less than or equal to 2147483647",
    ),
    (
        "unknown restart policy",
        dict(replica_specs=pytorch_specs(restartPolicy="Sometimes")),
        "replicaSpecs.Worker.restartPolicy",
        "'Always', 'OnFailure', 'Never' or 'ExitCode'",
    ),
    (
        "restart policy lowercase",
        dict(replica_specs=pytorch_specs(restartPolicy="never")),
        "replicaSpecs.Worker.restartPolicy",
        "'Never'",
    ),
    (
        "unknown replica spec field",
        dict(replica_specs=pytorch_specs(replica=3)),
        "replicaSpecs.Worker.replica",
        "replicas, template, restartPolicy",
    ),
    (
        "replica spec not a mapping",
        dict(replica_specs={"Master": {"template": TEMPLATE}, "Worker": 3}),
        "replicaSpecs.Worker",
        "mapping of fields",
    ),
    (
        "replica type not allowed",
        dict(replica_specs={"Master": {"template": TEMPLATE}, "Chief": {"template": TEMPLATE}}),
        "replicaSpecs.Chief",
        "allowed: Master, Worker",
    ),
    (
        "replica type misspelt",
        dict(replica_specs={"Master": {"template": TEMPLATE}, "Workers": {"template": TEMPLATE}}),
        "replicaSpecs.Workers",
        "allowed: Master, Worker",
    ),
    (
        "replica type given in two cases",
        dict(
            replica_specs={
                "Master": {"template": TEMPLATE},
                "Worker": {"template": TEMPLATE},
                "worker": {"template": TEMPLATE},
            }
        ),
        "replicaSpecs",
        "'Worker' and 'worker' both name the Worker replica type",
    ),
    ("replica specs empty", dict(replica_specs={}), "replicaSpecs", "Master, Worker"),
    ("replica specs a list", dict(replica_specs=[{"template": TEMPLATE}]), "replicaSpecs", "Master, Worker"),
    (
        "replica specs malformed YAML",
        dict(replica_specs="Master: {replicas: 1\n"),
        "replicaSpecs",
        "not valid YAML/JSON",
    ),
    (
        "template missing",
        dict(replica_specs=pytorch_specs(template=None)),
        "replicaSpecs.Worker.template",
        "pod template",
    ),
    (
        "template a string",
        dict(replica_specs=pytorch_specs(template="pod.yaml")),
        "replicaSpecs.Worker.template",
        "pod template",
    ),
    (
        "template unknown key",
        dict(replica_specs=pytorch_specs(template={"spec": TEMPLATE["spec"], "metdata": {}})),
        "replicaSpecs.Worker.template",
        "only ['metadata', 'spec']",
    ),
    (
        "template without spec",
        dict(replica_specs=pytorch_specs(template={"metadata": {}})),
        "replicaSpecs.Worker.template",
        "'spec' must be a pod spec",
    ),
    (
        "template with no containers",
        dict(replica_specs=pytorch_specs(template={"spec": {"containers": []}})),
        "replicaSpecs.Worker.template",
        "at least one container",
    ),
    (
        "container not a mapping",
        dict(replica_specs=pytorch_specs(template={"spec": {"containers": ["pytorch"]}})),
        "replicaSpecs.Worker.template",
        "spec.containers[0]",
    ),
    (
        "container with no image",
        dict(replica_specs=pytorch_specs(template=template_with(image=None))),
        "replicaSpecs.Worker.template",
        "'spec.containers[0].image' is required",
    ),
    (
        "container with empty image",
        dict(replica_specs=pytorch_specs(template=template_with(image=""))),
        "replicaSpecs.Worker.template",
        "'spec.containers[0].image' is required",
    ),
    (
        "container with no name",
        dict(replica_specs=pytorch_specs(template=template_with(name=None))),
        "replicaSpecs.Worker.template",
        "'spec.containers[0].name' is required",
    ),
    (
        "two containers one name",
        dict(replica_specs=pytorch_specs(template={"spec": {"containers": [CONTAINER, CONTAINER]}})),
        "replicaSpecs.Worker.template",
        "names must be unique",
    ),
    (
        "no container named for the kind",
        dict(replica_specs=pytorch_specs(template=template_with(name="main"))),
        "replicaSpecs.Worker.template.spec.containers",
        "named 'pytorch'",
    ),
    (
        "PyTorch two masters",
        dict(replica_specs={"Master": {"replicas": 2, "template": TEMPLATE}}),
        "replicaSpecs.Master.replicas",
        "must be 1",
    ),
    (
        "PyTorch zero masters",
        dict(replica_specs={"Master": {"replicas": 0, "template": TEMPLATE}}),
        "replicaSpecs.Master.replicas",
        "must be 1",
    ),
    (
        "TF chief and master",
        dict(
            kind="TFJob",
            replica_specs={
                t: {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}
                for t in ("Chief", "Master")
            },
        ),
        "replicaSpecs",
        "only one of Chief, Master",
    ),
    (
        "MPI without launcher",
        dict(kind="MPIJob", replica_specs={"Worker": {"template": TEMPLATE}}),
        "replicaSpecs.Launcher",
        "needs a Launcher",
    ),
    (
        "XGBoost without master",
        dict(
            kind="XGBoostJob",
            replica_specs={"Worker": {"template": {"spec": {"containers": [{"name": "xgboost", "image": "x"}]}}}},
        ),
        "replicaSpecs.Master",
        "needs a Master",
    ),
    (
        "JAX master",
        dict(kind="JAXJob", replica_specs={"Master": {"template": TEMPLATE}}),
        "replicaSpecs.Master",
        "allowed: Worker",
    ),
    (
        "cleanPodPolicy Sometimes",
        dict(run_policy={"cleanPodPolicy": "Sometimes"}),
        "runPolicy.cleanPodPolicy",
        "'', 'All', 'Running' or 'None'",
    ),
    (
        "activeDeadlineSeconds 0",
        dict(run_policy={"activeDeadlineSeconds": 0}),
        "runPolicy.activeDeadlineSeconds",
        "greater than or equal to 1",
    ),
    (
        "activeDeadlineSeconds text",
        dict(run_policy={"activeDeadlineSeconds": "an hour"}),
        "runPolicy.activeDeadlineSeconds",
        "valid integer",
    ),
    ("backoffLimit -1", dict(run_policy={"backoffLimit": -1}), "runPolicy.backoffLimit", "greater than or equal to 0"),
    (
        "ttlSecondsAfterFinished -5",
        dict(run_policy={"ttlSecondsAfterFinished": -5}),
        "runPolicy.ttlSecondsAfterFinished",
        "greater than or equal to 0",
    ),
    (
        "unknown runPolicy field",
        dict(run_policy={"cleanupPolicy": "All"}),
        "runPolicy.cleanupPolicy",
        "cleanPodPolicy, ttlSecondsAfterFinished",
    ),
    ("runPolicy a list", dict(run_policy=["All"]), "runPolicy", "mapping of fields"),
    (
        "managedBy unknown",
        dict(run_policy={"managedBy": "other-job-controller"}),
        "runPolicy.managedBy",
        "'kubeflow.org/training-operator' or 'kueue.x-k8s.io/multikueue'",
    ),
    (
        "managedBy empty",
        dict(run_policy={"managedBy": ""}),
        "runPolicy.managedBy",
        "'kubeflow.org/training-operator' or 'kueue.x-k8s.io/multikueue', not empty",
    ),
    ("suspend not a boolean", dict(run_policy={"suspend": "maybe"}), "runPolicy.suspend", "valid boolean"),
    (
        "MPI deprecated cleanPodPolicy unknown",
        dict(
            kind="MPIJob",
            replica_specs={"Launcher": {"template": TEMPLATE}},
            kind_fields={"cleanPodPolicy": "Sometimes"},
        ),
        "spec.cleanPodPolicy",
        "'', 'All', 'Running' or 'None'",
    ),
    (
        "minAvailable -1",
        dict(run_policy={"schedulingPolicy": {"minAvailable": -1}}),
        "runPolicy.schedulingPolicy.minAvailable",
        "greater than or equal to 0",
    ),
    (
        "unknown schedulingPolicy field",
        dict(run_policy={"schedulingPolicy": {"minAvailble": 2}}),
        "runPolicy.schedulingPolicy.minAvailble",
        "minAvailable, queue",
    ),
    ("unknown kind field", dict(kind_fields={"nprocsPerNode": 2}), "spec.nprocsPerNode", "elasticPolicy, nprocPerNode"),
    (
        "kind field for a kind without any",
        dict(
            kind="XGBoostJob",
            replica_specs={"Master": {"template": {"spec": {"containers": [{"name": "xgboost", "image": "x"}]}}}},
            kind_fields={"slotsPerWorker": 2},
        ),
        "spec.slotsPerWorker",
        "allowed fields: none",
    ),
    (
        "nprocPerNode invalid",
        dict(kind_fields={"nprocPerNode": "many"}),
        "spec",
        "'auto', 'cpu', 'gpu' or a positive integer",
    ),
    (
        "nprocPerNode in both places",
        dict(kind_fields={"nprocPerNode": "2", "elasticPolicy": {"nProcPerNode": 2}}),
        "spec",
        "not both",
    ),
    (
        "elastic min above max",
        dict(kind_fields={"elasticPolicy": {"minReplicas": 4, "maxReplicas": 2}}),
        "spec.elasticPolicy",
        "must not exceed maxReplicas",
    ),
    (
        "rdzvBackend unknown",
        dict(kind_fields={"elasticPolicy": {"rdzvBackend": "zookeeper"}}),
        "spec.elasticPolicy.rdzvBackend",
        "'c10d', 'etcd' or 'etcd-v2'",
    ),
    (
        "TF successPolicy unknown",
        dict(
            kind="TFJob",
            replica_specs={"Worker": {"template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}},
            kind_fields={"successPolicy": "AnyWorker"},
        ),
        "spec.successPolicy",
        "'' or 'AllWorkers'",
    ),
    (
        "MPI slotsPerWorker 0",
        dict(kind="MPIJob", replica_specs={"Launcher": {"template": TEMPLATE}}, kind_fields={"slotsPerWorker": 0}),
        "spec.slotsPerWorker",
        "greater than or equal to 1",
    ),
    ("name with capitals", dict(name="Train-Model"), "metadata.name", "DNS-1035 label"),
    ("name starting with a digit", dict(name="1train"), "metadata.name", "start with a letter"),
    ("name with underscore", dict(name="train_model"), "metadata.name", "lowercase letters, digits and '-'"),
    ("name ending with dash", dict(name="train-"), "metadata.name", "end with a letter or digit"),
    ("name empty", dict(name=""), "metadata.name", "non-empty string"),
    ("name not a string", dict(name=42), "metadata.name", "non-empty string"),
    ("name too long for its pods", dict(name="a" * 55), "metadata.name", "at most 54 are allowed"),
    (
        "name too long under elastic scaling",
        dict(name="a" * 54, kind_fields={"elasticPolicy": {"maxReplicas": 100}}),
        "metadata.name",
        "at most 53 are allowed",
    ),
    ("namespace invalid", dict(namespace="ML_Team"), "metadata.namespace", "DNS-1123 label"),
    ("namespace too long", dict(namespace="n" * 64), "metadata.namespace", "at most 63"),
    ("label value invalid", dict(labels={"team": "ml team!"}), "metadata.labels['team']", "at most 63 characters"),
    ("label value not a string", dict(labels={"replicas": 3}), "metadata.labels['replicas']", "must be a string"),
    (
        "label key invalid",
        dict(labels={"-team": "ml"}),
        "metadata.labels['-team']",
        "starting and ending with a letter or digit",
    ),
    (
        "label key bad prefix",
        dict(labels={"Example.COM/team": "ml"}),
        "metadata.labels['Example.COM/team']",
        "DNS subdomain",
    ),
    (
        "annotation value not a string",
        dict(annotations={"owner": ["a"]}),
        "metadata.annotations['owner']",
        "must be a string",
    ),
    ("labels not a mapping", dict(labels=["team=ml"]), "metadata.labels", "mapping of strings"),
    (
        "worker 0 leads and has 0 replicas",
        dict(replica_specs={"Worker": {"replicas": 0, "template": TEMPLATE}}),
        "replicaSpecs.Worker.replicas",
        "at least 1",
    ),
    (
        "JAX with 0 workers",
        dict(
            kind="JAXJob",
            replica_specs={
                "Worker": {"replicas": 0, "template": {"spec": {"containers": [{"name": "jax", "image": "j"}]}}}
            },
        ),
        "replicaSpecs.Worker.replicas",
        "at least 1",
    ),
    ("runPolicy malformed YAML", dict(run_policy="cleanPodPolicy: [All"), "runPolicy", "not valid YAML/JSON"),
    ("kind fields malformed YAML", dict(kind_fields="nprocPerNode: [2"), "kindFields", "not valid YAML/JSON"),
    ("namespace not a string", dict(namespace=["ml"]), "metadata.namespace", "DNS-1123 label"),
]

DEFAULTS = dict(
    kind="PyTorchJob",
    replica_specs=None,
    run_policy=None,
    kind_fields=None,
    name="train",
    namespace="ml",
    labels=None,
    annotations=None,
)


def build(kind, replica_specs, run_policy, kind_fields, name, namespace, labels, annotations):
    spec = TrainingJobSpec.parse(
        kind, pytorch_specs() if replica_specs is None else replica_specs, run_policy, kind_fields
    )
    return build_manifest(spec=spec, name=name, namespace=namespace, labels=labels, annotations=annotations)


@pytest.mark.parametrize(("case", "arguments", "field", "allowed"), CASES, ids=[c[0] for c in CASES])
def test_refused_with_one_error_naming_field_and_allowed(case, arguments, field, allowed):
    with pytest.raises(InvalidJobSpecError) as raised:
        build(**{**DEFAULTS, **arguments})
    problems = raised.value.problems
    clean = len(problems) == 1 and problems[0].startswith((f"{field}:", f"{field}[")) and allowed in problems[0]
    record("bad_input/spec", case=case, field=field, refused=clean)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"{field}:") or problems[0].startswith(f"{field}["), problems[0]
    assert allowed in problems[0], problems[0]
    assert problems[0] in str(raised.value)


def test_the_valid_baseline_builds():
    # Guards the table: each case differs from this valid input by the one thing it names.
    manifest = build(**DEFAULTS)
    assert manifest["metadata"]["name"] == "train"


def test_refusal_is_not_retried_by_airflow():
    from airflow.providers.common.compat.sdk import AirflowFailException

    with pytest.raises(AirflowFailException):
        build(**{**DEFAULTS, "kind": "SparkJob"})


def test_every_problem_is_reported_at_once():
    specs = pytorch_specs(replicas=-1, restartPolicy="Sometimes")
    with pytest.raises(InvalidJobSpecError) as raised:
        TrainingJobSpec.parse("PyTorchJob", specs, {"backoffLimit": -1})
    assert [p.split(":")[0] for p in raised.value.problems] == [
        "replicaSpecs.Worker.replicas",
        "replicaSpecs.Worker.restartPolicy",
        "runPolicy.backoffLimit",
    ]


def test_count_of_bad_inputs_refused(capsys):
    refused = 0
    for _, arguments, _, _ in CASES:
        try:
            build(**{**DEFAULTS, **arguments})
        except InvalidJobSpecError:
            refused += 1
    with capsys.disabled():
        print(f"\nbad-input cases refused: {refused} of {len(CASES)}")
    assert refused == len(CASES)

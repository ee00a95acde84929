"""manifest.py: one golden manifest per job kind under tests/data, compared exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes.client import V1Container, V1PodSpec, V1PodTemplateSpec, V1ResourceRequirements

from airflow_trainjob.constants import JOB_KINDS
from airflow_trainjob.models import ElasticPolicy, PyTorchJobFields, ReplicaSpec, RunPolicy, TrainingJobSpec
from airflow_trainjob.models.kinds import kind_field_names
from airflow_trainjob.models.manifest import build_manifest

DATA = Path(__file__).parent / "data"


def container(name, *args):
    return {"name": name, "image": "python:3.11-slim", "command": ["python", "-c"], "args": list(args)}


def template(name, *args):
    return {"spec": {"containers": [container(name, *args)]}}


# What a DAG author writes for each kind: a mix of models, dicts, client objects and YAML text.
INPUTS = {
    "PyTorchJob": dict(
        replica_specs={
            "Master": ReplicaSpec(
                template=template("pytorch", "import train; train.main('{{ ds }}')"), restart_policy="OnFailure"
            ),
            "Worker": {
                "replicas": 2,
                "restartPolicy": "ExitCode",
                "template": V1PodTemplateSpec(
                    spec=V1PodSpec(
                        containers=[
                            V1Container(
                                name="pytorch",
                                image="python:3.11-slim",
                                command=["python", "-c"],
                                args=["import train; train.main('{{ ds }}')"],
                                resources=V1ResourceRequirements(limits={"memory": "2Gi", "cpu": "1"}),
                            )
                        ]
                    )
                ),
            },
        },
        run_policy=RunPolicy(clean_pod_policy="All", backoff_limit=3, active_deadline_seconds=7200),
        kind_fields=PyTorchJobFields(
            nproc_per_node="auto", elastic_policy=ElasticPolicy(rdzv_backend="c10d", max_restarts=2)
        ),
    ),
    "TFJob": dict(
        replica_specs={
            "Chief": {"template": template("tensorflow", "print('chief')")},
            "PS": {"replicas": 1, "template": template("tensorflow", "print('ps')")},
            "Worker": {"replicas": 2, "template": template("tensorflow", "print('worker')")},
            "Evaluator": {"template": template("tensorflow", "print('eval')")},
        },
        run_policy={"cleanPodPolicy": "None", "ttlSecondsAfterFinished": 3600},
        kind_fields={"successPolicy": "AllWorkers"},
    ),
    "MPIJob": dict(
        replica_specs={
            "Launcher": {"template": template("launcher", "print('mpirun')")},
            "Worker": {"replicas": 2, "restartPolicy": "Never", "template": template("worker", "print('rank')")},
        },
        run_policy={"cleanPodPolicy": "Running", "schedulingPolicy": {"minAvailable": 3, "queue": "training"}},
        kind_fields={"slotsPerWorker": 1, "mainContainer": "launcher"},
    ),
    "XGBoostJob": dict(
        replica_specs="""
Master:
  replicas: 1
  restartPolicy: Never
  template:
    spec:
      containers:
        - name: xgboost
          image: python:3.11-slim
          command: [python, -c]
          args: ["print('master')"]
Worker:
  replicas: 2
  restartPolicy: ExitCode
  template:
    spec:
      containers:
        - name: xgboost
          image: python:3.11-slim
          command: [python, -c]
          args: ["print('worker')"]
""",
        run_policy='{"activeDeadlineSeconds": 600}',
    ),
    "PaddleJob": dict(
        replica_specs={
            "Master": {"template": template("paddle", "print('master')")},
            "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": template("paddle", "print('worker')")},
        },
        run_policy={"backoffLimit": 1},
        kind_fields={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 4, "maxRestarts": 3}},
    ),
    "JAXJob": dict(
        replica_specs={"Worker": {"replicas": 2, "template": template("jax", "print('jax')")}},
    ),
}


def build(kind):
    spec = TrainingJobSpec.parse(kind, **INPUTS[kind])
    return build_manifest(
        spec=spec,
        name=f"retrain-{kind.lower()}",
        namespace="ml",
        labels={"team": "ml-platform"},
        annotations={"owner": "ml-platform@example.com"},
    )


@pytest.mark.parametrize("kind", list(JOB_KINDS))
def test_golden_manifest(kind):
    expected = yaml.safe_load((DATA / f"{kind.lower()}.yaml").read_text())
    assert build(kind) == expected


@pytest.mark.parametrize("kind", list(JOB_KINDS))
def test_manifest_shape(kind):
    manifest = build(kind)
    assert manifest["apiVersion"] == "kubeflow.org/v1" and manifest["kind"] == kind
    spec = manifest["spec"]
    assert "cleanPodPolicy" in spec["runPolicy"]
    assert JOB_KINDS[kind].replica_specs_key in spec
    assert set(spec) <= {"runPolicy", JOB_KINDS[kind].replica_specs_key, *kind_field_names(kind)}

    def no_nulls(node):
        if isinstance(node, dict):
            return all(v is not None and no_nulls(v) for v in node.values())
        if isinstance(node, list):
            return all(no_nulls(v) for v in node)
        return True

    assert no_nulls(manifest)
    assert yaml.safe_load(yaml.safe_dump(manifest)) == manifest  # plain data, JSON/YAML-safe


def test_jinja_text_in_args_reaches_the_manifest_unchanged():
    args = build("PyTorchJob")["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["import train; train.main('{{ ds }}')"]

"""The OpenLineage parent run's environment variables and where they go in a manifest (pure: no Airflow, no cluster)."""

from __future__ import annotations

import copy
import json

from openlineage.common.provider.dbt.utils import get_parent_run_metadata  # type: ignore[import-untyped]

from airflow_trainjob.domain.parent_run import (
    PARENT_RUN_ENV_NAMES,
    ParentRun,
    merged_env,
    parent_run_env,
    with_parent_run_env,
    without_parent_run_env,
)
from airflow_trainjob.domain.records import spec_digest

PARENT = ParentRun(
    namespace="airflow-prod",
    job_name="retrain.train",
    run_id="01900000-0000-7000-8000-000000000001",
    root_namespace="airflow-prod",
    root_job_name="retrain",
    root_run_id="01900000-0000-7000-8000-000000000002",
)
ENV = parent_run_env(PARENT)


def container(name: str, env: list | None = None) -> dict:
    return {"name": name, "image": "python:3.12", **({"env": env} if env is not None else {})}


def pytorch_job(master_env: list | None = None) -> dict:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "digits", "namespace": "ml"},
        "spec": {
            "runPolicy": {"cleanPodPolicy": None},
            "pytorchReplicaSpecs": {
                "Master": {
                    "template": {
                        "spec": {
                            "initContainers": [container("fetch")],
                            "containers": [container("pytorch", master_env), container("sidecar")],
                        }
                    }
                },
                "Worker": {"replicas": 2, "template": {"spec": {"containers": [container("pytorch")]}}},
            },
        },
    }


def test_the_env_says_the_parent_and_its_root_as_the_macros_and_the_facet_do():
    assert list(ENV) == list(PARENT_RUN_ENV_NAMES)
    assert ENV["OPENLINEAGE_PARENT_ID"] == "airflow-prod/retrain.train/01900000-0000-7000-8000-000000000001"
    assert ENV["OPENLINEAGE_ROOT_PARENT_ID"] == "airflow-prod/retrain/01900000-0000-7000-8000-000000000002"
    assert json.loads(ENV["OPENLINEAGE_CONTEXT"]) == {
        "parent": {
            "run": {"runId": PARENT.run_id},
            "job": {"namespace": "airflow-prod", "name": "retrain.train"},
            "root": {"run": {"runId": PARENT.root_run_id}, "job": {"namespace": "airflow-prod", "name": "retrain"}},
        }
    }


def test_the_openlineage_client_reads_the_same_parent_from_either_form(monkeypatch):
    """The client's own env reading (openlineage-integration-common): OPENLINEAGE_CONTEXT first, else the two ids."""
    expected = {
        "run": {"runId": PARENT.run_id},
        "job": {"namespace": "airflow-prod", "name": "retrain.train"},
        "root": {"run": {"runId": PARENT.root_run_id}, "job": {"namespace": "airflow-prod", "name": "retrain"}},
    }
    for names in (PARENT_RUN_ENV_NAMES, ("OPENLINEAGE_PARENT_ID", "OPENLINEAGE_ROOT_PARENT_ID")):
        for name in PARENT_RUN_ENV_NAMES:
            monkeypatch.delenv(name, raising=False)
        for name in names:
            monkeypatch.setenv(name, ENV[name])
        facet = get_parent_run_metadata().to_openlineage()
        assert {
            "run": {"runId": facet.run.runId},
            "job": {"namespace": facet.job.namespace, "name": facet.job.name},
            "root": {
                "run": {"runId": facet.root.run.runId},
                "job": {"namespace": facet.root.job.namespace, "name": facet.root.job.name},
            },
        } == expected, names


def test_every_container_of_every_replica_type_gets_it_and_no_init_container():
    job = pytorch_job(master_env=[{"name": "EPOCHS", "value": "3"}])
    before = copy.deepcopy(job)
    injected, kept = with_parent_run_env(job, ENV)
    assert job == before  # a new object
    assert kept == []
    pods = [r["template"]["spec"] for r in injected["spec"]["pytorchReplicaSpecs"].values()]
    containers = [c for pod in pods for c in pod["containers"]]
    assert len(containers) == 3
    for c in containers:
        assert {e["name"]: e["value"] for e in c["env"] if e["name"] in ENV} == ENV
    assert containers[0]["env"][0] == {"name": "EPOCHS", "value": "3"}  # the DAG's first, ours appended
    assert "env" not in pods[0]["initContainers"][0]


def test_a_container_that_names_its_own_parent_keeps_it_and_gets_none_of_ours():
    """Any one of the three set by the DAG (also from a secret): theirs, and none of ours beside it."""
    own = {"name": "OPENLINEAGE_PARENT_ID", "valueFrom": {"secretKeyRef": {"name": "lineage", "key": "parent"}}}
    injected, kept = with_parent_run_env(pytorch_job(master_env=[own]), ENV)
    master = injected["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert master[0]["env"] == [own]
    assert kept == ["spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch]"]
    assert [e["name"] for e in master[1]["env"]] == list(ENV)  # the other container of the same pod gets them
    assert merged_env([{"name": "OPENLINEAGE_CONTEXT", "value": "{}"}], ENV) is None
    assert merged_env(None, ENV) == [{"name": n, "value": v} for n, v in ENV.items()]


def test_a_trainjob_gets_it_in_trainer_env_even_without_a_trainer():
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": {"runtimeRef": {}}}
    injected, kept = with_parent_run_env(trainjob, ENV)
    assert injected["spec"]["trainer"] == {"env": [{"name": n, "value": v} for n, v in ENV.items()]} and kept == []
    trainjob["spec"]["trainer"] = {"numNodes": 2, "env": [{"name": "A", "value": "1"}]}
    trainjob["spec"]["initializer"] = {"dataset": {"storageUri": "hf://x", "env": []}}
    injected, _ = with_parent_run_env(trainjob, ENV)
    assert [e["name"] for e in injected["spec"]["trainer"]["env"]] == ["A", *ENV]
    assert injected["spec"]["initializer"] == trainjob["spec"]["initializer"]  # not the initializers
    trainjob["spec"]["trainer"]["env"].append({"name": "OPENLINEAGE_ROOT_PARENT_ID", "value": "a/b/c"})
    injected, kept = with_parent_run_env(trainjob, ENV)
    assert injected["spec"]["trainer"] == trainjob["spec"]["trainer"] and kept == ["spec.trainer"]


def test_the_digest_of_what_a_job_trains_ignores_which_try_is_its_parent():
    job = pytorch_job()
    first, _ = with_parent_run_env(job, ENV)
    second_try = parent_run_env(ParentRun(**{**PARENT.__dict__, "run_id": "01900000-0000-7000-8000-000000000009"}))
    second, _ = with_parent_run_env(job, second_try)
    assert first != second
    assert spec_digest(first) == spec_digest(second) == spec_digest(job)
    assert without_parent_run_env(first) == job
    changed = copy.deepcopy(first)
    changed["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    assert spec_digest(changed) != spec_digest(first)  # anything else still counts

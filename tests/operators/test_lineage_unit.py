"""The operators' OpenLineage methods without a cluster (airflow_trainjob.operators.lineage): what they return from
what the task holds, the facets as OpenLineage serializes them, and their published schema in step with them."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest
from airflow.sdk import Asset
from openlineage.client.serde import Serde

from airflow_trainjob.domain.failures import ContainerEnd
from airflow_trainjob.domain.verdict import Verdict
from airflow_trainjob.exceptions import JobDeletedError, exception_for
from airflow_trainjob.operators import lineage_facets
from airflow_trainjob.operators.lineage import lineage_at_end, lineage_on_start
from airflow_trainjob.operators.training_job import TrainingJobOperator

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "lineage-facets.json").read_text())

MANIFEST: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "tj", "namespace": "ml"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 2},
        "initializer": {"dataset": {"storageUri": "s3://data/train"}},
    },
}
FAILED = {
    **MANIFEST,
    "metadata": {**MANIFEST["metadata"], "uid": "u-1", "creationTimestamp": "2026-12-07T10:00:00Z"},
    "status": {
        "conditions": [
            {"type": "Failed", "status": "True", "reason": "FailedJobs", "lastTransitionTime": "2026-12-07T10:00:30Z"}
        ]
    },
}


def as_json(lineage) -> dict:
    return {
        "inputs": [(d.namespace, d.name) for d in lineage.inputs],
        "outputs": [(d.namespace, d.name) for d in lineage.outputs],
        "run": {k: json.loads(Serde.to_json(v)) for k, v in lineage.run_facets.items()},
        "job": {k: json.loads(Serde.to_json(v)) for k, v in lineage.job_facets.items()},
    }


def test_the_start_describes_the_manifest_and_names_its_datasets_once():
    lineage = as_json(
        lineage_on_start(
            MANIFEST,
            [Asset("file:///data/a.csv"), Asset("file:///data/a.csv")],  # the same asset twice: once
            [Asset("file:///models/m")],
        )
    )
    assert lineage["inputs"] == [("s3://data", "train"), ("file", "/data/a.csv")]
    assert lineage["outputs"] == [("file", "/models/m")]
    assert lineage["job"]["airflowTrainjob_job"]["replicas"] == {"node": 2}
    assert lineage["job"]["airflowTrainjob_job"]["_schemaURL"].endswith(
        "/docs/lineage-facets.json#/$defs/TrainingJobJobFacet"
    )
    assert lineage["run"] == {
        "airflowTrainjob_run": {
            "_producer": lineage["run"]["airflowTrainjob_run"]["_producer"],
            "_schemaURL": lineage_facets.schema_url("TrainingJobRunFacet"),
            "name": "tj",
            "namespace": "ml",
        }
    }


def test_the_end_of_a_failed_job_has_its_run_and_failure_facets():
    verdict = Verdict(True, "failed", (ContainerEnd("tj-node-0-0-x", "node-0", "node", 3, "Error"),))
    run = SimpleNamespace(last_known_job=FAILED, error=exception_for(verdict))
    lineage = as_json(lineage_at_end(MANIFEST, run, [], []))
    assert lineage["run"]["airflowTrainjob_run"]["uid"] == "u-1"
    assert lineage["run"]["airflowTrainjob_run"]["durationSeconds"] == 30.0
    failure = lineage["run"]["airflowTrainjob_failure"]
    assert failure["permanent"] is True
    assert failure["failedReplicas"] == [
        {
            "replica": "node-0",
            "pod": "tj-node-0-0-x",
            "container": "node",
            "exitCode": 3,
            "reason": "Error",
            "exitClass": "Permanent",
            "failedRuns": 1,
        }
    ]


def test_an_end_that_is_no_verdict_has_no_failure_facet_and_a_try_that_never_ran_describes_its_manifest():
    gone = SimpleNamespace(last_known_job=FAILED, error=JobDeletedError("deleted"))
    assert "airflowTrainjob_failure" not in lineage_at_end(MANIFEST, gone, [], []).run_facets
    never = as_json(lineage_at_end(MANIFEST, None, [], []))
    assert never["run"]["airflowTrainjob_run"]["name"] == "tj" and "uid" not in never["run"]["airflowTrainjob_run"]
    assert lineage_at_end(None, None, [], []).job_facets == {}  # invalid input: nothing described


def test_the_operator_before_rendering_has_no_manifest_and_still_declares_its_inlets():
    operator = TrainingJobOperator(
        task_id="t",
        kind="PyTorchJob",
        replica_specs={"Master": {"template": {"spec": {"containers": []}}}},
        inlets=[Asset("file:///in")],
    )
    lineage = operator.get_openlineage_facets_on_start()
    assert [(d.namespace, d.name) for d in lineage.inputs] == [("file", "/in")] and lineage.job_facets == {}
    assert operator.get_openlineage_facets_on_failure(None).run_facets == {}


@pytest.mark.parametrize(
    "facet",
    [
        lineage_facets.TrainingJobJobFacet,
        lineage_facets.TrainingJobRunFacet,
        lineage_facets.TrainingJobFailureRunFacet,
    ],
)
def test_each_facet_has_the_fields_its_published_schema_defines(facet):
    own = {a.name for a in attrs.fields(facet) if not a.name.startswith("_")}
    (_, defined) = SCHEMA["$defs"][facet.__name__]["allOf"]
    assert own == set(defined["properties"])
    assert set(defined["required"]) == {a.name for a in attrs.fields(facet) if a.default is attrs.NOTHING}
    assert lineage_facets.schema_url(facet.__name__).startswith(SCHEMA["$id"])

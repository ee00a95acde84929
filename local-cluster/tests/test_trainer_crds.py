"""The Trainer v2 CRDs (TrainJob, TrainingRuntime, ClusterTrainingRuntime) and JobSet's: structural schemas derived
from the generated ``kubeflow_trainer_api`` models, served by the real apiserver with upstream's defaults, enums,
printer columns and status subresource; wrongly typed fields refused (422), unknown ones pruned.

The first tests need no cluster: they check the converter and the schemas it builds.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubeflow_trainer_api import models  # type: ignore[import-untyped]
from pydantic import BaseModel

from airflow_trainjob_local import crd_schema
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer import crds, schema

KINDS = {
    "TrainJob": models.TrainerV1alpha1TrainJob,
    "TrainingRuntime": models.TrainerV1alpha1TrainingRuntime,
    "ClusterTrainingRuntime": models.TrainerV1alpha1ClusterTrainingRuntime,
    "JobSet": models.JobsetV1alpha2JobSet,
}


def at(node: dict[str, Any], path: str) -> dict[str, Any]:
    """The node at a dotted path; ``*`` steps into a map's values, ``[]`` into a list's items."""
    for part in path.split("."):
        if part == "*":
            node = node["additionalProperties"]
        elif part.endswith("[]"):
            node = node["properties"][part[:-2]]["items"]
        else:
            node = node["properties"][part]
    return node


def manifest(kind: str) -> dict[str, Any]:
    return next(m for m in crds.all_crd_manifests() if m["spec"]["names"]["kind"] == kind)


def openapi(kind: str) -> dict[str, Any]:
    return manifest(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


# --- the converter and the schemas, without a cluster ---------------------------------------------------------


@pytest.mark.parametrize("kind", list(KINDS))
def test_schemas_are_structural(kind):
    built = openapi(kind)
    assert schema.structural_problems(built) == []
    text = json.dumps(built)
    for keyword in ('"$ref"', '"anyOf"', '"nullable"', '"uniqueItems"', '"title"', '"type": "null"'):
        assert keyword not in text
    assert built["properties"]["metadata"] == {"type": "object"}


def test_the_structural_check_finds_what_the_converter_must_not_write():
    assert schema.structural_problems({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}})
    assert schema.structural_problems({"type": "string", "nullable": True}) == ["<root>: nullable"]
    assert schema.structural_problems({"type": "object", "properties": {"a": {}}}) == [".properties.a: no type"]


def test_every_extra_names_a_field_of_the_models():
    fields = set()
    for model in KINDS.values():
        for name, definition in model.model_json_schema()["$defs"].items():
            fields |= {(name, field) for field in definition.get("properties") or {}}
    assert set(schema.FIELD_EXTRAS) <= fields, set(schema.FIELD_EXTRAS) - fields


def test_special_types_become_int_or_string_quantity_and_kept_metadata():
    trainjob, jobset = openapi("TrainJob"), openapi("JobSet")
    assert at(trainjob, "spec.trainer.resourcesPerNode.limits.*") == crd_schema.QUANTITY
    assert at(trainjob, "spec.trainer.env[].valueFrom.resourceFieldRef.divisor") == crd_schema.QUANTITY
    pod = "spec.replicatedJobs[].template.spec.template.spec"
    assert at(jobset, f"{pod}.containers[].readinessProbe.httpGet.port") == crd_schema.INT_OR_STRING
    assert at(jobset, f"{pod}.volumes[].emptyDir.sizeLimit") == crd_schema.QUANTITY
    for path in ("spec.replicatedJobs[].template.metadata", "spec.replicatedJobs[].template.spec.template.metadata"):
        assert at(jobset, path) == crd_schema.ANY_OBJECT
    assert at(openapi("ClusterTrainingRuntime"), "spec.template.metadata") == crd_schema.ANY_OBJECT
    assert at(trainjob, "spec.runtimePatches[].time") == {"type": "string", "format": "date-time"}


def test_required_fields_defaults_and_enums_of_the_go_api():
    trainjob, runtime, jobset = openapi("TrainJob"), openapi("ClusterTrainingRuntime"), openapi("JobSet")
    assert at(trainjob, "spec")["required"] == ["runtimeRef"]
    assert at(trainjob, "spec.runtimeRef")["required"] == ["name"]
    assert at(trainjob, "spec.runtimeRef.kind")["default"] == "ClusterTrainingRuntime"
    assert at(trainjob, "spec.runtimeRef.apiGroup")["default"] == "trainer.kubeflow.org"
    assert at(trainjob, "spec.managedBy")["enum"] == [c.MANAGED_BY_TRAINER, c.MANAGED_BY_MULTIKUEUE]
    assert at(jobset, "spec.replicatedJobs[]")["required"] == ["name", "template"]
    assert at(jobset, "spec.replicatedJobs[].replicas") == {"type": "integer", "default": 1}
    assert at(runtime, "spec.template.spec.replicatedJobs[].replicas") == {"type": "integer", "default": 1}
    assert at(jobset, "spec.successPolicy.operator")["enum"] == ["All", "Any"]
    assert at(jobset, "spec.replicatedJobs")["x-kubernetes-list-map-keys"] == ["name"]
    assert at(jobset, "status.conditions[]")["required"] == [
        "lastTransitionTime",
        "message",
        "reason",
        "status",
        "type",
    ]


def test_a_model_below_itself_stops_with_an_object_that_keeps_its_content():
    class Loop(BaseModel):
        name: str
        child: Loop | None = None
        children: list[Loop] | None = None

    Loop.model_rebuild()

    class Holder(BaseModel):
        loop: Loop

    built = schema.structural_schema(Holder)
    loop = built["properties"]["loop"]
    assert loop["required"] == ["name"] and loop["properties"]["name"] == {"type": "string"}
    assert loop["properties"]["child"] == crd_schema.ANY_OBJECT
    assert loop["properties"]["children"]["items"] == crd_schema.ANY_OBJECT


def test_a_type_the_apiserver_cannot_express_is_an_error():
    class Mixed(BaseModel):
        value: int | list[str]

    with pytest.raises(ValueError, match="anyOf"):
        schema.structural_schema(Mixed)


def test_crd_names_scopes_columns_and_subresources():
    shapes = {
        m["metadata"]["name"]: (
            m["spec"]["scope"],
            m["spec"]["versions"][0]["name"],
            [col["name"] for col in m["spec"]["versions"][0].get("additionalPrinterColumns", [])],
            m["spec"]["versions"][0].get("subresources"),
        )
        for m in crds.all_crd_manifests()
    }
    assert shapes == {
        "jobsets.jobset.x-k8s.io": (
            "Namespaced",
            "v1alpha2",
            ["TerminalState", "Restarts", "Completed", "Suspended", "Age"],
            {"status": {}},
        ),
        "trainjobs.trainer.kubeflow.org": ("Namespaced", "v1alpha1", ["State", "Age"], {"status": {}}),
        "trainingruntimes.trainer.kubeflow.org": ("Namespaced", "v1alpha1", [], None),
        "clustertrainingruntimes.trainer.kubeflow.org": ("Cluster", "v1alpha1", [], None),
    }


# --- on the real apiserver ------------------------------------------------------------------------------------


def test_up_installs_the_crds_as_built(kube_api_client):
    from kubernetes import client

    api = client.ApiextensionsV1Api(kube_api_client)
    for wanted in crds.all_crd_manifests():
        name = wanted["metadata"]["name"]
        installed = json.loads(api.read_custom_resource_definition(name, _preload_content=False).data)
        assert installed["spec"]["versions"][0]["schema"] == wanted["spec"]["versions"][0]["schema"]
        conditions = {x["type"]: x["status"] for x in installed["status"]["conditions"]}
        assert conditions.get("NonStructuralSchema") is None and conditions["Established"] == "True", conditions


def trainjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": {"name": name},
        # Suspended: a trainer controller leaves it alone, nothing runs.
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "suspend": True, **spec},
    }


def test_a_trainjob_gets_the_api_defaults(custom_objects, namespace):
    stored = custom_objects.create_namespaced_custom_object(
        c.GROUP, c.VERSION, namespace, c.TRAINJOBS, trainjob("defaults", suspend=None), dry_run="All"
    )
    assert stored["spec"] == {
        "runtimeRef": {"name": "torch-distributed", "apiGroup": c.GROUP, "kind": c.CLUSTER_TRAINING_RUNTIME_KIND},
        "suspend": False,
        "managedBy": c.MANAGED_BY_TRAINER,
    }


def test_a_wrongly_typed_field_is_refused(custom_objects, namespace):
    from kubernetes.client.exceptions import ApiException

    body = trainjob("bad-nodes", trainer={"numNodes": "two"})
    with pytest.raises(ApiException) as raised:
        custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.TRAINJOBS, body, dry_run="All")
    assert raised.value.status == 422
    assert "spec.trainer.numNodes" in json.loads(raised.value.body)["message"]

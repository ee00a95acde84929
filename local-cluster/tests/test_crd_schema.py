"""The local cluster's job CRDs have a structural schema of the kubeflow.org/v1 types: the real apiserver refuses
wrongly typed fields (422, naming the field), prunes unknown ones and applies the API's defaults — while
everything of the v1 API is stored as sent (the provider's own check of that: tests/integration/test_stored_as_sent.py).

The first tests need no cluster: they check the schema itself (structural, no ``$ref``, typed from the
official client's models).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from airflow_trainjob_local import constants as c
from airflow_trainjob_local import crd_schema, crds
from airflow_trainjob_local.controller.validation import MULTIKUEUE_CONTROLLER


def openapi_schema(kind: str) -> dict[str, Any]:
    return crds.crd_manifest(c.JOB_KINDS[kind])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def at(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The node at a dotted path; ``*`` steps into a map's values, ``[]`` into a list's items."""
    node = schema
    for part in path.split("."):
        if part == "*":
            node = node["additionalProperties"]
        elif part.endswith("[]"):
            node = node["properties"][part[:-2]]["items"]
        else:
            node = node["properties"][part]
    return node


TEMPLATE_SPEC = "spec.pytorchReplicaSpecs.*.template.spec"


# --- the schema, without a cluster ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(c.JOB_KINDS))
def test_schema_is_structural(kind):
    schema = openapi_schema(kind)
    assert crd_schema.structural_problems(schema) == []
    assert "$ref" not in json.dumps(schema)
    for path, node in crd_schema.walk(schema):
        typed = (
            "type" in node or node.get("x-kubernetes-int-or-string") or node.get("x-kubernetes-preserve-unknown-fields")
        )
        assert typed, f"{path} has no type"


def test_structural_check_finds_what_the_apiserver_refuses():
    assert crd_schema.structural_problems({"type": "object", "properties": {"a": {}}}) == [".properties.a: no type"]
    assert crd_schema.structural_problems({"type": "object", "properties": {"a": {"$ref": "#/x"}}})
    assert crd_schema.structural_problems({"type": "array"}) == ["<root>: array without items"]


def test_pod_template_is_walked_from_the_client_models():
    schema = openapi_schema("PyTorchJob")
    container = at(schema, f"{TEMPLATE_SPEC}.containers[]")
    assert container["properties"]["image"] == {"type": "string"}
    assert container["required"] == ["name"]
    assert at(container, "ports[]")["properties"]["containerPort"] == {"type": "integer"}
    assert at(container, "ports[]")["required"] == ["containerPort"]
    limits = at(container, "resources.limits")
    assert limits["type"] == "object" and limits["additionalProperties"]["x-kubernetes-int-or-string"] is True
    assert "type" not in limits["additionalProperties"]
    assert at(container, "readinessProbe.httpGet.port") == {"x-kubernetes-int-or-string": True}
    assert at(container, "env[].valueFrom.resourceFieldRef.divisor")["x-kubernetes-int-or-string"] is True
    assert at(schema, f"{TEMPLATE_SPEC}.containers[]")["properties"]["env"]["items"]["required"] == ["name"]
    assert at(schema, "spec.pytorchReplicaSpecs.*.template.metadata") == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert at(schema, f"{TEMPLATE_SPEC}.volumes[].emptyDir.sizeLimit")["x-kubernetes-int-or-string"] is True
    assert at(schema, f"{TEMPLATE_SPEC}.affinity.nodeAffinity")["type"] == "object"
    assert at(schema, f"{TEMPLATE_SPEC}")["required"] == ["containers"]


def test_quantity_pattern_follows_the_quantity_grammar():
    pattern = re.compile(crd_schema.QUANTITY["pattern"])
    for good in ("1", "500m", "1.5", ".5", "2Gi", "1e3", "1E", "+1k", "-2", "100Mi", "0.5Ki", "1E-3"):
        assert pattern.match(good), good
    for bad in ("", "two", "1GB", "1 Gi", "Gi", "1.2.3", "1ee3"):
        assert not pattern.match(bad), bad


def test_job_fields_are_typed_from_the_go_api():
    schema = openapi_schema("PyTorchJob")
    assert at(schema, "spec.pytorchReplicaSpecs.*.replicas") == {"type": "integer", "format": "int32"}
    assert at(schema, "spec.pytorchReplicaSpecs.*.restartPolicy")["enum"] == [
        "Always",
        "OnFailure",
        "Never",
        "ExitCode",
    ]
    assert at(schema, "spec.runPolicy.suspend") == {"type": "boolean", "default": False}
    assert at(schema, "spec.runPolicy.activeDeadlineSeconds")["format"] == "int64"
    assert at(schema, "spec.runPolicy.managedBy")["enum"] == [
        "kubeflow.org/training-operator",
        "kueue.x-k8s.io/multikueue",
    ]
    assert at(schema, "spec.runPolicy.schedulingPolicy.minResources.*")["x-kubernetes-int-or-string"] is True
    assert set(at(schema, "spec.elasticPolicy")["properties"]) == {
        "minReplicas",
        "maxReplicas",
        "rdzvBackend",
        "rdzvPort",
        "rdzvHost",
        "rdzvId",
        "rdzvConf",
        "standalone",
        "nProcPerNode",
        "maxRestarts",
        "metrics",
    }
    assert at(schema, "spec")["required"] == ["pytorchReplicaSpecs"]
    assert at(schema, "status.conditions[]")["required"] == ["type", "status"]
    assert at(schema, "status.replicaStatuses.*.labelSelector.matchExpressions[]")["required"] == ["key", "operator"]
    assert set(at(openapi_schema("MPIJob"), "spec")["properties"]) == {
        "runPolicy",
        "mpiReplicaSpecs",
        "slotsPerWorker",
        "cleanPodPolicy",
        "mainContainer",
    }
    assert set(at(openapi_schema("TFJob"), "spec")["properties"]) == {
        "runPolicy",
        "tfReplicaSpecs",
        "successPolicy",
        "enableDynamicWorker",
    }
    assert set(at(openapi_schema("PaddleJob"), "spec.elasticPolicy")["properties"]) == {
        "minReplicas",
        "maxReplicas",
        "maxRestarts",
        "metrics",
    }
    for kind in ("XGBoostJob", "JAXJob"):
        key = c.JOB_KINDS[kind].replica_specs_key
        assert set(at(openapi_schema(kind), "spec")["properties"]) == {"runPolicy", key}


def test_crds_keep_printer_columns_and_status_subresource():
    for manifest in crds.all_crd_manifests():
        version = manifest["spec"]["versions"][0]
        assert version["subresources"] == {"status": {}}
        assert [col["name"] for col in version["additionalPrinterColumns"]] == ["State", "Age"]


def test_a_recursive_model_stops_with_an_object_that_keeps_its_content(monkeypatch):
    from kubernetes import client as k8s

    class V1Loop:
        openapi_types = {"name": "str", "child": "V1Loop", "children": "list[V1Loop]"}
        attribute_map = {"name": "name", "child": "child", "children": "children"}

    monkeypatch.setattr(k8s, "V1Loop", V1Loop, raising=False)
    schema = crd_schema.model_schema("V1Loop")
    assert schema["properties"]["child"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert schema["properties"]["children"]["items"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


# --- the schema, on the real apiserver --------------------------------------------------------------------


def job(name: str, worker: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    replica = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {
            "spec": {"containers": [{"name": "pytorch", "image": "python:3.11", "command": ["python", "-c", "pass"]}]}
        },
    }
    replica.update(worker or {})
    return {
        "apiVersion": c.API_VERSION,
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        # Suspended: the training controller leaves it alone, nothing runs.
        "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": {"Worker": replica}, **spec},
    }


def create(
    custom_objects, namespace: str, body: dict[str, Any], plural: str = "pytorchjobs", dry_run: bool = False
) -> dict[str, Any]:
    kwargs = {"dry_run": "All"} if dry_run else {}
    return custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, plural, body, **kwargs)


def refused(custom_objects, namespace: str, body: dict[str, Any]) -> str:
    """The apiserver's message refusing ``body`` (a dry run: nothing is stored)."""
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as raised:
        create(custom_objects, namespace, body, dry_run=True)
    assert raised.value.status == 422, raised.value.body
    return json.loads(raised.value.body)["message"]


def names(message: str, field: str) -> bool:
    """Whether the refusal names ``field``; list indexes are optional (the 1.20 apiserver leaves them out)."""
    pattern = re.sub(r"\\\[(\d+)\\\]", r"(?:\\[\1\\])?", re.escape(field))
    return re.search(pattern, message) is not None


def with_container(**fields: Any) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "python:3.11", "command": ["python", "-c", "pass"], **fields}
    return {"template": {"spec": {"containers": [container]}}}


def test_the_installed_crds_have_the_schema(kube_api_client):
    from kubernetes import client

    api = client.ApiextensionsV1Api(kube_api_client)
    for kind in c.JOB_KINDS.values():
        response = api.read_custom_resource_definition(crds.crd_name(kind), _preload_content=False)
        installed = json.loads(response.data)
        schema = installed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        # What `up` installed is what crds.py builds now (an existing state dir gets the current schema).
        assert schema == openapi_schema(kind.kind)
        conditions = {x["type"]: x["status"] for x in installed["status"]["conditions"]}
        assert conditions.get("NonStructuralSchema") is None and conditions["Established"] == "True"


def test_up_replaces_an_installed_crd_that_differs(local_cluster, kube_api_client, capsys):
    """``install_crds`` (run by ``up``) compares the spec hash: a CRD from another version of crds.py is replaced,
    an unchanged one is left alone."""
    from kubernetes import client

    api = client.ApiextensionsV1Api(kube_api_client)
    name = crds.crd_name(c.JOB_KINDS["JAXJob"])
    api.patch_custom_resource_definition(
        name, {"metadata": {"annotations": {crds.SPEC_HASH_ANNOTATION: "from-another-version"}}}, _preload_content=False
    )
    local_cluster.install_crds()
    said = capsys.readouterr().err
    assert f"CRD {name}: updated" in said and said.count(": updated") == 1
    installed = json.loads(api.read_custom_resource_definition(name, _preload_content=False).data)
    wanted = crds.crd_manifest(c.JOB_KINDS["JAXJob"])["metadata"]["annotations"][crds.SPEC_HASH_ANNOTATION]
    assert installed["metadata"]["annotations"][crds.SPEC_HASH_ANNOTATION] == wanted
    local_cluster.install_crds()
    assert ": updated" not in capsys.readouterr().err


def test_replicas_as_a_string_is_refused_naming_the_field(custom_objects, namespace):
    message = refused(custom_objects, namespace, job("bad-replicas", {"replicas": "two"}))
    assert "spec.pytorchReplicaSpecs.Worker.replicas" in message and "integer" in message


def test_unknown_restart_policy_is_refused(custom_objects, namespace):
    message = refused(custom_objects, namespace, job("bad-restart", {"restartPolicy": "Sometimes"}))
    assert "spec.pytorchReplicaSpecs.Worker.restartPolicy" in message and "Sometimes" in message


def test_container_port_as_a_string_is_refused(custom_objects, namespace):
    message = refused(custom_objects, namespace, job("bad-port", with_container(ports=[{"containerPort": "x"}])))
    assert names(message, "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort")
    assert "integer" in message


def test_other_wrong_types_and_values_are_refused(custom_objects, namespace):
    cases = [
        (job("bad-cpu", with_container(resources={"limits": {"cpu": "lots"}})), "resources.limits.cpu"),
        (job("bad-float-cpu", with_container(resources={"requests": {"cpu": 0.5}})), "resources.requests.cpu"),
        (job("bad-image", with_container(image=3)), "containers[0].image"),
        (job("bad-env", with_container(env=[{"value": "no name"}])), "containers[0].env[0].name"),
        (job("bad-suspend", runPolicy={"suspend": "yes"}), "spec.runPolicy.suspend"),
        (job("bad-clean", runPolicy={"cleanPodPolicy": "Some"}), "spec.runPolicy.cleanPodPolicy"),
        (job("bad-managed", runPolicy={"managedBy": "me"}), "spec.runPolicy.managedBy"),
        (job("bad-elastic", elasticPolicy={"maxReplicas": "4"}), "spec.elasticPolicy.maxReplicas"),
        (job("bad-nproc", nprocPerNode=2), "spec.nprocPerNode"),
        ({**job("no-specs"), "spec": {"runPolicy": {}}}, "spec.pytorchReplicaSpecs"),
        (job("no-containers", {"template": {"spec": {}}}), "template.spec.containers"),
    ]
    for body, field in cases:
        assert names(refused(custom_objects, namespace, body), field), body


def test_quantities_as_numbers_and_strings_are_accepted(custom_objects, namespace):
    resources = {"limits": {"cpu": 1, "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": 268435456}}
    body = job(
        "quantities",
        with_container(resources=resources),
        runPolicy={"suspend": True, "schedulingPolicy": {"minResources": {"cpu": 2, "memory": "4Gi"}}},
    )
    stored = create(custom_objects, namespace, body)
    container = stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["resources"] == resources
    assert stored["spec"]["runPolicy"]["schedulingPolicy"]["minResources"] == {"cpu": 2, "memory": "4Gi"}


def test_int_or_string_ports_accept_both(custom_objects, namespace):
    probe = {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 5}
    liveness = {"tcpSocket": {"port": 8080}}
    body = job(
        "probes",
        with_container(readinessProbe=probe, livenessProbe=liveness, ports=[{"name": "http", "containerPort": 8080}]),
    )
    stored = create(custom_objects, namespace, body, dry_run=True)
    container = stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"] == probe and container["livenessProbe"] == liveness


def test_unknown_fields_are_pruned(custom_objects, namespace):
    body = job("pruned", with_container(colour="blue"), foo={"bar": 1})
    body["spec"]["runPolicy"]["extra"] = True
    body["status"] = {"invented": 1}
    create(custom_objects, namespace, body)
    read = custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", "pruned")
    assert "foo" not in read["spec"]
    assert "extra" not in read["spec"]["runPolicy"]
    assert "colour" not in read["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]


def test_template_metadata_is_kept_whole(custom_objects, namespace):
    metadata = {"labels": {"app": "x"}, "annotations": {"a": "b"}, "name": "ignored-by-the-operator"}
    body = job("template-meta", {"template": {"metadata": metadata, **with_container()["template"]}})
    stored = create(custom_objects, namespace, body, dry_run=True)
    assert stored["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"] == metadata


def test_suspend_defaults_to_false(custom_objects, namespace):
    body = job("defaulted")
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    stored = create(custom_objects, namespace, body, dry_run=True)
    assert stored["spec"]["runPolicy"] == {"cleanPodPolicy": "None", "suspend": False}


# "", 0 and false are values, not null. The apiserver built without build.py's source patch (recipe 1) took ""
# for null and refused it (422 `must be of type string: "null"`); 0 and false passed.
# Both jobs are left to Kueue (managedBy): the training controller writes no status to race the one under test.


def test_empty_strings_zeros_and_false_in_a_spec_are_stored_as_sent(custom_objects, namespace):
    container = {"env": [{"name": "EMPTY", "value": ""}], "args": [""], "workingDir": "", "stdin": False}
    body = job("empty-values", {"replicas": 0, **with_container(**container)})
    scheduling = {"queue": "", "minAvailable": 0}
    body["spec"]["runPolicy"].update(backoffLimit=0, managedBy=MULTIKUEUE_CONTROLLER, schedulingPolicy=scheduling)
    created = create(custom_objects, namespace, body)
    read = custom_objects.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, "pytorchjobs", "empty-values")
    for stored in (created, read):
        worker = stored["spec"]["pytorchReplicaSpecs"]["Worker"]
        assert worker["replicas"] == 0
        assert {k: worker["template"]["spec"]["containers"][0][k] for k in container} == container
        assert stored["spec"]["runPolicy"]["backoffLimit"] == 0
        assert stored["spec"]["runPolicy"]["schedulingPolicy"] == scheduling


def test_a_status_with_empty_strings_and_zeros_is_written_through_the_status_subresource(custom_objects, namespace):
    body = job("empty-status")
    body["spec"]["runPolicy"]["managedBy"] = MULTIKUEUE_CONTROLLER
    create(custom_objects, namespace, body)
    condition = {"type": "Created", "status": "True", "reason": "", "message": ""}
    status = {"conditions": [condition], "replicaStatuses": {"Worker": {"active": 0, "succeeded": 0, "failed": 0}}}
    written = custom_objects.patch_namespaced_custom_object_status(
        c.GROUP, c.VERSION, namespace, "pytorchjobs", "empty-status", {"status": status}
    )
    assert written["status"] == status

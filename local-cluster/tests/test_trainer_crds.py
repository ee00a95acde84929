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
from airflow_trainjob_local.jobset import constants as js
from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer import crds, runtimes, schema

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


# The objects below are sent as a dry run (validated, defaulted and pruned as if stored, nothing stored) unless a
# test needs them stored; stored ones are managed by MultiKueue, which the local controllers leave alone.

TRAINJOBS = (c.GROUP, c.VERSION, c.TRAINJOBS)
TRAINING_RUNTIMES = (c.GROUP, c.VERSION, c.TRAINING_RUNTIMES)
CLUSTER_TRAINING_RUNTIMES = (c.GROUP, c.VERSION, c.CLUSTER_TRAINING_RUNTIMES)
JOBSETS = (js.GROUP, js.VERSION, js.PLURAL)


def trainjob(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.TRAINJOB_KIND,
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, **spec},
    }


def replicated_job(name: str, container: str = "node", **fields: Any) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": container, "image": "python:3.11", "command": ["python", "-c", "pass"]}]}}
    return {"name": name, "template": {"spec": {"template": pod}}, **fields}


def runtime(kind: str, name: str, ml_policy: dict[str, Any], *jobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "labels": {c.LABEL_FRAMEWORK: "torch"}},
        "spec": {"mlPolicy": ml_policy, "template": {"spec": {"replicatedJobs": list(jobs)}}, **spec},
    }


def jobset(name: str, *jobs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": js.API_VERSION,
        "kind": js.KIND,
        "metadata": {"name": name},
        "spec": {"replicatedJobs": list(jobs or [replicated_job("node")]), **spec},
    }


def send(custom_objects, resource: tuple[str, str, str], namespace: str | None, body: dict, dry_run: bool = True):
    """Create ``body`` (a namespaced object when ``namespace`` is given, else a cluster-scoped one)."""
    kwargs = {"dry_run": "All"} if dry_run else {}
    if namespace is None:
        return custom_objects.create_cluster_custom_object(*resource, body, **kwargs)
    group, version, plural = resource
    return custom_objects.create_namespaced_custom_object(group, version, namespace, plural, body, **kwargs)


def refusal(custom_objects, resource: tuple[str, str, str], namespace: str | None, body: dict) -> str:
    """The apiserver's message refusing ``body`` with 422."""
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as raised:
        send(custom_objects, resource, namespace, body)
    assert raised.value.status == 422, raised.value.body
    return json.loads(raised.value.body)["message"]


def kept(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Where ``stored`` lost or changed something of ``sent`` (fields it added, such as defaults, are fine)."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [p for key, value in sent.items() for p in kept(value, stored.get(key), f"{path}.{key}")]
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        return [p for i, (a, b) in enumerate(zip(sent, stored, strict=True)) for p in kept(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [path]


def assert_accepted_as_sent(custom_objects, resource, namespace, body) -> dict[str, Any]:
    stored = send(custom_objects, resource, namespace, body)
    assert kept(body["spec"], stored["spec"]) == [], body["metadata"]["name"]
    return stored


ENV = [
    {"name": "PLAIN", "value": "1"},
    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}}},
    {"name": "FROM_CONFIG", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
    {"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['x']"}}},
    {"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
]


def trainjob_shapes() -> list[dict[str, Any]]:
    """TrainJobs in the shapes of upstream's examples and SDK: each field of the v2.3.0 spec used at least once."""
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": 4, "memory": "8Gi", "nvidia.com/gpu": 1}}
    patch = {
        "manager": "example.com/platform",
        "time": "2026-01-02T03:04:05Z",
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": {"team": "ml"}, "annotations": {"a": "b"}},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"x": "y"}},
                                "spec": {
                                    "template": {
                                        "metadata": {"annotations": {"p": "q"}},
                                        "spec": {
                                            "serviceAccountName": "training",
                                            "nodeSelector": {"node-type": "training"},
                                            "tolerations": [{"key": "t", "operator": "Equal", "value": "1"}],
                                            "containers": [{"name": "node", "env": [{"name": "E", "value": "1"}]}],
                                            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}],
                                        },
                                    }
                                },
                            },
                        }
                    ]
                },
            }
        },
    }
    initializer = {
        "dataset": {"storageUri": "hf://tatsu-lab/alpaca", "env": ENV[:2], "secretRef": {"name": "hf-token"}},
        "model": {"storageUri": "s3://bucket/model", "env": [{"name": "AWS_REGION", "value": "x"}]},
    }
    return [
        trainjob("multi-node", trainer={"numNodes": 3, "command": ["torchrun", "--no-python", "python3", "-c", "1"]}),
        trainjob(
            "custom-trainer",
            trainer={
                "image": "python:3.11",
                "command": ["python"],
                "args": ["-c", "print(1)"],
                "env": ENV,
                "numNodes": 2,
                "numProcPerNode": 4,
                "resourcesPerNode": resources,
            },
        ),
        trainjob("initializers", initializer=initializer, trainer={"numNodes": 1}),
        trainjob("patched", runtimePatches=[patch], activeDeadlineSeconds=600),
        trainjob("kueue", suspend=True, managedBy=c.MANAGED_BY_MULTIKUEUE),
        {**trainjob("namespaced-runtime"), "spec": {"runtimeRef": {"name": "mine", "kind": "TrainingRuntime"}}},
    ]


@pytest.mark.parametrize("index", range(len(trainjob_shapes())))
def test_trainjobs_of_every_shape_are_accepted_as_sent(custom_objects, namespace, index):
    body = trainjob_shapes()[index]
    assert_accepted_as_sent(custom_objects, TRAINJOBS, namespace, body)


def runtime_shapes(kind: str) -> list[dict[str, Any]]:
    """Runtimes in the shapes upstream's manifests use: torch, MPI (DeepSpeed), JAX, XGBoost, gang scheduling,
    multi-step with ``dependsOn``, success and failure policies."""
    node = replicated_job("node")
    node["template"]["metadata"] = {"labels": {c.LABEL_ANCESTOR_STEP: c.ANCESTOR_TRAINER}}
    launcher = replicated_job("launcher", replicas=1)
    initializer = replicated_job(c.DATASET_INITIALIZER, c.DATASET_INITIALIZER)
    after_init = {**node, "dependsOn": [{"name": c.DATASET_INITIALIZER, "status": "Complete"}]}
    mpi = {"numProcPerNode": 2, "mpiImplementation": "OpenMPI", "sshAuthMountPath": "/home/mpiuser/.ssh"}
    return [
        runtime(kind, "torch", {"numNodes": 1, "torch": {}}, node),
        runtime(
            kind,
            "torch-env",
            {"numNodes": 2, "torch": {"envInjection": {"targets": [{"jobName": "node", "containerNames": ["side"]}]}}},
            node,
        ),
        runtime(kind, "deepspeed", {"numNodes": 2, "mpi": {**mpi, "runLauncherAsNode": True}}, launcher, node),
        runtime(kind, "jax", {"numNodes": 1, "jax": {}}, node),
        runtime(kind, "xgboost", {"numNodes": 1, "xgboost": {}}, node),
        runtime(kind, "plain", {"numNodes": 1}, node),
        runtime(kind, "gang", {"numNodes": 1, "torch": {}}, node, podGroupPolicy={"coscheduling": {}}),
        runtime(
            kind,
            "volcano",
            {"numNodes": 1},
            node,
            podGroupPolicy={"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}},
        ),
        runtime(kind, "multi-step", {"numNodes": 1, "torch": {}}, initializer, after_init),
        runtime(kind, "flux", {"numNodes": 1, "flux": {"numProcPerNode": 2}}, node),
    ]


@pytest.mark.parametrize("kind", [c.TRAINING_RUNTIME_KIND, c.CLUSTER_TRAINING_RUNTIME_KIND])
def test_runtimes_of_every_shape_are_accepted_as_sent(custom_objects, namespace, kind):
    cluster_scoped = kind == c.CLUSTER_TRAINING_RUNTIME_KIND
    resource = CLUSTER_TRAINING_RUNTIMES if cluster_scoped else TRAINING_RUNTIMES
    for body in runtime_shapes(kind):
        body["spec"]["template"]["spec"]["successPolicy"] = {"operator": "All", "targetReplicatedJobs": ["node"]}
        body["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 3}
        assert_accepted_as_sent(custom_objects, resource, None if cluster_scoped else namespace, body)


def jobset_shapes() -> list[dict[str, Any]]:
    """JobSets in the shapes of jobset's examples and of what the trainer builds."""
    leader, workers = replicated_job("leader", replicas=1), replicated_job("workers", replicas=3)
    rule = {
        "name": "restart-on-workers",
        "action": "RestartJobSet",
        "targetReplicatedJobs": ["workers"],
        "onJobFailureReasons": ["PodFailurePolicy"],
        "onJobFailureMessagePatterns": [".*exit code 2.*"],
    }
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    return [
        jobset(
            "plain",
            leader,
            workers,
            network={"enableDNSHostnames": True, "subdomain": "s", "publishNotReadyAddresses": True},
        ),
        jobset("success-any", leader, workers, successPolicy={"operator": "Any", "targetReplicatedJobs": ["leader"]}),
        jobset(
            "failure", workers, failurePolicy={"maxRestarts": 2, "restartStrategy": "BlockingRecreate", "rules": [rule]}
        ),
        jobset("depends", leader, {**workers, "dependsOn": [{"name": "leader", "status": "Ready"}]}),
        jobset("startup", leader, workers, startupPolicy={"startupPolicyOrder": "InOrder"}),
        jobset("suspended", leader, suspend=True, managedBy=js.MANAGED_BY_MULTIKUEUE, ttlSecondsAfterFinished=60),
        jobset("coordinated", leader, workers, coordinator={"replicatedJob": "leader", "jobIndex": 0, "podIndex": 0}),
        jobset(
            "claims",
            workers,
            volumeClaimPolicies=[{"templates": [claim], "retentionPolicy": {"whenDeleted": "Retain"}}],
        ),
    ]


def test_jobsets_of_every_shape_are_accepted_as_sent(custom_objects, namespace):
    for body in jobset_shapes():
        job_spec = body["spec"]["replicatedJobs"][0]["template"]["spec"]
        job_spec.update(parallelism=2, completions=2, completionMode="Indexed", backoffLimit=0)
        assert_accepted_as_sent(custom_objects, JOBSETS, namespace, body)


def test_defaults_of_the_api_are_applied(custom_objects, namespace):
    stored = send(custom_objects, TRAINJOBS, namespace, trainjob("defaults"))
    assert stored["spec"] == {
        "runtimeRef": {"name": "torch-distributed", "apiGroup": c.GROUP, "kind": c.CLUSTER_TRAINING_RUNTIME_KIND},
        "suspend": False,
        "managedBy": c.MANAGED_BY_TRAINER,
    }
    body = runtime(
        c.TRAINING_RUNTIME_KIND,
        "defaults",
        {"numNodes": 1, "mpi": {}},
        replicated_job("node"),
        podGroupPolicy={"coscheduling": {}},
    )
    body["spec"]["template"]["spec"]["failurePolicy"] = {"maxRestarts": 1}
    spec = send(custom_objects, TRAINING_RUNTIMES, namespace, body)["spec"]
    mpi = {
        "mpiImplementation": "OpenMPI",
        "numProcPerNode": 1,
        "runLauncherAsNode": False,
        "sshAuthMountPath": "/root/.ssh",
    }
    assert spec["mlPolicy"]["mpi"] == mpi
    assert spec["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 60}}
    assert spec["template"]["spec"]["failurePolicy"] == {"maxRestarts": 1, "restartStrategy": "Recreate"}
    node = spec["template"]["spec"]["replicatedJobs"][0]
    assert (node["replicas"], node["groupName"]) == (1, "default")
    claim = {"templates": [{"metadata": {"name": "d"}}], "retentionPolicy": {}}
    stored = send(custom_objects, JOBSETS, namespace, jobset("defaults", volumeClaimPolicies=[claim]))
    assert stored["spec"]["replicatedJobs"][0]["replicas"] == 1
    assert stored["spec"]["volumeClaimPolicies"][0]["retentionPolicy"] == {"whenDeleted": "Delete"}


def test_wrongly_typed_fields_and_unknown_values_are_refused_naming_the_field(custom_objects, namespace):
    cluster_runtime = runtime(c.CLUSTER_TRAINING_RUNTIME_KIND, "bad", {"numNodes": "one"}, replicated_job("node"))
    cases = [
        (TRAINJOBS, trainjob("bad", trainer={"numNodes": "two"}), "spec.trainer.numNodes"),
        (TRAINJOBS, trainjob("bad", trainer={"command": "python"}), "spec.trainer.command"),
        (TRAINJOBS, trainjob("bad", trainer={"resourcesPerNode": {"limits": {"cpu": "lots"}}}), "limits.cpu"),
        (TRAINJOBS, trainjob("bad", suspend="yes"), "spec.suspend"),
        (TRAINJOBS, trainjob("bad", managedBy="me"), "spec.managedBy"),
        (TRAINJOBS, {**trainjob("bad"), "spec": {"trainer": {}}}, "spec.runtimeRef"),
        (TRAINJOBS, trainjob("bad", initializer={"dataset": {"env": [{"value": "no name"}]}}), "name"),
        (CLUSTER_TRAINING_RUNTIMES, cluster_runtime, "spec.mlPolicy.numNodes"),
        (JOBSETS, jobset("bad", replicated_job("node", replicas="3")), "spec.replicatedJobs[0].replicas"),
        (JOBSETS, jobset("bad", successPolicy={"operator": "Most"}), "spec.successPolicy.operator"),
        (JOBSETS, jobset("bad", failurePolicy={"rules": [{"name": "r", "action": "Retry"}]}), "action"),
        (JOBSETS, jobset("bad", replicated_job("a"), replicated_job("a")), "spec.replicatedJobs[1]: Duplicate"),
        (JOBSETS, jobset("bad", {"name": "no-template"}), "template"),
    ]
    for resource, body, field in cases:
        namespaced = None if resource == CLUSTER_TRAINING_RUNTIMES else namespace
        message = refusal(custom_objects, resource, namespaced, body)
        assert field.replace("[0]", "") in message.replace("[0]", ""), (field, message)


def test_unknown_fields_are_pruned(custom_objects, namespace):
    body = trainjob("pruned", trainer={"numNodes": 1, "colour": "blue"}, extra={"a": 1})
    body["spec"]["runtimeRef"]["version"] = "v9"
    stored = send(custom_objects, TRAINJOBS, namespace, body)
    assert "extra" not in stored["spec"] and "colour" not in stored["spec"]["trainer"]
    assert "version" not in stored["spec"]["runtimeRef"]
    job = replicated_job("node", flavour="x")
    job["template"]["spec"]["template"]["spec"]["containers"][0]["shade"] = "dark"
    body = runtime(c.TRAINING_RUNTIME_KIND, "pruned", {"numNodes": 1, "torch": {"nproc": 2}}, job, colour="blue")
    stored = send(custom_objects, TRAINING_RUNTIMES, namespace, body)
    assert "colour" not in stored["spec"] and stored["spec"]["mlPolicy"]["torch"] == {}
    assert "flavour" not in stored["spec"]["template"]["spec"]["replicatedJobs"][0]
    stored = send(custom_objects, JOBSETS, namespace, jobset("pruned", job, invented=True))
    assert "invented" not in stored["spec"] and "flavour" not in stored["spec"]["replicatedJobs"][0]
    assert "shade" not in stored["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]


def table(kube_api_client, path: str) -> dict[str, Any]:
    """The list at ``path`` as the apiserver's Table (what ``kubectl get`` prints)."""
    response = kube_api_client.call_api(
        path,
        "GET",
        header_params={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    return json.loads(response.data)


def condition(kind: str, status: str, reason: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": f"{kind} as {reason}",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def test_trainjobs_have_the_status_subresource_and_printer_columns(custom_objects, kube_api_client, namespace):
    body = trainjob("columns", suspend=True, managedBy=c.MANAGED_BY_MULTIKUEUE)
    body["status"] = {"conditions": [condition("Complete", "True", "Sent")]}
    created = send(custom_objects, TRAINJOBS, namespace, body, dry_run=False)
    assert "status" not in created  # the main resource ignores status
    status = {"conditions": [condition("Suspended", "True", "Suspended")], "jobsStatus": []}
    custom_objects.patch_namespaced_custom_object_status(
        *TRAINJOBS[:2], namespace, c.TRAINJOBS, "columns", {"status": status}
    )
    listed = table(kube_api_client, f"/apis/{c.API_VERSION}/namespaces/{namespace}/{c.TRAINJOBS}")
    assert [col["name"] for col in listed["columnDefinitions"]] == ["Name", "State", "Age"]
    assert [row["cells"][:2] for row in listed["rows"]] == [["columns", "Suspended"]]


def test_jobsets_have_the_status_subresource_and_printer_columns(custom_objects, kube_api_client, namespace):
    body = jobset("columns", suspend=True, managedBy=js.MANAGED_BY_MULTIKUEUE)
    assert "status" not in send(custom_objects, JOBSETS, namespace, {**body, "status": {"restarts": 9}}, dry_run=False)
    status = {"restarts": 2, "terminalState": "Completed", "conditions": [condition("Completed", "True", "Done")]}
    custom_objects.patch_namespaced_custom_object_status(
        *JOBSETS[:2], namespace, js.PLURAL, "columns", {"status": status}
    )
    listed = table(kube_api_client, f"/apis/{js.API_VERSION}/namespaces/{namespace}/{js.PLURAL}")
    columns = [col["name"] for col in listed["columnDefinitions"]]
    assert columns == ["Name", "TerminalState", "Restarts", "Completed", "Suspended", "Age"]
    # Each column is typed "string" as upstream's, so the apiserver prints the number and the boolean as text.
    assert [row["cells"][:5] for row in listed["rows"]] == [["columns", "Completed", "2", "True", "true"]]


# "", 0 and false are values, not null. The apiserver built without build.py's source patch (recipe 1) took ""
# for null and refused it (422 `must be of type string: "null"`); 0 and false passed.


def test_empty_strings_zeros_and_false_in_a_spec_are_stored_as_sent(custom_objects, namespace):
    env = [{"name": "EMPTY", "value": ""}]
    train = trainjob("empty", suspend=False, managedBy=c.MANAGED_BY_MULTIKUEUE, trainer={"env": env, "args": [""]})
    container = {"name": "node", "image": "python:3.11", "command": ["python", "-c", ""], "env": env, "stdin": False}
    job = {"name": "node", "replicas": 0, "template": {"spec": {"template": {"spec": {"containers": [container]}}}}}
    sets = jobset("empty", job, suspend=False, managedBy=js.MANAGED_BY_MULTIKUEUE)
    for resource, body in ((TRAINJOBS, train), (JOBSETS, sets)):
        created = send(custom_objects, resource, namespace, body, dry_run=False)
        read = custom_objects.get_namespaced_custom_object(*resource[:2], namespace, resource[2], "empty")
        assert kept(body["spec"], created["spec"]) == [] and kept(body["spec"], read["spec"]) == [], resource


def test_a_status_with_empty_strings_and_zeros_is_written_through_the_status_subresource(custom_objects, namespace):
    """A condition's ``message: ""`` (upstream's controllers write it) and zero counts, as sent."""
    jobs = [{"name": "node", "ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}]
    statuses = {
        TRAINJOBS: {
            "conditions": [{**condition("Suspended", "False", "Resumed"), "message": ""}],
            "jobsStatus": jobs,
            "trainerStatus": {"progressPercentage": 0, "metrics": [{"name": "loss", "value": ""}]},
        },
        JOBSETS: {
            "conditions": [{**condition("Completed", "True", "AllJobsCompleted"), "message": ""}],
            "replicatedJobsStatus": jobs,
            "restarts": 0,
            "terminalState": "",
        },
    }
    send(custom_objects, TRAINJOBS, namespace, trainjob("zeros", managedBy=c.MANAGED_BY_MULTIKUEUE), dry_run=False)
    send(custom_objects, JOBSETS, namespace, jobset("zeros", managedBy=js.MANAGED_BY_MULTIKUEUE), dry_run=False)
    for resource, status in statuses.items():
        written = custom_objects.patch_namespaced_custom_object_status(
            *resource[:2], namespace, resource[2], "zeros", {"status": status}
        )
        assert written["status"] == status, resource


def test_a_condition_missing_a_field_is_refused_by_the_status_subresource(custom_objects, namespace):
    from kubernetes.client.exceptions import ApiException

    send(custom_objects, TRAINJOBS, namespace, trainjob("partial", managedBy=c.MANAGED_BY_MULTIKUEUE), dry_run=False)
    status = {"conditions": [{"type": "Complete", "status": "True"}]}
    with pytest.raises(ApiException) as raised:
        custom_objects.patch_namespaced_custom_object_status(
            *TRAINJOBS[:2], namespace, c.TRAINJOBS, "partial", {"status": status}
        )
    assert raised.value.status == 422 and "status.conditions.reason: Required value" in raised.value.body


def test_runtimes_are_listed_with_their_scope(kube_api_client):
    from kubernetes import client

    resources = client.CustomObjectsApi(kube_api_client).get_api_resources(c.GROUP, c.VERSION)
    scopes = {r.name: r.namespaced for r in resources.resources}
    assert scopes == {
        c.TRAINJOBS: True,
        f"{c.TRAINJOBS}/status": True,
        c.TRAINING_RUNTIMES: True,
        c.CLUSTER_TRAINING_RUNTIMES: False,
    }


# --- the built-in runtimes ------------------------------------------------------------------------------------


def test_builtin_runtimes_are_valid_runtimes_of_the_upstream_shape():
    by_name = {r["metadata"]["name"]: r for r in runtimes.builtin_runtimes()}
    assert set(by_name) == {"torch-distributed", "plainml"}
    for body in by_name.values():
        models.TrainerV1alpha1ClusterTrainingRuntime.from_dict(body)  # raises on a shape the API does not have
        (job,) = body["spec"]["template"]["spec"]["replicatedJobs"]
        assert job["name"] == "node"
        assert job["template"]["metadata"]["labels"] == {c.LABEL_ANCESTOR_STEP: c.ANCESTOR_TRAINER}
        (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
        assert container["name"] == "node" and container["image"]
    assert by_name["torch-distributed"]["metadata"]["labels"] == {c.LABEL_FRAMEWORK: "torch"}
    assert by_name["torch-distributed"]["spec"]["mlPolicy"] == {"numNodes": 1, "torch": {}}
    assert by_name["plainml"]["spec"]["mlPolicy"] == {"numNodes": 1}


def test_up_installs_the_api_objects_once_the_apiserver_is_ready(tmp_path):
    from airflow_trainjob_local.cluster import LocalCluster

    cluster = LocalCluster(tmp_path)
    (apiserver,) = [component for component in cluster.components() if component.name == "kube-apiserver"]
    assert apiserver.after_ready == cluster.install_api_objects


def test_up_installs_the_builtin_runtimes(custom_objects):
    for wanted in runtimes.builtin_runtimes():
        name = wanted["metadata"]["name"]
        installed = custom_objects.get_cluster_custom_object(*CLUSTER_TRAINING_RUNTIMES, name)
        assert installed["metadata"]["labels"] == wanted["metadata"]["labels"]
        assert kept(wanted["spec"], installed["spec"]) == []


def test_an_existing_runtime_is_left_as_it_is_and_a_missing_one_installed(local_cluster, custom_objects, capsys):
    edit = {"metadata": {"labels": {"edited": "yes"}}, "spec": {"mlPolicy": {"numNodes": 4}}}
    custom_objects.patch_cluster_custom_object(*CLUSTER_TRAINING_RUNTIMES, runtimes.TORCH_DISTRIBUTED, edit)
    custom_objects.delete_cluster_custom_object(*CLUSTER_TRAINING_RUNTIMES, runtimes.PLAINML)
    try:
        capsys.readouterr()
        assert local_cluster.install_builtin_runtimes() == [runtimes.PLAINML]
        said = capsys.readouterr().err
        assert "ClusterTrainingRuntime torch-distributed: exists, left as it is" in said
        assert "ClusterTrainingRuntime plainml: installed" in said
        torch = custom_objects.get_cluster_custom_object(*CLUSTER_TRAINING_RUNTIMES, runtimes.TORCH_DISTRIBUTED)
        assert torch["metadata"]["labels"]["edited"] == "yes" and torch["spec"]["mlPolicy"]["numNodes"] == 4
        custom_objects.get_cluster_custom_object(*CLUSTER_TRAINING_RUNTIMES, runtimes.PLAINML)
    finally:
        custom_objects.delete_cluster_custom_object(*CLUSTER_TRAINING_RUNTIMES, runtimes.TORCH_DISTRIBUTED)
        local_cluster.install_builtin_runtimes()


def test_the_trainers_public_version_is_readable_as_upstreams_chart_installs_it(local_cluster, core_v1, capsys):
    """The Kubeflow SDK reads ``kubeflow-system/kubeflow-trainer-public`` when a TrainerClient starts."""
    from airflow_trainjob_local.trainer import public_version

    config_map = core_v1.read_namespaced_config_map("kubeflow-trainer-public", "kubeflow-system")
    assert config_map.data == {"kubeflow_trainer_version": "v2.3.0"}
    with local_cluster.api_client() as api_client:
        assert public_version.install_public_version(api_client, print) is False  # all there: nothing created
    assert "kubeflow-trainer-public" not in capsys.readouterr().out

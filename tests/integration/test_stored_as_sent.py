"""What the provider sends is what a real apiserver stores: golden manifests, everything ``build_manifest`` can
write (with the cleanup hold) and the hold's release patch go through the CRDs' structural schema on the local
cluster unchanged (pruning would silently drop a field a DAG author set)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_trainjob import constants as c
from airflow_trainjob.domain.cleanup_hold import ANNOTATION_HELD_RUN_POLICY, hold, release_patch
from airflow_trainjob.models.job import TrainingJobSpec
from airflow_trainjob.models.manifest import build_manifest

DATA = Path(__file__).parents[1] / "data"


def create(custom_objects, namespace: str, body: dict[str, Any], plural: str = "pytorchjobs") -> dict[str, Any]:
    return custom_objects.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, plural, body)


def stored_as_sent(custom_objects, namespace: str, sent: dict[str, Any]) -> None:
    """Create ``sent`` for real: what the apiserver stored (the create's answer, before any controller wrote to the
    job) has the spec and the provider's metadata unchanged, except for the API's default ``runPolicy.suspend:
    false``. The job is deleted again at once (its pods would run)."""
    kind = c.JOB_KINDS[sent["kind"]]
    sent = copy.deepcopy(sent)
    sent["metadata"]["namespace"] = namespace
    name = sent["metadata"]["name"]
    read = create(custom_objects, namespace, sent, plural=kind.plural)
    custom_objects.delete_namespaced_custom_object(c.GROUP, c.VERSION, namespace, kind.plural, name)
    expected = copy.deepcopy(sent["spec"])
    expected.setdefault("runPolicy", {}).setdefault("suspend", False)
    assert read["spec"] == expected
    for key in ("labels", "annotations"):
        assert read["metadata"].get(key) == sent["metadata"].get(key)


@pytest.mark.parametrize("kind", list(c.JOB_KINDS))
def test_golden_manifests_are_stored_unchanged(custom_objects, namespace, kind):
    manifest = yaml.safe_load((DATA / f"{kind.lower()}.yaml").read_text())
    stored_as_sent(custom_objects, namespace, manifest)
    # What the operator sends: the cleanup held, the user's policy in an annotation.
    held = hold(manifest)
    held["metadata"]["name"] += "-held"
    stored_as_sent(custom_objects, namespace, held)


RICH_TEMPLATE = {
    "metadata": {"labels": {"app": "train"}, "annotations": {"sidecar.istio.io/inject": "false"}},
    "spec": {
        "containers": [
            {
                "name": "pytorch",
                "image": "python:3.11",
                "imagePullPolicy": "IfNotPresent",
                "command": ["python", "-c"],
                "args": ["print('x')"],
                "workingDir": "/tmp",
                "env": [
                    {"name": "A", "value": "1"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}}},
                ],
                "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
                "ports": [{"name": "pytorchjob-port", "containerPort": 23456, "protocol": "TCP"}],
                "resources": {
                    "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
                    "requests": {"cpu": "500m", "memory": "1Gi"},
                },
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data", "readOnly": True},
                    {"name": "shm", "mountPath": "/dev/shm"},
                ],
                "readinessProbe": {"httpGet": {"port": "pytorchjob-port", "path": "/health"}, "initialDelaySeconds": 5},
                "livenessProbe": {"tcpSocket": {"port": 23456}, "failureThreshold": 3},
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 1000,
                    "capabilities": {"drop": ["ALL"]},
                    "allowPrivilegeEscalation": False,
                },
                "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 1"]}}},
            }
        ],
        "initContainers": [{"name": "fetch", "image": "busybox", "command": ["true"]}],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a"}], "defaultMode": 420}},
        ],
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                    ]
                }
            }
        },
        "serviceAccountName": "trainer",
        "priorityClassName": "high",
        "schedulerName": "default-scheduler",
        "terminationGracePeriodSeconds": 30,
        "imagePullSecrets": [{"name": "registry"}],
        "hostIPC": False,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {"fsGroup": 2000},
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "train"}},
            }
        ],
    },
}


def rich_inputs(kind: str) -> dict[str, Any]:
    template = copy.deepcopy(RICH_TEMPLATE)
    container = c.JOB_KINDS[kind].default_container
    template["spec"]["containers"][0]["name"] = container
    replica = {"replicas": 2, "restartPolicy": "ExitCode", "template": template}
    lead = {"replicas": 1, "restartPolicy": "OnFailure", "template": copy.deepcopy(template)}
    run_policy = {
        "cleanPodPolicy": "All",
        "ttlSecondsAfterFinished": 600,
        "activeDeadlineSeconds": 7200,
        "backoffLimit": 3,
        "schedulingPolicy": {
            "minAvailable": 2,
            "queue": "q",
            "minResources": {"cpu": "4", "memory": 1024},
            "priorityClass": "high",
            "scheduleTimeoutSeconds": 60,
        },
    }
    specs_and_fields = {
        "PyTorchJob": (
            {"Master": lead, "Worker": replica},
            {
                "nprocPerNode": "2",
                "elasticPolicy": {
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "rdzvBackend": "c10d",
                    "rdzvPort": 29400,
                    "rdzvHost": "master",
                    "rdzvId": "job",
                    "rdzvConf": [{"key": "timeout", "value": "60"}],
                    "standalone": False,
                    "maxRestarts": 2,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                        }
                    ],
                },
            },
        ),
        "TFJob": (
            {"Chief": lead, "PS": replica, "Worker": replica, "Evaluator": lead},
            {"successPolicy": "AllWorkers", "enableDynamicWorker": True},
        ),
        "MPIJob": ({"Launcher": lead, "Worker": replica}, {"slotsPerWorker": 2, "mainContainer": container}),
        "XGBoostJob": ({"Master": lead, "Worker": replica}, None),
        "PaddleJob": (
            {"Master": lead, "Worker": replica},
            {"elasticPolicy": {"minReplicas": 1, "maxReplicas": 3, "maxRestarts": 1}},
        ),
        "JAXJob": ({"Worker": replica}, None),
    }
    specs, fields = specs_and_fields[kind]
    return {"replica_specs": specs, "run_policy": run_policy, "kind_fields": fields}


@pytest.mark.parametrize("kind", list(c.JOB_KINDS))
def test_everything_the_provider_builds_is_stored_unchanged(custom_objects, namespace, kind):
    spec = TrainingJobSpec.parse(kind, **rich_inputs(kind))
    manifest = hold(
        build_manifest(
            spec=spec,
            name=f"rich-{kind.lower()}",
            namespace=namespace,
            labels={c.LABEL_DAG_ID: "dag", c.LABEL_TASK_ID: "task", c.LABEL_TRY_NUMBER: "1"},
            annotations={"owner": "ml-platform@example.com"},
        )
    )
    assert ANNOTATION_HELD_RUN_POLICY in manifest["metadata"]["annotations"]
    stored_as_sent(custom_objects, namespace, manifest)


def test_release_patch_of_the_cleanup_hold_is_accepted(custom_objects, namespace):

    manifest = hold(yaml.safe_load((DATA / "pytorchjob.yaml").read_text()))
    manifest["metadata"]["namespace"] = namespace
    manifest["spec"]["runPolicy"]["suspend"] = True
    create(custom_objects, namespace, manifest)
    name = manifest["metadata"]["name"]
    patched = custom_objects.patch_namespaced_custom_object(
        c.GROUP, c.VERSION, namespace, "pytorchjobs", name, release_patch(manifest)
    )
    assert patched["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    assert ANNOTATION_HELD_RUN_POLICY not in (patched["metadata"].get("annotations") or {})

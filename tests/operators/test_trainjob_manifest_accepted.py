"""The TrainJobs ``TrainJobOperator`` builds are ones the API takes: created on the local cluster's real apiserver (the
Trainer v2 CRD's schema and rules), read back with the spec sent, deleted; and the provider's runtime patch reaches the
pods: a minimal TrainJob on ``torch-distributed`` with two nodes runs two pods that carry the task instance's labels
and the TrainJob's pod token."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from airflow_trainjob.constants import (
    LABEL_JOBSET_NAME,
    LABEL_POD_TOKEN,
    TRAINER_GROUP,
    TRAINER_VERSION,
    TRAINJOB_PLURAL,
)
from airflow_trainjob.operators.trainjob import TrainJobOperator
from airflow_trainjob_local.testing.waiting import wait_for
from tests.support.jobs import TaskInstanceStandIn

SAY_INDEX = "import os; print('node', os.environ['JOB_COMPLETION_INDEX'], 'ready')"
#: What the CRD defaults when a field is unset (``+kubebuilder:default``), and the Trainer webhook's stamp on each
#: patch (a real cluster's; the local one has no webhooks): not the provider's to send.
CRD_DEFAULTS = {"suspend": False, "managedBy": "trainer.kubeflow.org/trainjob-controller"}

MINIMAL = {
    "runtime": "torch-distributed",
    "trainer": {"numNodes": 2, "command": [sys.executable, "-c", SAY_INDEX]},
}
FULL = {
    "runtime": {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"},
    "trainer": {
        "image": "python:3.11-slim",
        "command": [sys.executable, "-c", SAY_INDEX],
        "args": ["--epochs", "2"],
        "env": [{"name": "EPOCHS", "value": "2"}],
        "numNodes": 3,
        "numProcPerNode": 1,
        "resourcesPerNode": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": 1}},
    },
    "initializer": {
        "dataset": {"storageUri": "hf://kubeflow/digits", "env": [{"name": "SPLIT", "value": "train"}]},
        "model": {"storageUri": "hf://kubeflow/tiny", "secretRef": {"name": "hf-token"}},
    },
    "runtime_patches": [
        {
            "manager": "example.com/ml-team",
            "trainingRuntimeSpec": {
                "template": {
                    "metadata": {"labels": {"team": "vision"}},
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {
                                        "template": {
                                            "metadata": {"annotations": {"team/owner": "vision"}},
                                            "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}},
                                        }
                                    }
                                },
                            }
                        ]
                    },
                }
            },
        }
    ],
    "suspend": True,
    "managed_by": "trainer.kubeflow.org/trainjob-controller",
    "active_deadline_seconds": 600,
}


class NamespaceHook:
    """The hook's calls while a request is built: the connection exists (the test talks to the cluster itself)."""

    def require_connection(self) -> None:
        pass

    def resolve_namespace(self, namespace: str | None = None) -> str:
        assert namespace is not None
        return namespace


def built(namespace: str, **parameters: Any) -> dict[str, Any]:
    """The manifest ``TrainJobOperator`` renders for one try."""
    op = TrainJobOperator(task_id="train", namespace=namespace, **parameters)
    op.__dict__["hook"] = NamespaceHook()
    op.render_template_fields({"ti": TaskInstanceStandIn()})
    assert op._request is not None
    return op._request.manifest


def with_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    patches = [{k: v for k, v in p.items() if k != "time"} for p in spec.get("runtimePatches") or []]
    return {**CRD_DEFAULTS, **spec, "runtimePatches": patches}


def create_and_read(custom_objects: Any, namespace: str, manifest: dict[str, Any]) -> dict[str, Any]:
    name = manifest["metadata"]["name"]
    custom_objects.create_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL, manifest)
    found: dict[str, Any] = custom_objects.get_namespaced_custom_object(
        TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL, name
    )
    return found


@pytest.mark.parametrize("parameters", [MINIMAL, FULL], ids=["minimal", "full"])
def test_the_manifest_is_created_and_read_back_as_sent(custom_objects, namespace, parameters):
    manifest = built(namespace, **{**parameters, "suspend": True})
    found = create_and_read(custom_objects, namespace, manifest)
    assert with_defaults(found["spec"]) == with_defaults(manifest["spec"])
    assert found["metadata"]["labels"] == manifest["metadata"]["labels"]
    # Every annotation sent is kept; the local cluster's trainer may have added its own (the master port it chose).
    assert manifest["metadata"]["annotations"].items() <= found["metadata"]["annotations"].items()
    custom_objects.delete_namespaced_custom_object(
        TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL, manifest["metadata"]["name"]
    )


def test_the_pods_of_a_minimal_trainjob_carry_the_task_instances_labels_and_the_pod_token(
    custom_objects, core_v1, namespace
):
    manifest = built(namespace, **MINIMAL)
    name, token = manifest["metadata"]["name"], manifest["metadata"]["annotations"][LABEL_POD_TOKEN]
    create_and_read(custom_objects, namespace, manifest)

    def jobset_pods() -> list[Any]:
        return list(core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_JOBSET_NAME}={name}").items)

    pods = wait_for(jobset_pods, lambda found: len(found) == 2, timeout=90, what="the two nodes' pods")
    identity = {k: v for k, v in manifest["metadata"]["labels"].items() if k.startswith("airflow-trainjob/")}
    for pod in pods:
        labels = pod.metadata.labels
        assert {k: labels.get(k) for k in identity} == identity, pod.metadata.name
        assert labels[LABEL_POD_TOKEN] == token
    by_token = core_v1.list_namespaced_pod(namespace, label_selector=f"{LABEL_POD_TOKEN}={token}").items
    assert sorted(p.metadata.name for p in by_token) == sorted(p.metadata.name for p in pods)
    custom_objects.delete_namespaced_custom_object(TRAINER_GROUP, TRAINER_VERSION, namespace, TRAINJOB_PLURAL, name)

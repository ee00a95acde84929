"""The pure parts of the local TrainJob controller, no cluster: TrainJob + runtime -> JobSet
(``trainer/build.py``, after kubeflow/trainer v2.3.0 ``pkg/runtime/core/trainingruntime.go`` and
``pkg/runtime/framework/plugins/{jobset,torch,plainml}``), the webhook's rules (``trainer/validation.py``), the
runtime reference and snapshot (``trainer/runtime_ref.py``), and the quantities the torch plugin counts.

The TrainJobs and runtimes are shaped like upstream's ``examples/yaml/*.yaml`` and
``manifests/base/runtimes/torch_distributed.yaml``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from airflow_trainjob_local.trainer import constants as c
from airflow_trainjob_local.trainer.build import build_jobset, patched_spec
from airflow_trainjob_local.trainer.merge import strategic_merge, upsert_ports
from airflow_trainjob_local.trainer.resources import cpus_per_node, gpus_per_node, merge_resources, quantity_value
from airflow_trainjob_local.trainer.runtime_ref import (
    SnapshotError,
    not_found_message,
    read_snapshot,
    registry_key,
    snapshot_configmap,
    supported_kind,
)
from airflow_trainjob_local.trainer.spec import RuntimeView, SpecError, TrainJobView
from airflow_trainjob_local.trainer.validation import validate

PORT = 21234
NODE_RANK_REF = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}


def torch_distributed() -> dict[str, Any]:
    """upstream's manifests/base/runtimes/torch_distributed.yaml."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.CLUSTER_TRAINING_RUNTIME_KIND,
        "metadata": {"name": "torch-distributed", "labels": {c.LABEL_FRAMEWORK: "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {c.LABEL_ANCESTOR_STEP: "trainer"}},
                                "spec": {
                                    "template": {
                                        "spec": {"containers": [{"name": "node", "image": "pytorch/pytorch:2.13.0"}]}
                                    }
                                },
                            },
                        }
                    ]
                }
            },
        },
    }


def with_dataset_init() -> dict[str, Any]:
    """upstream's examples/yaml/05-multi-step.yaml runtime (dataset-initializer, then node dependsOn it)."""
    runtime = torch_distributed()
    runtime["kind"] = c.TRAINING_RUNTIME_KIND
    runtime["metadata"] = {"name": "torch-with-dataset-init", "namespace": "ns"}
    node = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    node["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    init = {
        "name": "dataset-initializer",
        "replicas": 1,
        "template": {
            "metadata": {"labels": {c.LABEL_ANCESTOR_STEP: "dataset-initializer"}},
            "spec": {
                "template": {"spec": {"containers": [{"name": "dataset-initializer", "image": "dataset-initializer"}]}}
            },
        },
    }
    runtime["spec"]["template"]["spec"]["replicatedJobs"] = [init, node]
    return runtime


def plain_runtime() -> dict[str, Any]:
    """A runtime without mlPolicy (the plain ML plugin), with an env on its node container."""
    runtime = torch_distributed()
    runtime["metadata"] = {"name": "plain"}
    del runtime["spec"]["mlPolicy"]
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0][
        "env"
    ] = [{"name": "FROM_RUNTIME", "value": "1"}]
    return runtime


def trainjob(name: str = "tj", **spec: Any) -> TrainJobView:
    spec.setdefault("runtimeRef", {"name": "torch-distributed", "apiGroup": c.GROUP, "kind": "ClusterTrainingRuntime"})
    return TrainJobView.from_object(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.TRAINJOB_KIND,
            "metadata": {"name": name, "namespace": "ns", "uid": "uid-1"},
            "spec": spec,
        }
    )


def build(tj: TrainJobView, runtime: dict[str, Any] | None = None) -> dict[str, Any]:
    return build_jobset(tj, RuntimeView.from_object(runtime or torch_distributed()), master_port=PORT)


def job(jobset: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == name)


def container(jobset: dict[str, Any], job_name: str, name: str) -> dict[str, Any]:
    spec = job(jobset, job_name)["template"]["spec"]["template"]["spec"]
    return next(x for x in spec["containers"] if x["name"] == name)


def env(ctr: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in ctr.get("env") or []}


# --- the JobSet from torch-distributed --------------------------------------------------------------------


def test_multi_node_example_builds_the_upstream_jobset() -> None:
    # examples/yaml/01-multi-node.yaml: numNodes 3, a torchrun command.
    command = ["torchrun", "--no-python", "python3", "-c", "print(1)"]
    jobset = build(trainjob("multi-node-example", trainer={"numNodes": 3, "command": command}, suspend=False))
    assert jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and jobset["kind"] == "JobSet"
    assert jobset["metadata"]["name"] == "multi-node-example" and jobset["metadata"]["namespace"] == "ns"
    assert jobset["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "multi-node-example",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    node_job = job(jobset, "node")
    assert node_job["replicas"] == 1
    assert node_job["template"]["spec"]["parallelism"] == 3 and node_job["template"]["spec"]["completions"] == 3
    assert node_job["template"]["metadata"]["labels"] == {c.LABEL_ANCESTOR_STEP: "trainer"}
    node = container(jobset, "node", "node")
    assert node["command"] == command and node["image"] == "pytorch/pytorch:2.13.0"
    assert node["env"] == [
        {"name": "PET_NNODES", "value": "3"},
        {"name": "PET_NPROC_PER_NODE", "value": "1"},
        {"name": "PET_NODE_RANK", "valueFrom": NODE_RANK_REF},
        {"name": "PET_MASTER_ADDR", "value": "127.0.0.1"},
        {"name": "PET_MASTER_PORT", "value": str(PORT)},
    ]
    assert node["ports"] == [{"containerPort": PORT}]
    assert jobset["spec"]["suspend"] is False
    # The runtime's own labels are not the JobSet's: only its template's metadata propagates.
    assert "labels" not in jobset["metadata"]


def test_numnodes_defaults_to_the_runtime_mlpolicy() -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["numNodes"] = 2
    jobset = build(trainjob(trainer={"command": ["true"]}), runtime)
    assert job(jobset, "node")["template"]["spec"]["parallelism"] == 2
    assert env(container(jobset, "node", "node"))["PET_NNODES"] == "2"


def test_without_a_trainer_section_no_torch_env_is_injected() -> None:
    # torch.go finds the trainer container only when the TrainJob has spec.trainer.
    jobset = build(trainjob())
    node = container(jobset, "node", "node")
    assert "env" not in node and "ports" not in node
    assert job(jobset, "node")["template"]["spec"]["parallelism"] == 1


def test_trainer_overrides_image_command_args_env_and_resources() -> None:
    # examples/yaml/02-runtime-patches.yaml's trainer section.
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
    tj = trainjob(
        trainer={
            "numNodes": 2,
            "image": "python:3.11",
            "command": ["python3"],
            "args": ["-c", "print(2)"],
            "env": [{"name": "CUSTOM_VAR", "value": "custom-value"}, {"name": "PYTHONUNBUFFERED", "value": "1"}],
            "resourcesPerNode": resources,
        }
    )
    node = container(build(tj), "node", "node")
    assert (node["image"], node["command"], node["args"]) == ("python:3.11", ["python3"], ["-c", "print(2)"])
    names = [e["name"] for e in node["env"]]
    assert names == [
        "CUSTOM_VAR",
        "PYTHONUNBUFFERED",
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
    ]
    assert node["resources"] == resources
    # "auto" without a GPU: the CPU request, rounded up.
    assert env(node)["PET_NPROC_PER_NODE"] == "2"


@pytest.mark.parametrize(
    ("trainer", "runtime_resources", "expected"),
    [
        ({"numProcPerNode": 4}, None, "4"),
        ({}, None, "1"),
        ({"resourcesPerNode": {"requests": {"cpu": "500m"}}}, None, "1"),
        ({"resourcesPerNode": {"requests": {"cpu": "1500m"}}}, None, "2"),
        ({"resourcesPerNode": {"limits": {"cpu": 3}}}, None, "3"),
        ({"resourcesPerNode": {"limits": {"nvidia.com/gpu": 2}}}, None, "auto"),
        ({}, {"requests": {"cpu": "6"}}, "6"),
        # the TrainJob's resources replace the runtime's for the count, they are not merged with them
        ({"resourcesPerNode": {"limits": {"memory": "1Gi"}}}, {"requests": {"cpu": "6"}}, "1"),
    ],
)
def test_num_proc_per_node(trainer: dict[str, Any], runtime_resources: dict[str, Any] | None, expected: str) -> None:
    runtime = torch_distributed()
    if runtime_resources is not None:
        ctr = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        ctr["containers"][0]["resources"] = runtime_resources
    jobset = build(trainjob(trainer=trainer), runtime)
    assert env(container(jobset, "node", "node"))["PET_NPROC_PER_NODE"] == expected


def test_resources_per_node_merge_into_the_runtime_resources() -> None:
    runtime = torch_distributed()
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1"}}
    jobset = build(trainjob(trainer={"resourcesPerNode": {"requests": {"cpu": "3"}}}), runtime)
    assert container(jobset, "node", "node")["resources"] == {
        "requests": {"cpu": "3", "memory": "1Gi"},
        "limits": {"cpu": "1"},
    }


def test_trainer_env_replaces_a_runtime_env_in_place() -> None:
    runtime = torch_distributed()
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["env"] = [{"name": "A", "value": "runtime"}, {"name": "B", "value": "runtime"}]
    jobset = build(trainjob(trainer={"env": [{"name": "B", "value": "job"}, {"name": "C", "value": "job"}]}), runtime)
    names = [(e["name"], e.get("value")) for e in container(jobset, "node", "node")["env"]][:3]
    assert names == [("A", "runtime"), ("B", "job"), ("C", "job")]


def test_runtime_patches_reach_jobset_job_and_pod() -> None:
    # examples/yaml/02-runtime-patches.yaml, plus Job and pod metadata (the provider's identity labels).
    patch = {
        "manager": "example.io/platform-team",
        "trainingRuntimeSpec": {
            "template": {
                "metadata": {"labels": {"team": "ml-platform"}, "annotations": {"prometheus.io/scrape": "true"}},
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {"labels": {"job-label": "j"}},
                                "spec": {
                                    "template": {
                                        "metadata": {"labels": {"airflow-trainjob/dag": "d"}},
                                        "spec": {
                                            "serviceAccountName": "training-sa",
                                            "nodeSelector": {"node-type": "training"},
                                            "tolerations": [{"key": "training-workload", "operator": "Exists"}],
                                            "containers": [
                                                {"name": "node", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}
                                            ],
                                            "volumes": [{"name": "v", "emptyDir": {}}],
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
    jobset = build(trainjob(trainer={"numNodes": 2}, runtimePatches=[patch]))
    assert jobset["metadata"]["labels"] == {"team": "ml-platform"}
    assert jobset["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
    node_job = job(jobset, "node")
    assert node_job["template"]["metadata"]["labels"] == {c.LABEL_ANCESTOR_STEP: "trainer", "job-label": "j"}
    pod = node_job["template"]["spec"]["template"]
    assert pod["metadata"]["labels"] == {"airflow-trainjob/dag": "d"}
    assert pod["spec"]["serviceAccountName"] == "training-sa"
    assert pod["spec"]["nodeSelector"] == {"node-type": "training"}
    assert pod["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]
    node = container(jobset, "node", "node")
    # the patch merged into the runtime's container (image kept), torch env added after
    assert node["image"] == "pytorch/pytorch:2.13.0" and node["volumeMounts"] == [{"name": "v", "mountPath": "/v"}]
    assert env(node)["PET_NNODES"] == "2"


def test_runtime_patches_apply_in_order_and_keep_the_job_order() -> None:
    spec = with_dataset_init()["spec"]["template"]["spec"]

    def labels_patch(value: str) -> dict[str, Any]:
        pod = {"metadata": {"labels": {"k": value}}}
        return {
            "trainingRuntimeSpec": {
                "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": pod}}}]}}
            }
        }

    merged = patched_spec(spec, [labels_patch("first"), labels_patch("second")])
    assert [j["name"] for j in merged["replicatedJobs"]] == ["dataset-initializer", "node"]
    assert merged["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["labels"] == {"k": "second"}
    assert spec == with_dataset_init()["spec"]["template"]["spec"]  # the runtime is not changed


def test_suspend_is_the_jobsets() -> None:
    assert build(trainjob(suspend=True))["spec"]["suspend"] is True
    assert "suspend" not in build(trainjob())["spec"]


def test_initializer_and_depends_on() -> None:
    # examples/yaml/05-multi-step.yaml
    tj = trainjob(
        "multi-step-example",
        runtimeRef={"name": "torch-with-dataset-init", "apiGroup": c.GROUP, "kind": "TrainingRuntime"},
        initializer={
            "dataset": {
                "storageUri": "hf://tatsu-lab/alpaca",
                "env": [{"name": "X", "value": "y"}],
                "secretRef": {"name": "hf-secret"},
            }
        },
        trainer={"numNodes": 2, "command": ["python3", "-c", "print(3)"]},
    )
    jobset = build(tj, with_dataset_init())
    assert [j["name"] for j in jobset["spec"]["replicatedJobs"]] == ["dataset-initializer", "node"]
    init_job = job(jobset, "dataset-initializer")
    assert init_job["replicas"] == 1
    assert init_job["template"]["spec"]["parallelism"] == 1 and init_job["template"]["spec"]["completions"] == 1
    init = container(jobset, "dataset-initializer", "dataset-initializer")
    assert init["env"] == [{"name": "STORAGE_URI", "value": "hf://tatsu-lab/alpaca"}, {"name": "X", "value": "y"}]
    assert init["envFrom"] == [{"secretRef": {"name": "hf-secret"}}]
    assert job(jobset, "node")["dependsOn"] == [{"name": "dataset-initializer", "status": "Complete"}]
    assert job(jobset, "node")["template"]["spec"]["parallelism"] == 2


def test_plain_runtime_gets_trainer_env_and_num_nodes_but_no_torch_env() -> None:
    tj = trainjob(runtimeRef={"name": "plain"}, trainer={"numNodes": 2, "env": [{"name": "MINE", "value": "x"}]})
    jobset = build(tj, plain_runtime())
    node = container(jobset, "node", "node")
    assert node["env"] == [{"name": "FROM_RUNTIME", "value": "1"}, {"name": "MINE", "value": "x"}]
    assert "ports" not in node
    # Without an mlPolicy the runtime's count is the Job's parallelism, numNodes overrides it.
    assert job(jobset, "node")["template"]["spec"]["parallelism"] == 2


def test_env_injection_targets_get_the_pet_env() -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"]["torch"] = {
        "envInjection": {"targets": [{"jobName": "node", "containerNames": ["check"]}]}
    }
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["initContainers"] = [{"name": "check", "image": "busybox"}]
    jobset = build(trainjob(trainer={}), runtime)
    init = job(jobset, "node")["template"]["spec"]["template"]["spec"]["initContainers"][0]
    assert env(init)["PET_MASTER_PORT"] == str(PORT) and env(init)["PET_NODE_RANK"] == NODE_RANK_REF


def test_the_runtime_and_trainjob_are_not_changed() -> None:
    runtime = torch_distributed()
    tj = trainjob(trainer={"numNodes": 2, "env": [{"name": "A", "value": "1"}]})
    before = (copy.deepcopy(runtime), copy.deepcopy(tj.obj))
    build(tj, runtime)
    assert (runtime, tj.obj) == before


# --- the webhook's rules ----------------------------------------------------------------------------------


def check(tj: TrainJobView, runtime: dict[str, Any] | None = None) -> list[str]:
    view = RuntimeView.from_object(runtime or torch_distributed())
    return validate(tj, view, patched_spec(view.template["spec"], tj.raw_spec.get("runtimePatches") or []))


def test_upstream_examples_pass_validation() -> None:
    assert check(trainjob(trainer={"numNodes": 3, "command": ["torchrun"]})) == []
    tj = trainjob(initializer={"dataset": {"storageUri": "hf://x"}})
    assert check(tj, with_dataset_init()) == []  # no "initializer" volume mount needed locally


def test_reserved_torch_env_is_refused() -> None:
    tj = trainjob(trainer={"env": [{"name": "PET_NNODES", "value": "9"}, {"name": "PET_MASTER_ADDR", "value": "x"}]})
    assert check(tj) == [
        "spec.trainer.env: must not have reserved envs, invalid envs configured: [PET_MASTER_ADDR PET_NNODES]"
    ]


def test_initializer_without_its_job_is_refused() -> None:
    problems = check(trainjob(initializer={"model": {"storageUri": "hf://m"}}))
    assert problems == [
        "spec.runtimeRef: must have model-initializer job when trainJob is configured with input modelConfig"
    ]


def test_patch_env_on_node_and_bad_manager_are_refused() -> None:
    patch = {
        "manager": "no-domain",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {
                                    "template": {
                                        "spec": {"containers": [{"name": "node", "env": [{"name": "A", "value": "b"}]}]}
                                    }
                                }
                            },
                        }
                    ]
                }
            }
        },
    }
    problems = check(trainjob(runtimePatches=[patch]))
    assert len(problems) == 2
    assert problems[0].startswith("spec.runtimePatches.manager: 'no-domain' must be a domain-prefixed path")
    assert "must not have envs for the dataset-initializer, model-initializer, node containers" in problems[1]


def test_unsupported_ml_policy_is_refused() -> None:
    runtime = torch_distributed()
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "mpi": {}}
    assert check(trainjob(), runtime) == [
        "spec.runtimeRef: mlPolicy.mpi is not supported by the local trainer (torch and plain runtimes are)"
    ]


def test_a_spec_of_the_wrong_type_is_a_spec_error() -> None:
    with pytest.raises(SpecError):
        trainjob(trainer={"numNodes": "two"})


# --- runtime reference and snapshot -----------------------------------------------------------------------


def test_runtime_ref_kinds() -> None:
    assert supported_kind(c.GROUP, "ClusterTrainingRuntime").namespaced is False  # type: ignore[union-attr]
    assert supported_kind(c.GROUP, "TrainingRuntime").namespaced is True  # type: ignore[union-attr]
    assert supported_kind(c.GROUP, "Foo") is None and supported_kind("other.io", "TrainingRuntime") is None
    assert registry_key("other.io", "Foo") == "Foo.other.io" and registry_key("", "Foo") == "Foo"
    kind = supported_kind(c.GROUP, "ClusterTrainingRuntime")
    assert kind is not None
    assert not_found_message(kind, "x") == (
        'not found ClusterTrainingRuntime specified in TrainJob: clustertrainingruntimes.trainer.kubeflow.org "x" not found'
    )


def test_snapshot_round_trip_and_refusals() -> None:
    owner = {"apiVersion": c.API_VERSION, "kind": "TrainJob", "name": "tj", "uid": "u1", "controller": True}
    runtime = {**torch_distributed(), "metadata": {"name": "torch-distributed", "managedFields": [{"x": 1}]}}
    cm = snapshot_configmap("tj", "ns", owner, runtime)
    assert cm["metadata"]["name"] == "tj-runtime-snapshot" and cm["metadata"]["ownerReferences"] == [owner]
    read = read_snapshot(cm, "u1", c.GROUP, "ClusterTrainingRuntime", "torch-distributed")
    assert read["spec"] == runtime["spec"] and "managedFields" not in read["metadata"]
    with pytest.raises(SnapshotError, match="owned by another object"):
        read_snapshot(cm, "other", c.GROUP, "ClusterTrainingRuntime", "torch-distributed")
    with pytest.raises(SnapshotError, match="the snapshot refers to the wrong runtime"):
        read_snapshot(cm, "u1", c.GROUP, "ClusterTrainingRuntime", "another")


# --- merges and quantities ----------------------------------------------------------------------------------


def test_strategic_merge_keys() -> None:
    original = {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}], "tolerations": [{"key": "t1"}]}
    patch = {
        "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}, {"name": "b"}],
        "tolerations": [{"key": "t2"}],
    }
    assert strategic_merge(original, patch) == {
        "containers": [{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}, {"name": "b"}],
        "tolerations": [{"key": "t2"}],
    }
    assert strategic_merge({"a": 1, "b": 2}, {"a": None}) == {"b": 2}


def test_upsert_port_matches_unnamed_ports() -> None:
    ctr: dict[str, Any] = {"ports": [{"containerPort": 8080}]}
    upsert_ports(ctr, [{"containerPort": PORT}])
    assert ctr["ports"] == [{"containerPort": PORT}]  # two unnamed ports count as one, as upstream's UpsertPort


@pytest.mark.parametrize(
    ("quantity", "value"),
    [("2", 2), ("500m", 1), ("1.5", 2), (3, 3), ("1Ki", 1024), ("1e3", 1000), ("2k", 2000), ("0", 0)],
)
def test_quantity_value(quantity: Any, value: int) -> None:
    assert quantity_value(quantity) == value


def test_cpu_and_gpu_counts() -> None:
    assert cpus_per_node({"requests": {"cpu": "0"}, "limits": {"cpu": "2"}}) == 2
    assert cpus_per_node(None) == 0
    assert gpus_per_node({"limits": {"amd.com/GPU": "1"}}) == 1
    assert merge_resources(None, {"limits": {"cpu": "1"}}) == {"limits": {"cpu": "1"}}


def test_kueue_example_is_suspended_with_its_image_and_resources() -> None:
    # examples/yaml/03-kueue-integration.yaml: created suspended, numNodes 3, an image of its own.
    resources = {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
    tj = trainjob(
        "kueue-example",
        suspend=True,
        trainer={
            "numNodes": 3,
            "image": "python:3.11-slim",
            "command": ["python3", "-c", "print(4)"],
            "resourcesPerNode": resources,
        },
    )
    jobset = build(tj)
    assert jobset["spec"]["suspend"] is True
    node = container(jobset, "node", "node")
    assert node["image"] == "python:3.11-slim" and node["resources"] == resources
    assert env(node)["PET_NNODES"] == "3" and env(node)["PET_NPROC_PER_NODE"] == "2"
    assert job(jobset, "node")["template"]["spec"]["parallelism"] == 3


def test_volcano_example_builds_without_gang_scheduling() -> None:
    # examples/yaml/04-volcano-integration.yaml: podGroupPolicy is accepted and ignored locally (no PodGroup).
    runtime = torch_distributed()
    runtime["metadata"]["name"] = "torch-distributed-volcano"
    runtime["spec"]["podGroupPolicy"] = {"volcano": {}}
    tj = trainjob("volcano-example", trainer={"numNodes": 4, "command": ["python3", "-c", "print(5)"]})
    assert check(tj, runtime) == []
    jobset = build(tj, runtime)
    assert job(jobset, "node")["template"]["spec"]["parallelism"] == 4
    assert "metadata" not in job(jobset, "node")["template"]["spec"]["template"]  # no scheduler labels
